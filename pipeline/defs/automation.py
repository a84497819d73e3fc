"""Automation: a sensor that notices new or changed raw logs and refreshes only the run dates they affect, and a
nightly refresh of everything."""

import json
from pathlib import Path

import dagster as dg
import duckdb

from pipeline.defs.jobs import refresh_all
from pipeline.defs.partitions import (
    RUN_DATE_PARTITIONS,
    all_partitions_tags,
    discover_partitions,
)
from pipeline.defs.resources import SNAPSHOT_TAG, PipelinePaths
from pipeline.ingest.folder import ingest_folder_cached
from pipeline.ingest.schema import UNDATED
from pipeline.io.paths import sql_text

FILES_KEY = "_files"  # digest of every file (sidecars, manifests, rejected files included)
SNAPSHOT_KEY = "_snapshot"  # the parse cache's generation the state was read from (not compared)


def raw_dir_state(raw_dir: Path, cache_dir: Path, previous: dict[str, str] | None = None) -> dict[str, str]:
    """What the sensor remembers (``sql/raw_partition_digests.sql``): per run-date partition, a digest of its runs'
    content and resolved metadata (so a changed sidecar or runs.csv counts) and of their power logs; plus
    ``_files``, a digest of every file's path and sha256. Content hashes only: a file that is touched but not
    changed changes nothing. Parses only files changed since the parse cache was written (and updates it).

    The folder is scanned quickly (``ingest_folder_cached(quick_scan=True)``: only folders whose mtime moved are
    listed again); when nothing moved and the parse cache is still the generation ``previous`` was read from,
    ``previous`` is the state, without reading a run.
    """
    result, stats = ingest_folder_cached(raw_dir, cache_dir, quick_scan=True)
    if previous and stats.parsed == stats.hashed == stats.removed == 0 \
            and stats.generation and previous.get(SNAPSHOT_KEY) == stats.generation:
        return dict(previous)
    with duckdb.connect() as conn:
        conn.register("runs", result.runs)
        conn.register("files", result.files)
        state = dict(conn.execute(sql_text("raw_partition_digests")).fetchall())
        state[FILES_KEY] = conn.execute(
            "select sha256(string_agg(source_file || chr(0) || coalesce(sha256, ''), chr(10) order by source_file)) "
            "from files").fetchone()[0]
    if stats.generation:
        state[SNAPSHOT_KEY] = stats.generation
    return state


@dg.sensor(job=refresh_all, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.STOPPED,
           description="New, changed or removed logs under PIPELINE_RAW_DIR: one run per affected run date "
                       "(that partition plus the cross-date marts). Cursor: per-date content digests.")
def raw_logs_sensor(context: dg.SensorEvaluationContext, paths: PipelinePaths):
    raw_dir = Path(paths.raw_dir)
    if not raw_dir.is_dir():
        return dg.SkipReason(f"raw dir {raw_dir} does not exist")
    seen = json.loads(context.cursor) if context.cursor else {}
    state = raw_dir_state(raw_dir, Path(paths.cache_dir), seen)
    changed = sorted(k for k in (set(state) | set(seen)) - {FILES_KEY, SNAPSHOT_KEY} if state.get(k) != seen.get(k))
    if not changed and state[FILES_KEY] != seen.get(FILES_KEY):
        changed = [UNDATED]  # only non-run files changed: one small run refreshes the ledger and quarantine
    if not changed:
        return dg.SkipReason(f"no change under {raw_dir}")
    known = set(context.instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))
    new_keys = sorted((set(changed) | {UNDATED}) - known)
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"{key}:{state.get(key, 'removed')}", partition_key=key,
                                    tags={"trigger": "raw_logs_sensor",
                                          **({SNAPSHOT_TAG: state[SNAPSHOT_KEY]} if SNAPSHOT_KEY in state else {})})
                      for key in changed],
        dynamic_partitions_requests=[RUN_DATE_PARTITIONS.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps(state, sort_keys=True),
    )


@dg.schedule(job=refresh_all, cron_schedule="0 2 * * *", execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Every night at 02:00 UTC, after the fleet's drop: registers new run dates found under "
                         "PIPELINE_RAW_DIR and refreshes every partition and every mart in one run.")
def nightly_refresh(context: dg.ScheduleEvaluationContext, paths: PipelinePaths):
    """Fires every night at 02:00 UTC, after the fleet's nightly drop: registers any new run dates and refreshes
    every partition and every mart in one run."""
    keys, snapshot = discover_partitions(paths.raw_dir, paths.cache_dir)
    known = set(context.instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))
    if set(keys) - known:
        context.instance.add_dynamic_partitions(RUN_DATE_PARTITIONS.name, sorted(set(keys) - known))
    return dg.RunRequest(run_key=None, tags={**all_partitions_tags(context.instance), "trigger": "nightly_refresh",
                                             **({SNAPSHOT_TAG: snapshot} if snapshot else {})})
