"""Jobs: one that materializes every asset (and runs every check) in dependency order."""

import dagster as dg

refresh_all = dg.define_asset_job(
    "refresh_all",
    selection=dg.AssetSelection.all(),
    description="Ingest → validate → metrics → frontiers → comparisons over PIPELINE_RAW_DIR.",
)
