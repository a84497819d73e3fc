"""Resources shared by every stage: the DuckDB warehouse and the raw/mart/cache folders, configured by env var
(``PIPELINE_DB_PATH``, ``PIPELINE_RAW_DIR``, ``PIPELINE_OUT_DIR``, ``PIPELINE_CACHE_DIR``,
``PIPELINE_DUCKDB_MEMORY_LIMIT``; docs/inputs.md), and
where a run's marts are staged until the run publishes them as one generation (``pipeline.io.generations``).

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
from dagster._core.errors import (
    DagsterInvalidPropertyError,  # not exported at the top level
)
from dagster_duckdb import DuckDBResource
from pydantic import PrivateAttr, field_validator

from pipeline.io.generations import staging_dir, staging_path
from pipeline.io.paths import env_path, parse_cache_dir
from pipeline.io.publish_guard import DEFAULT_MAX_LOSS_SHARE, guarded_publish, warehouse_identity
from pipeline.io.storage import (
    is_corrupt_warehouse_error,
    mark_published,
    release_freed_memory,
    set_aside_corrupt_warehouse,
    table_names,
)
from pipeline.validate.suite_process import InProcessSuite

# Every asset that writes the warehouse runs in this pool; dagster.yaml limits it to 1 (DuckDB has one writer).
WAREHOUSE_POOL = "duckdb_warehouse"

# The last asset of a full run: it publishes the run's staged marts as the current generation.
PUBLISHED_MARTS_KEY = dg.AssetKey(["comparisons", "published_marts"])
# Runs that share this tag's value stage into one generation. The CLI tags its run with ``cli-<pid>-…`` so the
# staging folder of a killed CLI run is recognised (its process is gone) and removed by the next publish.
GENERATION_TAG = "pipeline/generation"
# The parse-cache generation a sensor run was requested for: its ingest reads that state instead of scanning the
# raw folder again (pipeline.ingest.folder.ingest_folder_cached's snapshot).
SNAPSHOT_TAG = "pipeline/raw_snapshot"
# Written into a warehouse created to replace a corrupt one; the partitioned runs clear it once they have
# refilled every run date, and until then nothing is published (the marts would miss the other dates).
REBUILD_MARKER_TABLE = "warehouse_rebuild"


def _run(context: dg.AssetExecutionContext) -> dg.DagsterRun | None:
    """The context's run, or None when the asset is invoked directly (a benchmark, a unit test)."""
    try:
        return context.run
    except DagsterInvalidPropertyError:
        return None


def run_tag(context: dg.AssetExecutionContext, name: str) -> str | None:
    """The run's tag ``name``, or None. An asset invoked directly reads the tags its context was built with
    (``dg.build_asset_context(run_tags=…)``, as the benchmark hands a sensor tick's snapshot to its batch)."""
    return context.op_execution_context.run_tags.get(name)


def generation_id(context: dg.AssetExecutionContext) -> str:
    """The generation a run's marts are staged into: its ``pipeline/generation`` tag, else its run id; for a
    direct invocation (no run), the tag its context was built with, else one per process."""
    run = _run(context)
    if run is None:
        return run_tag(context, GENERATION_TAG) or f"direct-{os.getpid()}"
    return run.tags.get(GENERATION_TAG) or run.run_id


# PIPELINE_RAW_LAYOUT's values: "any" (the default: the sensor stat-scans every folder each tick) and the opt-in
# date-folder layout RAW/<YYYY-MM-DD>/... (pipeline.ingest.scan.DATE_FOLDER; docs/operations.md "Sensor fast path")
RAW_LAYOUTS = ("any", "date-folders")
# How often the sensor stat-scans the whole folder under the date-folder layout (its safety net), in minutes
DEFAULT_STAT_SCAN_MINUTES = 60


