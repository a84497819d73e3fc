"""Sensor, schedule and partitions: a run for exactly the dates a change affects; a partitioned materialization
touches only the new date; nothing requested when nothing changed."""

import json
import os
import shutil
import time

import dagster as dg
import duckdb
import pytest
from conftest import SAMPLE_DIR

from pipeline.__main__ import with_report_config
from pipeline.defs.automation import nightly_refresh, raw_logs_sensor
from pipeline.defs.resources import PipelinePaths

NEW_RUN = SAMPLE_DIR / "vllm" / "mi355x" / "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc8.json"


def _tick(raw, cursor, instance, **layout):
    context = dg.build_sensor_context(cursor=cursor, instance=instance, resources={
        "paths": PipelinePaths(raw_dir=str(raw), out_dir=str(raw.parent / "marts"),
                               cache_dir=str(raw.parent / "parse_cache"), **layout)})
    return raw_logs_sensor(context)


def _add_run(raw, date="2026-08-01", name="new_night_conc8.json"):
    """A new night's log: a copy of a sample run with its own sidecar dated ``date``."""
    doc = json.loads(NEW_RUN.read_text())
    doc["duration"] = doc["duration"] * 1.01  # other numbers: not a content duplicate
    doc["median_tpot_ms"] = doc["median_tpot_ms"] * 1.01  # nor the same measurement (docs/inputs.md duplicate_run)
    doc["date"] = date.replace("-", "") + "-031500"  # the file's own date wins over the sidecar
    (raw / name).write_text(json.dumps(doc))
    meta = json.loads((NEW_RUN.parent / (NEW_RUN.name + ".meta.json")).read_text())
    meta.update(run_date=date)
    meta.pop("power_log", None), meta.pop("start_time_unix", None)
    (raw / (name + ".meta.json")).write_text(json.dumps(meta))


def test_sensor_requests_only_affected_dates(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "sglang", raw)
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(raw, None, instance)
    assert isinstance(first, dg.SensorResult)
    first_keys = {r.partition_key for r in first.run_requests}
    assert first_keys == {"2026-07-14"}  # every sample SGLang run is dated by its sidecar
    cursor = first.cursor

    same = _tick(raw, cursor, instance)
    assert isinstance(same, dg.SkipReason)

    os.utime(next(raw.glob("*.jsonl")), ns=(1, 1))  # touched, same bytes: not a change
    assert isinstance(_tick(raw, cursor, instance), dg.SkipReason)

    _add_run(raw)
    new = _tick(raw, cursor, instance)
    assert [r.partition_key for r in new.run_requests] == ["2026-08-01"]
    assert "2026-08-01" in new.dynamic_partitions_requests[0].partition_keys

    # a changed sidecar moves runs' metadata: their date is affected, nothing else
    sidecar = raw / "new_night_conc8.json.meta.json"
    sidecar.write_text(sidecar.read_text().replace('"tp": 8', '"tp": 4'))
    again = _tick(raw, new.cursor, instance)
    assert [r.partition_key for r in again.run_requests] == ["2026-08-01"]


