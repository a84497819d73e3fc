"""Validate stage: row rules split ``raw_runs`` into accepted runs and the quarantine ledger."""

from collections import Counter

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, rejections_first, table_metadata
from pipeline.io.paths import sql_text
from pipeline.io.storage import (
    note_raw_changes,
    read_table,
    replace_partitions,
    table_names,
    write_parquet_atomic,
    write_table,
)
from pipeline.validate.rules import (
    SAME_MEASUREMENT_RTOL,
    quarantine_table,
    validate_table,
)

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
    """
    keys = list(context.partition_keys)
    with warehouse.get_connection() as conn:
        raw = conn.sql("select * from raw_runs where list_contains($keys, run_date_partition) "
                       "order by source_file, source_row", params={"keys": keys}).to_arrow_table()
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
        # the same measurement can sit in two partitions (a dated raw result, its undated agg row): only the
        # other partitions' runs that could be a duplicate of this batch's are read (sql/duplicate_candidates.sql)
        exists = "validated_runs" in table_names(conn)
        elsewhere = None
        if exists:
            conn.register("_batch", raw)
            try:
                elsewhere = conn.sql(sql_text("duplicate_candidates"), params={
                    "partition_keys": keys, "rtol": SAME_MEASUREMENT_RTOL}).to_arrow_table()
            finally:
                conn.unregister("_batch")
        if elsewhere is not None and elsewhere.column_names != raw.column_names:
            elsewhere = None  # stored before a schema change: this run rebuilds the table (replace_partitions)
        validated, rejects = validate_table(raw, known_hw, elsewhere)
        replace_partitions(conn, "validated_runs", validated, keys)
        replace_partitions(conn, "validation_rejects", rejects, keys)
        # runs whose files vanished since (ingest dropped them) leave every partition
        for table in ("validated_runs", "validation_rejects"):
            conn.execute(f"delete from {table} where source_file not in (select source_file from raw_files)")
        note_raw_changes(conn, "partition", keys)  # the ledger's accepted/quarantined counts of these dates
    context.log.info(f"{validated.num_rows} runs accepted, {rejects.num_rows} rejected by the rules in "
                     f"{keys[:3]}{'…' if len(keys) > 3 else ''} ({len(keys)} dates)")
    return dg.MaterializeResult(
        metadata={**table_metadata(validated, preview_columns=["source_file", "model", "hw", "precision",
                                                               "spec_decoding", "framework", "conc"]),
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
    the file, the field and the reason), ``stage`` (ingest | validate), ``run_date_partition``.
    Mart: ``quarantine.parquet``."""
    with warehouse.get_connection() as conn:
        table = quarantine_table(read_table(conn, "raw_rejects"), read_table(conn, "validation_rejects"))
        write_table(conn, "quarantine", table)
    path = paths.published(context, write_parquet_atomic(table, paths.mart(context, "quarantine")))
    paths.publish_unless_later(context)
    reasons = Counter(table.column("reason_code").to_pylist())
    context.log.info(f"quarantine: {table.num_rows} rows")
    return dg.MaterializeResult(
        metadata={**table_metadata(rejections_first(table), path=path, mart="quarantine",
                                 preview_columns=["source_file", "reason_code", "detail"]),
                  "rows_by_reason": counts_markdown(dict(reasons), "reason_code")},
    )
