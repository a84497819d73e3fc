"""Comparisons stage: matched-interactivity comparison tables, the pipeline's main product."""


from collections import Counter, defaultdict

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.comparisons import COMPARISON_SCHEMA, compare, enumerate_comparisons, frontiers_by_side
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.reference import DEFAULT_PRICE_BOOK
from pipeline.storage import read_table, write_parquet_atomic, write_table

COMPARISONS_KEY = dg.AssetKey(["marts", "comparisons"])
MAX_TABLES_IN_UI = 60


def comparison_tables_markdown(rows: list[dict]) -> str:
    """One small Markdown table per comparison (the seed pages' Throughput / Cost / tok/s/MW / Concurrency at the
    targets), the first ``MAX_TABLES_IN_UI`` of them; the rest are in the mart and the HTML report."""
    by_id: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_id[row["comparison_id"]].append(row)
    parts = []
    for comparison_id in sorted(by_id)[:MAX_TABLES_IN_UI]:
        mine = sorted(by_id[comparison_id], key=lambda r: (r["target_index"], r["side"]))
        first = mine[0]
        parts.append(f"**{first['title']}** ({first['model']} {first['isl']}/{first['osl']})\n\n"
                     "| target | side | tok/s/GPU | $/M tok | tok/s/MW | conc |\n|---|---|---|---|---|---|")
        parts += [f"| {r['target_intvty']:g} | {r['side_label']} | {r['tput_per_gpu']:,.1f} | "
                  f"{r['cost_per_mtok_hyperscaler']:.3f} | {r['tok_s_per_mw']:,.0f} | {r['concurrency']:.1f} |"
                  for r in mine]
        parts.append(f"\n{mine[-1]['cost_sentence']}; {mine[-1]['tput_sentence']} (at {mine[-1]['target_intvty']:g})\n")
    if len(by_id) > MAX_TABLES_IN_UI:
        parts.append(f"… {len(by_id) - MAX_TABLES_IN_UI} more comparisons in comparisons.parquet and the report")
    return "\n".join(parts)


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
    ``tok_s_per_mw``, ``concurrency`` (unrounded). Sentences as the pages write them (hyperscaler cost).
    Mart: ``comparisons.parquet``.
    """
    with warehouse.get_connection() as conn:
        runs = conn.sql(
            "select distinct model, isl, osl, hw, precision, spec_decoding, framework from run_metrics"
        ).to_arrow_table().to_pylist()
        frontier_rows = read_table(conn, "frontiers").to_pylist()
        books: dict[str, list[dict]] = defaultdict(list)
        for row in frontier_rows:
            books[row["price_book"]].append(row)
        comparisons_found = enumerate_comparisons(runs)
        rows = [row for book in sorted(books) for by_side in [frontiers_by_side(books[book])]
                for c in comparisons_found for row in compare(c, by_side)]
        table = pa.Table.from_pylist(rows, schema=COMPARISON_SCHEMA)
        write_table(conn, "comparisons", table)
    path = write_parquet_atomic(table, paths.mart("comparisons"))
    n_comparisons = len(set(table.column("comparison_id").to_pylist()))
    context.log.info(f"{n_comparisons} comparisons, {table.num_rows} rows -> {path}")
    kinds = Counter(r["kind"] for r in rows if r["side"] == "a" and r["target_index"] == 1)
    default_rows = [r for r in rows if r["price_book"] == DEFAULT_PRICE_BOOK]
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=path, preview_rows=24, preview_columns=[
            "title", "model", "side_label", "target_intvty", "tput_per_gpu", "cost_per_mtok_hyperscaler",
            "tok_s_per_mw", "concurrency", "cost_sentence"]),
        "comparisons": n_comparisons,
        "comparison_tables": dg.MetadataValue.md(comparison_tables_markdown(default_rows)),
        "comparisons_by_kind": counts_markdown(dict(kinds), "kind"),
    })
