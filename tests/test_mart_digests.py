"""``benchmarks/mart_digests.py``, the before/after check of a refactoring: equal marts compare same, one changed
value, one missing mart and one mart in a folder of parts are each named."""

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mart_digests.py"


def _load():
    spec = importlib.util.spec_from_file_location("mart_digests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _marts(root: Path, tput: float, with_trends: bool = True) -> Path:
    (root / "runs" / "m" / "2025-01-01").mkdir(parents=True)
    pq.write_table(pa.table({"run_id": ["a", "b"], "tput_per_gpu": [1.5, tput]}),
                   root / "runs" / "m" / "2025-01-01" / "part-0.parquet")
    pq.write_table(pa.table({"comparison_id": ["c"], "ratio": [1.25]}), root / "comparisons.parquet")
    if with_trends:
        pq.write_table(pa.table({"run_date": ["2025-01-01"]}), root / "trends.parquet")
    (root / "report").mkdir()
    pq.write_table(pa.table({"x": [1]}), root / "report" / "ignored.parquet")
    pq.write_table(pa.table({"published_at": ["now"]}), root / "_accepted_runs.parquet")
    return root


def test_equal_marts_are_same_and_each_difference_is_named(tmp_path, capsys):
    digests = _load()
    before = _marts(tmp_path / "before", 2.0)
    assert digests.main([str(before), str(_marts(tmp_path / "same", 2.0))]) == 0
    assert sorted(digests.mart_tables(before)) == ["comparisons", "runs", "trends"]

    capsys.readouterr()
    assert digests.main([str(before), str(_marts(tmp_path / "changed", 2.0000001, with_trends=False))]) == 1
    lines = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert lines == {"comparisons": "same", "runs": "DIFFERS", "trends": "DIFFERS"}


def test_columns_that_only_moved_are_same_and_said(tmp_path, capsys):
    digests = _load()
    before = _marts(tmp_path / "before", 2.0)
    after = _marts(tmp_path / "after", 2.0)
    pq.write_table(pa.table({"ratio": [1.25], "comparison_id": ["c"]}), after / "comparisons.parquet")
    assert digests.main([str(before), str(after)]) == 0
    assert "comparisons              same (columns reordered)" in capsys.readouterr().out
