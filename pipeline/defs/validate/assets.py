"""Validate stage: row rules split ``raw_runs`` into accepted runs and the quarantine ledger."""

import hashlib
from collections import Counter

import dagster as dg
import duckdb
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import PREVIEW_ROWS, counts_markdown, table_metadata
from pipeline.io.file_marts import write_file_mart
from pipeline.io.paths import sql_text
from pipeline.io.storage import (
    QUARANTINE_CHANGES,
    RAW_CHANGES,
    RUN_METRICS_CHANGES,
    RUN_POWER_CHANGES,
    VALIDATED_CHANGES,
    caught_up,
    needs_whole_rebuild,
    note_raw_changes,
    read_table,
    replace_partitions,
    table_names,
    write_table,
)
from pipeline.validate.judge import judge_raw_runs
from pipeline.validate.rules import QUARANTINE_SCHEMA, quarantine_table

RAW_KEY = dg.AssetKey(["ingest", "parsed_runs"])
VALIDATED_KEY = dg.AssetKey(["validate", "accepted_runs"])
QUARANTINE_KEY = dg.AssetKey(["validate", "quarantine"])


@dg.asset(
    key=VALIDATED_KEY,
    group_name="validate",
    kinds={"duckdb"},
    deps=[RAW_KEY, dg.AssetKey(["metrics", "gpu_reference"])],
    pool=WAREHOUSE_POOL,
    partitions_def=RUN_DATE_PARTITIONS,
    backfill_policy=SINGLE_RUN,
)
def validated_runs(context: dg.AssetExecutionContext, warehouse: DuckDBResource) -> dg.MaterializeResult:
    """Runs that pass every row rule of ``pipeline.validate.rules`` (failed requests, missing or non-positive
    throughput and TPOT, unit slips, inconsistencies, metadata conflicts, missing metadata, unknown GPU, no GPU
    count) and are not duplicates. Grain: one row per run; schema ``RUN_SCHEMA`` (latencies in s, throughputs in
    tok/s). Partitioned by run date; the rejected rows of the same dates go to ``validation_rejects`` (stage
    ``validate``), which ``validate/quarantine`` gathers. Good rows always go through.

    The raw runs are judged a group of dates at a time (``pipeline.validate.judge``: memory follows the group,
    not the history) and the accepted ones copied inside DuckDB, never held as Arrow.
    """
    keys = list(context.partition_keys)
    with warehouse.get_connection() as conn:
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
        # first the rows of files that are gone: a run judged against them would be the duplicate of a file that
        # no longer exists (a file re-dated, its old date not refreshed) and be quarantined for it
        emptied = drop_vanished_files(conn)
        judged = judge_raw_runs(conn, keys, known_hw)
        rejects, n_accepted = judged.rejects, judged.accepted
        # DuckDB reads the accepted rows straight from the raw table: an Arrow copy would hold every accepted row
        # in memory at once
        conn.register("_rejected", pa.table({"raw_row": judged.rejected_rows}))
        try:
            replace_partitions(conn, "validated_runs", conn.sql(
                "select r.* from raw_runs r where list_contains($keys, r.run_date_partition) "
                "and r.rowid not in (select raw_row from _rejected)", params={"keys": keys}), keys)
        finally:
            conn.unregister("_rejected")
        replace_partitions(conn, "validation_rejects", rejects, keys)
        # the ledger's accepted/quarantined counts of these dates; the dates the metric tables check for runs
        # that are no longer validated
        note_raw_changes(conn, "partition", keys, logs=(RAW_CHANGES, QUARANTINE_CHANGES))
        if emptied is None:
            note_raw_changes(conn, "all", logs=(RUN_METRICS_CHANGES, RUN_POWER_CHANGES))
        else:
            note_raw_changes(conn, "partition", sorted(set(keys) | emptied),
                             logs=(RUN_METRICS_CHANGES, RUN_POWER_CHANGES))
    context.log.info(f"{n_accepted} runs accepted, {rejects.num_rows} rejected by the rules in "
                     f"{keys[:3]}{'…' if len(keys) > 3 else ''} ({len(keys)} dates)")
    return dg.MaterializeResult(
        metadata={**table_metadata(judged.preview, preview_columns=["source_file", "model", "hw", "precision",
                                                                    "spec_decoding", "framework", "conc"]),
                  "dagster/row_count": n_accepted,
                  "runs_rejected_by_rules": rejects.num_rows,
                  "rejected_by_reason": counts_markdown(dict(Counter(rejects.column("reason_code").to_pylist())),
                                                        "reason_code")},
    )


@dg.asset(key=QUARANTINE_KEY, group_name="validate", kinds={"duckdb", "parquet"}, deps=[RAW_KEY, VALIDATED_KEY],
          pool=WAREHOUSE_POOL)
