"""The ingest ledger: one row per input file and what became of it."""

import hashlib

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import PREVIEW_ROWS, counts_markdown, table_metadata
from pipeline.defs.validate.assets import QUARANTINE_KEY, VALIDATED_KEY
from pipeline.io.paths import sql_text
from pipeline.io.file_marts import write_file_mart
from pipeline.io.storage import RAW_CHANGES, caught_up, needs_whole_rebuild

LEDGER_KEY = dg.AssetKey(["validate", "ingest_ledger"])


@dg.asset(key=LEDGER_KEY, group_name="validate", kinds={"duckdb", "sql", "parquet"},
          deps=[VALIDATED_KEY, QUARANTINE_KEY], pool=WAREHOUSE_POOL)
def ingest_ledger(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Ingest ledger (``sql/ingest_ledger.sql``): one row per file under ``PIPELINE_RAW_DIR``.

    Columns: ``source_file`` (relative path), ``content_sha256``, ``size_bytes``, ``kind`` (run_log,
    metadata_sidecar, power_telemetry, …), ``source_format``, ``rows_read`` (runs or rejects the file yielded),
    ``accepted_rows``, ``length_off_nominal_rows`` (accepted runs flagged ``length_off_nominal`` by
    ``sql/run_lengths.sql``: kept, flagged, left off frontiers), ``quarantined_rows``, ``reason_codes``
    (list<string>), ``pending_rows`` (runs dated in a run date no run has ingested yet: the sensor runs one date
    at a time), ``outcome`` (accepted | partially_accepted | quarantined | not_a_run_log | pending). Invariant:
    rows_read = accepted_rows + quarantined_rows + pending_rows.
    Mart: ``ingest_ledger/`` (``base.parquet`` + ``recent.parquet``, ``pipeline.io.file_marts``: a night writes
    the rows of the files it rebuilt), each file ordered by ``source_file``.

    Stored in the warehouse and brought up to date per file (``update_ledger``): a night rebuilds the rows of
    the files it touched and of the run dates it refreshed, not every file's.
    """
    with warehouse.get_connection() as conn:
        conn.execute(sql_text("run_lengths"))
        conn.execute(sql_text("ingest_ledger"))
        rebuilt, changed = update_ledger(conn)
        folder = paths.mart_folder(context, "ingest_ledger")
        written = write_file_mart(conn, "ingest_ledger", folder, changed, order_by="source_file")
        total = conn.execute("select count(*) from ingest_ledger").fetchall()[0][0]
        outcomes = dict(conn.execute("select outcome, count(*) from ingest_ledger group by outcome").fetchall())
        preview = conn.sql(f"select * from ingest_ledger order by source_file limit {PREVIEW_ROWS}").to_arrow_table()
    paths.publish_unless_later(context, warehouse)
    path = paths.published(context, folder)
    context.log.info(f"ledger: {total} files ({rebuilt}; mart {written.describe()}) -> {path}")
    return dg.MaterializeResult(metadata={
        **table_metadata(preview, path=path, mart="ingest_ledger", preview_columns=[
            "source_file", "kind", "rows_read", "accepted_rows", "quarantined_rows", "outcome"]),
        "dagster/row_count": total,
        "files_by_outcome": counts_markdown(outcomes, "outcome"),
    })


def update_ledger(conn: duckdb.DuckDBPyConnection) -> tuple[str, str | None]:
    """Bring warehouse table ``ingest_ledger`` to the rows of ``ingest_ledger_rows_in`` (``sql/ingest_ledger.sql``):
    when ``raw_changes`` (``pipeline.io.storage.note_raw_changes``) names files and run dates only, delete and
    rebuild the rows of those files (removed files included: the ingest names them, and their rows are not
    rebuilt) and of the files with runs or quarantined rows in those dates (only those files' runs are read);
    otherwise (a table rewritten whole, no ledger yet, other ledger SQL) rebuild every row.
    Then empty ``raw_changes``.

    Returns:
        What was done, for the log ("3 files rebuilt", "rebuilt whole"), and the temp table naming the files
        whose rows were rebuilt or removed (``ledger_scope``, column ``source_file``), None when every row was.

    Every row the view would give for an untouched file is the stored one: a file's row depends on its own
    ``raw_files``, ``raw_runs``, ``raw_rejects``, ``validated_runs`` and ``quarantine`` rows, which change only
    for the files a run rewrote and the dates it refreshed (tests/test_nightly_batches.py holds the mart equal to
    a full refresh's, pending rows included).
    """
    version = hashlib.md5((sql_text("run_lengths") + sql_text("ingest_ledger")).encode()).hexdigest()
    if needs_whole_rebuild(conn, "ingest_ledger", RAW_CHANGES, version):
        conn.execute("create or replace table ingest_ledger as select * from ingest_ledger_rows_in(false)")
        done, changed = "rebuilt whole", None
    else:
        conn.execute(f"""
            create or replace temp table ledger_scope as
            select value as source_file from {RAW_CHANGES} where kind = 'file'
            union select source_file from raw_runs
                where run_date_partition in (select value from {RAW_CHANGES} where kind = 'partition')
            union select source_file from quarantine
                where run_date_partition in (select value from {RAW_CHANGES} where kind = 'partition')""")
        # a removed file is in the scope as the ingest named it: no anti-join of every ledger row with raw_files
        conn.execute("delete from ingest_ledger where source_file in (select source_file from ledger_scope)")
        conn.execute("insert into ingest_ledger select * from ingest_ledger_rows_in(true)")
        done, changed = f"{conn.execute('select count(*) from ledger_scope').fetchall()[0][0]} files rebuilt", \
            "ledger_scope"
    caught_up(conn, "ingest_ledger", RAW_CHANGES, version)
    return done, changed