@pytest.mark.long
def test_partitioned_materialization_touches_only_the_new_date(tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    instance = dg.DagsterInstance.ephemeral()
    run = run_pipeline(raw, instance=instance)
    assert run.result.success
    con = duckdb.connect(str(run.db_path), read_only=True)
    # the latest-run columns of older dates may change (a new sweep supersedes); every other column may not
    lineage = "line_id, sweep_id, superseded_by, repeat_group, repeat_n"
    before = con.sql(f"select * exclude ({lineage}) from run_metrics order by run_id, price_book").fetchall()
    con.close()

    _add_run(raw)
    instance.add_dynamic_partitions("run_date", ["2026-08-01"])
    from pipeline.definitions import defs

    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=instance, partition_key="2026-08-01", run_config=with_report_config(None, instance))
    assert result.success
    partitioned = {"ingest/parsed_runs", "validate/accepted_runs", "metrics/run_power", "metrics/run_metrics"}
    materialized = {(m.asset_key.to_user_string(), m.partition) for m in result.asset_materializations_for_node(
        "ingest__parsed_runs")}
    assert materialized == {("ingest/parsed_runs", "2026-08-01")}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.to_user_string() in partitioned:
            assert mat.partition == "2026-08-01"
    con = duckdb.connect(str(run.db_path), read_only=True)
    after = con.sql(f"select * exclude ({lineage}) from run_metrics where run_date_partition <> '2026-08-01' "
                    "order by run_id, price_book").fetchall()
    # the new night's run is a new sweep of the sample run's line: that line's older sweep is superseded
    superseded = con.sql("select distinct source_file, superseded_by from run_metrics "
                         "where superseded_by is not null").fetchall()
    new = con.execute("select count(*) from run_metrics where run_date_partition = '2026-08-01'").fetchone()[0]
    con.close()
    assert after == before  # every other date's rows untouched but for the latest-run columns
    assert new == 1
    assert (f"vllm/mi355x/{NEW_RUN.name}", "date:2026-08-01") in superseded
    runs_mart = run.mart("runs").to_pylist()  # the cross-date marts were refreshed in the same run
    assert any(r["source_file"] == "new_night_conc8.json" for r in runs_mart)
    ledger = {r["source_file"] for r in run.mart("ingest_ledger").to_pylist()}
    assert "new_night_conc8.json" in ledger


def test_nightly_schedule_covers_every_partition(tmp_path):
    (tmp_path / "dagster_home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    with dg.build_schedule_context(instance=instance, resources={
            "paths": PipelinePaths(raw_dir=str(SAMPLE_DIR), out_dir=str(tmp_path),
                                  cache_dir=str(tmp_path / "parse_cache"))}) as context:
        request = nightly_refresh(context)
    keys = instance.get_dynamic_partitions("run_date")
    assert "undated" in keys and "2026-07-14" in keys
    assert request.tags["dagster/asset_partition_range_start"] == keys[0]
    assert request.tags["dagster/asset_partition_range_end"] == keys[-1]
    assert nightly_refresh.cron_schedule == "0 2 * * *"


def test_a_sensor_enabled_after_a_full_run_launches_nothing_until_a_new_night(tmp_path, run_pipeline, monkeypatch):
    """Issue 42: enabling the sensor right after ``python -m pipeline run`` launched one run per date already
    published. Its first tick now starts from the state the published marts were built from (the record's
    ``raw_snapshot``): nothing to run; then a new night is exactly one run, on its own date, whether it lands
    before or after that first tick."""
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "sglang", raw)
    monkeypatch.setenv("PIPELINE_CACHE_DIR", str(tmp_path / "parse_cache"))  # the paths _tick gives the sensor
    assert run_pipeline(raw).result.success
    instance = dg.DagsterInstance.ephemeral()

    first = _tick(raw, None, instance)
    assert isinstance(first, dg.SensorResult) and not first.run_requests and first.cursor
    assert isinstance(_tick(raw, first.cursor, instance), dg.SkipReason)
    _add_run(raw)
    # the new night already there when the sensor is (re-)enabled: only its date
    assert [r.partition_key for r in _tick(raw, None, instance).run_requests] == ["2026-08-01"]
    # and from the first tick's cursor, too
    assert [r.partition_key for r in _tick(raw, first.cursor, instance).run_requests] == ["2026-08-01"]


def _aged(raw):
    """Every file and folder under ``raw`` dated an hour back: older nights, out of the racy window in which a scan
    does not trust a folder's mtime (such a folder is listed again on every tick, fast path or not)."""
    past = time.time_ns() - 3600 * 1_000_000_000
    for path in sorted(raw.rglob("*"), key=lambda p: -len(p.parts)):
        os.utime(path, ns=(past, past))
    os.utime(raw, ns=(past, past))


