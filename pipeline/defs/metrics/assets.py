"""Metrics stage: the GPU reference and per-run metrics computed in DuckDB SQL (sql/run_metrics.sql)."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import table_metadata
from pipeline.paths import REFERENCE_DIR, sql_text
from pipeline.reference import load_gpu_reference
from pipeline.storage import read_table, write_parquet_atomic, write_table


@dg.asset(key=["reference", "gpu_reference"], group_name="metrics", kinds={"csv", "duckdb"}, pool=WAREHOUSE_POOL)
def gpu_reference(warehouse: DuckDBResource) -> dg.MaterializeResult:
    """GPU reference: one row per GPU key (h100 … mi355x) with all-in ``power_kw`` (kW per GPU) and
    ``{hyperscaler,neocloud,rental}_usd_per_gpu_hour`` ($ per GPU-hour), from
    ``data/reference/gpu_reference.csv`` (DESIGN.md §3, figures of the seed pages, version 2026-07)."""
    table = load_gpu_reference()
    with warehouse.get_connection() as conn:
        write_table(conn, "gpu_reference", table)
    return dg.MaterializeResult(metadata={**table_metadata(table),
                                          "source": dg.MetadataValue.path(str(REFERENCE_DIR / "gpu_reference.csv"))})


@dg.asset(
    key=["metrics", "run_metrics"],
    group_name="metrics",
    kinds={"duckdb", "sql", "parquet"},
    deps=[dg.AssetKey(["validated", "benchmark_runs"]), dg.AssetKey(["reference", "gpu_reference"])],
    pool=WAREHOUSE_POOL,
)
def run_metrics(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Per-run metrics (``sql/run_metrics.sql``): one row per validated run with its metadata and

    - ``num_gpus``; ``tput_per_gpu``, ``output_tput_per_gpu``, ``input_tput_per_gpu`` (tok/s/GPU; disaggregated
      runs divide output by decode GPUs and input by prefill GPUs);
    - ``{mean,median,p90,p99}_intvty`` = 1 / TPOT_s (tok/s/user), latencies ``*_s`` in seconds;
    - ``cost_per_mtok_{hyperscaler,neocloud,rental}`` ($/M tokens; ``input_``/``output_`` variants);
    - ``tok_s_per_mw`` (tok/s per MW of all-in power) and ``j_per_token`` (J/token);
    - ``mean_input_len``/``mean_output_len`` (measured, beside nominal ``isl``/``osl``), ``failure_rate``.

    Formulas: DESIGN.md §3 (InferenceX utils/process_result.py and the dashboard). Mart: ``runs.parquet``.
    """
    with warehouse.get_connection() as conn:
        conn.execute(sql_text("run_metrics"))
        table = read_table(conn, "run_metrics")
    path = write_parquet_atomic(table, paths.mart("runs"))
    context.log.info(f"run_metrics: {table.num_rows} runs -> {path}")
    return dg.MaterializeResult(metadata=table_metadata(
        table, path=path,
        preview_columns=["model", "hw", "precision", "spec_decoding", "framework", "conc", "median_intvty",
                         "tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw"],
    ))
