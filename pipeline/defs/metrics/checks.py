"""Checks of the metrics stage."""


import dagster as dg
from dagster_duckdb import DuckDBResource

RUN_METRICS_KEY = dg.AssetKey(["metrics", "run_metrics"])


@dg.asset_check(asset=RUN_METRICS_KEY, blocking=True, description=(
    "Blocking: every run has finite, positive tok/s/GPU, median interactivity, $/M tokens and tok/s/MW, and "
    "every validated run has metrics in every price book (a run lost in a join would vanish from the frontiers)."))
def metrics_finite_and_positive(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        bad, total, validated = conn.execute("""
            select
                count(*) filter (where not (isfinite(tput_per_gpu) and tput_per_gpu > 0
                    and isfinite(median_intvty) and median_intvty > 0
                    and isfinite(cost_per_mtok_hyperscaler) and cost_per_mtok_hyperscaler > 0
                    and isfinite(tok_s_per_mw) and tok_s_per_mw > 0) or tput_per_gpu is null),
                count(*),
                (select count(*) from validated_runs) * (select count(distinct price_book) from price_books)
            from run_metrics
        """).fetchone()
    return dg.AssetCheckResult(
        passed=bad == 0 and total == validated,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"bad_rows": bad, "run_metrics_rows": total, "expected_rows": validated},
    )
