"""Automation: a sensor that notices new or changed raw logs, and a nightly refresh."""

import hashlib
from pathlib import Path

import dagster as dg

from pipeline.defs.jobs import refresh_all
from pipeline.defs.resources import PipelinePaths
from pipeline.ingest import list_files

# (path, size, mtime_ns) -> sha256: avoids re-reading unchanged files on every tick; the cursor itself is the
# content digest, so a file that is only touched (same bytes) never triggers a run.
_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def raw_dir_digest(raw_dir: Path) -> tuple[str, int]:
    """sha256 over every (relative path, content sha256) under ``raw_dir``, and the number of files."""
    digest = hashlib.sha256()
    files = [p for p in list_files(raw_dir) if p.is_file()]
    for path in files:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in _HASH_CACHE:
            h = hashlib.sha256()
            with path.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    h.update(chunk)
            _HASH_CACHE[key] = h.hexdigest()
        digest.update(f"{path.relative_to(raw_dir).as_posix()}\0{_HASH_CACHE[key]}\n".encode())
    return digest.hexdigest(), len(files)


@dg.sensor(job=refresh_all, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.STOPPED,
           description="Requests a refresh when the content under PIPELINE_RAW_DIR changes (new, changed or removed "
                       "files). Cursor: a digest of every file's path and sha256, never the wall clock.")
def raw_logs_sensor(context: dg.SensorEvaluationContext, paths: PipelinePaths):
    raw_dir = Path(paths.raw_dir)
    if not raw_dir.is_dir():
        return dg.SkipReason(f"raw dir {raw_dir} does not exist")
    digest, n_files = raw_dir_digest(raw_dir)
    if digest == context.cursor:
        return dg.SkipReason(f"no change in {n_files} files under {raw_dir}")
    context.update_cursor(digest)
    return dg.RunRequest(run_key=digest, tags={"raw_dir": str(raw_dir), "raw_files": str(n_files),
                                               "trigger": "raw_logs_sensor"})


# Fires every night at 02:00 UTC, after the benchmark fleet's nightly drop, and refreshes everything.
nightly_refresh = dg.ScheduleDefinition(
    name="nightly_refresh",
    job=refresh_all,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
