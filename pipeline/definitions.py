"""Dagster entry point: every asset, check, job and resource under ``pipeline/defs/``, one folder per stage."""

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


def refresh_all_job() -> dg.JobDefinition:
    """The ``refresh_all`` job, for ``dg.reconstructable`` (``dg.execute_job`` re-creates it in every step's
    process, as the daemon does)."""
    return defs().resolve_job_def("refresh_all")
