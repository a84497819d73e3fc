"""Validate stage: row rules split ``raw_runs`` into accepted runs and the quarantine ledger."""


from collections import Counter

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.storage import read_table, write_parquet_atomic, write_table
from pipeline.validation import validate_runs

VALIDATED_KEY = dg.AssetKey(["validated", "benchmark_runs"])
QUARANTINE_KEY = dg.AssetKey(["validated", "quarantine"])


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            VALIDATED_KEY,
            group_name="validate",
            kinds={"duckdb"},
            deps=[dg.AssetKey(["raw", "benchmark_runs"]), dg.AssetKey(["reference", "gpu_reference"])],
            description=(
                "Runs that pass every row rule of pipeline.validation (failed requests, missing or non-positive "
                "throughput and TPOT, metadata conflicts, missing metadata, unknown GPU, no GPU count). "
                "Grain: one row per run; schema RUN_SCHEMA (latencies in s, throughputs in tok/s)."
            ),
        ),
        dg.AssetSpec(
            QUARANTINE_KEY,
            group_name="validate",
            kinds={"duckdb", "parquet"},
            deps=[dg.AssetKey(["raw", "benchmark_runs"])],
            description=(
                "Everything that did not become a run: files and rows rejected at ingest and runs rejected by the "
                "row rules. Grain: one row per rejected file or row; columns source_file, source_format, "
                "source_row (null for a whole file), reason_code (stable snake_case, DESIGN.md §5), detail "
                "(names the file, the field and the reason), stage (ingest | validate). Mart: quarantine.parquet."
            ),
        ),
    ],
    pool=WAREHOUSE_POOL,
)
def validated_runs(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths):
    """Apply the row rules; good rows always go through, bad rows are quarantined with a reason, never dropped."""
    with warehouse.get_connection() as conn:
        raw = read_table(conn, "raw_runs")
        ingest_rejects = read_table(conn, "raw_rejects")
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
        accepted, rejected = validate_runs(raw.to_pylist(), known_hw)
        validated = pa.Table.from_pylist(accepted, schema=RUN_SCHEMA)
        quarantine = pa.concat_tables(
            [ingest_rejects.cast(QUARANTINE_SCHEMA), pa.Table.from_pylist(rejected, schema=QUARANTINE_SCHEMA)]
        ).sort_by([("source_file", "ascending"), ("source_row", "ascending")])
        write_table(conn, "validated_runs", validated)
        write_table(conn, "quarantine", quarantine)
    path = write_parquet_atomic(quarantine, paths.mart("quarantine"))
    reasons = Counter(quarantine.column("reason_code").to_pylist())
    context.log.info(f"{validated.num_rows} runs accepted, {quarantine.num_rows} rows quarantined")
    yield dg.MaterializeResult(
        asset_key=VALIDATED_KEY,
        metadata={**table_metadata(validated, preview_columns=["source_file", "model", "hw", "precision",
                                                               "spec_decoding", "framework", "conc"]),
                  "runs_rejected_by_rules": len(rejected)},
    )
    yield dg.MaterializeResult(
        asset_key=QUARANTINE_KEY,
        metadata={**table_metadata(quarantine, path=path, preview_columns=["source_file", "reason_code", "detail"]),
                  "rows_by_reason": counts_markdown(dict(reasons), "reason_code")},
    )
