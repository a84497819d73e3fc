"""Resources shared by every stage: the DuckDB warehouse and the raw/mart/cache folders, configured by env var
(``PIPELINE_DB_PATH``, ``PIPELINE_RAW_DIR``, ``PIPELINE_OUT_DIR``, ``PIPELINE_CACHE_DIR``; docs/inputs.md).

A variable that is set is passed to Dagster as ``dg.EnvVar`` (read when a run starts, shown as an environment
variable in the UI, never written into the definitions); one that is unset gives the documented default of
``pipeline.io.paths``. Either way a resource holds an absolute path: a relative value is taken relative to the
current directory, ``~`` expanded.
"""

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import field_validator

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

    @field_validator("raw_dir", "out_dir", "cache_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return _absolute_path(value)

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

    @field_validator("database")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return _absolute_path(value)

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


def _absolute_path(value: str) -> str:
    """``value`` as an absolute path (``~`` expanded, relative to the current directory); an unresolved
    ``dg.EnvVar`` (the variable's name, while the resource is being declared) is returned as it is, Dagster
    passes its value through here again when a run starts."""
    if isinstance(value, dg.EnvVar) or not value:
        return value
    return str(Path(value).expanduser().resolve())


def configured(name: str, default: str) -> str:
    """``dg.EnvVar(name)`` when the environment variable ``name`` is set and not empty, else ``default`` (an
    absolute path: the documented default of ``pipeline.io.paths``)."""
    return dg.EnvVar(name) if os.environ.get(name) else default


def warehouse_resource() -> Warehouse:
    """The DuckDB warehouse at ``PIPELINE_DB_PATH`` (its folder created on first use)."""
    return Warehouse(database=configured("PIPELINE_DB_PATH", env_path("PIPELINE_DB_PATH")))


def paths_resource() -> PipelinePaths:
    """Raw, mart and parse-cache folders from ``PIPELINE_RAW_DIR`` / ``PIPELINE_OUT_DIR`` / ``PIPELINE_CACHE_DIR``
    (unset: ``data/sample``, ``data/marts``, ``<PIPELINE_DB_PATH>.parse_cache``)."""
    return PipelinePaths(raw_dir=configured("PIPELINE_RAW_DIR", env_path("PIPELINE_RAW_DIR")),
                         out_dir=configured("PIPELINE_OUT_DIR", env_path("PIPELINE_OUT_DIR")),
                         cache_dir=configured("PIPELINE_CACHE_DIR", parse_cache_dir()))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"warehouse": warehouse_resource(), "paths": paths_resource()})
