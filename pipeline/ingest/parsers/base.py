"""What every format parser returns, and the typed field readers they share.

A parser turns one decoded run object (a dict) into a :class:`ParsedRun`: normalized values of
``pipeline.ingest.schema.RUN_SCHEMA`` plus the metadata it found. Bad values raise :class:`FieldError`, which the
registry turns into a quarantine row naming the field and the reason; the rest of the file goes on.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from pipeline.ingest.schema import INTVTY_STATS, LATENCY_METRICS, LATENCY_STATS

# The range of the int64 columns of ``RUN_SCHEMA`` (request and token counts): a larger value cannot be stored.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class FieldError(ValueError):
    """A field of a run that cannot be read: missing where required, wrong type, or impossible value.

    ``reason_code`` is the stable quarantine code, ``"<reason>:<field>"`` (docs/inputs.md), e.g.
    ``missing_field:total_token_throughput`` or ``not_a_number:duration``.
    """

    def __init__(self, reason: str, field_name: str, detail: str):
        super().__init__(f"{field_name}: {detail}")
        self.reason_code = f"{reason}:{field_name}"
        self.detail = f"field {field_name!r}: {detail}"


class RowRejected(ValueError):
    """A run object that is well formed but not a run this pipeline can use (e.g. an agentic-benchmark row)."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


@dataclass
class ParsedRun:
    """One run read from a file.

    Attributes:
        values: normalized metric fields (names of ``RUN_SCHEMA``; latencies in s, throughputs in tok/s).
        in_file_meta: metadata the file states explicitly (keys of docs/inputs.md); wins over sidecar and runs.csv.
        fallback_meta: metadata implied by the engine output (framework from the client, model key from the model
            path, precision from the quantization flag); used only when no other source names the key.
        derivations: human-readable notes on values derived rather than read (e.g. total = input + output).
    """

    values: dict[str, Any] = field(default_factory=dict)
    in_file_meta: dict[str, Any] = field(default_factory=dict)
    fallback_meta: dict[str, Any] = field(default_factory=dict)
    derivations: list[str] = field(default_factory=list)


def number(doc: Mapping[str, Any], key: str, *, label: str | None = None) -> float | None:
    """The float at ``doc[key]``; ``None`` when absent or null. NaN/Infinity are kept (validation rejects them).

    Raises:
        FieldError: ``not_a_number:<key>`` for strings, lists, dicts or booleans; ``int_out_of_range:<key>`` for an
            integer literal too large for a float (e.g. 1 followed by 400 zeros).
    """
    value = doc.get(key)
    if value is None:
        return None
    if type(value) is float:  # the common case first: this runs ~30 times per run
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "nan", "-inf"):
            return float(value)  # float() reads these words in any case, around any whitespace
        raise FieldError("not_a_number", label or key, f"expected a number, got {type(value).__name__} {value!r:.40}")
    try:
        return float(value)
    except OverflowError:
        raise FieldError("int_out_of_range", label or key,
                         f"an integer of {len(str(abs(value)))} digits, beyond the float range") from None


def integer(doc: Mapping[str, Any], key: str, *, label: str | None = None) -> int | None:
    """The integer at ``doc[key]`` (integral floats accepted); ``None`` when absent or null.

    Raises:
        FieldError: ``not_an_integer:<key>`` for non-integral or non-numeric values; ``int_out_of_range:<key>`` for
            an integral value outside the int64 range (``completed: 1e30``).
    """
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        raise FieldError("not_an_integer", label or key, f"expected an integer, got {value!r}")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise FieldError("int_out_of_range", label or key, f"{value:.4g} is outside the int64 range")
        return value
    raise FieldError("not_an_integer", label or key, f"expected an integer, got {value!r:.40}")


def require(value: Any, key: str) -> Any:
    """``value`` unless it is None.

    Raises:
        FieldError: ``missing_field:<key>``.
    """
    if value is None:
        raise FieldError("missing_field", key, "required and absent (or null)")
    return value


