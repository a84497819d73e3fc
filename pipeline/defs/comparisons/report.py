"""Downstream of the comparisons: the historical-trend mart and the static, interactive HTML report."""

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.report import (
    MAX_CHARTS_IN_UI,
    REPORT_PRICE_BOOK,
    build_report,
    build_request_pages,
    charts_markdown,
    index_order,
)
from pipeline.comparisons.trends import (
    DEFAULT_TARGET_INTVTY,
    GROUP_KEYS,
    TREND_METRICS,
    merge_trend_frontiers,
    trend_frontiers,
    trends_at_target,
)
from pipeline.defs.comparisons.assets import COMPARISONS_KEY
from pipeline.defs.comparisons.regressions import REGRESSIONS_KEY
from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths, generation_id
from pipeline.defs.ui import table_metadata
from pipeline.io.storage import replace_mart_partitions, replace_partitions, restaged_dates, table_names

RUN_METRICS_KEY = dg.AssetKey(["metrics", "run_metrics"])

# The trends are built from slices of at most about this many runs (onto 1M runs, four). A slice must hold whole
# frontier groups (GROUP_KEYS) and whole lines (pipeline.validate.lines.line_id), so that each day's frontier sees
# every run and each line its every sweep: it is a hash of what both keys hold alike (a null read as the line id
# writes it; of benchmark_type, a line keeps only whether it is an agentic trace).
TRENDS_CHUNK_ROWS = 250_000
TREND_SLICE = ("hash(" + ", ".join(f"coalesce({name}::varchar, 'None')" for name in
                                  ("model", "hw", "framework", "precision", "spec_decoding"))
               + ", coalesce(benchmark_type = 'agentic_traces', false))")

FRONTIERS_KEY = dg.AssetKey(["frontiers", "pareto_frontiers"])


class TrendConfig(dg.Config):
    """Run config of ``comparisons/trends``."""

    target_intvty: float = DEFAULT_TARGET_INTVTY


