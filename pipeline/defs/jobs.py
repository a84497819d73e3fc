"""Jobs, and the executor every job of this code location runs its steps with.

``refresh_all`` materializes every asset (and runs every check) in dependency order; the partition backfills of
the UI and of ``dagster asset materialize`` run Dagster's implicit asset job. Launched by the daemon, the UI or
``dagster asset materialize``, a run takes one process per step, independent steps at once (the CLI runs
``refresh_all`` in process, as one run). Steps fork from a forkserver that has already imported the code location
(every module of the defs folder) and Great Expectations, so a step does not import them again as it would under
Dagster's default ``spawn`` (where importing GX is most of a step's start).

Run config ``execution: {config: {in_process: true}}`` runs every step of one run in the run's own process
instead (``STEP_EXECUTOR``): no process start per step, which is most of a small run's time (a night's sensor
run, a one-partition backfill). The sensor's runs ask for it (``IN_PROCESS_RUN_CONFIG``); a backfill takes it as
``dagster asset materialize … --config-json '{"execution": {"config": {"in_process": true}}}'``. Either way every
warehouse-writing step waits for the pool ``duckdb_warehouse`` (``dagster.yaml``, limit 1), in-process steps too,
so parallel runs still take turns on the warehouse.
"""

from pathlib import Path
from typing import Any

import dagster as dg


def defs_folder_modules() -> list[str]:
    """The dotted names of every module of ``pipeline/defs`` (package ``__init__`` files left out), read from the
    folder without importing them: what ``pipeline.definitions.defs`` imports when it loads the code location."""
    root = Path(__file__).parent
    return sorted(".".join(("pipeline", "defs", *path.relative_to(root).with_suffix("").parts))
                  for path in root.rglob("*.py") if path.name != "__init__.py")


# The modules a multiprocess run's forkserver imports once, before it forks a process per step: the code location
# (each step's process loads the job again, which imports every module of the defs folder) and Great Expectations
# (imported where the suite runs).
PRELOADED = ["pipeline.definitions", *defs_folder_modules(), "great_expectations"]


def _executor_config(config: dict[str, Any]) -> dict[str, Any]:
    """Dagster's ``multi_or_in_process_executor`` config for this location's one switch, ``in_process``."""
    if config["in_process"]:
        return {"in_process": {}}
    return {"multiprocess": {"start_method": {"forkserver": {"preload_modules": PRELOADED}}}}


STEP_EXECUTOR = dg.multi_or_in_process_executor.configured(
    _executor_config, config_schema={"in_process": dg.Field(bool, default_value=False, description=(
        "run every step in the run's own process (no process per step; for small runs such as the sensor's)"))})
# the run config a run asks for to run its steps in its own process
IN_PROCESS_RUN_CONFIG = {"execution": {"config": {"in_process": True}}}

refresh_all = dg.define_asset_job(
    "refresh_all",
    selection=dg.AssetSelection.all(),
    description="Ingest → validate → metrics → frontiers → comparisons over PIPELINE_RAW_DIR.",
)


@dg.definitions
def executor() -> dg.Definitions:
    """The code location's default executor: every job without its own, the implicit asset job included."""
    return dg.Definitions(executor=STEP_EXECUTOR)
