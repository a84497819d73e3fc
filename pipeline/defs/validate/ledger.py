"""The ingest ledger: one row per input file and what became of it."""

from collections import Counter

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.defs.validate.assets import QUARANTINE_KEY, VALIDATED_KEY
from pipeline.io.paths import sql_text
from pipeline.io.storage import read_table, write_parquet_atomic

LEDGER_KEY = dg.AssetKey(["validate", "ingest_ledger"])


@dg.asset(key=LEDGER_KEY, group_name="validate", kinds={"duckdb", "sql", "parquet"},
          deps=[VALIDATED_KEY, QUARANTINE_KEY], pool=WAREHOUSE_POOL)
def ingest_ledger(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Ingest ledger (``sql/ingest_ledger.sql``): one row per file under ``PIPELINE_RAW_DIR``.

    Columns: ``source_file`` (relative path), ``content_sha256``, ``size_bytes``, ``kind`` (run_log,
    metadata_sidecar, power_telemetry, …), ``source_format``, ``rows_read`` (runs or rejects the file yielded),
    ``accepted_rows``, ``length_off_nominal_rows`` (accepted runs whose measured ISL/OSL is more than 10 % off
    nominal, ``sql/run_lengths.sql``: kept, flagged, left off frontiers), ``quarantined_rows``, ``reason_codes``
    (list<string>), ``pending_rows`` (runs dated in a run date no run has ingested yet: the sensor runs one date
    at a time), ``outcome`` (accepted | partially_accepted | quarantined | not_a_run_log | pending). Invariant:
    rows_read = accepted_rows + quarantined_rows + pending_rows.
    Mart: ``ingest_ledger.parquet``.
    """
    with warehouse.get_connection() as conn:
        conn.execute(sql_text("run_lengths"))
        conn.execute(sql_text("ingest_ledger"))
        table = read_table(conn, "ingest_ledger")
    path = paths.published(context, write_parquet_atomic(table, paths.mart(context, "ingest_ledger")))
    paths.publish_unless_later(context)
    outcomes = Counter(table.column("outcome").to_pylist())
    context.log.info(f"ledger: {table.num_rows} files -> {path}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=path, mart="ingest_ledger", preview_columns=["source_file", "kind", "rows_read", "accepted_rows",
                                                            "quarantined_rows", "outcome"]),
        "files_by_outcome": counts_markdown(dict(outcomes), "outcome"),
    })
