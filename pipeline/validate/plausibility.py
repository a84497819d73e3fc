"""Plausibility as data: the ranges a run's numbers must lie in and the tok/s/GPU ceiling of each GPU and model,
read from ``data/reference/`` (README there), applied by the row rules ``implausible:<field>``.

Three files:
- ``plausibility.csv``: ``field, reason_field, min, max, unit, basis``; one range per row, both ends inclusive.
  ``field`` is a ``RUN_SCHEMA`` column (latencies in seconds, after the parsers' unit normalization) or one of the
  derived ratios ``output_duration_ratio`` / ``total_duration_ratio`` (tokens / throughput / duration);
  ``reason_field`` names it in the reason code, by the engine's usual key (``implausible:median_tpot_ms``).
- ``gpu_peak_flops.csv``: ``hw, dense_pflops, precision, basis``; dense tensor peak at the GPU's lowest precision.
- ``model_active_params.csv``: ``model, active_params_b, basis``; parameters activated per token, in billions;
  the row ``*`` applies to every model key not listed.

The ceiling: every token a run counts (input or output) costs at least one forward pass over the activated
parameters, 2 FLOPs each, so tok/s/GPU ≤ dense peak FLOP/s ÷ (2 × activated parameters).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.io.opener import RefusedFile, open_text
from pipeline.io.paths import reference_dir as _reference_dir

DERIVED_FIELDS = ("output_duration_ratio", "total_duration_ratio")
ANY_MODEL = "*"


class PlausibilityError(ValueError):
    """A plausibility reference file that cannot be used; the message names the file, the line and the column."""


@dataclass(frozen=True)
class Range:
    """One row of ``plausibility.csv``: ``min ≤ value ≤ max`` in ``unit`` for the column (or ratio) ``field``."""

    field: str
    reason_field: str
    min: float
    max: float
    unit: str


@dataclass(frozen=True)
class Plausibility:
    """The loaded reference: ranges in file order, dense peak PFLOP/s per GPU key, activated parameters (billions)
    per model key and for any other model."""

    ranges: tuple[Range, ...]
    peak_pflops: dict[str, float]
    active_params_b: dict[str, float]
    default_active_params_b: float

    def ceiling(self, hw: str | None, model: str | None) -> float | None:
        """tok/s/GPU no run of ``model`` on ``hw`` can exceed; None for a GPU without a peak (``unknown_hw``)."""
        peak = self.peak_pflops.get(hw)  # type: ignore[arg-type]
        if peak is None:
            return None
        active = self.active_params_b.get(model, self.default_active_params_b)  # type: ignore[arg-type]
        return peak * 1e15 / (2 * active * 1e9)

    @property
    def lowest_ceiling(self) -> float:
        """The smallest ceiling of any GPU and model (the vectorized screen flags every run above it)."""
        return min(self.peak_pflops.values()) * 1e15 / (
            2 * max(self.default_active_params_b, *self.active_params_b.values()) * 1e9)


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        with open_text(path, "reference") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise PlausibilityError(f"{path}: missing column(s) {', '.join(missing)}")
            return [(reader.line_num, row) for row in reader]
    except (OSError, RefusedFile, UnicodeDecodeError, csv.Error) as exc:
        raise PlausibilityError(f"{path}: cannot be read: {exc}") from exc


def _positive(path: Path, line: int, column: str, text: str | None, allow_zero: bool = False) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise PlausibilityError(f"{path} line {line}, column {column}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise PlausibilityError(f"{path} line {line}, column {column}: {value} must be finite and "
                                f"{'≥ 0' if allow_zero else '> 0'}")
    return value


def _positive_by_key(path: Path, key: str, value: str) -> dict[str, float]:
    """``{row[key]: row[value]}`` of a two-column reference CSV, each key once, each value > 0.

    Raises:
        PlausibilityError: a missing column, a key given twice or a value that is not a positive number (naming
            the file, line and column).
    """
    out: dict[str, float] = {}
    for line, row in _rows(path, (key, value)):
        name = row[key].strip()
        if name in out:
            raise PlausibilityError(f"{path} line {line}, column {key}: {name!r} given twice")
        out[name] = _positive(path, line, value, row[value])
    return out


def load_plausibility(reference_dir: Path | None = None) -> Plausibility:
    """Read the three plausibility files of ``reference_dir`` (default ``pipeline.io.paths.reference_dir()``).

    Returns:
        Plausibility: ranges (file order), peaks per GPU key, activated parameters per model key.
    Raises:
        PlausibilityError: a file missing or unreadable, a column missing, a value that is not a finite number
            (≥ 0 for range ends, > 0 for peaks and parameters), ``min > max``, a ``field`` that is neither a
            numeric ``RUN_SCHEMA`` column nor a derived ratio, a key given twice, or no ``*`` model row.
    """
    reference_dir = _reference_dir() if reference_dir is None else reference_dir
    numeric = {f.name for f in RUN_SCHEMA if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)}
    path = reference_dir / "plausibility.csv"
    ranges, seen = [], set()
    for line, row in _rows(path, ("field", "reason_field", "min", "max", "unit")):
        field = row["field"].strip()
        if field not in numeric and field not in DERIVED_FIELDS:
            raise PlausibilityError(f"{path} line {line}, column field: {field!r} is not a numeric run column "
                                    f"nor one of {', '.join(DERIVED_FIELDS)}")
        if field in seen:
            raise PlausibilityError(f"{path} line {line}, column field: {field!r} given twice")
        seen.add(field)
        low = _positive(path, line, "min", row["min"], allow_zero=True)
        high = _positive(path, line, "max", row["max"])
        if low > high:
            raise PlausibilityError(f"{path} line {line}: min {low} > max {high}")
        reason = (row["reason_field"] or "").strip() or field
        ranges.append(Range(field, reason, low, high, (row["unit"] or "").strip()))
    peaks = _positive_by_key(reference_dir / "gpu_peak_flops.csv", "hw", "dense_pflops")
    path = reference_dir / "model_active_params.csv"
    active = _positive_by_key(path, "model", "active_params_b")
    if ANY_MODEL not in active:
        raise PlausibilityError(f"{path}: no {ANY_MODEL!r} row (activated parameters of any other model)")
    if not peaks:
        raise PlausibilityError(f"{reference_dir / 'gpu_peak_flops.csv'}: no GPU rows")
    default = active.pop(ANY_MODEL)
    return Plausibility(tuple(ranges), peaks, active, default)
