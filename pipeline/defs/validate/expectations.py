"""The Great Expectations suite (pipeline.validate.expectations) as Dagster asset checks on ``validate/accepted_runs``."""

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.validate.assets import VALIDATED_KEY
from pipeline.io.storage import read_table
from pipeline.validate.expectations import build_suite, run_suite

# the specs need only each expectation's name, severity and reason; the GPU keys the hw check holds runs to are
# read from the warehouse's gpu_reference when the check runs
_SUITE = build_suite(known_hw=())


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(item.name, asset=VALIDATED_KEY, blocking=item.blocking,
                          description=f"{'Blocking' if item.blocking else 'Warning'}: {item.why}.")
        for item in _SUITE
    ],
)
def validated_runs_expectations(warehouse: DuckDBResource):
    """Run the GX suite once and report each expectation as its own check, with GX's statistics as metadata."""
    with warehouse.get_connection() as conn:
        runs = read_table(conn, "validated_runs")
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
    for outcome in run_suite(runs, known_hw):
        yield dg.AssetCheckResult(
            asset_key=VALIDATED_KEY,
            check_name=outcome.name,
            passed=outcome.success,
            severity=dg.AssetCheckSeverity.ERROR if outcome.blocking else dg.AssetCheckSeverity.WARN,
            metadata={
                "element_count": outcome.element_count,
                "unexpected_count": outcome.unexpected_count,
                "unexpected_percent": outcome.unexpected_percent,
                "examples": dg.MetadataValue.json(outcome.examples),
                "engine": "great_expectations 1.x (ephemeral context)",
            },
        )
