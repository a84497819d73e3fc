"""Jobs, and the executor every job of this code location runs its steps with.

``refresh_all`` materializes every asset (and runs every check) in dependency order; the partition backfills of
the UI and of ``dagster asset materialize`` run Dagster's implicit asset job. Launched by the daemon, the UI or
``dagster asset materialize``, a run takes one process per step, independent steps at once (the CLI runs
``refresh_all`` in process, as one run). Steps fork from a forkserver that has already imported the code location
and Great Expectations, so a step does not import them again as it would under Dagster's default ``spawn``
(where importing GX is most of a step's start).
"""

import dagster as dg

STEP_EXECUTOR = dg.multiprocess_executor.configured({"start_method": {"forkserver": {
    "preload_modules": ["pipeline.definitions", "great_expectations"]}}})

refresh_all = dg.define_asset_job(
    "refresh_all",
    selection=dg.AssetSelection.all(),
    description="Ingest → validate → metrics → frontiers → comparisons over PIPELINE_RAW_DIR.",
)


@dg.definitions
def executor() -> dg.Definitions:
    """The code location's default executor: every job without its own, the implicit asset job included."""
    return dg.Definitions(executor=STEP_EXECUTOR)
