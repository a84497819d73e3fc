"""The versioned GPU reference table (``data/reference/gpu_reference.csv``; docs/metrics.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from pipeline.io.opener import open_regular
from pipeline.io.paths import reference_dir

REFERENCE_SCHEMA = pa.schema(
    [
        ("hw", pa.string()),
        ("display_name", pa.string()),
        ("power_kw", pa.float64()),
        ("hyperscaler_usd_per_gpu_hour", pa.float64()),
        ("neocloud_usd_per_gpu_hour", pa.float64()),
        ("rental_usd_per_gpu_hour", pa.float64()),
        ("reference_version", pa.string()),
    ]
)


def load_gpu_reference(path: Path | None = None) -> pa.Table:
    """One row per GPU key: all-in power (kW per GPU) and $/GPU-hour for the hyperscaler, neocloud and rental tiers.

    ``path`` defaults to ``gpu_reference.csv`` of ``pipeline.io.paths.reference_dir()`` (``PIPELINE_REFERENCE_DIR``).

    Raises:
        ValueError: a missing column, a duplicate GPU key, or a non-positive power or price (naming the GPU).
    """
    path = reference_dir() / "gpu_reference.csv" if path is None else path
    with open_regular(path, "reference") as handle:
        table = pacsv.read_csv(handle, convert_options=pacsv.ConvertOptions(column_types=REFERENCE_SCHEMA))
    missing = set(REFERENCE_SCHEMA.names) - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    table = table.select(REFERENCE_SCHEMA.names)
    keys = table.column("hw").to_pylist()
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: duplicate hw keys")
    for row in table.to_pylist():
        for column in ("power_kw", "hyperscaler_usd_per_gpu_hour", "neocloud_usd_per_gpu_hour",
                       "rental_usd_per_gpu_hour"):
            if row[column] is None or row[column] <= 0:
                raise ValueError(f"{path}: {row['hw']}: {column} must be > 0, got {row[column]}")
    return table


DEFAULT_PRICE_BOOK = "inferencex-seed"
# The price tiers a price book carries a $/GPU-hour for, cheapest kind of buyer last; every per-tier column of the
# marts ($/M tokens, their intervals) and the command line's --tier choices are named from this list.
PRICE_TIERS = ("hyperscaler", "neocloud", "rental")
PRICE_COLUMNS = ("power_kw", *(f"{tier}_usd_per_gpu_hour" for tier in PRICE_TIERS))
PRICE_BOOK_SCHEMA = pa.schema(
    [("price_book", pa.string()), ("price_book_version", pa.string()), ("hw", pa.string()),
     *[(c, pa.float64()) for c in PRICE_COLUMNS]]
)


def load_overrides_csv(path: Path) -> list[dict]:
    """Rows of ``data/reference/overrides.csv`` (``price_book, hw`` and any of the price/power columns; blank cells
    inherit the default), each tagged with its line for error messages. Missing file → []."""
    if not path.is_file():
        return []
    with open_regular(path, "reference") as handle:
        table = pacsv.read_csv(handle, convert_options=pacsv.ConvertOptions(
            column_types={c: pa.float64() for c in PRICE_COLUMNS}, strings_can_be_null=True))
    return [{**row, "_source": f"{path.name} line {i + 2}"} for i, row in enumerate(table.to_pylist())]


def build_price_books(reference: pa.Table, overrides: list[dict]) -> pa.Table:
    """Every cost scenario as rows (price_book, price_book_version, hw, power_kw, three $/GPU-h tiers).

    The default book is the reference table itself (version = its ``reference_version``). Each distinct
    ``price_book`` among ``overrides`` is the default with those cells replaced; its version is the reference
    version plus a short hash of its overrides, so a changed override is a new version.

    Raises:
        ValueError: an override naming an unknown GPU, no book name, the default book's name, or a value ≤ 0
            (the message names the source line and the field).
    """
    base = {row["hw"]: row for row in reference.to_pylist()}
    version = sorted({row["reference_version"] for row in base.values()})[-1]
    books: dict[str, dict[str, dict]] = {DEFAULT_PRICE_BOOK: {hw: dict(row) for hw, row in base.items()}}
    applied: dict[str, list[str]] = {}
    for override in overrides:
        where = override.get("_source", "run config")
        name, hw = (override.get("price_book") or "").strip(), (override.get("hw") or "").strip().lower()
        if not name or name == DEFAULT_PRICE_BOOK:
            raise ValueError(f"{where}: field price_book must name a new scenario (not empty, not {DEFAULT_PRICE_BOOK!r})")
        if hw not in base:
            raise ValueError(f"{where}: field hw {hw!r} is not in the GPU reference ({', '.join(sorted(base))})")
        book = books.setdefault(name, {k: dict(v) for k, v in base.items()})
        for column in PRICE_COLUMNS:
            value = override.get(column)
            if value is None:
                continue
            if not value > 0:
                raise ValueError(f"{where}: field {column} must be > 0, got {value}")
            book[hw][column] = float(value)
            applied.setdefault(name, []).append(f"{hw}.{column}={value}")
    rows = []
    for name, book in sorted(books.items()):
        book_version = version if name == DEFAULT_PRICE_BOOK else (
            f"{version}+{hashlib.sha256(';'.join(sorted(applied.get(name, []))).encode()).hexdigest()[:8]}")
        rows += [{"price_book": name, "price_book_version": book_version, "hw": hw,
                  **{c: row[c] for c in PRICE_COLUMNS}} for hw, row in sorted(book.items())]
    return pa.Table.from_pylist(rows, schema=PRICE_BOOK_SCHEMA)
