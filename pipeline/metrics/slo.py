"""Service-level objectives as data (``slos.csv`` of the reference folder): the latency bounds a request must meet.

Columns: ``name`` (``[a-z0-9_]+``, unique; ``none`` is reserved for "no SLO" in the frontier and comparison marts),
``ttft_s``, ``tpot_s``, ``e2el_s`` (seconds; an empty cell = no bound on that latency), ``min_attainment`` (the
share of requests, 0 < x ≤ 1, that must meet every bound for the run to meet the SLO; empty = 0.99) and
``description``. Every SLO bounds at least one latency. How runs are judged against them: ``sql/run_slo.sql`` and
docs/metrics.md ("SLOs, attainment and goodput").
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pyarrow as pa

from pipeline.io.opener import open_text
from pipeline.io.paths import reference_dir

NO_SLO = "none"  # the ``slo`` value of the unrestricted frontier and comparison rows
DEFAULT_MIN_ATTAINMENT = 0.99
BOUNDS = ("ttft_s", "tpot_s", "e2el_s")
SLO_SCHEMA = pa.schema([("name", pa.string()), ("ttft_s", pa.float64()), ("tpot_s", pa.float64()),
                        ("e2el_s", pa.float64()), ("min_attainment", pa.float64()), ("description", pa.string())])
_NAME = re.compile(r"[a-z0-9_]+")


class SloError(ValueError):
    """``slos.csv`` is malformed; the message names the file, line and column."""


def load_slos(path: Path | None = None) -> pa.Table:
    """The SLO table (``SLO_SCHEMA``; bounds in seconds, null = unbounded), from ``path`` or ``slos.csv`` of
    ``reference_dir()``. A missing file gives no SLOs (an empty table).

    Raises:
        SloError: a missing column, a bad or repeated name (or ``none``), a bound that is not a positive finite
            number, ``min_attainment`` outside (0, 1], or a row with no bound at all.
    """
    path = reference_dir() / "slos.csv" if path is None else path
    if not path.is_file():
        return SLO_SCHEMA.empty_table()
    rows, seen = [], set()
    with open_text(path, "reference") as handle:
        reader = csv.DictReader(handle)
        missing = {"name", *BOUNDS} - set(reader.fieldnames or ())
        if missing:
            raise SloError(f"{path}: missing columns {sorted(missing)}")
        for line, raw in enumerate(reader, start=2):
            name = (raw.get("name") or "").strip()
            if not _NAME.fullmatch(name) or name == NO_SLO or name in seen:
                raise SloError(f"{path} line {line}, column name: {name!r} is empty, not [a-z0-9_]+, "
                               f"{NO_SLO!r} (reserved) or given twice")
            seen.add(name)
            row = {"name": name, "description": (raw.get("description") or "").strip() or None}
            for column in BOUNDS:
                row[column] = _number(path, line, column, raw.get(column))
            row["min_attainment"] = _number(path, line, "min_attainment", raw.get("min_attainment"))
            if row["min_attainment"] is None:
                row["min_attainment"] = DEFAULT_MIN_ATTAINMENT
            if not 0 < row["min_attainment"] <= 1:
                raise SloError(f"{path} line {line}, column min_attainment: must be in (0, 1], "
                               f"got {row['min_attainment']}")
            if all(row[c] is None for c in BOUNDS):
                raise SloError(f"{path} line {line}: SLO {name!r} bounds none of {', '.join(BOUNDS)}")
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=SLO_SCHEMA)


def _number(path: Path, line: int, column: str, text: str | None) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise SloError(f"{path} line {line}, column {column}: {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise SloError(f"{path} line {line}, column {column}: must be a positive finite number, got {text!r}")
    return value
