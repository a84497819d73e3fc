"""Resources shared by every stage: the DuckDB warehouse and the raw/mart folders, configured by env var
(``PIPELINE_DB_PATH``, ``PIPELINE_RAW_DIR``, ``PIPELINE_OUT_DIR``; DESIGN.md §2)."""


from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.paths import env_path

# Every asset that writes the warehouse runs in this pool; dagster.yaml limits it to 1 (DuckDB has one writer).
WAREHOUSE_POOL = "duckdb_warehouse"


class PipelinePaths(dg.ConfigurableResource):
    """Folders the pipeline reads and writes.

    Attributes:
        raw_dir: scanned recursively for raw logs, sidecars, manifests.
        out_dir: where the Parquet marts (``runs``, ``quarantine``, ``frontiers``, ``comparisons``) are written.
    """

    raw_dir: str
    out_dir: str

    def mart(self, name: str) -> Path:
        """Path of mart ``<out_dir>/<name>.parquet``."""
        return Path(self.out_dir) / f"{name}.parquet"


def warehouse_resource() -> DuckDBResource:
    """The DuckDB warehouse at ``PIPELINE_DB_PATH`` (its folder created if missing)."""
    database = env_path("PIPELINE_DB_PATH")
    Path(database).parent.mkdir(parents=True, exist_ok=True)
    return DuckDBResource(database=database)


def paths_resource() -> PipelinePaths:
    """Raw and mart folders from ``PIPELINE_RAW_DIR`` / ``PIPELINE_OUT_DIR``."""
    return PipelinePaths(raw_dir=env_path("PIPELINE_RAW_DIR"), out_dir=env_path("PIPELINE_OUT_DIR"))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"warehouse": warehouse_resource(), "paths": paths_resource()})
