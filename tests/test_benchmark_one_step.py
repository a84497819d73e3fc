"""``benchmarks/one_step.py``: one asset alone on a copy of a warehouse, the benchmark's own left as it was."""

import re

import pytest

from benchmarks.one_step import STEPS, run_step


@pytest.mark.parametrize("step", STEPS)
def test_one_step_runs_on_a_copy_over_every_run_date(sample_run, tmp_path, step):
    # sample_run fails the test if its warehouse or marts changed: the step must have written the copy only
    line = run_step(step, sample_run.db_path, tmp_path / "copy")
    assert re.fullmatch(rf"{step} alone over 2 run dates: \d+\.\d s, peak RSS [\d,]+ MiB \([\d,]+ MiB before the "
                        r"step\)", line), line
    assert (tmp_path / "copy" / "warehouse.duckdb").is_file()
    if step == "report":
        assert any((tmp_path / "copy" / "marts").rglob("explorer.html"))
