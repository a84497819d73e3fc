"""Nightly batches and one full refresh give the same marts: the same history, arriving night by night through the
sensor (one run per affected date), leaves every mart with the content one full refresh over the final folder
gives."""

import shutil
import sys

import dagster as dg
import pytest
from conftest import REPO

from pipeline.defs.automation import raw_logs_sensor
from pipeline.defs.resources import PipelinePaths
from pipeline.io.storage import content_hash, read_mart

sys.path.insert(0, str(REPO))
from benchmarks.generate import generate  # noqa: E402

MARTS = ("runs", "trends", "quarantine", "frontiers", "comparisons", "ingest_ledger", "frontiers_slo",
         "comparisons_slo")
NIGHTS = ("2026-03-01", "2026-03-02", "2026-03-03")


@pytest.fixture
def history(tmp_path):
    """Three nights of 120 generated runs each (the same 18 configurations swept every night, with repeats and a
    byte copy), one folder per night, outside the raw folder."""
    nights = []
    for seed, day in enumerate(NIGHTS, start=1):
        folder = tmp_path / "nights" / day
        written = generate(120, folder, seed=seed, run_date=day)
        assert written.runs == 120
        nights.append(folder)
    return nights


def _resend(first_night, last_night):
    """A byte copy of one of the first night's InferenceX rows dropped again with the last night's manifest: the
    same content in another run-date partition, a duplicate_run however the nights arrive."""
    original = sorted((first_night / "inferencex").rglob("run_*.json"))[0]
    manifest = sorted((last_night / "inferencex").rglob("runs.csv"))[0]
    shutil.copyfile(original, manifest.parent / "resent.json")
    with manifest.open("a") as handle:
        handle.write(f"resent.json,{NIGHTS[2]}\n")


def _marts(out_dir):
    return {name: content_hash(read_mart(out_dir, name)) for name in MARTS}


def _env(monkeypatch, tmp_path, name):
    raw, out, db = tmp_path / name / "raw", tmp_path / name / "marts", tmp_path / name / "warehouse.duckdb"
    raw.mkdir(parents=True)
    for var, path in (("PIPELINE_RAW_DIR", raw), ("PIPELINE_OUT_DIR", out), ("PIPELINE_DB_PATH", db)):
        monkeypatch.setenv(var, str(path))
    monkeypatch.delenv("PIPELINE_CACHE_DIR", raising=False)
    return raw, out, db


