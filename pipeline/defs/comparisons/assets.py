"""Comparisons stage: matched-interactivity comparison tables, the pipeline's main product."""


from collections import Counter

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.compare import NO_SLO, compare_all_slos, split_by_slo
from pipeline.comparisons.report import (
    REPORT_PRICE_BOOK,
    comparison_tables_markdown,
    headline_comparison_ids,
    headlines_markdown,
)
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.io.storage import read_table, write_parquet_atomic, write_table

COMPARISONS_KEY = dg.AssetKey(["comparisons", "matched_comparisons"])


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
    ``sparse_frontier`` (splined cost > 5 % off the cost the splined tok/s/GPU implies), ``bracket_ratio`` and
    ``cell_basis`` (measured, interpolated, interpolated_gap: neighbours > 1.5× apart or sparse, clamped), the
    bracketing points' ``*_repeat_spread``, ``cell_note``; per side ``side_runs`` and ``excluded_runs`` (left
    off for lengths off nominal, sql/run_lengths.sql, or another x-axis statistic); 95 % intervals of tok/s/GPU
    and of each tier's cost where repeats give them. Sentences as the pages write them (hyperscaler cost;
    ``compare.sentences``: the ratio form at N ≥ 100, "within run-to-run noise" where the intervals overlap),
    ending with the cells' notes when there are any
    (docs/metrics.md).
    Warehouse table ``comparisons``, column ``slo``: ``none`` for comparisons of every run's frontiers (the
    default rows), else the SLO whose frontiers (``frontiers.slo``) the row compares; a comparison whose side has
    no frontier under an SLO has no rows for it.
    Marts (``pipeline.frontiers.points.split_by_slo``): ``comparisons.parquet``, the ``none`` rows without the
    ``slo`` column (one row per comparison, price book, target and side), and ``comparisons_slo.parquet``, the
    SLO-restricted rows keyed by ``slo``.

    UI metadata: ``headlines``, each kind's headline comparison (the report index's choice: most runs, both
    middle-target cells measured) under its full title with its sentences at the middle target (their charts
    lead the report asset's ``frontier_charts``, drawn there once rather than here again); one table per
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
    every_run, restricted = split_by_slo(table)
    path = paths.published(context, write_parquet_atomic(every_run, paths.mart(context, "comparisons")))
    write_parquet_atomic(restricted, paths.mart(context, "comparisons_slo"))
    paths.publish_unless_later(context, warehouse)
    n_comparisons = len(set(table.column("comparison_id").to_pylist()))
    context.log.info(f"{n_comparisons} comparisons, {table.num_rows} rows -> {path}")
    kinds = Counter(r["kind"] for r in rows if r["side"] == "a" and r["target_index"] == 1)
    return dg.MaterializeResult(metadata={
        "headlines": dg.MetadataValue.md(
            f"Headline comparison per kind ({len(headlines)} of {n_comparisons}; price book {REPORT_PRICE_BOOK}; "
            f"their charts lead `comparisons/report` → `frontier_charts`, every chart is in the HTML report)"
            f"\n\n{headlines_markdown(default_rows, headlines)}" if headlines
            else "No comparison has both middle-target cells measured."),
        **table_metadata(table, path=path, mart="comparisons", preview_rows=24, preview_columns=[
            "title", "model", "side_label", "target_intvty", "tput_per_gpu", "cost_per_mtok_hyperscaler",
            "tok_s_per_mw", "concurrency", "cost_sentence"]),
        "comparisons": n_comparisons,
        "comparison_tables": dg.MetadataValue.md(comparison_tables_markdown(default_rows)),
        "comparisons_by_kind": counts_markdown(dict(kinds), "kind"),
    })