class PipelinePaths(dg.ConfigurableResource):
    """Folders the pipeline reads and writes.

    Attributes:
        raw_dir: scanned recursively for raw logs, sidecars, manifests.
        out_dir: where the Parquet marts (``runs``, ``quarantine``, ``frontiers``, ``comparisons``) are written.
        cache_dir: the parse cache (``pipeline.ingest.parse_cache``): what each raw file gave when last parsed.
        raw_layout: ``any``, or ``date-folders`` when every result file lies under ``raw_dir/<YYYY-MM-DD>/`` of
            its night (``PIPELINE_RAW_LAYOUT``): the sensor's ticks then look only at the newest date folder and
            newer ones, and stat-scan the whole folder every ``stat_scan_minutes`` (docs/operations.md).
        stat_scan_minutes: under ``date-folders``, minutes between the sensor's whole-folder stat scans
            (``PIPELINE_STAT_SCAN_MINUTES``, default 60).
    """

    raw_dir: str
    out_dir: str
    cache_dir: str
    raw_layout: str = "any"
    stat_scan_minutes: int = DEFAULT_STAT_SCAN_MINUTES

    @field_validator("raw_dir", "out_dir", "cache_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return _absolute_path(value)

    @field_validator("raw_layout")
    @classmethod
    def _known_layout(cls, value: str) -> str:
        if isinstance(value, dg.EnvVar) or value in RAW_LAYOUTS:
            return value
        raise ValueError(f"PIPELINE_RAW_LAYOUT {value!r} is not a layout: use one of {', '.join(RAW_LAYOUTS)}")

    def staging(self, context: dg.AssetExecutionContext) -> Path:
        """The folder this run writes its marts into until ``published_marts`` publishes them
        (``pipeline.io.generations.staging_dir``; created from the current generation on first use).

        Raises:
            OSError: ``out_dir`` cannot be created or written.
        """
        return staging_dir(Path(self.out_dir), generation_id(context))

    def mart(self, context: dg.AssetExecutionContext, name: str) -> Path:
        """Path of the single-file mart ``<name>.parquet`` in this run's staging folder."""
        return self.staging(context) / f"{name}.parquet"

    def mart_folder(self, context: dg.AssetExecutionContext, name: str) -> Path:
        """Folder of the partitioned mart ``<name>/`` (``<model>/<run_date or undated>/part-0.parquet``) in this
        run's staging folder."""
        return self.staging(context) / name

    def published(self, context: dg.AssetExecutionContext, staged: Path) -> Path:
        """Where ``staged`` (a path in this run's staging folder) is read once published: the same relative path
        under ``out_dir``, whose top-level names always point into the current generation."""
        return Path(self.out_dir) / Path(staged).relative_to(staging_path(Path(self.out_dir), generation_id(context)))

    def publish_unless_later(self, context: dg.AssetExecutionContext, warehouse: DuckDBResource) -> None:
        """Publish this run's staged marts now when no later step will: the run selected some assets but not
        ``published_marts`` (e.g. one asset materialized from the UI) and is not one stage of a CLI run (no
        ``pipeline/generation`` tag), or the asset was invoked directly without that tag (with it, the caller
        stages several assets into one generation and publishes it, as the benchmark does). A run that includes
        ``published_marts`` publishes once, at its end.

        Such a publish passes the same guard as ``published_marts`` with its defaults
        (``pipeline.io.publish_guard.guarded_publish``: no shrink over 20 %, no other warehouse); to publish a
        deliberate shrink, include ``comparisons/published_marts`` in the run with ``allow_shrink``.

        Raises:
            pipeline.io.publish_guard.AcceptedRunsLossError, OtherWarehouseError, RecordUnreadableError: the
                guard refused; nothing is published.
        """
        run = _run(context)
        if run is None:  # invoked directly: the call is its own run, unless it is one stage of a tagged set
            if GENERATION_TAG not in context.op_execution_context.run_tags:
                self.publish_guarded(context, warehouse)
            return
        selection = run.asset_selection  # None or empty: the whole job, which includes published_marts
        if selection and PUBLISHED_MARTS_KEY not in selection and GENERATION_TAG not in run.tags:
            self.publish_guarded(context, warehouse)

    def publish_guarded(self, context: dg.AssetExecutionContext, warehouse: DuckDBResource,
                        allow_shrink: bool = False, max_loss_share: float = DEFAULT_MAX_LOSS_SHARE,
                        switch_warehouse: bool = False) -> Path | None:
        """Publish this run's staged marts under the guard (``pipeline.io.publish_guard.guarded_publish``, with
        this warehouse's identity), then forget the run dates it staged (``pipeline.io.storage.mark_published``).

        Returns:
            The new generation's folder, or None when the run staged nothing.
        Raises:
            pipeline.io.publish_guard.AcceptedRunsLossError, OtherWarehouseError, RecordUnreadableError: refused;
                nothing published.
        """
        run_id = generation_id(context)
        with warehouse.get_connection() as conn:
            identity = warehouse_identity(conn, warehouse.database)
            snapshot = conn.execute("select max(generation) from raw_generation").fetchone()[0] \
                if "raw_generation" in table_names(conn) else None
        generation = guarded_publish(Path(self.out_dir), run_id, identity, allow_shrink, max_loss_share,
                                     switch_warehouse, raw_snapshot=snapshot)
        with warehouse.get_connection() as conn:
            mark_published(conn, run_id)
        return generation


class WarehouseLockedError(RuntimeError):
    """Another process holds the DuckDB warehouse's write lock (a second materialization at the same time)."""


class WarehouseOutOfMemoryError(RuntimeError):
    """A DuckDB statement needed more memory than the warehouse's ``memory_limit`` allows and could not spill."""


# DuckDB's memory_limit on every warehouse connection unless PIPELINE_DUCKDB_MEMORY_LIMIT says otherwise. DuckDB's
# own default (80 % of the machine) lets its buffers grow far past what the pipeline's steps need; under the cap a
# step spills what it needs to disk instead (benchmarks/run.py measures a full refresh under it; the figures are
# in docs/performance.md). "80%" gives DuckDB's default back.
DEFAULT_MEMORY_LIMIT = "1GB"


class Warehouse(DuckDBResource):
    """The DuckDB warehouse: ``DuckDBResource`` that waits up to ``lock_timeout_s`` for another process's write
    lock, then fails with a message that says what happened, instead of corrupting or retrying forever.

    Within one Dagster instance the pool ``duckdb_warehouse`` (limit 1) already serializes writers; this covers
    two independent processes (two CLI runs, a CLI run beside ``dagster dev``).

    The warehouse is derived state: a file DuckDB cannot open as a database (zero bytes, truncated, garbage, an
    incompatible storage version) is moved aside to ``<file>.corrupt-<UTC time>`` with a warning naming both
    paths and a fresh warehouse is created, holding ``warehouse_rebuild`` until a run has refilled every run date
    (``published_marts`` publishes nothing before that).
    """

    lock_timeout_s: float = 30.0
    # DuckDB's ``memory_limit`` for every connection, in DuckDB's syntax ("4GB", "80%"); empty: DuckDB's default.
    # Under a cap DuckDB evicts and spills to disk sooner; a statement whose operators cannot spill enough fails
    # with WarehouseOutOfMemoryError, which names the setting to raise.
    memory_limit: str = DEFAULT_MEMORY_LIMIT

    @field_validator("database")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return _absolute_path(value)

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection of its own for one use: opened here (``open_database``), closed (and so checkpointed)
        when the ``with`` block ends.

        Raises:
            WarehouseLockedError, WarehouseOutOfMemoryError: see ``open_database`` and ``memory_errors_named``.
        """
        # what the previous asset in this process freed only after its connection closed (its locals)
        release_freed_memory()
        conn = self.open_database()
        try:
            with self.memory_errors_named():
                yield conn
        finally:
            conn.close()
            release_freed_memory()  # what the asset's DuckDB results and copies freed, before the next asset

    def open_database(self) -> duckdb.DuckDBPyConnection:
        """Open the warehouse file (its folder created) under ``memory_limit``: waits up to ``lock_timeout_s`` for
        another process's write lock, and moves a corrupt file aside and starts a fresh one (class docstring).

        Raises:
            WarehouseLockedError: another process still holds the write lock after ``lock_timeout_s`` seconds.
            duckdb.Error: any other error of DuckDB's (e.g. permission denied), its own message.
        """
        Path(self.database).parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                limit = {"memory_limit": self.memory_limit} if self.memory_limit else {}
                return duckdb.connect(self.database, config={"custom_user_agent": "inference-frontier",
                                                             **limit, **self.connection_config})
            except duckdb.Error as exc:
                if is_corrupt_warehouse_error(exc):
                    dg.get_dagster_logger().warning(rebuild_corrupt_warehouse(self.database, exc))
                    continue
                if not isinstance(exc, duckdb.IOException) or "lock" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    raise WarehouseLockedError(
                        f"warehouse {self.database} is being written by another process (waited "
                        f"{self.lock_timeout_s:.0f} s): wait for that materialization to finish, or point "
                        f"PIPELINE_DB_PATH at another file. DuckDB said: {str(exc).splitlines()[0]}"
                    ) from exc
                time.sleep(0.2)

    @contextmanager
    def memory_errors_named(self) -> Iterator[None]:
        """Turn DuckDB's out-of-memory error inside the block into ``WarehouseOutOfMemoryError``, which names
        ``PIPELINE_DUCKDB_MEMORY_LIMIT`` and this warehouse's ``memory_limit``.

        Raises:
            WarehouseOutOfMemoryError: a statement in the block ran out of DuckDB memory.
        """
        try:
            yield
        except duckdb.OutOfMemoryException as exc:
            raise WarehouseOutOfMemoryError(
                f"DuckDB ran out of memory in warehouse {self.database} under memory_limit "
                f"{self.memory_limit or 'unset (80% of the machine)'}: set PIPELINE_DUCKDB_MEMORY_LIMIT higher "
                f"(e.g. 4GB, or 80% for DuckDB's own default) and run again. DuckDB said: "
                f"{str(exc).splitlines()[0]}") from exc


# What SharedWarehouse lowers DuckDB's memory_limit to for a moment after each use, so the buffer manager evicts
# the blocks the use left cached and DuckDB's allocator returns the memory it kept from the use's work (freed, not
# counted by duckdb_memory(), yet resident: a step's reads would otherwise stay in memory through the next steps,
# on top of their own); a positive size, since DuckDB refuses a limit it cannot reach (0 while dirty blocks remain).
EVICT_TO = "1MB"
# Below this much held by DuckDB's buffer manager after a use, SharedWarehouse does not checkpoint: the
# checkpoint's writes and fsync would cost more than the memory they free (the WAL is durable already, and DuckDB
# checkpoints it when it grows past its own threshold and when the database closes).
EVICT_ABOVE_BYTES = 64 * 2**20


class SharedWarehouse(Warehouse):
    """The warehouse of one in-process run: the database is opened once, on the first ``get_connection``, and
    every use after that (every step of the run, every check) gets a cursor of that open database (DuckDB's
    ``cursor()``: a connection of its own to the same database instance, so its registered views and any open
    transaction end with the use) instead of opening and closing the file again. Closed by
    ``teardown_after_execution`` when the run ends (or ``close``); DuckDB checkpoints then.

    Why: opening a DuckDB database starts its instance and closing it checkpoints the writes, paid once or more
    per step; an in-process run is the warehouse's only writer anyway, so it keeps the file's write lock for the
    whole run (another process waits, as for any writer: ``lock_timeout_s``).
    Memory stays bounded by ``memory_limit``, which is one budget for the whole database; after every use the
    blocks it left cached are evicted and the memory DuckDB's allocator kept from it returned (``EVICT_TO``), and
    after a use that leaves ``EVICT_ABOVE_BYTES`` or more in DuckDB's memory its writes are checkpointed first,
    so a step does not carry the previous step's reads or writes.

    Use it only where one process runs every step (``python -m pipeline run``, which passes it to
    ``execute_in_process`` for the whole job, and the benchmark): a run whose steps are processes of their own
    (the multiprocess executor of ``pipeline.defs.jobs``) keeps ``Warehouse``, a connection per use in each
    step's process. Dagster refuses a resource override on a run of selected assets (``python -m pipeline
    report``), which keeps ``Warehouse`` too.
    """

    _database: duckdb.DuckDBPyConnection | None = PrivateAttr(default=None)

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of the run's open database (opened on first use: ``Warehouse.open_database``), closed when
        the ``with`` block ends; the database stays open.

        Raises:
            WarehouseLockedError, WarehouseOutOfMemoryError: as ``Warehouse.get_connection``.
        """
        release_freed_memory()
        if self._database is None:
            self._database = self.open_database()
        cursor = self._database.cursor()
        try:
            with self.memory_errors_named():
                yield cursor
        finally:
            cursor.close()
            self._evict_cached_blocks()
            release_freed_memory()

    def _evict_cached_blocks(self) -> None:
        """Lower ``memory_limit`` to ``EVICT_TO`` and set it back: DuckDB evicts what it can of its cached blocks
        and its allocator returns the memory it kept from the use's work (the limit is restored either way). When
        DuckDB holds ``EVICT_ABOVE_BYTES`` or more (``duckdb_memory()``), the use's writes are checkpointed into
        the file first (as closing the database did): without that, a step's written blocks would stay in memory
        until DuckDB's own checkpoint (by WAL size), on top of the next step's memory. After a small use the dip
        alone costs far less than the checkpoint would."""
        # on a cursor of its own, closed at once: a result left open on the database's own connection kept a
        # transaction there, and DuckDB then refused the checkpoint ("other write transactions are active")
        with self._database.cursor() as probe:
            held = probe.execute("select coalesce(sum(memory_usage_bytes), 0) from duckdb_memory()").fetchone()[0]
        if held >= EVICT_ABOVE_BYTES:
            self._database.execute("checkpoint")
        try:
            self._database.execute(f"set memory_limit = '{EVICT_TO}'")
        except duckdb.Error:  # could not evict down to it: what could be evicted was
            pass
        finally:
            # the configured limit itself: the value DuckDB displays is rounded to 0.1 MiB, and setting it back
            # would lower the limit a little at every eviction
            self._database.execute(f"set memory_limit = '{self.memory_limit}'" if self.memory_limit
                                   else "reset memory_limit")

    def close(self) -> None:
        """Close the open database, if open (DuckDB checkpoints its writes into the file)."""
        if self._database is not None:
            database, self._database = self._database, None
            database.close()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Dagster calls this when the run that initialized the resource ends: close the database."""
        self.close()


def rebuild_corrupt_warehouse(database: str, error: BaseException) -> str:
    """Move the corrupt warehouse ``database`` aside (``<file>.corrupt-<UTC time>``, kept for inspection) and
    create an empty one holding the ``warehouse_rebuild`` marker (old path, DuckDB's reason, time).

    Returns:
        One line for the operator: the path, the cause, where the old file went and what happens next.
    Raises:
        OSError: the warehouse's folder cannot be written.
    """
    moved = set_aside_corrupt_warehouse(Path(database))
    reason = str(error).strip().splitlines()[0]
    with duckdb.connect(database) as fresh:
        fresh.execute(f"create table {REBUILD_MARKER_TABLE} as select ? as moved_to, ? as reason, "
                      "now() as rebuilt_at", [str(moved), reason])
    return (f"warehouse {database} was corrupt ({reason}): moved aside to {moved}; rebuilding it from the raw "
            "folder (nothing is published until every run date is refilled)")


def check_warehouse(database: str) -> str | None:
    """Open the warehouse once before a run: None when it opens (or is locked by another writer, which the
    resource waits for), else the one-line notice of ``rebuild_corrupt_warehouse`` after rebuilding it.

    Raises:
        duckdb.Error: an error that is not corruption or a lock (e.g. permission denied), DuckDB's own message.
    """
    if not Path(database).exists():
        return None
    try:
        duckdb.connect(database).close()
    except duckdb.Error as exc:
        if is_corrupt_warehouse_error(exc):
            return rebuild_corrupt_warehouse(database, exc)
        if isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower():
            return None
        raise
    return None


def _absolute_path(value: str) -> str:
    """``value`` as an absolute path (``~`` expanded, relative to the current directory); an unresolved
    ``dg.EnvVar`` (the variable's name, while the resource is being declared) is returned as it is, Dagster
    passes its value through here again when a run starts."""
    if isinstance(value, dg.EnvVar) or not value:
        return value
    return str(Path(value).expanduser().resolve())


def configured(name: str, default: str) -> str:
    """``dg.EnvVar(name)`` when the environment variable ``name`` is set and not empty, else ``default`` (for a
    folder, an absolute path: the documented default of ``pipeline.io.paths``)."""
    return dg.EnvVar(name) if os.environ.get(name) else default


def warehouse_resource(shared: bool = False) -> Warehouse:
    """The DuckDB warehouse at ``PIPELINE_DB_PATH`` (its folder created on first use), its connections capped at
    ``PIPELINE_DUCKDB_MEMORY_LIMIT`` (a DuckDB size such as ``4GB``, or ``80%``) when that is set, else at
    ``DEFAULT_MEMORY_LIMIT``.

    Args:
        shared: a ``SharedWarehouse`` (one open database for a whole in-process run) instead of ``Warehouse``
            (a connection per use, the code location's resource for runs whose steps are processes).
    """
    kind = SharedWarehouse if shared else Warehouse
    return kind(database=configured("PIPELINE_DB_PATH", env_path("PIPELINE_DB_PATH")),
                memory_limit=configured("PIPELINE_DUCKDB_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT))


def paths_resource() -> PipelinePaths:
    """Raw, mart and parse-cache folders from ``PIPELINE_RAW_DIR`` / ``PIPELINE_OUT_DIR`` / ``PIPELINE_CACHE_DIR``
    (unset: ``data/sample``, ``data/marts``, ``<PIPELINE_DB_PATH>.parse_cache``), the raw folder's layout from
    ``PIPELINE_RAW_LAYOUT`` (unset: ``any``) and the sensor's whole-folder stat scan interval from
    ``PIPELINE_STAT_SCAN_MINUTES`` (unset: 60)."""
    minutes = os.environ.get("PIPELINE_STAT_SCAN_MINUTES")
    return PipelinePaths(raw_dir=configured("PIPELINE_RAW_DIR", env_path("PIPELINE_RAW_DIR")),
                         out_dir=configured("PIPELINE_OUT_DIR", env_path("PIPELINE_OUT_DIR")),
                         cache_dir=configured("PIPELINE_CACHE_DIR", parse_cache_dir()),
                         raw_layout=configured("PIPELINE_RAW_LAYOUT", "any"),
                         stat_scan_minutes=dg.EnvVar.int("PIPELINE_STAT_SCAN_MINUTES") if minutes
                         else DEFAULT_STAT_SCAN_MINUTES)


# The resource key of where the GX suite runs (``pipeline.validate.suite_process``): the code location's is the
# check step's own process; ``python -m pipeline run`` gives its run a ``SuiteProcess`` it started first thing.
SUITE_RESOURCE = "expectation_suite"


@dg.definitions
def resources() -> dg.Definitions:
    # the GX suite runs in the step's process (``python -m pipeline run`` overrides it with a process it started)
    return dg.Definitions(resources={"warehouse": warehouse_resource(), "paths": paths_resource(),
                                     SUITE_RESOURCE: InProcessSuite()})
