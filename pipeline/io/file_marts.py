"""Marts with rows per raw file (``ingest_ledger``, ``quarantine``), written so that a night rewrites the rows of
the files it touched, not the history's.

Layout: the mart is a folder of two Parquet files with the same columns, ``base.parquet`` and ``recent.parquet``;
the mart is their rows together (each file sorted by the mart's order; read the folder, and sort when the order
matters). ``base`` holds the rows of every file as of the last fold; ``recent`` the current rows of the files
whose rows changed since (their ``base`` rows are none: a night that changes a file ``base`` holds folds). A
night whose changed files are new, the usual night, rewrites ``recent`` only; the mart is folded (``base``
rewritten whole, ``recent`` removed) when a changed file has rows in ``base``, when ``recent``'s files would
outnumber ``RECENT_MAX_SHARE`` of ``base``'s, or when the staged files are not the state the warehouse last
wrote (a run that failed between its warehouse commit and its publish, two runs publishing out of order): so a
mart that drifted from the warehouse is rewritten, never carried on. The folder holds a ``_WHOLE`` marker: two
runs publishing at once never mix one run's ``base`` with the other's ``recent`` (``pipeline.io.generations``).

Why: a mart written whole every night reads back, sorts and writes a row per file of the history; a night's
``recent`` is the night's few thousand files.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.generations import WHOLE
from pipeline.io.storage import table_names, write_parquet_atomic

BASE, RECENT = "base.parquet", "recent.parquet"
RECENT_MAX_SHARE = 1 / 8  # recent's files past this share of base's: fold (recent is rewritten every night)
_STATE_KEY = b"inference_frontier.file_mart"
_STATE_TABLE = "file_mart_state"  # mart, base_state, recent_state: what this warehouse last wrote


@dataclass(frozen=True)
class FileMartWrite:
    """What ``write_file_mart`` did: ``folded`` (base rewritten whole) or not, the rows it wrote, and why it
    folded (``reason``, for the log: "whole rebuild", "3 changed files are in base", …; "" when it did not)."""

    folded: bool
    rows_written: int
    reason: str

    def describe(self) -> str:
        """For the log: "folded (whole rebuild): 1357235 rows" or "recent: 2713 rows"."""
        return f"folded ({self.reason}): {self.rows_written} rows" if self.folded else f"recent: {self.rows_written} rows"


def write_file_mart(conn: duckdb.DuckDBPyConnection, table: str, folder: Path, changed: str | None,
                    order_by: str, schema: pa.Schema | None = None) -> FileMartWrite:
    """Bring the mart ``folder`` (``base.parquet`` + ``recent.parquet``) to the rows of warehouse table ``table``.

    Args:
        conn: the warehouse.
        table: the table whose rows the mart holds; it has a ``source_file`` column (string).
        folder: the mart's folder in the run's staging folder (started from the published one); an earlier
            layout's ``<folder>.parquet`` beside it is removed.
        changed: a table or view of this connection with a ``source_file`` column: every file whose rows in
            ``table`` changed (added, rebuilt or removed) since the last write; None when unknown (a whole
            rebuild), which folds.
        order_by: the SQL ``order by`` list each file is sorted by (e.g. ``"source_file, source_row"``).
        schema: cast the rows to this schema before writing (None: DuckDB's types).
    Returns:
        What was written (``FileMartWrite``).
    Raises:
        OSError: the folder cannot be written.

    Bookkeeping in the warehouse: ``<table>_mart_base_files`` (the files ``base`` holds rows of),
    ``<table>_mart_recent_files`` (the files whose rows ``recent`` holds), and ``file_mart_state`` (the state id
    each file was stamped with, in its Parquet footer): the staged files are trusted only when they carry those
    ids.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / WHOLE).is_file():  # base and recent are published together (pipeline.io.generations)
        (folder / WHOLE).touch()  # only where missing: a staged marker is the published one's hard link
    folder.with_name(f"{folder.name}.parquet").unlink(missing_ok=True)
    base_files, recent_files = f"{table}_mart_base_files", f"{table}_mart_recent_files"
    conn.execute(f"create table if not exists {_STATE_TABLE} (mart varchar, base_state varchar, recent_state varchar)")
    recorded = next(iter(conn.execute(f"select base_state, recent_state from {_STATE_TABLE} where mart = ?",
                                      [table]).fetchall()), None)
    reason = _fold_reason(conn, folder, changed, recorded, base_files, recent_files)
    state = uuid.uuid4().hex
    if reason:
        rows = _write(conn, f"select * from {table} order by {order_by}", folder / BASE, state, schema)
        (folder / RECENT).unlink(missing_ok=True)
        conn.execute(f"create or replace table {base_files} as select distinct source_file from {table}")
        conn.execute(f"create or replace table {recent_files} (source_file varchar)")
        _record(conn, table, state, None)
        return FileMartWrite(True, rows, reason)
    conn.execute(f"insert into {recent_files} select distinct source_file from {changed} "
                 f"where source_file not in (select source_file from {recent_files})").fetchall()
    rows = _write(conn, f"select * from {table} where source_file in (select source_file from {recent_files}) "
                        f"order by {order_by}", folder / RECENT, state, schema)
    _record(conn, table, recorded[0], state if rows else None)  # no rows: no recent file, nothing stamped
    return FileMartWrite(False, rows, "")


