"""Automation: a sensor that notices new or changed raw logs and refreshes only the run dates they affect, and a
nightly refresh of everything."""

import json
import time
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.defs.jobs import IN_PROCESS_RUN_CONFIG, refresh_all
from pipeline.defs.partitions import (
    RUN_DATE_PARTITIONS,
    all_partitions_tags,
    discover_partitions,
)
from pipeline.defs.resources import SNAPSHOT_TAG, PipelinePaths
from pipeline.ingest.folder import ingest_folder_cached
from pipeline.ingest.parse_cache import stream_cache
from pipeline.ingest.schema import UNDATED
from pipeline.io.generations import published_dir
from pipeline.io.paths import sql_text
from pipeline.io.publish_guard import RecordUnreadableError, read_record
from pipeline.io.storage import release_freed_memory

FILES_KEY = "_files"  # digest of every file (sidecars, manifests, rejected files included): FILES_DIGEST
SNAPSHOT_KEY = "_snapshot"  # the parse cache's generation the state was read from (not compared)
# in the sensor's cursor only: when its last whole-folder stat scan ran (UTC epoch seconds; not compared)
STAT_SCAN_KEY = "_stat_scan_at"


FILES_DIGEST = "xor-md5:"  # prefix of ``_files``: XOR of md5(path, sha256) over the files, updatable per file


def raw_dir_state(raw_dir: Path, cache_dir: Path, previous: dict[str, str] | None = None,
                  dated_layout: bool = False) -> dict[str, str]:
    """What the sensor remembers (``sql/raw_partition_digests.sql``): per run-date partition, a digest of its runs'
    content and resolved metadata (so a changed sidecar or runs.csv counts) and of their power logs; plus
    ``_files``, a digest of every file's path and sha256 (``FILES_DIGEST``: the XOR of each file's
    md5(path, NUL, sha256) as 128 bits, so one file's change updates it without the others). Content hashes
    only: a file that is touched but not changed changes nothing. Parses only files changed since the parse
    cache was written (and updates it).

    The folder is scanned quickly (``ingest_folder_cached(quick_scan=True)``: only folders whose mtime moved are
    listed again); when nothing moved and the parse cache is still the generation ``previous`` was read from,
    ``previous`` is the state, without loading the cache's rows (``ingest_folder_cached``'s ``rows``). When
    nothing moved but the cache holds another state (the first tick, or a run's ingest saved it since), every
    date is digested from the cache's runs streamed a record batch at a time (``parse_cache.stream_cache``:
    one batch in memory, never the whole cache). When the cache moved on from that generation, or from one with
    the same rows (``CacheStats.changes``, ``CacheChanges.starts_from``), only the partitions the changed files
    touch are digested again and ``_files`` is updated by those files (``sql/raw_partitions_touched.sql``); the
    state is the one a full computation gives (tested), at the cost of the night's files instead of the history's.

    ``dated_layout`` (the sensor's fast path, ``sensor_scan``): the raw folder follows the date-folder layout, and
    the quick scan takes the date folders older than the newest one as the cache saw them, unstatted
    (``ingest_folder_cached``'s ``dated_layout``); a file added to one of those is seen by the next scan without
    it.
    """
    release_freed_memory()  # a tick in a process that ran assets before starts from what they freed
    # the cache's rows are read only when the quick scan finds something moved since the cache was saved
    result, stats = ingest_folder_cached(raw_dir, cache_dir, quick_scan=True, rows=False, dated_layout=dated_layout)
    if previous and stats.parsed == stats.hashed == stats.removed == 0 \
            and stats.generation and previous.get(SNAPSHOT_KEY) == stats.generation:
        return dict(previous)
    if result is None:  # the folder is as the cache saved it, a state ``previous`` does not hold: every date
        stream = stream_cache(cache_dir, raw_dir, stats.generation) if stats.generation else None
        if stream is not None:
            return _whole_state(stream.runs, stream.files, stats.generation)
        result, stats = ingest_folder_cached(raw_dir, cache_dir, quick_scan=True,  # saved again meanwhile
                                             dated_layout=dated_layout)
    changes = stats.changes
    since_previous = bool(previous) and changes is not None and changes.old_files is not None \
        and changes.starts_from(previous.get(SNAPSHOT_KEY)) \
        and str(previous.get(FILES_KEY, "")).startswith(FILES_DIGEST)
    if not since_previous:
        return _whole_state(result.runs, result.files, stats.generation)
    with duckdb.connect() as conn:
        conn.register("files", result.files)
        conn.register("touched", pa.table({"source_file": changes.touched}))
        conn.register("runs", result.runs)
        touched = sorted(changes.old_partitions | {row[0] for row in conn.execute(
            sql_text("raw_partitions_touched")).fetchall()})
        conn.unregister("runs")
        conn.register("runs", result.runs.filter(pc.is_in(result.runs["run_date_partition"],
                                                           value_set=pa.array(touched, pa.string()))))
        state = {k: v for k, v in previous.items() if k not in touched}
        state.update(conn.execute(sql_text("raw_partition_digests")).fetchall())
        conn.register("old_files", changes.old_files)
        files_now = "(select * from files where source_file in (select source_file from touched))"
        state[FILES_KEY] = _xor_digests(int(previous[FILES_KEY].removeprefix(FILES_DIGEST), 16),
                                        *(_files_xor(conn, t) for t in ("old_files", files_now)))
    if stats.generation:
        state[SNAPSHOT_KEY] = stats.generation
    return state


