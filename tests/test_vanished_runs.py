"""Runs whose files vanish leave every table derived from them, whichever dates the run that notices is for: the
ingest drops their raw rows, the validated tables the rows of files the ingest removed (its change log names
them), and the metric tables the rows of runs ``validated_runs`` no longer holds, in the dates it rewrote or lost
rows in."""

import sys

import dagster as dg
import duckdb
import pytest
from conftest import REPO

from pipeline.defs.ingest.assets import IngestConfig, raw_runs
from pipeline.defs.metrics.assets import run_metrics, run_power
from pipeline.defs.metrics.reference import PriceBooksConfig, gpu_reference, price_books
from pipeline.defs.partitions import register_partitions
from pipeline.defs.resources import PipelinePaths, Warehouse
from pipeline.defs.validate.assets import validated_runs

sys.path.insert(0, str(REPO))
from benchmarks.generate import generate  # noqa: E402

NIGHTS = ("2026-04-01", "2026-04-02")


def _materialize(instance, keys, warehouse, paths):
    """The ingest, validation and metric assets for run dates ``keys``, in dependency order, as a run does."""
    context = dg.build_asset_context(instance=instance, partition_key_range=dg.PartitionKeyRange(keys[0], keys[-1]))
    resources = {"warehouse": warehouse, "paths": paths}
    raw_runs(context, config=IngestConfig(), **resources)
    validated_runs(context, warehouse=warehouse)
    run_power(context, **resources)
    run_metrics(context, **resources)


def _run_ids(database, table, where="true"):
    with duckdb.connect(database, read_only=True) as conn:
        return {row[0] for row in conn.execute(f"select run_id from {table} where {where}").fetchall()}


@pytest.fixture
def warehouse_of_two_nights(tmp_path):
    raw = tmp_path / "raw"
    for seed, night in enumerate(NIGHTS, start=1):
        generate(40, raw / night, seed=seed, run_date=night)
    paths = PipelinePaths(raw_dir=str(raw), out_dir=str(tmp_path / "marts"), cache_dir=str(tmp_path / "cache"))
    warehouse = Warehouse(database=str(tmp_path / "warehouse.duckdb"))
    instance = dg.DagsterInstance.ephemeral()
    register_partitions(instance, list(NIGHTS))
    gpu_reference(warehouse=warehouse)
    price_books(dg.build_asset_context(instance=instance), config=PriceBooksConfig(), warehouse=warehouse)
    _materialize(instance, list(NIGHTS), warehouse, paths)
    return raw, paths, warehouse, instance


@pytest.mark.parametrize("removed_night", [0, 1])
def test_a_vanished_files_runs_leave_every_table_when_another_date_is_refreshed(warehouse_of_two_nights,
                                                                               removed_night):
    """Remove one of a night's run files, then refresh the other night only: its runs are gone from
    ``validated_runs`` and ``run_metrics`` all the same, and every metric row is a validated run's, as a full
    refresh leaves them. Then refresh a date again with nothing changed: nothing else goes."""
    raw, paths, warehouse, instance = warehouse_of_two_nights
    database = warehouse.database
    night, other = NIGHTS[removed_night], NIGHTS[1 - removed_night]
    with duckdb.connect(database, read_only=True) as conn:
        source_file = conn.execute(
            "select source_file from validated_runs where run_date_partition = ? and source_format like 'vllm%' "
            "order by source_file limit 1", [night]).fetchall()[0][0]
    gone = _run_ids(database, "validated_runs", f"source_file = '{source_file}'")
    assert gone and gone <= _run_ids(database, "run_metrics")
    kept = _run_ids(database, "validated_runs") - gone
    (raw / source_file).unlink()

    _materialize(instance, [other], warehouse, paths)
    assert not _run_ids(database, "raw_runs") & gone
    assert _run_ids(database, "validated_runs") == kept
    assert _run_ids(database, "run_metrics") == kept
    assert _run_ids(database, "run_power") <= kept
    with duckdb.connect(database, read_only=True) as conn:  # every reader caught up: its log is empty again
        assert [conn.execute(f"select count(*) from {log}").fetchall()[0][0] for log in (
            "validated_changes", "run_metrics_changes", "run_power_changes")] == [0, 0, 0]

    _materialize(instance, [night], warehouse, paths)  # nothing changed since: the same rows stay
    assert _run_ids(database, "validated_runs") == kept
    assert _run_ids(database, "run_metrics") == kept


