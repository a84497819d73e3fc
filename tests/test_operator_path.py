"""README's operator commands, in README's order, on a fresh DAGSTER_HOME: the partitions command registers the
run dates, the partition backfill then succeeds (it failed with DagsterInvalidSubsetError before the sensor had
ticked), and the runs of `dagster asset materialize` and of `python -m pipeline run` are both in the instance
the UI reads. The blocks are read from README.md itself, so README cannot drift from what works."""

import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from conftest import REPO, SAMPLE_DIR

from pipeline.defs.partitions import RUN_DATE_PARTITIONS

SECTION = "## For the operator (a benchmark fleet drops logs every night)"
# Not run here: the install (the test already runs inside it) and the long-running UI.
SKIPPED = ("pip install", "dagster dev")


def readme_operator_commands() -> list[str]:
    """The shell commands of the operator section's code blocks, in order, continuation lines joined."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n### ")]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.strip()
            if command and not any(skip in command for skip in SKIPPED):
                commands.append(command)
    return commands


@pytest.mark.long(1)
def test_readme_operator_commands_work_on_a_fresh_instance(tmp_path):
    commands = readme_operator_commands()
    assert any("pipeline partitions" in c for c in commands)
    assert any("dagster asset materialize" in c and "--partition" in c for c in commands)
    home = tmp_path / "dagster_home"
    script = "set -euo pipefail\n" + "\n".join(
        c.replace(".venv/bin/", str(Path(sys.executable).parent) + "/")
         .replace("$PWD/.dagster_home", str(home)).replace(".dagster_home", str(home))
         .replace("/srv/bench/results", str(SAMPLE_DIR))
        for c in commands) + "\n"
    assert str(home) in script and "/srv/bench" not in script
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "PIPELINE_RAW_DIR")}
    env.update(PYTHONPATH=str(REPO), PIPELINE_OUT_DIR=str(tmp_path / "marts"),
               PIPELINE_DB_PATH=str(tmp_path / "warehouse.duckdb"))
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "run_date partitions on" in done.stdout and "2026-07-14 undated" in done.stdout

    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name) == ["2026-07-14", "undated"]
        runs = instance.get_runs()
        statuses = {r.status for r in runs}
        assert statuses == {dg.DagsterRunStatus.SUCCESS}
        backfill = [r for r in runs if r.tags.get("dagster/partition") == "2026-07-14"]
        assert len(backfill) == 1
        # its steps in the run's own process, as the sensor's runs (one process per step is most of such a run)
        assert backfill[0].run_config.get("execution") == {"config": {"in_process": True}}
        # python -m pipeline run: one run of the whole job, recorded in the same instance the UI reads.
        assert len([r for r in runs if r.job_name == "refresh_all"]) == 1
        materialized = instance.get_latest_materialization_event(dg.AssetKey(["metrics", "run_metrics"]))
        assert materialized is not None


def test_partitions_needs_dagster_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(PYTHONPATH=str(REPO), PIPELINE_RAW_DIR=str(SAMPLE_DIR), PIPELINE_DB_PATH=str(tmp_path / "w.duckdb"))
    done = subprocess.run([sys.executable, "-m", "pipeline", "partitions"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stderr.startswith("DAGSTER_HOME is not set")