def _whole_state(runs: pa.Table | pa.RecordBatchReader, files: pa.Table, generation: str | None) -> dict[str, str]:
    """Every date's digest (``sql/raw_partition_digests.sql``) and ``_files`` from the folder's ``runs``
    (``RUN_SCHEMA``; a table, or record batches read once) and ``files`` (``source_file``, ``sha256``), stamped
    with the cache ``generation`` they are (``SNAPSHOT_KEY``) when there is one."""
    with duckdb.connect() as conn:
        conn.register("files", files)
        conn.register("runs", runs)
        state = dict(conn.execute(sql_text("raw_partition_digests")).fetchall())
        state[FILES_KEY] = _xor_digests(_files_xor(conn, "files"))
    if generation:
        state[SNAPSHOT_KEY] = generation
    return state


def _files_xor(conn: duckdb.DuckDBPyConnection, files: str) -> int:
    """XOR of md5(source_file, NUL, sha256) over the rows of ``files`` (a table name or subquery), as an int."""
    value = conn.execute(f"select bit_xor(md5_number(source_file || chr(0) || coalesce(sha256, ''))) "
                         f"from {files}").fetchall()[0][0]
    return int(value or 0)


def _xor_digests(*values: int) -> str:
    """``_files`` from XOR terms: a removed file's term cancels it, an added file's term adds it."""
    combined = 0
    for value in values:
        combined ^= value
    return f"{FILES_DIGEST}{combined:032x}"


def published_state(raw_dir: Path, paths: PipelinePaths) -> dict[str, str]:
    """The sensor's state (``raw_dir_state``'s shape) of the parse-cache generation the published marts were built
    from (``raw_snapshot`` in the current generation's record, ``pipeline.io.publish_guard``), or ``{}`` when it
    is not known: nothing published, a generation written before the record held it, an unreadable record, or a
    parse cache that has moved on from that generation (the sensor then treats every date as new, as before)."""
    try:
        record = read_record(published_dir(Path(paths.out_dir)))
    except RecordUnreadableError:
        return {}
    snapshot = record.meta.get("raw_snapshot") if record is not None else None
    stream = stream_cache(Path(paths.cache_dir), raw_dir, snapshot) if snapshot else None
    return _whole_state(stream.runs, stream.files, snapshot) if stream is not None else {}


def sensor_scan(paths: PipelinePaths, cursor: dict[str, str], now: float) -> bool:
    """Whether a tick at ``now`` (UTC epoch seconds) takes the fast path: the raw folder is declared
    ``date-folders`` (``PipelinePaths.raw_layout``) and the cursor's last whole-folder stat scan
    (``STAT_SCAN_KEY``) is less than ``stat_scan_minutes`` old. Otherwise the tick stat-scans every folder (the
    safety net, which also sees a file added to an older date folder)."""
    last = cursor.get(STAT_SCAN_KEY)
    return paths.raw_layout == "date-folders" and last is not None \
        and now - float(last) < paths.stat_scan_minutes * 60


@dg.sensor(job=refresh_all, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.STOPPED,
           description="New, changed or removed logs under PIPELINE_RAW_DIR: one run per affected run date "
                       "(that partition plus the cross-date marts). Cursor: per-date content digests. With "
                       "PIPELINE_RAW_LAYOUT=date-folders a tick looks only at the newest date folders, and "
                       "stat-scans every folder every PIPELINE_STAT_SCAN_MINUTES (60).")
def raw_logs_sensor(context: dg.SensorEvaluationContext, paths: PipelinePaths):
    raw_dir = Path(paths.raw_dir)
    if not raw_dir.is_dir():
        return dg.SkipReason(f"raw dir {raw_dir} does not exist")
    # a sensor enabled after a run starts from the state the published marts were built from, not from nothing
    # (which would launch one run per date already published)
    seen = json.loads(context.cursor) if context.cursor else published_state(raw_dir, paths)
    now = time.time()
    fast = sensor_scan(paths, seen, now)
    state = raw_dir_state(raw_dir, Path(paths.cache_dir), {k: v for k, v in seen.items() if k != STAT_SCAN_KEY},
                          dated_layout=fast)
    state[STAT_SCAN_KEY] = seen[STAT_SCAN_KEY] if fast else f"{now:.0f}"
    changed = sorted(k for k in (set(state) | set(seen)) - {FILES_KEY, SNAPSHOT_KEY, STAT_SCAN_KEY}
                     if state.get(k) != seen.get(k))
    if not changed and state[FILES_KEY] != seen.get(FILES_KEY):
        changed = [UNDATED]  # only non-run files changed: one small run refreshes the ledger and quarantine
    if not changed:
        if not context.cursor:  # the first tick: remember the state, so later ticks compare against it
            return dg.SensorResult(skip_reason=f"no change under {raw_dir} since the published marts",
                                   cursor=json.dumps(state, sort_keys=True))
        if paths.raw_layout == "date-folders" and not fast:  # remember when the whole folder was stat-scanned
            return dg.SensorResult(skip_reason=f"no change under {raw_dir} (every folder stat-scanned)",
                                   cursor=json.dumps(state, sort_keys=True))
        return dg.SkipReason(f"no change under {raw_dir}")
    known = set(context.instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))
    new_keys = sorted((set(changed) | {UNDATED}) - known)
    return dg.SensorResult(
        # a night's run is small: its steps run in the run's own process (pipeline.defs.jobs, STEP_EXECUTOR)
        run_requests=[dg.RunRequest(run_key=f"{key}:{state.get(key, 'removed')}", partition_key=key,
                                    run_config=IN_PROCESS_RUN_CONFIG,
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
