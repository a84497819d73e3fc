"""Checks of the metrics stage."""


import dagster as dg
from dagster_duckdb import DuckDBResource

RUN_METRICS_KEY = dg.AssetKey(["metrics", "run_metrics"])


@dg.asset_check(asset=RUN_METRICS_KEY, blocking=True, description=(
    "Blocking: every run has finite, positive tok/s/GPU, frontier interactivity (x_intvty), $/M tokens and tok/s/MW, and "
    "every validated run of a run date that has metrics has them in every price book (a run lost in a join "
    "would vanish from the frontiers). Dates with no metrics yet are not yet materialized, not wrong: another "
    "run may be between their validation and their metrics."))
def metrics_finite_and_positive(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        bad, total = conn.execute("""
            select
                count(*) filter (where not (isfinite(tput_per_gpu) and tput_per_gpu > 0
                    and isfinite(x_intvty) and x_intvty > 0
                    and isfinite(cost_per_mtok_hyperscaler) and cost_per_mtok_hyperscaler > 0
                    and isfinite(tok_s_per_mw) and tok_s_per_mw > 0) or tput_per_gpu is null),
                count(*)
            from run_metrics
        """).fetchone()
        missing = conn.execute("""
            select count(*)
            from validated_runs v
            cross join (select distinct price_book from price_books) b
            where v.run_date_partition in (select run_date_partition from run_metrics)
              and not exists (select 1 from run_metrics m where m.run_id = v.run_id and m.price_book = b.price_book)
        """).fetchone()[0]
    return dg.AssetCheckResult(
        passed=bad == 0 and missing == 0,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"bad_rows": bad, "run_metrics_rows": total, "missing_run_book_rows": missing},
    )
