"""Comparisons stage: matched-interactivity comparison tables, the pipeline's main product."""


import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.compare import NO_SLO, compare_all_slos
from pipeline.comparisons.report import (
    REPORT_PRICE_BOOK,
    charts_markdown,
    comparison_tables_markdown,
    headline_comparison_ids,
    side_keys_filter,
)
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.io.storage import read_table, write_parquet_atomic, write_table

COMPARISONS_KEY = dg.AssetKey(["comparisons", "matched_comparisons"])


def chart_runs(conn: duckdb.DuckDBPyConnection, price_book: str = REPORT_PRICE_BOOK,
               sides_of: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The ``run_metrics`` rows of ``price_book`` a comparison chart draws (side keys, ``x_intvty`` tok/s/user,
    ``tput_per_gpu`` tok/s/GPU) and its hover text needs (``source_file``, ``run_date``, ``conc``, ``tp``, ``ep``,
    ``num_gpus``, ``length_off_nominal``, each where the table has it): one dict per run.

    Args:
        sides_of: comparison rows whose sides will be drawn: only runs with one of their sides' fixed keys are
            read (``side_keys_filter``; the chart matches the pooled ones). None: every run.
    Raises:
        duckdb.CatalogException: no ``run_metrics`` table yet (the metrics stage has not run).
    """
    names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
    optional = [c for c in ("source_file", "run_date", "conc", "tp", "ep", "num_gpus", "length_off_nominal")
                if c in names]
    narrowed = ""
    if sides_of is not None:
        keys, condition = side_keys_filter(sides_of)
        conn.register("_chart_sides", keys)
        narrowed = f" and exists (select 1 from _chart_sides s where {condition})"
    try:
        return conn.sql(f"select model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type, x_intvty, "
                        f"tput_per_gpu, {', '.join(optional)} from run_metrics r where price_book = $book{narrowed}",
                        params={"book": price_book}).to_arrow_table().to_pylist()
    finally:
        if sides_of is not None:
            conn.unregister("_chart_sides")



@dg.asset(
    key=COMPARISONS_KEY,
    group_name="comparisons",
    kinds={"python", "duckdb", "parquet"},
    deps=[dg.AssetKey(["frontiers", "pareto_frontiers"]), dg.AssetKey(["metrics", "run_metrics"])],
    pool=WAREHOUSE_POOL,
)
def comparisons(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Matched-interactivity comparisons, as the InferenceX seed pages ("MI355X FP4: MTP vs Off") compute them.

    Grain: one row per (comparison, target, side). For each kind (spec_decoding, precision, hardware, framework)
    and every (model, isl, osl) where both sides have runs: the band (``band_min``/``band_max`` unrounded,
    ``band_display_*`` = ceil/floor), three default targets (25/50/75 % of the band, rounded half up,
    tok/s/user), and per side the frontier values at each target by monotone cubic (Steffen) interpolation,
    target clamped into the side's frontier range (``target_clamped``) and values into the metric's range:
    ``tput_per_gpu``/``output_tput_per_gpu``/``input_tput_per_gpu`` (tok/s/GPU), ``cost_per_mtok_*`` ($/M tokens),
    ``tok_s_per_mw``, ``concurrency`` (unrounded). Honest cells: ``bracket_lo_intvty``/``bracket_hi_intvty``
    (the measured frontier points around the target), ``implied_cost_per_mtok_hyperscaler`` and
    ``sparse_frontier`` (splined cost > 5 % off the cost the splined tok/s/GPU implies), ``cell_note``; per side
    ``side_runs`` and ``excluded_runs`` (left off for measured ISL/OSL > 10 % off nominal). Sentences as the pages
    write them (hyperscaler cost), ending with the clamped/sparse caveat when there is one (docs/metrics.md).
    Column ``slo``: ``none`` for comparisons of every run's frontiers (the default rows), else the SLO whose
    frontiers (``frontiers.slo``) the row compares; a comparison whose side has no frontier under an SLO has no
    rows for it.
    Mart: ``comparisons.parquet``.

    UI metadata: ``headline_charts``, the frontier chart of each kind's headline comparison (the report index's
    choice: most runs, both middle-target cells measured) under its full title with its sentences; one table per
    comparison (``comparison_tables``); counts by kind.
    """
    with warehouse.get_connection() as conn:
        runs = conn.sql(
            "select distinct model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type from run_metrics"
        ).to_arrow_table().to_pylist()
        frontier_rows = read_table(conn, "frontiers").to_pylist()
        table = compare_all_slos(runs, frontier_rows)
        write_table(conn, "comparisons", table)
        rows = [r for r in table.to_pylist() if r["slo"] == NO_SLO]
        default_rows = [r for r in rows if r["price_book"] == REPORT_PRICE_BOOK]
        headlines = headline_comparison_ids(default_rows)
        # only the headline comparisons' runs are drawn here (the report asset draws every page)
        runs_for_charts = chart_runs(conn, sides_of=[r for r in default_rows if r["comparison_id"] in headlines])
    path = paths.published(context, write_parquet_atomic(table, paths.mart(context, "comparisons")))
    paths.publish_unless_later(context)
    n_comparisons = len(set(table.column("comparison_id").to_pylist()))
    context.log.info(f"{n_comparisons} comparisons, {table.num_rows} rows -> {path}")
    kinds = Counter(r["kind"] for r in rows if r["side"] == "a" and r["target_index"] == 1)
    with tempfile.TemporaryDirectory() as tmp:
        charts = charts_markdown(default_rows, [r for r in frontier_rows if r["price_book"] == REPORT_PRICE_BOOK
                                                and r.get("slo", NO_SLO) == NO_SLO],
                                 runs_for_charts, headlines, Path(tmp))
    return dg.MaterializeResult(metadata={
        "headline_charts": dg.MetadataValue.md(
            f"Headline comparison per kind ({len(headlines)} of {n_comparisons}; price book {REPORT_PRICE_BOOK}; "
            f"every chart is on the report asset and in the HTML report)\n\n{charts}" if headlines
            else "No comparison has both middle-target cells measured."),
        **table_metadata(table, path=path, mart="comparisons", preview_rows=24, preview_columns=[
            "title", "model", "side_label", "target_intvty", "tput_per_gpu", "cost_per_mtok_hyperscaler",
            "tok_s_per_mw", "concurrency", "cost_sentence"]),
        "comparisons": n_comparisons,
        "comparison_tables": dg.MetadataValue.md(comparison_tables_markdown(default_rows)),
        "comparisons_by_kind": counts_markdown(dict(kinds), "kind"),
    })
