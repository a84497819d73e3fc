"""Daily partitions by ``run_date`` for the run-level assets (raw, validated, power, metrics).

Dynamic rather than a fixed calendar: the dates come from the logs' contents (a sidecar, runs.csv, vLLM's
``date``, the export's ``date``), arrive out of order, and some logs carry no date at all; those runs live in the
partition ``undated``. One key per day, ``YYYY-MM-DD``. Cross-date marts (frontiers, comparisons, trends, report)
are unpartitioned and read every partition.
"""

from pathlib import Path

import dagster as dg

RUN_DATE_PARTITIONS = dg.DynamicPartitionsDefinition(name="run_date")
# One run may cover many partitions (the CLI, the nightly refresh, a UI backfill of "all").
SINGLE_RUN = dg.BackfillPolicy.single_run()


def register_partitions(instance: dg.DagsterInstance, keys: list[str]) -> list[str]:
    """Add the keys the instance does not know yet; return every registered key (instance order)."""
    known = set(instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))
    new = sorted(set(keys) - known)
    if new:
        instance.add_dynamic_partitions(RUN_DATE_PARTITIONS.name, new)
    return list(instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))


def all_partitions_tags(instance: dg.DagsterInstance) -> dict[str, str]:
    """Run tags that target every registered partition in one run (a single-run backfill of the whole range)."""
    keys = instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name)
    return {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}


def discover_partition_keys(raw_dir: str, cache_dir: str) -> list[str]:
    """``discover_partitions``' keys."""
    return discover_partitions(raw_dir, cache_dir)[0]


def discover_partitions(raw_dir: str, cache_dir: str) -> tuple[list[str], str | None]:
    """Every run-date partition the logs under ``raw_dir`` populate, plus ``undated``, and the parse cache's
    generation that holds the folder as this scan saw it (the run tag ``SNAPSHOT_TAG``: the run started next
    reads its rows from the cache without scanning again; None when the cache could not be saved). Parses only
    what changed since the parse cache was written (and updates it).

    Raises:
        FileNotFoundError, PermissionError: the raw folder is missing or cannot be listed.
    """
    from pathlib import Path

    import pyarrow.compute as pc

    from pipeline.ingest.folder import ingest_folder_cached
    from pipeline.ingest.schema import UNDATED

    result, stats = ingest_folder_cached(Path(raw_dir), Path(cache_dir))
    dates = pc.unique(result.runs.column("run_date_partition")).to_pylist()  # onto a million runs, ~250 dates
    return sorted(set(dates) | {UNDATED}), stats.generation


def warehouse_run_dates(database: str | Path) -> list[str]:
    """The run dates the warehouse's ``raw_runs`` holds rows of (``run_date_partition``), [] when there is no
    warehouse, no such table, or it cannot be opened read-only now (locked by a run, corrupt: the run then finds
    out itself). A run over every date also refreshes these: a date whose last run moved to another date (its
    sidecar or ``runs.csv`` changed) is not in the scan any more, and its stale rows would stay published.
    """
    import duckdb

    if not Path(database).is_file():
        return []
    try:
        with duckdb.connect(str(database), read_only=True) as conn:
            if not conn.execute("select count(*) from duckdb_tables() where table_name = 'raw_runs'").fetchone()[0]:
                return []
            return sorted(row[0] for row in conn.execute(
                "select distinct run_date_partition from raw_runs where run_date_partition is not null").fetchall())
    except duckdb.Error:
        return []
