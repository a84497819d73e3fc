"""Resources shared by every stage: the DuckDB warehouse and the raw/mart folders, configured by env var
(``PIPELINE_DB_PATH``, ``PIPELINE_RAW_DIR``, ``PIPELINE_OUT_DIR``; docs/inputs.md)."""


import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipeline.io.paths import env_path, parse_cache_dir

# Every asset that writes the warehouse runs in this pool; dagster.yaml limits it to 1 (DuckDB has one writer).
WAREHOUSE_POOL = "duckdb_warehouse"


class PipelinePaths(dg.ConfigurableResource):
    """Folders the pipeline reads and writes.

    Attributes:
        raw_dir: scanned recursively for raw logs, sidecars, manifests.
        out_dir: where the Parquet marts (``runs``, ``quarantine``, ``frontiers``, ``comparisons``) are written.
        cache_dir: the parse cache (``pipeline.ingest.parse_cache``): what each raw file gave when last parsed.
    """

    raw_dir: str
    out_dir: str
    cache_dir: str

    def mart(self, name: str) -> Path:
        """Path of the single-file mart ``<out_dir>/<name>.parquet``."""
        return Path(self.out_dir) / f"{name}.parquet"

    def mart_folder(self, name: str) -> Path:
        """Folder of the partitioned mart ``<out_dir>/<name>/`` (``<model>/<run_date or undated>/part-0.parquet``)."""
        return Path(self.out_dir) / name


class WarehouseLockedError(RuntimeError):
    """Another process holds the DuckDB warehouse's write lock (a second materialization at the same time)."""


class Warehouse(DuckDBResource):
    """The DuckDB warehouse: ``DuckDBResource`` that waits up to ``lock_timeout_s`` for another process's write
    lock, then fails with a message that says what happened, instead of corrupting or retrying forever.

    Within one Dagster instance the pool ``duckdb_warehouse`` (limit 1) already serializes writers; this covers
    two independent processes (two CLI runs, a CLI run beside ``dagster dev``).
    """

    lock_timeout_s: float = 30.0

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                conn = duckdb.connect(self.database, config={"custom_user_agent": "inference-frontier",
                                                             **self.connection_config})
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    raise WarehouseLockedError(
                        f"warehouse {self.database} is being written by another process (waited "
                        f"{self.lock_timeout_s:.0f} s): wait for that materialization to finish, or point "
                        f"PIPELINE_DB_PATH at another file. DuckDB said: {str(exc).splitlines()[0]}"
                    ) from exc
                time.sleep(0.2)
        try:
            yield conn
        finally:
            conn.close()


def warehouse_resource() -> Warehouse:
    """The DuckDB warehouse at ``PIPELINE_DB_PATH`` (its folder created on first use)."""
    return Warehouse(database=env_path("PIPELINE_DB_PATH"))


def paths_resource() -> PipelinePaths:
    """Raw, mart and parse-cache folders from ``PIPELINE_RAW_DIR`` / ``PIPELINE_OUT_DIR`` / ``PIPELINE_CACHE_DIR``."""
    return PipelinePaths(raw_dir=env_path("PIPELINE_RAW_DIR"), out_dir=env_path("PIPELINE_OUT_DIR"),
                         cache_dir=parse_cache_dir())


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"warehouse": warehouse_resource(), "paths": paths_resource()})