@dg.asset(key=["comparisons", "trends"], group_name="comparisons", kinds={"python", "duckdb", "parquet"},
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

    A day's frontier is built from the group's lines as of that day (each line's latest sweep dated that day or
    earlier, repeats averaged; docs/metrics.md "Latest run per line"). Partitioned by run date like
    ``run_metrics``: a new night computes only its own rows (reading earlier days' runs); a backfilled older day
    also rebuilds every later day, whose lines it can change (``undated`` runs have no place on a time axis and
    give none).
    """
    keys = list(context.partition_keys)
    columns = ", ".join(["price_book", "run_date", "run_id", "line_id", "sweep_id", "x_intvty", "median_intvty",
                         "conc",
                         *GROUP_KEYS, *[m for m in TREND_METRICS if m != "concurrency"]])
    with warehouse.get_connection() as conn:
        # a day's frontier reads every line as of that day, so earlier days' runs are read too; a backfilled
        # older day can change the lines of every later day, so those days are rebuilt with it
        first = min((k for k in keys if k != "undated"), default=None)
        later = [] if first is None else [r[0] for r in conn.execute(
            "select distinct run_date_partition from run_metrics where run_date_partition <> 'undated' "
            "and run_date_partition > ?", [first]).fetchall()]
        build = sorted(set(keys) | set(later))
        newest = conn.execute("select max(run_date_partition) from run_metrics "
                              "where run_date_partition <> 'undated'").fetchall()[0][0]
        # a night that adds the newest date builds only that day's frontier, which sees every run: the runs
        # current now (superseded_by null) are all it needs, not the history (a backfill reads the history)
        current_only = "and superseded_by is null" if [k for k in build if k != "undated"] == [newest] else ""
        # runs flagged length_off_nominal are left off every frontier (sql/run_lengths.sql)
        where = ("run_date is not null and strftime(run_date, '%Y-%m-%d') <= $last and not length_off_nominal "
                 f"{current_only}")
        rows = conn.execute(f"select count(*) from run_metrics where {where}", {"last": max(build)}).fetchall()[0][0]
        parts = max(1, -(-rows // TRENDS_CHUNK_ROWS))
        build_dates = [dt.date.fromisoformat(k) for k in build if k != "undated"]
        # the runs are read a slice at a time, and each slice is let go of once its frontiers are drawn
        # (trend_frontiers replaces it step by step); the frontiers are read at the target together, so the
        # numbers are those of one build_trends over every run
        fresh = trends_at_target(merge_trend_frontiers([trend_frontiers(conn.sql(
            f"select {columns} from run_metrics where {where} and {TREND_SLICE} % $parts = $part",
            params={"last": max(build), "parts": parts, "part": part}).to_arrow_table(), dates=build_dates)
            for part in range(parts)]), config.target_intvty)
        replace_partitions(conn, "trends", fresh, build, key_column="strftime(run_date, '%Y-%m-%d')")
        # days whose runs are all gone (files removed) leave the table and the mart
        emptied = conn.execute("delete from trends where strftime(run_date, '%Y-%m-%d') not in "
                               "(select run_date_partition from run_metrics) "
                               "returning strftime(run_date, '%Y-%m-%d')").fetchall()
        folder = paths.mart_folder(context, "trends")
        dates = restaged_dates(conn, folder, set(build) | {row[0] for row in emptied}, generation_id(context),
                               "select distinct strftime(run_date, '%Y-%m-%d') from trends")
        table = conn.sql("select * from trends where list_contains($dates, strftime(run_date, '%Y-%m-%d')) "
                         "order by run_date, price_book, model, isl, osl, hw, framework, precision, spec_decoding",
                         params={"dates": dates}).to_arrow_table()
    replace_mart_partitions(table, folder, dates)
    paths.publish_unless_later(context, warehouse)
    folder = paths.published(context, folder)
    in_range = sum(table.column("in_range").to_pylist())
    context.log.info(f"trends: {fresh.num_rows} (group, date) rows for {len(keys)} dates -> {folder}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=folder, mart="trends", preview_columns=["run_date", "hw", "framework", "precision",
                                                              "spec_decoding", "in_range", "tput_per_gpu"]),
        "target_intvty": config.target_intvty, "rows_in_range_in_these_dates": in_range})


def chart_runs(conn: duckdb.DuckDBPyConnection, price_book: str = REPORT_PRICE_BOOK) -> list[dict[str, Any]]:
    """The ``run_metrics`` rows of ``price_book`` a comparison chart draws (side keys, ``x_intvty`` tok/s/user,
    ``tput_per_gpu`` tok/s/GPU) and its hover text needs (``source_file``, ``run_date``, ``conc``, ``tp``, ``ep``,
    ``num_gpus``, ``length_off_nominal``, each where the table has it): one dict per run.

    Raises:
        duckdb.CatalogException: no ``run_metrics`` table yet (the metrics stage has not run).
    """
    names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
    optional = [c for c in ("source_file", "run_date", "conc", "tp", "ep", "num_gpus", "length_off_nominal",
                            "x_intvty_stat") if c in names]
    return conn.sql(f"select model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type, x_intvty, "
                    f"tput_per_gpu, {', '.join(optional)} from run_metrics where price_book = $book",
                    params={"book": price_book}).to_arrow_table().to_pylist()


class ReportConfig(dg.Config):
    """Run config of ``comparisons/report``.

    ``ui_charts``: draw every comparison's chart into the materialization's metadata (``frontier_charts``, for
    the Dagster UI; matplotlib, most of the step's time). ``python -m pipeline run`` and ``report`` set it false
    when their run goes to a throwaway instance (no ``DAGSTER_HOME``), whose metadata no UI ever shows; the
    HTML report is the same either way.
    """

    ui_charts: bool = True


@dg.asset(key=["comparisons", "report"], group_name="comparisons", kinds={"html"},
          deps=[COMPARISONS_KEY, FRONTIERS_KEY, RUN_METRICS_KEY, dg.AssetKey(["metrics", "run_slo"]), REGRESSIONS_KEY])
def report(context: dg.AssetExecutionContext, config: ReportConfig, warehouse: DuckDBResource,
           paths: PipelinePaths) -> dg.MaterializeResult:
    """Static report ``<PIPELINE_OUT_DIR>/report/index.html`` (counts per kind, headline comparisons first, filters
    by model, GPU, precision, kind) plus one interactive page per comparison, as the seed pages read: title ("MI355X
    FP4: MTP vs Off Speculative Decoding"), the three sentences, the Throughput / Cost / tok/s/MW (all-in and
    measured) / Concurrency table at three editable targets, every price book and cost tier, the frontier chart
    (every run with its file, configuration and date on hover), a CSV download and the cross-engine caveat. The
    pages open from disk (``report/assets/`` holds their script and the vendored Chart.js). The index lists the
    open regressions and improvements of ``comparisons/regressions`` (status new or ongoing) in a section of its
    own.

    Runs with per-request data get ``report/requests/<run_id>.png`` (TTFT and TPOT CDFs, 640×240) and
    ``report/requests/index.html`` listing them with their SLO outcomes (``comparisons.report.build_request_pages``).

    UI metadata: ``index`` (path), ``pages`` (count), ``runs_with_latency_cdfs`` and ``frontier_charts``: every
    comparison's chart (price book ``inferencex-seed``; the first ``MAX_CHARTS_IN_UI`` = 24 when there are more, the
    Markdown says so) under its full title, in the index's order (headlines first), as inline PNGs (matplotlib,
    drawn for this metadata only, when run config ``ui_charts`` is true: ``ReportConfig``; else one line saying
    they were not drawn)."""
    with warehouse.get_connection() as conn:
        # the pages show the comparisons of every run (slo = 'none'); SLO-restricted rows are in the marts
        comparisons = conn.sql("select * exclude (slo) from comparisons where slo = 'none'").to_arrow_table().to_pylist()
        frontiers = conn.sql("select * exclude (slo) from frontiers where slo = 'none'").to_arrow_table().to_pylist()
        runs = chart_runs(conn)
        request_runs, requests = _per_request_data(conn)
        # the open regressions and improvements, listed on the index (docs/regressions.md)
        changes = (conn.sql("select * from regressions where status <> 'recovered' order by first_bad_date desc, "
                            "series_id, metric").to_arrow_table().to_pylist()
                   if "regressions" in table_names(conn) else [])
    out = paths.staging(context) / "report"
    pages = [paths.published(context, page) for page in build_report(comparisons, frontiers, runs, out,
                                                                     regressions=changes)]
    cdf_pages = build_request_pages(request_runs, requests, out)
    paths.publish_unless_later(context, warehouse)
    metadata = {"index": dg.MetadataValue.path(str(pages[0])), "pages": len(pages) - 1,
                "runs_with_latency_cdfs": max(len(cdf_pages) - 1, 0)}
    shown = [r for r in comparisons if r["price_book"] == REPORT_PRICE_BOOK]
    book_frontiers = [r for r in frontiers if r["price_book"] == REPORT_PRICE_BOOK]
    order = index_order(shown)
    if config.ui_charts:
        with tempfile.TemporaryDirectory() as tmp:
            charts = charts_markdown(shown, book_frontiers, runs, order[:MAX_CHARTS_IN_UI], Path(tmp))
        scope = (f"Every comparison ({len(order)})" if len(order) <= MAX_CHARTS_IN_UI else
                 f"The first {MAX_CHARTS_IN_UI} of {len(order)} comparisons in the index's order (every one is in "
                 "the HTML report)")
        metadata["frontier_charts"] = dg.MetadataValue.md(
            f"{scope}, price book {REPORT_PRICE_BOOK}, headline comparisons first\n\n{charts}")
    else:
        metadata["frontier_charts"] = dg.MetadataValue.md(
            f"Not drawn in this run (run config ui_charts: false); the {len(order)} charts are in the HTML report.")
    context.log.info(f"report: {pages[0]} ({len(pages) - 1} comparison pages)")
    return dg.MaterializeResult(metadata=metadata)


def _per_request_data(conn) -> tuple[list[dict], list[dict]]:
    """(runs, requests) for ``build_request_pages``: validated runs with rows in ``raw_requests`` (with their SLO
    outcomes as text) and those requests' ``run_id``, ``ttft_s``, ``tpot_s``, ``error``; ([], []) before the
    per-request assets ever ran."""
    tables = table_names(conn)
    if not {"raw_requests", "run_slo"} <= tables:
        return [], []
    runs = conn.sql("""
        select v.run_id, v.source_file, v.source_row, v.model, v.hw, v.precision, v.spec_decoding, v.framework, v.conc,
               string_agg(s.slo || ': ' || coalesce(cast(round(100 * s.slo_attainment, 1) as varchar) || ' % of requests, ', '')
                          || case when s.slo_met then 'met' when not s.slo_met then 'not met' else 'unknown' end,
                          '; ' order by s.slo) as slo_outcomes
        from validated_runs v left join run_slo s using (run_id)
        where v.run_id in (select run_id from raw_requests)
        group by all order by v.model, v.hw, v.source_file, v.source_row""").to_arrow_table().to_pylist()
    requests = conn.sql("select run_id, ttft_s, tpot_s, error from raw_requests "
                        "where run_id in (select run_id from validated_runs) order by run_id, request_index"
                        ).to_arrow_table().to_pylist()
    return runs, requests