def test_the_date_folder_fast_path_finds_new_nights_and_the_stat_scan_finds_old_folders(tmp_path, monkeypatch):
    """PIPELINE_RAW_LAYOUT=date-folders (docs/operations.md, "Sensor fast path"): a tick looks at the newest date
    folder of its last scan and newer ones only, without a stat of the older folders; a file added to an older
    date folder is found by the whole-folder stat scan, every ``stat_scan_minutes``."""
    from pipeline.defs.automation import STAT_SCAN_KEY
    from pipeline.ingest import scan

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "sglang", raw / "2026-07-14")  # every sample SGLang run is dated 2026-07-14
    (raw / "2026-08-01").mkdir()
    _add_run(raw / "2026-08-01", "2026-08-01")
    _aged(raw)
    instance = dg.DagsterInstance.ephemeral()
    dated = {"raw_layout": "date-folders", "stat_scan_minutes": 60}
    first = _tick(raw, None, instance, **dated)  # no cursor yet: every folder stat-scanned
    assert {r.partition_key for r in first.run_requests} == {"2026-07-14", "2026-08-01"}
    assert STAT_SCAN_KEY in json.loads(first.cursor)

    statted: list[str] = []
    real_stat = os.stat

    def counting_stat(path, *args, **kwargs):
        statted.append(os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(scan.os, "stat", counting_stat)
    (raw / "2026-08-02").mkdir()
    _add_run(raw / "2026-08-02", "2026-08-02")  # a new night in a new date folder
    second = _tick(raw, first.cursor, instance, **dated)
    assert [r.partition_key for r in second.run_requests] == ["2026-08-02"]
    assert not [p for p in statted if "/2026-07-14" in p]  # the older folder was not even statted
    assert [p for p in statted if p.endswith("/2026-08-01")]  # the newest one of the last scan was, again

    _add_run(raw / "2026-08-02", "2026-08-03", name="late_conc8.json")  # more of the newest night: found
    third = _tick(raw, second.cursor, instance, **dated)
    assert [r.partition_key for r in third.run_requests] == ["2026-08-03"]

    _add_run(raw / "2026-07-14", "2026-07-20", name="backfilled_conc8.json")  # into an older date folder
    _aged(raw)
    assert isinstance(_tick(raw, third.cursor, instance, **dated), dg.SkipReason)  # not seen by the fast path
    # an hour after the last whole-folder stat scan, the tick stat-scans every folder again and finds it
    cursor = json.loads(third.cursor)
    cursor[STAT_SCAN_KEY] = str(float(cursor[STAT_SCAN_KEY]) - 3601)
    late = _tick(raw, json.dumps(cursor), instance, **dated)
    assert [r.partition_key for r in late.run_requests] == ["2026-07-20"]
    # without the layout every tick stat-scans every folder: the same file is found at once
    assert [r.partition_key for r in _tick(raw, third.cursor, instance).run_requests] == ["2026-07-20"]


@pytest.mark.long
def test_the_sensors_runs_run_their_steps_in_the_runs_own_process(tmp_path, monkeypatch):
    """A night's run is small: the sensor asks for the in-process executor (pipeline/defs/jobs.py), so a step
    starts no process of its own; a run without that config keeps a process per step (the multiprocess
    executor with its forkserver)."""
    from pipeline.definitions import refresh_all_job
    from pipeline.defs.jobs import IN_PROCESS_RUN_CONFIG

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "sglang", raw)
    first = _tick(raw, None, dg.DagsterInstance.ephemeral())
    assert first.run_requests and all(r.run_config == IN_PROCESS_RUN_CONFIG for r in first.run_requests)
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "warehouse.duckdb"))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        workers = {}
        for name, run_config in (("in_process", IN_PROCESS_RUN_CONFIG), ("multiprocess", {})):
            result = dg.execute_job(dg.reconstructable(refresh_all_job), instance=instance, run_config=run_config,
                                    asset_selection=[dg.AssetKey(["metrics", "gpu_reference"])])
            assert result.success
            workers[name] = [e for e in result.all_events if e.event_type_value == "STEP_WORKER_STARTING"]
        assert not workers["in_process"] and len(workers["multiprocess"]) == 1