@pytest.mark.long
def test_nightly_batches_give_the_marts_of_one_full_refresh(history, tmp_path, monkeypatch):
    from pipeline.__main__ import materialize_all, with_report_config
    from pipeline.definitions import defs

    # night by night: the sensor ticks after each night's drop and each run it requests is executed
    raw, out, db = _env(monkeypatch, tmp_path, "batches")
    import pipeline.defs.ingest.assets as ingest_assets

    rewritten: list[int] = []  # per-file writes of raw_rejects / raw_files: how many files each rewrote
    real_rows = ingest_assets.replace_file_rows
    monkeypatch.setattr(ingest_assets, "replace_file_rows",
                        lambda conn, name, table, files: rewritten.append(len(files)) or real_rows(conn, name, table, files))
    import pipeline.defs.validate.ledger as ledger_asset

    ledger_updates: list[str] = []  # what each run did to the stored ledger
    real_update = ledger_asset.update_ledger
    monkeypatch.setattr(ledger_asset, "update_ledger",
                        lambda conn: (lambda out: ledger_updates.append(out[0]) or out)(real_update(conn)))
    import pipeline.defs.validate.assets as validate_assets

    quarantine_updates: list[str] = []  # what each run did to the stored quarantine
    real_quarantine = validate_assets.update_quarantine
    monkeypatch.setattr(validate_assets, "update_quarantine",
                        lambda conn: (lambda out: quarantine_updates.append(out[0]) or out)(real_quarantine(conn)))
    mart_writes: list[tuple[str, bool, str]] = []  # (mart, folded, why) of each write of the per-file marts
    from pipeline.io import file_marts

    # the history is three nights of a similar size: let recent hold them, as a long history's nights would be
    monkeypatch.setattr(file_marts, "RECENT_MAX_SHARE", 2.0)

    def recording(conn, table, *args, **kwargs):
        written = file_marts.write_file_mart(conn, table, *args, **kwargs)
        mart_writes.append((table, written.folded, written.reason))
        return written
    for module in (ledger_asset, validate_assets):
        monkeypatch.setattr(module, "write_file_mart", recording)
    # the nights read the stored trend frontiers and write the trend mart a few dates at a time (groups of whole
    # dates, ~40 frontier points / ~400 rows each); the full refresh below reads them all at once
    import pipeline.defs.comparisons.report as trend_asset

    chunks = (trend_asset.TRENDS_READ_POINTS, trend_asset.TRENDS_MART_ROWS)
    monkeypatch.setattr(trend_asset, "TRENDS_READ_POINTS", 40)
    monkeypatch.setattr(trend_asset, "TRENDS_MART_ROWS", 400)
    instance = dg.DagsterInstance.ephemeral()
    job = defs().resolve_job_def("refresh_all")
    paths = PipelinePaths(raw_dir=str(raw), out_dir=str(out), cache_dir=f"{db}.parse_cache")
    cursor, requested = None, []
    for index, night in enumerate(history):
        shutil.copytree(night, raw / night.name)
        if index == 2:  # the last night also removes two of the first night's logs, one with its sidecar (an
            # ingest reject, not_a_run_log), and re-sends another log
            next((raw / NIGHTS[0]).rglob("run_0000003.json")).unlink()
            sidecar = sorted((raw / NIGHTS[0]).rglob("*.meta.json"))[0]
            sidecar.unlink()
            sidecar.with_name(sidecar.name.removesuffix(".meta.json")).unlink()
            _resend(raw / NIGHTS[0], raw / NIGHTS[2])
        result = raw_logs_sensor(dg.build_sensor_context(cursor=cursor, instance=instance,
                                                         resources={"paths": paths}))
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        cursor = result.cursor
        for request in result.run_requests:
            requested.append(request.partition_key)
            # the request's own run config, and no Dagster UI charts on this throwaway instance
            run = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                         run_config=with_report_config(request.run_config, instance),
                                         tags=request.tags, raise_on_error=False)
            assert run.success, f"night {night.name}: the run for {request.partition_key} failed"
            if index == 2 and request.partition_key == NIGHTS[0]:
                # the first of the last night's two runs: that night's new logs wait for their own run, as
                # pending rows of the ledger, not as a failed balance
                ledger = read_mart(out, "ingest_ledger").to_pylist()
                pending = {r["source_file"] for r in ledger if r["outcome"] == "pending"}
                assert pending and all(f.startswith(f"{NIGHTS[2]}/") for f in pending)
                assert all(r["pending_rows"] == r["rows_read"] for r in ledger if r["source_file"] in pending)
    # one run per affected date: each new night, and the first night again when one of its logs went
    assert requested == [NIGHTS[0], NIGHTS[1], NIGHTS[0], NIGHTS[2]]
    # the second and third nights' runs rewrote only their own files' rows (the first built the tables whole;
    # the last night's second run found the tables already at its snapshot)
    assert len(rewritten) == 4 and all(0 < n < 200 for n in rewritten), rewritten
    # the ledger was built whole once, then rebuilt file by file for each night's files and dates
    assert ledger_updates[0] == "rebuilt whole" and len(ledger_updates) == 4, ledger_updates
    assert all(u.endswith(" files rebuilt") and 0 < int(u.split()[0]) < 400 for u in ledger_updates[1:]), ledger_updates
    # so was the quarantine: whole once, then the rows of each night's files and dates
    assert quarantine_updates[0] == "rebuilt whole" and len(quarantine_updates) == 4, quarantine_updates
    assert all(u.endswith(" rows rebuilt") for u in quarantine_updates[1:]), quarantine_updates
    # the per-file marts: folded by the first run; the second night's run (new files only) wrote only its recent
    # rows; the last night's first run removes files the base holds, which folds; the ledger's base then holds
    # that night's new files too (as pending rows), so the night's second run, which rebuilds their rows, folds
    # the ledger again, while their quarantine rows were not in the base and go to recent
    for mart, folds in (("ingest_ledger", [True, False, True, True]), ("quarantine", [True, False, True, False])):
        writes = [(folded, why) for name, folded, why in mart_writes if name == mart]
        assert [folded for folded, _ in writes] == folds, (mart, writes)
        assert writes[0][1] == "whole rebuild" and writes[2][1].endswith(" changed files are in base"), writes
    batches = _marts(out)

    # one full refresh over the final folder
    monkeypatch.setattr(trend_asset, "TRENDS_READ_POINTS", chunks[0])
    monkeypatch.setattr(trend_asset, "TRENDS_MART_ROWS", chunks[1])
    final = raw
    raw, out, db = _env(monkeypatch, tmp_path, "full")
    shutil.rmtree(raw)
    shutil.copytree(final, raw)
    result = materialize_all(dg.DagsterInstance.ephemeral())
    assert result.success
    full = _marts(out)

    assert read_mart(out, "runs").num_rows > 300
    assert sum(read_mart(out, "ingest_ledger").column("pending_rows").to_pylist()) == 0
    resent = [r for r in read_mart(out, "quarantine").to_pylist() if r["source_file"].endswith("resent.json")]
    assert [r["reason_code"] for r in resent] == ["duplicate_run"]
    assert {name for name in MARTS if batches[name] != full[name]} == set()
    trends = read_mart(out, "trends")
    assert len(set(trends.column("run_date").to_pylist())) == 3 and trends.num_rows > 400  # more than one group


def test_the_ledger_is_held_to_the_folder_file_by_file(tmp_path):
    # on disk: a.json, b.json, d.json, e.json. The ledger lists a.json twice, b.json with counts that do not add
    # up (3 read, 1 + 1 + 0 accounted), c.json that is not on disk, e.json reading no row, and misses d.json.
    from pipeline.validate.ledger import account_for_files

    for name in ("a.json", "b.json", "d.json", "e.json"):
        (tmp_path / name).write_text("{}")
    ledger = [("a.json", 2, 1, 1, 0), ("a.json", 2, 2, 0, 0), ("b.json", 3, 1, 1, 0), ("c.json", 1, 1, 0, 0),
              ("e.json", 0, 0, 0, 0)]
    found = account_for_files(tmp_path, ledger)
    assert (found.files_on_disk, found.missing, found.extra, found.repeated) == (4, ["d.json"], ["c.json"], ["a.json"])
    assert found.unbalanced == [("b.json", 3, 1, 1, 0), ("e.json", 0, 0, 0, 0)]
    assert not found.complete
    balanced = account_for_files(tmp_path, [(name, 1, 0, 0, 1) for name in ("a.json", "b.json", "d.json", "e.json")])
    assert (balanced.missing, balanced.extra, balanced.repeated, balanced.unbalanced, balanced.complete) == (
        [], [], [], [], True)
