"""Moving Arrow tables in and out of the DuckDB warehouse, writing Parquet marts safely, and describing a table
for the Dagster UI (row count, column schema, Markdown preview)."""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

_PYARROW_TYPE_NAMES = {pa.string(): "string", pa.float64(): "double", pa.int32(): "int32", pa.int64(): "int64",
                       pa.bool_(): "bool", pa.date32(): "date"}


def write_table(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> None:
    """Replace warehouse table ``name`` (a constant of ours, never user input) with the Arrow ``table``."""
    conn.register("_incoming", table)
    try:
        conn.execute(f"create or replace table {name} as select * from _incoming")
    finally:
        conn.unregister("_incoming")


def replace_partitions(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table, keys: list[str],
                       key_column: str = "run_date_partition") -> None:
    """Idempotent partition write: delete the rows of ``keys`` from warehouse table ``name``, insert ``table``
    (whose rows must all belong to ``keys``). Creates the table on first use; a table whose columns no longer
    match (an upgrade changed the schema) is rebuilt from ``table`` alone, and the next full run refills it."""
    conn.register("_incoming", table)
    try:
        existing = conn.execute(
            "select column_name from information_schema.columns where table_name = ? order by ordinal_position",
            [name]).fetchall()
        if [c[0] for c in existing] != table.column_names:
            conn.execute(f"create or replace table {name} as select * from _incoming")
            return
        conn.execute(f"delete from {name} where list_contains($keys, {key_column})", {"keys": keys})
        conn.execute(f"insert into {name} select * from _incoming")
    finally:
        conn.unregister("_incoming")


def read_table(conn: duckdb.DuckDBPyConnection, name: str) -> pa.Table:
    """The whole warehouse table ``name`` as Arrow.

    Raises:
        duckdb.CatalogException: the table does not exist (its upstream asset was never materialized).
    """
    return conn.sql(f"select * from {name}").to_arrow_table()


def write_parquet_atomic(table: pa.Table, path: Path) -> Path:
    """Write ``table`` to ``path`` via a temporary file in the same folder and an atomic rename, so a reader
    never sees a half-written mart and a crash leaves the previous file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _remove_stale_temporaries(path: Path) -> None:
    """Delete temporaries of ``path`` left by writers that were killed (their pid no longer runs)."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            pid = int(stale.name.rsplit(".", 2)[-2])
            os.kill(pid, 0)
        except ProcessLookupError:
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


def markdown_preview(table: pa.Table, columns: list[str] | None = None, limit: int = 12) -> str:
    """A Markdown table of the first ``limit`` rows (floats to 4 significant digits) for asset metadata."""
    cols = [c for c in (columns or table.column_names) if c in table.column_names]
    rows = table.select(cols).slice(0, limit).to_pylist()
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
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
    return str(value).replace("|", "\\|")


def type_name(dtype: pa.DataType) -> str:
    """Short type name of an Arrow type for ``dagster/column_schema``."""
    return _PYARROW_TYPE_NAMES.get(dtype, str(dtype))