def quarantine(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Everything that did not become a run: files and rows rejected at ingest and runs rejected by the row rules,
    across all dates. Grain: one row per rejected file or row; columns ``source_file``, ``source_format``,
    ``source_row`` (null for a whole file), ``reason_code`` (stable snake_case, docs/inputs.md), ``detail`` (names
    the file, the field and the reason), ``stage`` (ingest | validate), ``run_date_partition``, ``duplicate_of``.
    Mart: ``quarantine/`` (``base.parquet`` + ``recent.parquet``, ``pipeline.io.file_marts``: a night writes
    the rows of the files whose rows it rebuilt), each file sorted by ``source_file`` then ``source_row``.

    Stored in the warehouse and brought up to date by ``update_quarantine``: a night rebuilds the rows of the
    files and run dates it rewrote, not every reject's.
    """
    with warehouse.get_connection() as conn:
        done, changed = update_quarantine(conn)
        folder = paths.mart_folder(context, "quarantine")
        written = write_file_mart(conn, "quarantine", folder, changed, order_by="source_file, source_row",
                                  schema=QUARANTINE_SCHEMA)
        total = conn.execute("select count(*) from quarantine").fetchall()[0][0]
        reasons = dict(conn.execute("select reason_code, count(*) from quarantine group by reason_code").fetchall())
        # real rejections first, then not_a_run_log rows (sidecars, telemetry, docs): what was refused
        preview = conn.sql("select * from quarantine order by coalesce(starts_with(reason_code, 'not_a_run_log:'), "
                           f"false), source_file, source_row limit {PREVIEW_ROWS}").to_arrow_table() \
            .cast(QUARANTINE_SCHEMA)
    paths.publish_unless_later(context, warehouse)
    path = paths.published(context, folder)
    context.log.info(f"quarantine: {total} rows ({done}; mart {written.describe()})")
    return dg.MaterializeResult(
        metadata={**table_metadata(preview, path=path, mart="quarantine",
                                 preview_columns=["source_file", "reason_code", "detail"]),
                  "dagster/row_count": total,
                  "rows_by_reason": counts_markdown(reasons, "reason_code")},
    )


# rows of files that vanished since (the ingest dropped their runs) leave every partition of the validated tables
VANISHED_FILES_SQL = ("delete from {table} where {scope} source_file not in "
                      "(select source_file from raw_files {scope_of_files}) returning run_date_partition")


def drop_vanished_files(conn: duckdb.DuckDBPyConnection) -> set[str] | None:
    """Delete the ``validated_runs`` and ``validation_rejects`` rows of files that are no longer in ``raw_files``,
    in any run date, before a validation judges runs against them (a table not created yet has none).

    The files checked are those the ingest noted as rewritten or removed since the last call
    (``pipeline.io.storage.VALIDATED_CHANGES``: a night's few files instead of an anti-join of every row), or
    every row when the log cannot say (``needs_whole_rebuild``: first run, a table the ingest rewrote whole,
    another version of the statement).

    Returns:
        The run dates that lost rows, or None when every row was checked (a reader of ``validated_runs`` then
        checks every row too).
    """
    version = hashlib.md5(VANISHED_FILES_SQL.encode()).hexdigest()
    whole = needs_whole_rebuild(conn, "validated_runs", VALIDATED_CHANGES, version)
    files = f"(select value from {VALIDATED_CHANGES} where kind = 'file')"
    emptied: set[str] = set()
    present = table_names(conn)
    # before the first validation there is nothing to drop: every row it inserts is of a file the ingest listed
    for table in (t for t in ("validated_runs", "validation_rejects") if t in present):
        emptied |= {row[0] for row in conn.execute(VANISHED_FILES_SQL.format(
            table=table, scope="" if whole else f"source_file in {files} and",
            scope_of_files="" if whole else f"where source_file in {files}")).fetchall()}
    caught_up(conn, "validated_runs", VALIDATED_CHANGES, version)
    return None if whole else emptied


def update_quarantine(conn: duckdb.DuckDBPyConnection) -> tuple[str, str | None]:
    """Bring warehouse table ``quarantine`` (``QUARANTINE_SCHEMA``) to ``raw_rejects`` and ``validation_rejects``
    together (``pipeline.validate.rules.quarantine_table``): when ``quarantine_changes``
    (``pipeline.io.storage.note_raw_changes``) names files and run dates only, delete the rows of those files and
    dates and insert theirs anew (``sql/quarantine_scope_rows.sql``); otherwise (a source rewritten whole, no
    quarantine yet, other SQL or schema) rebuild every row. Then empty ``quarantine_changes``.

    Returns:
        What was done, for the log ("412 rows rebuilt", "rebuilt whole"), and the temp table naming the files
        whose rows were deleted or inserted (``quarantine_changed``, column ``source_file``), None when every row
        was rebuilt.

    Exact (tests/test_nightly_batches.py holds the mart equal to a full refresh's): a row of ``raw_rejects``
    changes only with its file, one of ``validation_rejects`` only with its run date or its removed file, and
    ingest notes every file and date it rewrote.
    """
    version = hashlib.md5((sql_text("quarantine_scope_rows") + str(QUARANTINE_SCHEMA)).encode()).hexdigest()
    if needs_whole_rebuild(conn, "quarantine", QUARANTINE_CHANGES, version):
        table = quarantine_table(read_table(conn, "raw_rejects"), read_table(conn, "validation_rejects"))
        write_table(conn, "quarantine", table)
        done, changed = "rebuilt whole", None
    else:
        conn.execute(sql_text("quarantine_scope_rows"))
        in_scope = "select distinct source_file from quarantine where in_quarantine_scope(source_file, run_date_partition)"
        conn.execute(f"create or replace temp table quarantine_changed as {in_scope}")
        conn.execute("delete from quarantine where in_quarantine_scope(source_file, run_date_partition)")
        inserted = conn.execute("insert into quarantine select * from quarantine_scope_rows()").fetchall()[0][0]
        conn.execute(f"insert into quarantine_changed {in_scope}").fetchall()
        done, changed = f"{inserted} rows rebuilt", "quarantine_changed"
    caught_up(conn, "quarantine", QUARANTINE_CHANGES, version)
    return done, changed
