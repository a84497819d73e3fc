"""Downstream of the comparisons: the historical-trend mart and the static, interactive HTML report."""

import datetime as dt
import shutil
import tempfile
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.explorer import INPUT_COLUMNS as EXPLORER_INPUT_COLUMNS
from pipeline.comparisons.explorer import TREND_COLUMNS as EXPLORER_TREND_COLUMNS
from pipeline.comparisons.explorer import explorer_data, trend_points
from pipeline.comparisons.report import (
    MAX_CHARTS_IN_UI,
    REPORT_PRICE_BOOK,
    build_report,
    build_request_pages,
    charts_markdown,
    index_order,
)
from pipeline.comparisons.trends import (
    COMPARISON_TARGET_SCHEMA,
    GROUP_KEYS,
    TREND_SCHEMA,
    TREND_METRICS,
    comparison_targets,
    merge_trend_frontiers,
    trend_frontiers,
    trends_at_targets,
)
from pipeline.defs.comparisons.assets import COMPARISONS_KEY
from pipeline.defs.comparisons.regressions import REGRESSIONS_KEY
from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths, generation_id
from pipeline.defs.ui import table_metadata
from pipeline.io.storage import (
    date_groups,
    keep_openable,
    prune_mart_partitions,
    read_table,
    release_freed_memory,
    replace_partitions,
    restaged_dates,
    table_names,
    write_mart_partitions,
    write_table,
)

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


# Warehouse tables of the trends asset: every date's frontier points (``trend_frontiers``' rows), so that a change
# of the comparisons' targets re-reads every date without rebuilding its frontier; and the targets the trend rows
# were last read at (``comparison_targets``).
TREND_POINTS_TABLE = "trend_frontier_points"
TREND_TARGETS_TABLE = "trend_targets"
# The stored frontiers are read at the targets this many points at a time (whole dates), and the mart written this
# many trend rows at a time: a point gives a row per target of its group (tens), so a bound keeps a full re-read's
# memory that of one group of dates, not of the history.
TRENDS_READ_POINTS = 50_000
TRENDS_MART_ROWS = 250_000
_DAY = "strftime(run_date, '%Y-%m-%d')"


def _days(keys: list[str]) -> list[dt.date]:
    """The dates of run-date partition keys (``undated`` has none): the trend tables' rows of a group of dates are
    found on their DATE column (``list_contains($days, run_date)``), not by formatting every row's date as text
    once per group."""
    return [dt.date.fromisoformat(key) for key in keys if key != "undated"]


@dg.asset(key=["comparisons", "trends"], group_name="comparisons", kinds={"python", "duckdb", "parquet"},
          deps=[RUN_METRICS_KEY, COMPARISONS_KEY], pool=WAREHOUSE_POOL, partitions_def=RUN_DATE_PARTITIONS,
          backfill_policy=SINGLE_RUN)