def test_a_run_moved_to_another_date_is_not_a_duplicate_of_its_vanished_file(warehouse_of_two_nights):
    """A run file re-dated (removed from one night, the same measurement written under the next night) and only the
    new night refreshed, as the sensor does: the run is accepted on its new date. The vanished file's rows leave
    ``validated_runs`` before the new night is judged, so the run is not a duplicate of a file that is gone (it
    was quarantined as ``duplicate_run`` of it, and the input-loss guard then refused the night)."""
    import csv
    import shutil

    raw, paths, warehouse, instance = warehouse_of_two_nights
    database = warehouse.database
    with duckdb.connect(database, read_only=True) as conn:
        candidates = conn.execute(
            "select source_file, run_id from validated_runs where run_date_partition = ? order by source_file",
            [NIGHTS[0]]).fetchall()
    source_file, run_id = next(c for c in candidates if (raw / c[0]).with_name("runs.csv").is_file())
    old = raw / source_file
    rows = list(csv.DictReader(old.with_name("runs.csv").open(newline="")))
    (row,) = [r for r in rows if r["file"] == old.name]
    moved = raw / NIGHTS[1] / "moved"
    moved.mkdir()
    shutil.copy(old, moved / old.name)
    with (moved / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        writer.writeheader()
        writer.writerow({**row, "run_date": NIGHTS[1]})
    old.unlink()

    _materialize(instance, [NIGHTS[1]], warehouse, paths)
    with duckdb.connect(database, read_only=True) as conn:
        new = conn.execute("select run_date_partition from validated_runs where source_file = ?",
                           [f"{NIGHTS[1]}/moved/{old.name}"]).fetchall()
        quarantined = conn.execute("select reason_code, detail from validation_rejects where source_file = ?",
                                   [f"{NIGHTS[1]}/moved/{old.name}"]).fetchall()
    assert quarantined == [] and new == [(NIGHTS[1],)]
    assert run_id not in _run_ids(database, "validated_runs")


def test_a_sidecar_that_moves_its_runs_to_another_date_leaves_no_stale_row(tmp_path, run_pipeline):
    """The same file, its sidecar now giving another run date, through ``python -m pipeline run`` (whose partition
    keys are the dates the scan finds): the runs are published once, on the new date. The old date has no run in
    the folder any more, so it is not a key; its raw rows stayed and were published beside the new ones, and the
    new ones were quarantined as their duplicates."""
    import shutil

    raw = tmp_path / "raw"
    shutil.copytree(REPO / "data" / "sample" / "sglang", raw)
    moved = "dsr1_1k1k_b200_fp4_sglang_none.jsonl"
    for other in raw.glob("*.meta.json"):  # the others on another date: the moved file's old date is its alone
        if other.name != f"{moved}.meta.json":
            other.write_text(other.read_text().replace('"2026-07-14"', '"2026-07-13"'))
    assert run_pipeline(raw).result.success
    sidecar = raw / f"{moved}.meta.json"
    sidecar.write_text(sidecar.read_text().replace('"2026-07-14"', '"2026-07-20"'))
    run = run_pipeline(raw)
    assert run.result.success
    rows = [r for r in run.mart("runs").to_pylist() if r["source_file"] == moved]
    assert rows and {str(r["run_date"]) for r in rows} == {"2026-07-20"}
    assert len({(r["source_row"], r["price_book"]) for r in rows}) == len(rows)  # each run once per price book
    assert not [r for r in run.mart("quarantine").to_pylist() if r["source_file"] == moved]
    with duckdb.connect(str(run.db_path), read_only=True) as conn:
        assert conn.execute("select distinct run_date_partition from raw_runs where source_file = ?",
                            [moved]).fetchall() == [("2026-07-20",)]