def _fold_reason(conn: duckdb.DuckDBPyConnection, folder: Path, changed: str | None, recorded: tuple | None,
                 base_files: str, recent_files: str) -> str:
    """Why the mart must be folded now, or "" when ``recent`` can take the changes."""
    if changed is None:
        return "whole rebuild"
    if recorded is None or not {base_files, recent_files} <= table_names(conn):
        return "first write"
    if (_stamp(folder / BASE), _stamp(folder / RECENT)) != tuple(recorded):
        return "staged files are not the warehouse's last state"
    in_base = conn.execute(f"select count(*) from {base_files} where source_file in "
                           f"(select source_file from {changed})").fetchall()[0][0]
    if in_base:
        return f"{in_base} changed files are in base"
    n_base, n_recent = conn.execute(
        f"select (select count(*) from {base_files}), (select count(*) from (select source_file from {recent_files} "
        f"union select source_file from {changed}))").fetchall()[0]
    if n_recent > RECENT_MAX_SHARE * n_base:
        return f"recent would hold {n_recent} files of {n_base} in base"
    return ""


def _write(conn: duckdb.DuckDBPyConnection, query: str, path: Path, state: str, schema: pa.Schema | None) -> int:
    """Write ``query``'s rows to ``path`` stamped with ``state`` (in the footer's key-value metadata); an empty
    ``recent`` removes the file instead (``base`` is always written, empty or not). Returns the rows written."""
    rows = conn.sql(query).to_arrow_table()
    if schema is not None:
        rows = rows.cast(schema)
    if rows.num_rows == 0 and path.name == RECENT:
        path.unlink(missing_ok=True)
        return 0
    write_parquet_atomic(rows.replace_schema_metadata({_STATE_KEY: orjson.dumps({"state": state})}), path,
                         mart=path.parent.name)  # the mart is named by its folder (quarantine/, ingest_ledger/)
    return rows.num_rows


def _stamp(path: Path) -> str | None:
    """The state id in a mart file's footer; None when the file is missing or carries none."""
    try:
        metadata = pq.read_schema(path).metadata or {}
        return str(orjson.loads(metadata[_STATE_KEY])["state"])
    except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
        return None


def _record(conn: duckdb.DuckDBPyConnection, table: str, base_state: str, recent_state: str | None) -> None:
    """Remember the state ids the mart's files now carry (None: no ``recent`` file)."""
    conn.execute(f"delete from {_STATE_TABLE} where mart = ?", [table])
    conn.execute(f"insert into {_STATE_TABLE} values (?, ?, ?)", [table, base_state, recent_state]).fetchall()