def trends(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Historical trend: for each frontier group (model, isl, osl, hw, framework, precision, spec_decoding,
    benchmark_type, x_intvty_stat), price book and ``run_date``, that day's frontier read at the three default
    targets (25/50/75 % of the band, tok/s/user) of every comparison one of whose sides holds the group
    (``pipeline.comparisons.trends.trends_at_targets``; the targets are the ``comparisons`` table's, rows of every
    run): ``tput_per_gpu``, ``output_tput_per_gpu`` (tok/s/GPU), ``cost_per_mtok_*`` ($/M tokens),
    ``tok_s_per_mw``, ``concurrency``; null with ``in_range`` false when a target lies outside that day's frontier
    (docs/metrics.md trend rule: no clamping, no extrapolation). Grain: one row per (price book, frontier group,
    run date, ``comparison_id``, ``target_index``); ``side`` says which side of the comparison holds the group. A
    group in no comparison has no row. Mart: ``trends/``, partitioned ``<model>/<run_date>/``.

    A day's frontier is built from the group's lines as of that day (each line's latest sweep dated that day or
    earlier, repeats averaged; docs/metrics.md "Latest run per line") and kept in the warehouse
    (``trend_frontier_points``). Partitioned by run date like ``run_metrics``: a new night builds only its own
    frontiers (reading earlier days' runs); a backfilled older day also rebuilds every later day, whose lines it
    can change (``undated`` runs have no place on a time axis and give none). When the comparisons' targets are
    not those the trend rows were read at (``trend_targets``: a band moved, a comparison came or went), every
    date's stored frontiers are read again at the new targets and every partition rewritten, so a night's marts
    equal a full refresh's. Needs ``comparisons/matched_comparisons`` (no ``comparisons`` table: no target, no row).
    """
    keys = list(context.partition_keys)
    columns = ", ".join(["price_book", "run_date", "run_id", "line_id", "sweep_id", "x_intvty", "median_intvty",
                         "conc",
                         *GROUP_KEYS, *[m for m in TREND_METRICS if m != "concurrency"]])
    with warehouse.get_connection() as conn:
        tables = table_names(conn)
        # a day's frontier reads every line as of that day, so earlier days' runs are read too; a backfilled
        # older day can change the lines of every later day, so those days are rebuilt with it; a warehouse
        # without stored frontiers (first run, or written before they were kept) builds every date
        first = min((k for k in keys if k != "undated"), default=None) if TREND_POINTS_TABLE in tables else ""
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
        last = max(build) if build else ""
        rows = conn.execute(f"select count(*) from run_metrics where {where}", {"last": last}).fetchall()[0][0]
        parts = max(1, -(-rows // TRENDS_CHUNK_ROWS))
        build_dates = _days(build)
        # the runs are read a slice at a time, and each slice is let go of once its frontiers are drawn
        # (trend_frontiers replaces it step by step)
        points = merge_trend_frontiers([trend_frontiers(conn.sql(
            f"select {columns} from run_metrics where {where} and {TREND_SLICE} % $parts = $part",
            params={"last": last, "parts": parts, "part": part}).to_arrow_table(), dates=build_dates)
            for part in range(parts)])
        replace_partitions(conn, TREND_POINTS_TABLE, points, build_dates, key_column="run_date")
        # days whose runs are all gone (files removed) leave the tables and the mart
        conn.execute(f"delete from {TREND_POINTS_TABLE} where {_DAY} not in "
                     "(select run_date_partition from run_metrics)")
        targets = _comparison_targets(conn, tables)
        stored = comparison_targets(read_table(conn, TREND_TARGETS_TABLE)) if TREND_TARGETS_TABLE in tables else None
        moved = stored is None or not stored.equals(targets)
        # every date is read again when the targets moved, else the dates whose frontiers were rebuilt
        reread = [r[0] for r in conn.execute(f"select distinct {_DAY} from {TREND_POINTS_TABLE} order by 1")
                  .fetchall()] if moved else build
        # the dates are read, and their mart files written, a group of whole dates at a time: a frontier holds
        # tens of targets, so one read of every date would hold that many rows per frontier point at once
        replace_partitions(conn, "trends", TREND_SCHEMA.empty_table(), _days(reread), key_column="run_date")
        fresh_rows = 0
        for group in date_groups(conn, TREND_POINTS_TABLE, reread, TRENDS_READ_POINTS, key_column=_DAY):
            fresh = trends_at_targets(merge_trend_frontiers([conn.sql(
                f"select * from {TREND_POINTS_TABLE} where list_contains($days, run_date) "
                f"order by {', '.join(points.column_names[:len(GROUP_KEYS) + 2])}, x_intvty",
                params={"days": _days(group)}).to_arrow_table().cast(points.schema)]), targets)
            replace_partitions(conn, "trends", fresh, _days(group), key_column="run_date")
            fresh_rows += fresh.num_rows
            del fresh
        write_table(conn, TREND_TARGETS_TABLE, targets)
        emptied = conn.execute(f"delete from trends where {_DAY} not in "
                               f"(select run_date_partition from run_metrics) returning {_DAY}").fetchall()
        folder = paths.mart_folder(context, "trends")
        dates = restaged_dates(conn, folder, set(reread) | {row[0] for row in emptied}, generation_id(context),
                               f"select distinct {_DAY} from trends")
        written, first, rows, in_range = [], None, 0, 0
        for group in date_groups(conn, "trends", dates, TRENDS_MART_ROWS, key_column=_DAY):
            table = conn.sql("select * from trends where list_contains($days, run_date) "
                             "order by run_date, price_book, model, isl, osl, hw, framework, precision, spec_decoding, "
                             "x_intvty_stat, comparison_id, target_index",
                             params={"days": _days(group)}).to_arrow_table()
            written += write_mart_partitions(table, folder)
            first = table if first is None else first
            rows, in_range = rows + table.num_rows, in_range + (pc.sum(table["in_range"]).as_py() or 0)
    prune_mart_partitions(folder, dates, written)
    keep_openable(folder, TREND_SCHEMA)
    paths.publish_unless_later(context, warehouse)
    folder = paths.published(context, folder)
    why = "targets unchanged" if not moved else "no stored targets" if stored is None else "targets moved"
    context.log.info(f"trends: {fresh_rows} (group, date, target) rows for {len(reread)} dates ({why}) -> {folder}")
    return dg.MaterializeResult(metadata={
        **table_metadata(first if first is not None else TREND_SCHEMA.empty_table(), path=folder, mart="trends",
                         preview_columns=["run_date", "hw", "framework", "precision", "spec_decoding",
                                          "target_intvty", "in_range", "tput_per_gpu"]),
        "dagster/row_count": rows, "comparison_targets": targets.num_rows, "dates_read_again": len(reread),
        "rows_in_range_in_these_dates": in_range})


def _comparison_targets(conn: duckdb.DuckDBPyConnection, tables: set[str]) -> pa.Table:
    """``comparison_targets`` of the warehouse's ``comparisons`` rows of every run (``slo = 'none'``); no rows
    before ``comparisons/matched_comparisons`` ever ran."""
    if "comparisons" not in tables:
        return COMPARISON_TARGET_SCHEMA.empty_table()
    return comparison_targets(conn.sql(f"select {', '.join(COMPARISON_TARGET_SCHEMA.names)} from comparisons "
                                       "where slo = 'none'").to_arrow_table())


def chart_runs(conn: duckdb.DuckDBPyConnection, price_book: str = REPORT_PRICE_BOOK) -> list[dict[str, Any]]:
    """The ``run_metrics`` rows of ``price_book`` a comparison chart draws (side keys, ``x_intvty`` tok/s/user,
    ``tput_per_gpu`` tok/s/GPU) and its hover text needs (``source_file``, ``run_date``, ``conc``, ``tp``, ``ep``,
    ``num_gpus``, ``length_off_nominal``, each where the table has it): one dict per run, in ``run_id`` order.

    Only the runs the frontiers read: those no later sweep of their line superseded (``superseded_by`` null), the
    dashboard's rule (each line's newest run, docs/metrics.md "The dashboard beside ours"). A superseded run drawn
    beside the frontier would be a point above or below it that no frontier could have used.

    Raises:
        duckdb.CatalogException: no ``run_metrics`` table yet (the metrics stage has not run).
    """
    names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
    optional = [c for c in ("source_file", "run_date", "conc", "tp", "ep", "num_gpus", "length_off_nominal",
                            "x_intvty_stat") if c in names]
    current = " and superseded_by is null" if "superseded_by" in names else ""
    return conn.sql(f"select model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type, x_intvty, "
                    f"tput_per_gpu, {', '.join(optional)} from run_metrics where price_book = $book{current} "
                    # run_metrics keeps no row order between runs: in run_id order a page's bytes are the same
                    "order by run_id",
                    params={"book": price_book}).to_arrow_table().to_pylist()


def explorer_runs(conn: duckdb.DuckDBPyConnection, current_only: bool = False) -> pa.Table:
    """The ``run_metrics`` rows the explorer page is built from (``explorer.explorer_data``): every price book, with
    the columns of ``explorer.INPUT_COLUMNS`` the table has (the frontier stage's inputs, ``run_date``,
    ``superseded_by``, ``disagg``, the hover text's configuration, and the page's axes and metrics in their mart
    units: tok/s/user, tok/s/GPU, $/M tokens, tok/s/MW, J/token, s); every run, or with ``current_only`` the runs
    no later sweep superseded (``superseded_by`` null: all the frontiers read).

    Raises:
        duckdb.CatalogException: no ``run_metrics`` table yet (the metrics stage has not run).
    """
    names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
    where = "where superseded_by is null" if current_only else ""
    return conn.sql(f"select {', '.join(c for c in EXPLORER_INPUT_COLUMNS if c in names)} from run_metrics "
                    f"{where} order by price_book, run_id").to_arrow_table()


def explorer_trends(conn: duckdb.DuckDBPyConnection) -> dict[bool, pa.Table]:
    """``explorer.trend_points`` of every run of ``run_metrics`` (the day-by-day frontiers, split by
    ``disagg``), read as the ``trends`` asset reads its runs: only ``explorer.TREND_COLUMNS``, in slices of
    whole frontier groups and lines of at most about ``TRENDS_CHUNK_ROWS`` runs (``TREND_SLICE``), each slice let
    go of once its frontiers are drawn, the slices' frontiers merged (``trends.merge_trend_frontiers``); the
    memory the slices freed is given back (``release_freed_memory``) before it returns.

    Raises:
        duckdb.CatalogException: no ``run_metrics`` table yet.
    """
    names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
    disagg = "coalesce(disagg, false)" if "disagg" in names else "false"
    where = "run_date is not null and not length_off_nominal"  # the trends asset's runs
    rows = conn.execute(f"select count(*) from run_metrics where {where}").fetchall()[0][0]
    parts = max(1, -(-rows // TRENDS_CHUNK_ROWS))
    out = {}
    for split in (False, True):
        tables = [trend_points(conn.sql(
            f"select {', '.join(EXPLORER_TREND_COLUMNS)}, {disagg} as disagg, false as length_off_nominal "
            f"from run_metrics where {where} and {disagg} = $split and {TREND_SLICE} % $parts = $part",
            params={"split": split, "parts": parts, "part": part}).to_arrow_table()).get(split)
            for part in range(parts)]
        tables = [t for t in tables if t is not None]
        if tables:
            out[split] = merge_trend_frontiers(tables)
    # the slices' runs and frontiers are garbage now: give their memory back before the report builds its pages
    # on top of it (the warehouse returns memory only when the step's connection is released)
    release_freed_memory()
    return out


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
    (every current run, the ones the frontiers read, with its file, configuration and date on hover), a CSV
    download and the cross-engine caveat. The pages open from disk (``report/assets/`` holds their script and the
    vendored Chart.js). The index lists the open regressions and improvements of ``comparisons/regressions``
    (status new or ongoing) in a section of its own, and links ``report/explorer.html``: every fully specified
    side's frontier overlaid on any metric, any two compared at typed targets, trends with the regressions marked
    (``comparisons.explorer``, docs/explorer.md; each side's trend in ``report/explorer-trends/``).

    Runs with per-request data get ``report/requests/<run_id>.png`` (TTFT and TPOT CDFs, 640×240) and
    ``report/requests/index.html`` listing them with their SLO outcomes (``comparisons.report.build_request_pages``).

    UI metadata: ``index`` (path), ``pages`` (count: the comparison pages and the explorer),
    ``runs_with_latency_cdfs`` and ``frontier_charts``: every
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
        every_change = (conn.sql("select * from regressions order by first_bad_date desc, series_id, metric")
                        .to_arrow_table().to_pylist() if "regressions" in table_names(conn) else [])
        explorer = explorer_data(explorer_runs(conn, current_only=True), REPORT_PRICE_BOOK, every_change,
                                 trends=explorer_trends(conn))
    changes = [row for row in every_change if row["status"] != "recovered"]
    out = paths.staging(context) / "report"
    # the staged folder starts as hard links to the published pages (pipeline.io.generations), and the pages are
    # written in place: emptied first, every page written is a new file and the published ones stay as they were
    shutil.rmtree(out, ignore_errors=True)
    pages = [paths.published(context, page) for page in build_report(comparisons, frontiers, runs, out,
                                                                     regressions=changes, explorer=explorer)]
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
