"""Safe writes and repeatability: a killed materialization leaves the previous marts whole; a second writer
fails with a clear message; running twice gives identical marts."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import dagster as dg
import duckdb
import pytest
from conftest import SAMPLE_DIR

from pipeline.defs.metrics.reference import gpu_reference
from pipeline.defs.resources import Warehouse, WarehouseLockedError
from pipeline.io.storage import content_hash, read_mart

MARTS = ("runs", "trends", "quarantine", "frontiers", "comparisons", "ingest_ledger")


def _hashes(out_dir):
    return {name: content_hash(read_mart(out_dir, name)) for name in MARTS}


def test_running_twice_gives_identical_content(sample_run, sample_rerun):
    assert sample_rerun.result.success and sample_rerun.out_dir != sample_run.out_dir
    first = _hashes(sample_run.out_dir)
    second = _hashes(sample_rerun.out_dir)  # the second run, over a copy of the first's folders
    assert first == second


def test_content_hash_ignores_row_order_but_not_values():
    import pyarrow as pa

    a = pa.table({"x": [1, 2], "y": [0.5, 0.25]})
    assert content_hash(a) == content_hash(a.take([1, 0]))
    assert content_hash(a) != content_hash(pa.table({"x": [1, 2], "y": [0.5, 0.2500001]}))


@pytest.mark.long
def test_kill_mid_write_leaves_previous_marts_readable(sample_run_copy, run_pipeline, tmp_path):
    run = sample_run_copy  # the previous night's marts and warehouse, at run_pipeline's paths
    before = _hashes(run.out_dir)
    marker = tmp_path / "tmp_written"
    # A second run whose Parquet writes stall after the temporary file is written, until it is killed.
    script = textwrap.dedent(f"""
        import time
        import pyarrow.parquet as pq
        original = pq.write_table
        def stalled(table, where, *args, **kwargs):
            original(table, where, *args, **kwargs)
            if str(where).startswith({str(run.out_dir)!r}):  # a mart, not the parse cache
                open({str(marker)!r}, "w").close()
                time.sleep(300)
        pq.write_table = stalled
        from pipeline.__main__ import main
        main(["run"])
    """)
    env = {**os.environ, "PIPELINE_RAW_DIR": str(SAMPLE_DIR), "PIPELINE_OUT_DIR": str(run.out_dir),
           "PIPELINE_DB_PATH": str(run.db_path)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run never reached a mart write"
            time.sleep(0.1)
        # in the run's staging folder: a single-file mart's `.<name>.tmp` or a partitioned mart's `.<name>.staging-<pid>/`
        leftovers = [p for p in run.out_dir.rglob(".*") if p.name.endswith(".tmp") or ".staging-" in p.name]
        assert leftovers, "the stalled writer should have a temporary file in place"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _hashes(run.out_dir) == before  # every mart still reads, unchanged
    # the warehouse survives the kill and the next run succeeds and cleans the dead writer's temporaries
    again = run_pipeline(SAMPLE_DIR)
    assert (again.out_dir, again.db_path) == (run.out_dir, run.db_path)
    assert again.result.success
    assert _hashes(again.out_dir) == before
    assert not list(run.out_dir.rglob(".*.tmp")) and not list(run.out_dir.rglob("*.staging"))


def test_second_writer_fails_with_a_clear_message(tmp_path):
    db = tmp_path / "warehouse.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
                               f"c.execute('create table t(x int)'); print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        warehouse = Warehouse(database=str(db), lock_timeout_s=1.0)
        with pytest.raises(WarehouseLockedError, match="being written by another process"):
            with warehouse.get_connection():
                pass
        # the same error surfaces from an asset materialization, not a corrupted file
        result = dg.materialize([gpu_reference], resources={"warehouse": warehouse}, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        assert "being written by another process" in str(failure.step_failure_data.error)
    finally:
        holder.kill()
        holder.wait()
    with duckdb.connect(str(db)) as conn:  # the file is intact once the holder is gone
        assert conn.execute("select count(*) from t").fetchone() == (0,)
