"""The Great Expectations suite (pipeline.validate.expectations) as Dagster asset checks on ``validate/accepted_runs``."""

from collections.abc import Iterator

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.defs.validate.assets import VALIDATED_KEY
from pipeline.validate.expectations import build_suite, stored_duplicates_by_run_id, suite_chunks
from pipeline.validate.suite_process import InProcessSuite, SuiteProcessGone, SuiteRunner

# the specs need only each expectation's name, severity and reason; the GPU keys the hw check holds runs to are
# read from the warehouse's gpu_reference when the check runs, the model keys from the plausibility reference
_SUITE = build_suite(known_hw=(), known_models=())


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(item.name, asset=VALIDATED_KEY, blocking=item.blocking,
                          description=f"{'Blocking' if item.blocking else 'Warning'}: {item.why}.")
        for item in _SUITE
    ],
)
def validated_runs_expectations(warehouse: DuckDBResource, expectation_suite: dg.ResourceParam[SuiteRunner]):
    """Run the GX suite once and report each expectation as its own check, with GX's statistics as metadata.
    ``expectation_suite`` is where it runs (``pipeline.validate.suite_process``: this process, or a process the
    run started before its first step); when that process has gone away the suite runs here instead (logged), so
    the outcomes are the same either way.

    The runs are read and validated in ``suite_chunks`` slices split by a hash of ``run_id`` (so every copy of
    one ``run_id`` meets in one slice, as ``run_id_unique`` needs): GX holds a slice as pandas, several times its
    Arrow size, so the whole table at once would set the process's peak. The duplicate rule runs first, over
    every run (``stored_duplicates_by_run_id``: its search columns read for the runs that could pair only).

    Raises:
        RuntimeError: the slices did not hold every row of ``validated_runs`` exactly once.
    """
    with warehouse.get_connection() as conn:
        total = conn.execute("select count(*) from validated_runs").fetchall()[0][0]
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
        duplicate_of = stored_duplicates_by_run_id(conn)
        parts = suite_chunks(total)
        seen: list[int] = []

        def chunks() -> Iterator[pa.Table]:
            seen.clear()  # read whole again when the suite runs again here
            for part in range(parts):
                chunk = conn.sql("select * from validated_runs where coalesce(hash(run_id), 0) % $parts = $part",
                                 params={"parts": parts, "part": part}).to_arrow_table()
                seen.append(chunk.num_rows)
                yield chunk

        where = expectation_suite.where
        try:
            outcomes = expectation_suite.run_suite(chunks(), known_hw, duplicate_of)
        except SuiteProcessGone as exc:
            dg.get_dagster_logger().warning(f"{exc}; running the suite in this process instead")
            where = f"{InProcessSuite.where} (its own process had ended)"
            outcomes = InProcessSuite().run_suite(chunks(), known_hw, duplicate_of)
    if sum(seen) != total:
        raise RuntimeError(f"the GX suite's {parts} slices of validated_runs held {sum(seen)} rows of {total}")
    for outcome in outcomes:
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
                "engine": f"great_expectations 1.x (ephemeral context), {where}",
            },
        )
