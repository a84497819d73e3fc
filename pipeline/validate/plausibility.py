"""Plausibility as data: the ranges a run's numbers must lie in, the tok/s/GPU and tok/s/user ceilings of each GPU
and model, and the E2EL consistency tolerance, read from ``data/reference/`` (README there), applied by the row rules
of ``pipeline.validate.rules``.

Four files:
- ``plausibility.csv``: ``field, reason_field, min, max, unit, basis``; one range per row, both ends inclusive.
  ``field`` is a ``RUN_SCHEMA`` column (latencies in seconds, after the parsers' unit normalization), one of the
  derived ratios ``output_duration_ratio`` / ``total_duration_ratio`` (tokens / throughput / duration), or one of
  ``RULE_INPUTS``, rows a rule of its own reads (the E2EL tolerance, the bytes of a weight); ``reason_field`` names
  it in the reason code, by the engine's usual key (``implausible:median_tpot_ms``).
- ``gpu_peak_flops.csv``: ``hw, dense_pflops, precision, basis``; dense tensor peak at the GPU's lowest precision.
- ``gpu_reference.csv``: its ``mem_bandwidth_tb_s`` column, HBM bandwidth per GPU (TB/s, spec sheet); every GPU
  key has one.
- ``model_active_params.csv``: ``model, active_params_b, basis``; parameters activated per token, in billions. A
  model key not listed has no ceiling: the rule ``unknown_model_size`` quarantines its runs (no wildcard row).

The tok/s/GPU ceiling: every token a run counts (input or output) costs at least one forward pass over the activated
parameters, 2 FLOPs each, so tok/s/GPU ≤ dense peak FLOP/s ÷ (2 × activated parameters).

The tok/s/user ceiling: one decode step of one request reads its activated weights at least once, spread at best
over every GPU serving decode, and emits at most its tokens per step, so tok/s/user ≤ bandwidth × decode GPUs ×
tokens per step ÷ (activated parameters × the fewest bytes a weight takes).
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
# Rows of plausibility.csv that are not a range a run's value is checked against but the input of a rule of its own:
# the E2EL consistency tolerance (rules.e2el_consistency_rule) and the bytes of one weight (the tok/s/user ceiling).
E2EL_DECODE_RATIO = "e2el_decode_ratio"
WEIGHT_BYTES = "weight_bytes_per_param"
RULE_INPUTS = (E2EL_DECODE_RATIO, WEIGHT_BYTES)
# The range whose max is the tokens per step of a speculative run that states no acceptance length.
TOKENS_PER_STEP_FIELD = "spec_accept_length"
BANDWIDTH_COLUMN = "mem_bandwidth_tb_s"


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
    """The loaded reference: the ranges ``range_rule`` checks, in file order; dense peak PFLOP/s and HBM TB/s per GPU
    key; activated parameters (billions) per model key; the E2EL tolerance (``e2el_decode_ratio``); the fewest bytes
    one weight takes; the most tokens one decode step emits (``spec_accept_length``'s max)."""

    ranges: tuple[Range, ...]
    peak_pflops: dict[str, float]
    active_params_b: dict[str, float]
    bandwidth_tb_s: dict[str, float]
    e2el_decode_ratio: Range
    weight_bytes_per_param: float
    max_tokens_per_step: float

    def range_of(self, field: str) -> Range:
        """The range of ``field`` (e.g. ``median_tpot_s``), for rules that read one bound of it.

        Raises:
            PlausibilityError: the reference has no row for ``field``.
        """
        found = next((bound for bound in self.ranges if bound.field == field), None)
        if found is None:
            raise PlausibilityError(f"plausibility.csv: no row for {field}")
        return found

    def ceiling(self, hw: str | None, model: str | None) -> float | None:
        """tok/s/GPU no run of ``model`` on ``hw`` can exceed; None for a GPU without a peak (``unknown_hw``) or a
        model without an activated-parameter count (``unknown_model_size``)."""
        peak = self.peak_pflops.get(hw)  # type: ignore[arg-type]
        active = self.active_params_b.get(model)  # type: ignore[arg-type]
        if peak is None or active is None:
            return None
        return peak * 1e15 / (2 * active * 1e9)

    @property
    def lowest_ceiling(self) -> float:
        """The smallest tok/s/GPU ceiling of any GPU and known model (the vectorized screen flags every run above
        it); infinite when the reference lists no GPU or no model."""
        if not self.peak_pflops or not self.active_params_b:
            return math.inf
        return min(self.peak_pflops.values()) * 1e15 / (2 * max(self.active_params_b.values()) * 1e9)

    def intvty_ceiling(self, hw: str | None, model: str | None, decode_gpus: float | None,
                       tokens_per_step: float) -> float | None:
        """tok/s/user (1000 / TPOT in ms) no request of ``model`` on ``decode_gpus`` GPUs ``hw`` can exceed
        emitting at most ``tokens_per_step`` tokens per decode step: bandwidth (TB/s) × 1e12 × GPUs × tokens per
        step ÷ (activated parameters × 1e9 × bytes per weight). None without a bandwidth (``unknown_hw``), an
        activated-parameter count (``unknown_model_size``) or a positive GPU count."""
        bandwidth = self.bandwidth_tb_s.get(hw)  # type: ignore[arg-type]
        active = self.active_params_b.get(model)  # type: ignore[arg-type]
        if bandwidth is None or active is None or decode_gpus is None or not decode_gpus > 0:
            return None
        # the operation order of rules.interactivity_ceiling_rule's screen, so both give the same float
        return bandwidth * 1e12 * decode_gpus * tokens_per_step / (active * 1e9 * self.weight_bytes_per_param)


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
    """Read the plausibility files of ``reference_dir`` (default ``pipeline.io.paths.reference_dir()``).

    Returns:
        Plausibility: ranges (file order, ``RULE_INPUTS`` rows apart), peaks and bandwidths per GPU key, activated
        parameters per model key, the E2EL tolerance, the bytes of a weight, the most tokens per decode step.
    Raises:
        PlausibilityError: a file missing or unreadable, a column missing, a value that is not a finite number
            (≥ 0 for range ends, > 0 for peaks, bandwidths and parameters), ``min > max``, a ``field`` that is
            neither a numeric ``RUN_SCHEMA`` column, a derived ratio nor a rule input, a key given twice, a
            ``RULE_INPUTS`` or ``spec_accept_length`` row missing, a GPU of ``gpu_reference.csv`` without a
            bandwidth, or a ``*`` model row (an unknown model has no size: ``unknown_model_size``).
    """
    reference_dir = _reference_dir() if reference_dir is None else reference_dir
    numeric = {f.name for f in RUN_SCHEMA if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)}
    path = reference_dir / "plausibility.csv"
    ranges, inputs, seen = [], {}, set()
    for line, row in _rows(path, ("field", "reason_field", "min", "max", "unit")):
        field = row["field"].strip()
        if field not in numeric and field not in DERIVED_FIELDS and field not in RULE_INPUTS:
            raise PlausibilityError(f"{path} line {line}, column field: {field!r} is not a numeric run column "
                                    f"nor one of {', '.join(DERIVED_FIELDS + RULE_INPUTS)}")
        if field in seen:
            raise PlausibilityError(f"{path} line {line}, column field: {field!r} given twice")
        seen.add(field)
        low = _positive(path, line, "min", row["min"], allow_zero=True)
        high = _positive(path, line, "max", row["max"])
        if low > high:
            raise PlausibilityError(f"{path} line {line}: min {low} > max {high}")
        reason = (row["reason_field"] or "").strip() or field
        bound = Range(field, reason, low, high, (row["unit"] or "").strip())
        if field in RULE_INPUTS:
            inputs[field] = bound
        else:
            ranges.append(bound)
    for needed in (*RULE_INPUTS, TOKENS_PER_STEP_FIELD):
        if needed not in seen:
            raise PlausibilityError(f"{path}: no {needed!r} row")
    if inputs[WEIGHT_BYTES].min <= 0:
        raise PlausibilityError(f"{path}: {WEIGHT_BYTES!r} min must be > 0 (the ceiling divides by it)")
    peaks = _positive_by_key(reference_dir / "gpu_peak_flops.csv", "hw", "dense_pflops")
    if not peaks:
        raise PlausibilityError(f"{reference_dir / 'gpu_peak_flops.csv'}: no GPU rows")
    bandwidths = _positive_by_key(reference_dir / "gpu_reference.csv", "hw", BANDWIDTH_COLUMN)
    path = reference_dir / "model_active_params.csv"
    active = _positive_by_key(path, "model", "active_params_b")
    if "*" in active:
        raise PlausibilityError(f"{path}: a '*' row would give every unlisted model one size; list each model "
                                "instead (an unlisted one is quarantined as unknown_model_size)")
    most_tokens = next(r.max for r in ranges if r.field == TOKENS_PER_STEP_FIELD)
    return Plausibility(tuple(ranges), peaks, active, bandwidths, inputs[E2EL_DECODE_RATIO],
                        inputs[WEIGHT_BYTES].min, most_tokens)
