"""Downstream of the comparisons: the historical-trend mart and the static HTML report with frontier charts."""

import base64
from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.report import REPORT_PRICE_BOOK, build_report
from pipeline.comparisons.trends import DEFAULT_TARGET_INTVTY, GROUP_KEYS, TREND_METRICS, build_trends
from pipeline.defs.comparisons.assets import COMPARISONS_KEY
from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import table_metadata
from pipeline.io.storage import replace_mart_partitions, replace_partitions

RUN_METRICS_KEY = dg.AssetKey(["metrics", "run_metrics"])
FRONTIERS_KEY = dg.AssetKey(["frontiers", "pareto_frontiers"])


class TrendConfig(dg.Config):
    """Run config of ``marts/trends``."""

    target_intvty: float = DEFAULT_TARGET_INTVTY


@dg.asset(key=["marts", "trends"], group_name="comparisons", kinds={"python", "duckdb", "parquet"},
          deps=[RUN_METRICS_KEY], pool=WAREHOUSE_POOL, partitions_def=RUN_DATE_PARTITIONS,
          backfill_policy=SINGLE_RUN)
def trends(context: dg.AssetExecutionContext, config: TrendConfig, warehouse: DuckDBResource,
           paths: PipelinePaths) -> dg.MaterializeResult:
    """Historical trend: for each frontier group (model, isl, osl, hw, framework, precision, spec_decoding,
    benchmark_type), price
    book and ``run_date``, that day's frontier read at ``target_intvty`` (default 35 tok/s/user, run config):
    ``tput_per_gpu``, ``output_tput_per_gpu`` (tok/s/GPU), ``cost_per_mtok_*`` ($/M tokens), ``tok_s_per_mw``,
    ``concurrency``; null with ``in_range`` false when the target lies outside that day's frontier
    (docs/metrics.md trend rule: no clamping, no extrapolation). Mart: ``trends/``, partitioned
    ``<model>/<run_date>/``.

    Partitioned by run date like ``run_metrics``: a day's row depends on that day's runs alone, so a new night
    computes only its own rows (``undated`` runs have no place on a time axis and give none).
    """
    keys = list(context.partition_keys)
    columns = ", ".join(["price_book", "run_date", "x_intvty", "conc", *GROUP_KEYS,
                         *[m for m in TREND_METRICS if m != "concurrency"]])
    with warehouse.get_connection() as conn:
        # runs whose measured ISL/OSL is > 10 % off nominal are left off every frontier (sql/run_lengths.sql)
        runs = conn.sql(f"select {columns} from run_metrics where list_contains($keys, run_date_partition) "
                        "and not length_off_nominal", params={"keys": keys}).to_arrow_table()
        fresh = build_trends(runs, config.target_intvty)
        replace_partitions(conn, "trends", fresh, keys, key_column="strftime(run_date, '%Y-%m-%d')")
        # days whose runs are all gone (files removed) leave the table and the mart
        emptied = conn.execute("delete from trends where strftime(run_date, '%Y-%m-%d') not in "
                               "(select run_date_partition from run_metrics) "
                               "returning strftime(run_date, '%Y-%m-%d')").fetchall()
        dates = sorted(set(keys) | {row[0] for row in emptied})
        table = conn.sql("select * from trends where list_contains($dates, strftime(run_date, '%Y-%m-%d')) "
                         "order by run_date, price_book, model, isl, osl, hw, framework, precision, spec_decoding",
                         params={"dates": dates}).to_arrow_table()
    folder = paths.mart_folder("trends")
    replace_mart_partitions(table, folder, dates)
    in_range = sum(table.column("in_range").to_pylist())
    context.log.info(f"trends: {fresh.num_rows} (group, date) rows for {len(keys)} dates -> {folder}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=folder, mart="trends", preview_columns=["run_date", "hw", "framework", "precision",
                                                              "spec_decoding", "in_range", "tput_per_gpu"]),
        "target_intvty": config.target_intvty, "rows_in_range_in_these_dates": in_range})


@dg.asset(key=["marts", "report"], group_name="comparisons", kinds={"html"},
          deps=[COMPARISONS_KEY, FRONTIERS_KEY, RUN_METRICS_KEY])
def report(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Static report ``<PIPELINE_OUT_DIR>/report/index.html`` plus one page per comparison of the default price
    book, as the seed pages read: title ("MI355X FP4: MTP vs Off Speculative Decoding"), the three sentences, the
    Throughput / Cost / tok/s/MW / Concurrency table at the three targets, the frontier chart (PNG: every run,
    the frontier curve, the targets) and the cross-engine acceptance caveat."""
    with warehouse.get_connection() as conn:
        book = {"book": REPORT_PRICE_BOOK}
        comparisons = conn.sql("select * from comparisons where price_book = $book", params=book).to_arrow_table()
        frontiers = conn.sql("select * from frontiers where price_book = $book", params=book).to_arrow_table()
        runs = conn.sql("select model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type, x_intvty, "
                        "tput_per_gpu from run_metrics where price_book = $book", params=book).to_arrow_table()
    out = Path(paths.out_dir) / "report"
    pages = build_report(comparisons.to_pylist(), frontiers.to_pylist(), runs.to_pylist(), out)
    charts = sorted((out / "img").glob("*.png"))
    metadata = {"index": dg.MetadataValue.path(str(pages[0])), "pages": len(pages) - 1, "charts": len(charts)}
    for chart in charts[:3]:  # a few charts inline; every one is on disk and in the report
        encoded = base64.b64encode(chart.read_bytes()).decode()
        metadata[f"chart_{chart.stem[:40]}"] = dg.MetadataValue.md(f"![frontier chart](data:image/png;base64,{encoded})")
    context.log.info(f"report: {pages[0]} ({len(pages) - 1} comparison pages)")
    return dg.MaterializeResult(metadata=metadata)