def latency_block(doc: Mapping[str, Any], pattern: str, scale: float,
                  renames: tuple[tuple[str, str], ...] = ()) -> dict[str, float | None]:
    """Latency columns ``{stat}_{metric}_s`` read from the keys ``pattern.format(stat=…, metric=…)``, multiplied
    by ``scale`` (1e-3 for millisecond keys, 1.0 for second keys). ``renames`` maps our metric names to the
    engine's where they differ (SGLang: ``(("e2el", "e2e_latency"),)``).

    Raises:
        FieldError: a present latency value that is not a number.
    """
    out: dict[str, float | None] = {}
    for column, key in _latency_keys(pattern, renames):
        value = number(doc, key)
        out[column] = None if value is None else value * scale
    return out


@functools.lru_cache(maxsize=None)
def _latency_keys(pattern: str, renames: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """(column, engine key) pairs of one naming pattern, built once per pattern rather than once per run."""
    names = dict(renames)
    return tuple((f"{stat}_{metric}_s", pattern.format(stat=stat, metric=names.get(metric, metric)))
                 for metric in LATENCY_METRICS for stat in LATENCY_STATS)


def interactivity(tpot: float | None, unit: str) -> float | None:
    """Interactivity (tok/s/user) from one TPOT exactly as the file gives it: ``1000 / tpot`` for ms, ``1 / tpot``
    for s; None for a missing or zero TPOT (validation rejects zero and negative TPOTs).

    Computed here, from the file's own number, rather than in SQL from the seconds column: ``1 / (tpot_ms · 1e-3)``
    can differ from the dashboard's ``1000 / tpot_ms`` in the last bit, enough to flip a rounded default target.

    Raises:
        ValueError: a unit other than ``ms`` or ``s``.
    """
    if unit not in _PER_SECOND:
        raise ValueError(f"TPOT unit must be 'ms' or 's', got {unit!r}")
    if tpot is None or tpot == 0:
        return None
    return _PER_SECOND[unit] / tpot


_PER_SECOND = {"ms": 1000.0, "s": 1.0}


def interactivity_block(doc: Mapping[str, Any], pattern: str, unit: str) -> dict[str, float | None]:
    """``{stat}_intvty`` for stat in mean, median, p90, p99 from the TPOT keys ``pattern.format(stat=…)`` in the
    file's ``unit`` (``interactivity``).

    Raises:
        FieldError: a present TPOT that is not a number.
    """
    return {column: interactivity(number(doc, key), unit) for column, key in _intvty_keys(pattern)}


@functools.lru_cache(maxsize=None)
def _intvty_keys(pattern: str) -> tuple[tuple[str, str], ...]:
    """(column, engine TPOT key) pairs of one naming pattern, built once per pattern rather than once per run."""
    return tuple((f"{stat}_intvty", pattern.format(stat=stat)) for stat in INTVTY_STATS)


def input_throughput(total: float | None, output: float | None) -> float | None:
    """Input tok/s derived from the other two throughputs: ``total − output`` (tok/s), None when either is absent.

    The one place the parsers derive it (every format that states a total and an output throughput but no input
    throughput); validation checks output ≤ total, so a negative result is quarantined there, not here.
    """
    if total is None or output is None:
        return None
    return total - output


def metadata_keys_in(doc: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The subset of ``doc`` whose keys are metadata keys, skipping nulls and empty strings."""
    return {k: doc[k] for k in keys if k in doc and doc[k] is not None and doc[k] != ""}


def section(doc: Mapping[str, Any], key: str, label: str | None = None) -> Mapping[str, Any]:
    """The JSON object at ``doc[key]``, or {} when the key is absent or null (a section a format may omit).

    Args:
        doc: the enclosing object.
        key: the section's key.
        label: the field name an error gives (e.g. ``metrics.request_totals``); default ``key``.
    Raises:
        FieldError: ``not_an_object:<label>`` when the value is something other than an object.
    """
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError("not_an_object", label or key, f"expected an object, got {type(value).__name__}")
    return value


def console_number(raw: str | None) -> float | None:
    """The number in a console report's value cell (``"  1234.5"``), or None when the cell is absent or not a
    number (``N/A``, ``not set``): console formats print such words where a JSON format would omit the key."""
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return None
