"""Frontiers stage: the Pareto frontier of every side that some comparison needs."""

from datetime import date

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import table_metadata
from pipeline.frontiers.points import (
    FRONTIER_INPUT_COLUMNS,
    NO_SLO,
    build_frontiers,
    split_by_slo,
    with_slo,
)
from pipeline.frontiers.sides import enumerate_comparisons
from pipeline.io.storage import table_names, write_parquet_atomic, write_table

FRONTIERS_KEY = dg.AssetKey(["frontiers", "pareto_frontiers"])


def met_runs_by_slo(conn) -> dict[str, list[str]]:
    """{SLO name: run_ids that meet it} from the warehouse's ``run_slo`` (``slo_met`` true), every SLO of the
    ``slos`` table listed (an SLO no run meets maps to []); {} before ``metrics/run_slo`` ever ran."""
    tables = table_names(conn)
    if not {"slos", "run_slo"} <= tables:
        return {}
    met: dict[str, list[str]] = {row[0]: [] for row in conn.execute("select name from slos order by name").fetchall()}
    for slo, run_id in conn.execute("select slo, run_id from run_slo where slo_met order by slo, run_id").fetchall():
        if slo in met:
            met[slo].append(run_id)
    return met


class FrontierConfig(dg.Config):
    """Run config of ``frontiers/pareto_frontiers``: ``as_of`` (``YYYY-MM-DD``) rebuilds the frontiers, and the
    comparisons read from them, as they stood that day (runs dated later unseen); empty = every run."""

    as_of: str = ""


@dg.asset(
    key=FRONTIERS_KEY,
    group_name="frontiers",
    kinds={"python", "duckdb", "parquet"},
    deps=[dg.AssetKey(["metrics", "run_metrics"]), dg.AssetKey(["metrics", "run_slo"])],
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

    Warehouse table ``frontiers``, column ``slo`` (text): ``none`` for the frontiers of every run (the default
    rows), else the name of an SLO of ``slos.csv``: the same sides built from the current runs that meet it
    (``run_slo.slo_met``; the latest-sweep rule is decided on every run first). A side whose runs all fail an SLO
    has no rows for it. ``side_id`` is the same in every ``slo``.
    Marts (``pipeline.frontiers.points.split_by_slo``): ``frontiers.parquet``, the ``none`` rows without the
    ``slo`` column (one grain), and ``frontiers_slo.parquet``, the SLO-restricted rows keyed by ``slo``.
    """
    columns = ", ".join(FRONTIER_INPUT_COLUMNS)
    try:
        as_of = date.fromisoformat(config.as_of) if config.as_of else None
    except ValueError as exc:
        raise ValueError(f"frontiers run config as_of={config.as_of!r}: not a YYYY-MM-DD date") from exc
    # today's frontiers need only the runs current now (``superseded_by`` null, kept by metrics/run_metrics): the
    # latest-sweep rule over them picks the same runs as over the history, ~1/days of the rows
    current_only = "" if as_of else "where superseded_by is null"
    with warehouse.get_connection() as conn:
        runs = conn.sql(f"select {columns} from run_metrics {current_only} order by price_book, run_id").to_arrow_table()
        configs = conn.sql("select distinct model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type "
                           "from run_metrics").to_arrow_table().to_pylist()
        comparisons = enumerate_comparisons(configs)
        sides = [side for c in comparisons for side in (c.a, c.b)]
        met = met_runs_by_slo(conn)
        table = pa.concat_tables(
            [with_slo(build_frontiers(runs, sides, as_of), NO_SLO)]
            + [with_slo(build_frontiers(runs, sides, as_of, only_runs=ids), slo) for slo, ids in met.items()])
        write_table(conn, "frontiers", table)
    every_run, restricted = split_by_slo(table)
    path = paths.published(context, write_parquet_atomic(every_run, paths.mart(context, "frontiers")))
    write_parquet_atomic(restricted, paths.mart(context, "frontiers_slo"))
    paths.publish_unless_later(context, warehouse)
    sides = len(set(table.column("side_id").to_pylist()))
    context.log.info(f"{sides} sides, {table.num_rows} frontier points"
                     f"{f' as of {config.as_of}' if config.as_of else ''} -> {path}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=path, mart="frontiers", preview_columns=["side_id", "point_index", "x_intvty",
                                                            "tput_per_gpu", "concurrency"]),
        "sides": sides,
    })
