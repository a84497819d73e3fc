"""The raw-dir sensor: a run after a new or changed file, none when nothing (or only mtime) changed."""

import os
import shutil

import dagster as dg

from conftest import SAMPLE_DIR
from pipeline.defs.automation import nightly_refresh, raw_logs_sensor
from pipeline.defs.resources import PipelinePaths


def _tick(raw, cursor):
    context = dg.build_sensor_context(cursor=cursor, resources={
        "paths": PipelinePaths(raw_dir=str(raw), out_dir=str(raw.parent / "marts"))})
    result = raw_logs_sensor(context)
    return result, context.cursor


def test_sensor_requests_a_run_only_when_content_changes(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "sglang", raw)
    first, cursor = _tick(raw, None)
    assert isinstance(first, dg.RunRequest) and first.run_key == cursor

    same, cursor2 = _tick(raw, cursor)
    assert isinstance(same, dg.SkipReason) and cursor2 == cursor

    target = next(raw.glob("*.jsonl"))
    os.utime(target, ns=(1, 1))  # touched, same bytes: not a change
    touched, _ = _tick(raw, cursor)
    assert isinstance(touched, dg.SkipReason)

    shutil.copy(SAMPLE_DIR / "trtllm" / "dsr1_1k1k_b200_fp4_trtllm_mtp_conc4.report.json", raw / "new.json")
    new, cursor3 = _tick(raw, cursor)
    assert isinstance(new, dg.RunRequest) and cursor3 != cursor and new.run_key == cursor3

    target.write_text(target.read_text().replace("sglang", "sglang "))  # same name, new content
    changed, cursor4 = _tick(raw, cursor3)
    assert isinstance(changed, dg.RunRequest) and cursor4 != cursor3


def test_nightly_schedule():
    assert nightly_refresh.cron_schedule == "0 2 * * *" and nightly_refresh.job_name == "refresh_all"
