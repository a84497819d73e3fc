"""Moving Arrow tables in and out of the DuckDB warehouse, writing Parquet marts safely, and describing a table
for the Dagster UI (row count, column schema, Markdown preview)."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import math
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import quote

import duckdb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.io.columns import field_metadata
from pipeline.io.generations import published_dir

_PYARROW_TYPE_NAMES = {pa.string(): "string", pa.float64(): "double", pa.int32(): "int32", pa.int64(): "int64",
                       pa.bool_(): "bool", pa.date32(): "date"}


RAW_CHANGES = "raw_changes"  # what the ingest ledger has not read yet
QUARANTINE_CHANGES = "quarantine_changes"  # what the quarantine has not read yet
VALIDATED_CHANGES = "validated_changes"  # files gone from raw_files that the validated tables still hold rows of
CHANGE_LOGS = (RAW_CHANGES, QUARANTINE_CHANGES, VALIDATED_CHANGES)  # the ingest's readers; each empties its own
RUN_METRICS_CHANGES = "run_metrics_changes"  # run dates of validated_runs that run_metrics has not checked yet
RUN_POWER_CHANGES = "run_power_changes"  # the same for run_power
# run dates whose partitioned-mart files a run staged from this warehouse and has not published yet
UNPUBLISHED_DATES = "unpublished_mart_dates"


def release_freed_memory() -> None:
    """Hand the memory that Arrow and the C heap freed back to the OS now.

    Arrow's memory pool (mimalloc in the pyarrow wheels) keeps freed pages for reuse, and so does glibc's
    ``malloc``, which holds numpy's arrays and Python's larger objects: a process that held the history as Arrow
    tables or as Python lists stays that large after they are gone, until the pool's ``release_unused`` and
    glibc's ``malloc_trim(0)`` return the pages. Matters where several assets share a process (``python -m
    pipeline run`` runs in process); costs milliseconds. Without glibc (``malloc_trim`` not found) only Arrow's
    pool is released.
    """
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


def table_names(conn: duckdb.DuckDBPyConnection) -> set[str]:
    """The names of the warehouse's tables and views."""
    return {row[0] for row in conn.execute("select table_name from information_schema.tables").fetchall()}


