"""Frontiers stage: the Pareto frontier of every side that some comparison needs."""

from datetime import date

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import table_metadata
from pipeline.frontiers.points import FRONTIER_INPUT_COLUMNS, build_frontiers
from pipeline.frontiers.sides import enumerate_comparisons
from pipeline.io.storage import write_parquet_atomic, write_table

FRONTIERS_KEY = dg.AssetKey(["frontiers", "pareto_frontiers"])


class FrontierConfig(dg.Config):
    """Run config of ``frontiers/pareto_frontiers``: ``as_of`` (``YYYY-MM-DD``) rebuilds the frontiers, and the
    comparisons read from them, as they stood that day (runs dated later unseen); empty = every run."""

    as_of: str = ""


@dg.asset(
    key=FRONTIERS_KEY,
    group_name="frontiers",
    kinds={"python", "duckdb", "parquet"},
    deps=[dg.AssetKey(["metrics", "run_metrics"])],
    pool=WAREHOUSE_POOL,
)
def frontiers(context: dg.AssetExecutionContext, config: FrontierConfig, warehouse: DuckDBResource,
              paths: PipelinePaths) -> dg.MaterializeResult:
    """Pareto frontiers (x = ``x_intvty``, tok/s/user: median interactivity, or E2E-normalized interactivity for
    agentic-trace sides; y = tok/s/GPU) per side (docs/metrics.md).

    Grain: one row per (side, frontier point), ``point_index`` 0… in ascending interactivity; y strictly decreasing.
    Only each line's latest sweep counts, repeats averaged with 95 % Student-t intervals
    (``pipeline.frontiers.latest``, docs/metrics.md "Latest run per line"); run config ``as_of`` (YYYY-MM-DD)
    builds them as they stood that day.
    A side is (model, isl, osl, benchmark_type, hw, precision, spec_decoding, framework) with ``all`` for pooled
    keys; each row
    carries the side's run count and interactivity range over all its runs (for bands) and the metrics splined
    by the comparisons: tok/s/GPU (total/output/input), $/M tokens (three tiers; total, output and input), tok/s/MW
    (all-in and measured), concurrency.
    Mart: ``frontiers.parquet``.
    """
    columns = ", ".join(FRONTIER_INPUT_COLUMNS)
    with warehouse.get_connection() as conn:
        runs = conn.sql(f"select {columns} from run_metrics order by price_book, run_id").to_arrow_table()
        configs = conn.sql("select distinct model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type "
                           "from run_metrics").to_arrow_table().to_pylist()
        comparisons = enumerate_comparisons(configs)
        try:
            as_of = date.fromisoformat(config.as_of) if config.as_of else None
        except ValueError as exc:
            raise ValueError(f"frontiers run config as_of={config.as_of!r}: not a YYYY-MM-DD date") from exc
        table = build_frontiers(runs, [side for c in comparisons for side in (c.a, c.b)], as_of)
        write_table(conn, "frontiers", table)
    path = paths.published(context, write_parquet_atomic(table, paths.mart(context, "frontiers")))
    paths.publish_unless_later(context)
    sides = len(set(table.column("side_id").to_pylist()))
    context.log.info(f"{sides} sides, {table.num_rows} frontier points"
                     f"{f' as of {config.as_of}' if config.as_of else ''} -> {path}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=path, mart="frontiers", preview_columns=["side_id", "point_index", "x_intvty",
                                                            "tput_per_gpu", "concurrency"]),
        "sides": sides,
    })
