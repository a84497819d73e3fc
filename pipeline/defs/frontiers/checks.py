"""Checks of the frontiers stage."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.frontiers.assets import FRONTIERS_KEY


@dg.asset_check(asset=FRONTIERS_KEY, blocking=True, description=(
    "Blocking: along every frontier, interactivity strictly increases and tok/s/GPU strictly decreases "
    "(the interpolation assumes it)."))
def frontier_strictly_monotone(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        bad = conn.execute("""
            select side_id, point_index from (
                select side_id, point_index, x_intvty, tput_per_gpu,
                       lag(x_intvty) over w as prev_x, lag(tput_per_gpu) over w as prev_y
                from frontiers window w as (partition by side_id, price_book, slo order by point_index)
            ) where prev_x is not null and (x_intvty <= prev_x or tput_per_gpu >= prev_y)
        """).fetchall()
    return dg.AssetCheckResult(passed=not bad, severity=dg.AssetCheckSeverity.ERROR,
                               metadata={"violations": len(bad), "examples": dg.MetadataValue.json(bad[:5])})