def column_names(conn: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """The columns of warehouse table ``name`` in order ([] when there is no such table)."""
    return [row[0] for row in conn.execute(
        "select column_name from information_schema.columns where table_name = ? order by ordinal_position",
        [name]).fetchall()]


def note_raw_changes(conn: duckdb.DuckDBPyConnection, kind: str, values: Sequence[str] | pa.Array = (),
                     logs: Sequence[str] = CHANGE_LOGS) -> None:
    """Record what a run rewrote in each change log of ``logs`` (warehouse tables ``(kind, value)``; default
    ``CHANGE_LOGS``, the ingest's readers; ``validated_runs`` names its own for what it rewrote): the ingest
    ledger and the quarantine rebuild only the files and dates their log names, the validated tables and the
    metric tables check only those for rows left behind, then each empties its own log, so one reader's catching
    up never hides a change from another. ``kind`` ``file`` (``values``: files whose ``raw_rejects``/``raw_files``
    rows were rewritten, removed files included), ``partition`` (``values``: run dates whose ``raw_runs`` or
    ``validated_runs``/``validation_rejects`` rows were rewritten or lost rows) or ``all`` (a whole table was
    rewritten: each reader rebuilds or checks whole)."""
    conn.register("_noted", pa.table({"value": pa.array(values, pa.string())}))
    try:
        for log in logs:
            conn.execute(f"create table if not exists {log} (kind varchar, value varchar)")
            if kind == "all":
                conn.execute(f"insert into {log} values ('all', null)")
            else:
                conn.execute(f"insert into {log} select ?, value from _noted", [kind])
    finally:
        conn.unregister("_noted")


def needs_whole_rebuild(conn: duckdb.DuckDBPyConnection, table: str, log: str, version: str) -> bool:
    """Whether ``table``, a warehouse table kept up to date from change log ``log`` (one of ``CHANGE_LOGS``),
    must be rebuilt whole: it or its log does not exist yet, the ``version`` of the code that builds it is not
    the one it was last built with (table ``<table>_version``), or the log holds an ``all`` (a source was
    rewritten whole). Creates the log when missing, so the rebuild starts it empty."""
    names = table_names(conn)
    stored = conn.execute(f"select max(version) from {table}_version").fetchall()[0][0] \
        if f"{table}_version" in names else None
    whole = log not in names or table not in names or stored != version \
        or conn.execute(f"select count(*) from {log} where kind = 'all'").fetchall()[0][0] > 0
    conn.execute(f"create table if not exists {log} (kind varchar, value varchar)")
    return whole


def caught_up(conn: duckdb.DuckDBPyConnection, table: str, log: str, version: str) -> None:
    """Record that ``table`` now reflects every change its ``log`` named (the log is emptied) and was built by
    code ``version`` (``needs_whole_rebuild``)."""
    conn.execute(f"delete from {log}")
    conn.execute(f"create or replace table {table}_version as select ? as version", [version])


def logged_partitions(conn: duckdb.DuckDBPyConnection, table: str, log: str, version: str) -> list[str] | None:
    """The run dates (``partition`` entries) change log ``log`` names since ``table`` last caught up with it
    (``caught_up``), or None when the table must be checked whole (``needs_whole_rebuild``: no log or table
    yet, another ``version`` of the check, an ``all`` entry)."""
    if needs_whole_rebuild(conn, table, log, version):
        return None
    return [row[0] for row in conn.execute(
        f"select distinct value from {log} where kind = 'partition' order by 1").fetchall()]


def write_table(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> None:
    """Replace warehouse table ``name`` (a constant of ours, never user input) with the Arrow ``table``."""
    conn.register("_incoming", table)
    try:
        conn.execute(f"create or replace table {name} as select * from _incoming")
    finally:
        conn.unregister("_incoming")


def replace_file_rows(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table, files: pa.Array) -> bool:
    """Per-file write: delete the rows of ``files`` (``source_file`` values) from warehouse table ``name`` and
    insert ``table``'s rows of those files (``table`` holds every file's rows; the rest are already stored).
    Rows of one file stay together, in ``table``'s order; readers order by ``source_file``.

    Returns:
        False, writing nothing, when ``name`` does not exist or its columns are not ``table``'s (the caller
        then writes the whole table, ``write_table``).
    """
    if column_names(conn, name) != table.column_names:
        return False
    conn.register("_files", pa.table({"source_file": files}))
    conn.register("_incoming", table.filter(pc.is_in(table["source_file"], value_set=files)))
    try:
        conn.execute(f"delete from {name} where source_file in (select source_file from _files)")
        conn.execute(f"insert into {name} select * from _incoming")
    finally:
        conn.unregister("_files")
        conn.unregister("_incoming")
    return True


def replace_partitions(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table | duckdb.DuckDBPyRelation,
                       keys: Sequence[str | dt.date], key_column: str = "run_date_partition") -> None:
    """Idempotent partition write: delete the rows of ``keys`` from warehouse table ``name``, insert ``table``.

    ``keys`` are values of ``key_column`` (a column or SQL expression): run-date partition keys (text), or dates
    for a DATE column.

    ``table``'s rows must all belong to ``keys``. Creates the table on first use; a table whose columns no longer
    match (an upgrade changed the schema) is rebuilt from ``table`` alone, and the next full run refills it.

    ``table`` is an Arrow table, or a DuckDB relation on ``conn`` (a query's rows go straight into the table,
    without a round trip through Arrow)."""
    relation = table if isinstance(table, duckdb.DuckDBPyRelation) else None
    if relation is None:
        conn.register("_incoming", table)
        relation = conn.table("_incoming")
    try:
        if column_names(conn, name) != list(relation.columns):
            conn.execute(f"drop table if exists {name}")
            relation.create(name)
            return
        conn.execute(f"delete from {name} where list_contains($keys, {key_column})", {"keys": keys})
        relation.insert_into(name)
    finally:
        if relation is not table:
            conn.unregister("_incoming")


def date_groups(conn: duckdb.DuckDBPyConnection, name: str, keys: Sequence[str], max_rows: int,
                key_column: str = "run_date_partition") -> list[list[str]]:
    """The run-date partition keys of ``keys`` that hold rows of warehouse table ``name`` (their key: column or
    SQL expression ``key_column``, default ``run_date_partition``), in order, cut into groups of whole dates of at
    most ``max_rows`` rows (a date with more alone): how a step reads a large table a bounded group at a time."""
    groups: list[list[str]] = []
    in_group = 0  # rows in the last group
    for key, count in conn.execute(
            f"select {key_column}, count(*) from {name} where list_contains($keys, {key_column}) "
            "group by all order by 1", {"keys": list(keys)}).fetchall():
        if not groups or in_group + count > max_rows:
            groups.append([])
            in_group = 0
        groups[-1].append(key)
        in_group += count
    return groups


def rows_by_rowid(conn: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str],
                  rowids: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Columns ``columns`` of the rows of warehouse table ``name`` whose ``rowid`` is in ``rowids`` (int64), in
    rowid order, after their rowid as column ``rowid`` (int64): how a step reads back a few wide rows it picked
    from a narrow read of the whole table, without holding the wide columns of every row. A rowid not in the
    table gives no row.

    Raises:
        duckdb.CatalogException: no table ``name``.
        duckdb.BinderException: a name of ``columns`` is not one of its columns.
    """
    # the asked rowids under a name of their own: a scan's own rowid pseudo-column is never what is read
    conn.register("_wanted_rowids", pa.table({"_rowid": rowids}))
    try:
        return conn.sql(f"select rowid, {', '.join(columns)} from {name} "
                        "where rowid in (select _rowid from _wanted_rowids) order by rowid").to_arrow_table()
    finally:
        conn.unregister("_wanted_rowids")


# What DuckDB says when a file is not a database it can open: garbage or zero bytes, a truncated file, a damaged
# block, a storage version this DuckDB cannot read.
_CORRUPT_WAREHOUSE_SIGNS = ("not a valid duckdb database file", "could not read enough bytes", "corrupt",
                            "checksum", "storage version", "serializ", "database file was created")


def is_corrupt_warehouse_error(exc: BaseException) -> bool:
    """True when ``exc`` (from ``duckdb.connect``) says the database file is damaged or unreadable as a
    database, as opposed to locked, missing permissions or a full disk."""
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and "permission denied" not in text \
        and any(sign in text for sign in _CORRUPT_WAREHOUSE_SIGNS)


def set_aside_corrupt_warehouse(path: Path) -> Path:
    """Rename a corrupt warehouse file (and its ``.wal``) to ``<name>.corrupt-<UTC time>`` beside it, kept for
    inspection, so a new warehouse can be created at ``path``.

    Returns:
        The new path of the corrupt file.
    Raises:
        OSError: the folder cannot be written.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, moved)
    wal = path.with_name(f"{path.name}.wal")
    if wal.exists():
        os.replace(wal, moved.with_name(f"{moved.name}.wal"))
    return moved


def read_table(conn: duckdb.DuckDBPyConnection, name: str) -> pa.Table:
    """The whole warehouse table ``name`` as Arrow.

    Raises:
        duckdb.CatalogException: the table does not exist (its upstream asset was never materialized).
    """
    return conn.sql(f"select * from {name}").to_arrow_table()


def documented(table: pa.Table, mart: str | None) -> pa.Table:
    """``table`` with every column's description and unit as its field metadata
    (``pipeline.io.columns.field_metadata`` for mart ``mart``; a column the module does not know keeps none),
    the columns and the schema-level metadata unchanged. Zero-copy: the same buffers under the new schema.
    Every mart writer of this module calls it, so each Parquet mart file carries its columns' meaning."""
    fields = [field.with_metadata(docs) if (docs := field_metadata(field.name, mart)) else field
              for field in table.schema]
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return pa.Table.from_arrays(table.columns, schema=schema)


def write_parquet_atomic(table: pa.Table, path: Path, mart: str | None = None) -> Path:
    """Write ``table`` to ``path`` via a temporary file in the same folder and an atomic rename, so a reader
    never sees a half-written mart and a crash leaves the previous file whole. Each column carries its
    description and unit (``documented``) read for mart ``mart``, by default the file's name without
    ``.parquet`` (``frontiers``, ``comparisons``, …; a file mart's writer names its folder's mart)."""
    table = documented(table, path.stem if mart is None else mart)
    return _write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def write_arrow_atomic(table: pa.Table, path: Path, compression: str | None = "lz4") -> Path:
    """``write_parquet_atomic`` for an Arrow IPC file: for internal state read back by this pipeline only, which
    Arrow IPC writes and reads several times faster than Parquet (no encoding to undo). ``compression``: "lz4"
    (smaller files, read whole by ``read_arrow``), or None for a file read by ``map_arrow`` without a copy."""
    return write_arrow_parts_atomic(table.schema, [table], path, compression)


def write_arrow_parts_atomic(schema: pa.Schema, parts: Iterable[pa.Table], path: Path,
                             compression: str | None = "lz4") -> Path:
    """``write_arrow_atomic`` of the tables ``parts`` one after another (each with ``schema``'s fields; the file
    carries ``schema``'s metadata), taken one at a time: a caller that reads its parts lazily never holds the
    whole file's rows.

    Raises:
        pyarrow.ArrowInvalid: a part's fields differ from ``schema``'s (nothing is left at ``path``).
    """
    def write(tmp: Path) -> None:
        with pa.OSFile(os.fspath(tmp), "wb") as sink:
            with pa.ipc.new_file(sink, schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as writer:
                for part in parts:
                    writer.write_table(part.replace_schema_metadata(schema.metadata))
    return _write_atomic(path, write)


def read_arrow(path: Path) -> pa.Table:
    """The table of an Arrow IPC file (``write_arrow_atomic``), schema metadata included, read into memory.

    Raises:
        OSError: the file is missing or unreadable; pyarrow.ArrowInvalid: it is not an Arrow IPC file.
    """
    with pa.OSFile(os.fspath(path)) as source:
        return pa.ipc.open_file(source).read_all()


def map_arrow(path: Path) -> pa.Table:
    """The table of an Arrow IPC file, memory-mapped.

    An uncompressed file's buffers are the file's pages, so nothing is read until a column is used and only the
    pages used are brought in (``read_arrow`` copies the whole file into the heap). A compressed file is
    decompressed into memory as ``read_arrow`` does. The mapping outlives a later ``os.replace`` of the path
    (writers never write into an existing file), so the table stays the file it was.

    Raises:
        OSError: the file is missing or unreadable; pyarrow.ArrowInvalid: it is not an Arrow IPC file.
    """
    with pa.memory_map(os.fspath(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# Run-level marts are partitioned folders, <mart>/<model key>/<YYYY-MM-DD | undated>/part-0.parquet, so a night
# rewrites one date's files. Every file carries ``model`` (string) and ``run_date`` (date32, null = undated) as
# ordinary columns and the folder names are plain (no ``key=value``): pandas, Polars, DuckDB and Spark then read
# the folder as it is with the same types. (Hive-style names made pandas infer dictionary-encoded partition
# columns that clash with the files' own, and read ``run_date`` as text.)
UNDATED_FOLDER = "undated"
# The longest partition folder name, in bytes (common file systems allow 255 per name); a longer one is cut and
# ends in a hash (``partition_folder``).
MAX_FOLDER_BYTES = 200
# Ends a cut folder name before its hash: quote() writes "%" only before two hex digits, so no whole name has it.
_CUT_MARK = "%~"


def partition_folder(model: str) -> str:
    """The folder name of the model key ``model`` in a partitioned mart (``<mart>/<folder>/<run_date>/``): one
    path component that every reader lists, different for different keys.

    The rule: the key percent-encoded (``urllib.parse.quote`` with no safe character: ``/``, ``\\``, ``%``, spaces
    and every non-ASCII byte become ``%XX``; letters, digits and ``_.-~`` stay), then a leading ``.`` or ``_`` as
    ``%2E``/``%5F`` (pyarrow's and pandas' dataset readers skip names starting so; and ``.``/``..`` are never a
    name), then a name over ``MAX_FOLDER_BYTES`` cut (never inside a ``%XX``) and ended with ``%~`` and 16 hex
    digits of the key's sha256. Plain keys are their own name (``dsr1``, ``qwen3.5-397b-a17b``). Metadata
    normalization already refuses model keys that are not one folder name (docs/inputs.md); this keeps the writer
    safe whatever it is given. Raises nothing (``""`` is ``%``, which no other key gives).
    """
    name = quote(model, safe="")
    if not name:
        return "%"
    if name[0] in "._":
        name = f"%{ord(name[0]):02X}{name[1:]}"
    if len(name) > MAX_FOLDER_BYTES:
        cut = name[:MAX_FOLDER_BYTES - len(_CUT_MARK) - 16]
        at = cut.rfind("%", len(cut) - 2)  # an escape cut short: drop its start
        name = f"{cut[:at] if at >= 0 else cut}{_CUT_MARK}{hashlib.sha256(model.encode()).hexdigest()[:16]}"
    return name


def replace_mart_partitions(table: pa.Table, base_dir: Path, dates: list[str]) -> list[Path]:
    """Make the ``run_date`` partitions ``dates`` (``YYYY-MM-DD`` or ``undated``) of the partitioned mart
    ``base_dir`` hold exactly ``table``'s rows, leaving every other date's files untouched:
    ``write_mart_partitions``, then ``prune_mart_partitions``.

    ``table`` needs ``model`` (string) and ``run_date`` (date32, null = undated) and only rows of ``dates``.

    Returns:
        The partition files written.
    """
    written = write_mart_partitions(table, base_dir)
    prune_mart_partitions(base_dir, dates, written)
    keep_openable(base_dir, table.schema)
    return written


def write_mart_partitions(table: pa.Table, base_dir: Path) -> list[Path]:
    """Write ``table``'s rows as the (model, ``run_date``) partition files of the mart ``base_dir``, replacing
    those files; other partitions are untouched (a caller writing a set of dates in several tables prunes once
    at the end, ``prune_mart_partitions``).

    ``table`` needs ``model`` (string) and ``run_date`` (date32, null = undated); both stay columns of the files
    and also name the folders (the model key by ``partition_folder``). Every column carries its description and
    unit as field metadata (``documented``, for the mart named by ``base_dir``). Each (model, date) slice is written into a
    staging folder beside ``base_dir``, then renamed into place (atomic per file: a reader sees a partition old
    or new, never half-written). Staging folders of killed writers, and the layouts of earlier versions
    (``<base_dir>.parquet``, Hive ``model=…`` folders), which readers would otherwise find stale beside the new
    files, are removed first.

    Slices are written by ``pq.write_table`` on a thread pool rather than ``pyarrow.dataset.write_dataset``: a
    full refresh writes hundreds of small files of ~110 columns, where per-file cost dominates, and the threads
    overlap it.

    Returns:
        The partition files written.
    """
    base_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(base_dir, pattern=f".{base_dir.name}.staging-*")
    base_dir.with_name(f"{base_dir.name}.parquet").unlink(missing_ok=True)
    for legacy in base_dir.glob("model=*"):
        shutil.rmtree(legacy, ignore_errors=True)
    staging = base_dir.with_name(f".{base_dir.name}.staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    table = documented(table, base_dir.name)  # the mart is named by its folder (runs/, trends/, …)
    order = pc.sort_indices(table, sort_keys=[("model", "ascending"), ("run_date", "ascending")]).to_numpy()
    if (order != np.arange(order.size)).any():  # a caller's table in this order already is not copied (~1M rows)
        table = table.take(order)
    groups = table.group_by(["model", "run_date"], use_threads=False).aggregate([([], "count_all")])
    files, offset = [], 0
    for model, run_date, n in zip(*(groups.column(i).to_pylist() for i in range(3))):
        folder = f"{partition_folder(model)}/{UNDATED_FOLDER if run_date is None else run_date.isoformat()}"
        files.append((Path(folder) / "part-0.parquet", offset, n))
        offset += n

    def write(file: tuple[Path, int, int]) -> None:
        (staging / file[0]).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.slice(file[1], file[2]), staging / file[0])

    written = []
    try:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(write, files))
        for rel, _, _ in files:
            target = base_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, target)
            written.append(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def restaged_dates(conn: duckdb.DuckDBPyConnection, folder: Path, dates: Iterable[str], generation: str,
                   present_sql: str) -> list[str]:
    """The run dates whose partitions of the partitioned mart staged at ``folder`` a run must write: ``dates``
    (what it changed), plus every date an earlier run of this warehouse staged and never published (refused by
    the publish guard, failed or killed: the warehouse moved on, the published files did not), plus every date
    with a staged partition folder (``folder/<model>/<date>/``) that the warehouse holds no row of (its runs went
    while this warehouse did not see them: a warehouse deleted and rebuilt). Writing a date without rows prunes
    its partitions (``prune_mart_partitions``), so the staged mart is the warehouse's for every date it lists.

    Args:
        conn: the warehouse.
        folder: the mart's folder in the run's staging folder.
        dates: the dates the run changed (``YYYY-MM-DD`` or ``undated``).
        generation: the run's generation id; the dates returned are recorded as its unpublished dates (table
            ``unpublished_mart_dates``) until ``mark_published``.
        present_sql: a query giving, in its one column, every date the mart's warehouse table holds rows of.
    Returns:
        The dates, sorted.
    """
    conn.execute(f"create table if not exists {UNPUBLISHED_DATES} (run_date_partition varchar, generation varchar)")
    staged = {d.name for m in (folder.iterdir() if folder.is_dir() else ()) if m.is_dir() for d in m.iterdir()
              if d.is_dir() and not d.name.startswith((".", "_"))}
    present = {row[0] for row in conn.execute(present_sql).fetchall()}
    pending = {row[0] for row in conn.execute(f"select run_date_partition from {UNPUBLISHED_DATES}").fetchall()}
    wanted = sorted(set(dates) | pending | (staged - present))
    conn.execute(f"delete from {UNPUBLISHED_DATES} where list_contains($dates, run_date_partition)",
                 {"dates": wanted})
    if wanted:
        conn.execute(f"insert into {UNPUBLISHED_DATES} select unnest($dates), $generation",
                     {"dates": wanted, "generation": generation})
    return wanted


def mark_published(conn: duckdb.DuckDBPyConnection, generation: str) -> None:
    """Forget the unpublished dates of run ``generation`` (``restaged_dates``): it published them."""
    if UNPUBLISHED_DATES in table_names(conn):
        conn.execute(f"delete from {UNPUBLISHED_DATES} where generation = ?", [generation])


# In a partitioned mart with no partition: a file of no rows and the mart's schema, so that every reader opens the
# folder as an empty table (DuckDB's and Polars' globs raise on a folder without files, and pyarrow infers no
# columns). Named without a leading "_" or ".", which pyarrow and pandas would skip.
EMPTY_MART_FILE = "empty.parquet"


def keep_openable(base_dir: Path, schema: pa.Schema) -> None:
    """Make the partitioned mart ``base_dir`` open in pandas, Polars, DuckDB and pyarrow when it holds no row: with
    no partition file, write ``EMPTY_MART_FILE`` (``schema``, no rows) at its top, creating the folder; with one,
    remove that file. Readers that glob ``<mart>/**/*.parquet`` read it with the rest and get no extra row."""
    marker = base_dir / EMPTY_MART_FILE
    has_rows = base_dir.is_dir() and any(p != marker for p in base_dir.rglob("*.parquet"))
    if has_rows:
        marker.unlink(missing_ok=True)
    else:
        base_dir.mkdir(parents=True, exist_ok=True)
        write_parquet_atomic(schema.empty_table(), marker, mart=base_dir.name)


def prune_mart_partitions(base_dir: Path, dates: list[str], written: list[Path]) -> None:
    """Remove the (model, date) folders of ``dates`` under the mart ``base_dir`` that hold none of the files
    ``written`` (their runs are gone), and model folders left empty."""
    if not base_dir.is_dir():
        return
    kept_folders = {path.parent for path in written}
    date_folders = set(dates)
    for model_dir in (d for d in base_dir.iterdir() if d.is_dir()):
        for folder in model_dir.iterdir():
            if folder.name in date_folders and folder not in kept_folders:
                shutil.rmtree(folder)
        if not any(model_dir.iterdir()):
            model_dir.rmdir()


def read_mart(out_dir: Path, name: str) -> pa.Table:
    """A mart as one Arrow table, from the published generation (``pipeline.io.generations.published_dir``): the
    partitioned folder ``<name>/`` (every file holds all columns) or the file ``<name>.parquet``.

    Raises:
        FileNotFoundError: neither exists (the mart was never materialized).
    """
    published = published_dir(Path(out_dir))
    folder = published / name
    if folder.is_dir():
        return ds.dataset(folder, format="parquet", partitioning=None).to_table()
    return pq.read_table(published / f"{name}.parquet")


def _remove_stale_temporaries(path: Path, pattern: str | None = None) -> None:
    """Delete temporaries of ``path`` (files ``.<name>.<pid>.tmp``, or what ``pattern`` matches, ending in
    ``-<pid>``) left by writers that were killed (their pid no longer runs)."""
    for stale in path.parent.glob(pattern or f".{path.name}.*.tmp"):
        try:
            pid = int(stale.name.rsplit("-", 1)[-1] if pattern else stale.name.rsplit(".", 2)[-2])
            os.kill(pid, 0)
        except ProcessLookupError:
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)
        except (ValueError, PermissionError):
            continue


def content_hash(table: pa.Table) -> str:
    """sha256 of a table's rows, independent of row order: each row serialized with sorted keys, rows sorted.

    Two marts with the same hash hold the same rows (same columns, same values, floats compared exactly).
    """
    lines = sorted(
        orjson.dumps(row, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
        for row in table.to_pylist()
    )
    digest = hashlib.sha256()
    digest.update(orjson.dumps(table.schema.names))
    for line in lines:
        digest.update(line + b"\n")
    return digest.hexdigest()


# Markdown (Dagster UI metadata): a run of whitespace holding a line break, and the characters that would end a
# table cell (|), open a code span, link or image (` [ ]), start HTML or an entity (< > &), or escape the next
# character (\).
_MARKDOWN_LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
_MARKDOWN_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]",
                                   "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def markdown_text(value: object) -> str:
    r"""``value`` as literal text for one line or one table cell of Markdown shown in the Dagster UI.

    Whitespace holding a line break becomes one space (a table row stays one line); backslash, pipe, backtick and
    square brackets are backslash-escaped (no cell split, code span, link or image); ``&``, ``<`` and ``>`` become
    ``&amp;``, ``&lt;`` and ``&gt;`` (no raw HTML, no autolink). For example ``"a|b\n<i>"`` gives
    ``"a\|b &lt;i&gt;"``.
    """
    return _MARKDOWN_LINE_BREAK.sub(" ", str(value)).translate(_MARKDOWN_ESCAPES)


def markdown_preview(table: pa.Table, columns: list[str] | None = None, limit: int = 12) -> str:
    """A Markdown table of the first ``limit`` rows (floats to 4 significant digits) for asset metadata; column
    names and every other value pass ``markdown_text``."""
    cols = [c for c in (columns or table.column_names) if c in table.column_names]
    rows = table.select(cols).slice(0, limit).to_pylist()
    lines = ["| " + " | ".join(markdown_text(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row[c]) for c in cols) + " |")
    if table.num_rows > limit:
        lines.append(f"\n… {table.num_rows - limit} more rows")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return markdown_text(value)


def type_name(dtype: pa.DataType) -> str:
    """Short type name of an Arrow type for ``dagster/column_schema``."""
    return _PYARROW_TYPE_NAMES.get(dtype, str(dtype))
