"""Confidence of a comparison cell: each side's 95 % interval of the interpolated tok/s/GPU and interactivity,
and whether the two sides' intervals are apart (docs/metrics.md "Repeats and confidence intervals").

Interpolating an interval: the lower bounds of the frontier points are splined along the frontier's
interactivity as one more metric, and so are the upper bounds, with the same Steffen spline and clamping as the
value (``pipeline.frontiers.spline.interpolate``, ``clamp=True``). Because the spline is monotone between points
and each bound is clamped into its own range, the splined bounds bracket what a point-by-point interval would,
but they are not a new confidence statement about the interpolated curve: they say how far the measured points
around the target could move. A bound is given only when every frontier point of the side has an interval
(n ≥ 2 repeats); one point without repeats makes the side's interval null (never bridged over a hole, like the
optional metrics).

The cost interval at a tier follows from the tok/s/GPU interval: cost per token is the side's $/GPU-h ÷ (tok/s/GPU
× 3600 / 1e6), so ``cost_per_mtok_<tier>_ci_lo`` = P / ``tput_per_gpu_ci_hi`` and ``_ci_hi`` = P /
``tput_per_gpu_ci_lo``, with P = $/GPU-h / 0.0036 recovered from the side's first frontier point as cost × tok/s/GPU
(the numerator of ``implied_cost_per_mtok_hyperscaler``). Two sides' values differ beyond run-to-run noise when
their intervals do not overlap (``intervals_apart``); for two GPUs at different prices the cost intervals can
overlap where the tok/s/GPU intervals do not, and the reverse, so each sentence is decided by its own quantity.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.frontiers.spline import interpolate
from pipeline.metrics.reference import PRICE_TIERS

CI_METRICS = ("tput_per_gpu", "median_intvty")
# the splined intervals of tok/s/GPU and interactivity, then each tier's cost interval ($/M tok)
COMPARISON_CI_COLUMNS = (*(f"{m}_ci_{end}" for m in CI_METRICS for end in ("lo", "hi")),
                         *(f"cost_per_mtok_{t}_ci_{end}" for t in PRICE_TIERS for end in ("lo", "hi")))
SPLINED_CI_COLUMNS = COMPARISON_CI_COLUMNS[:4]


def side_intervals(points: Sequence[Mapping[str, Any]], targets: Sequence[float]) -> list[dict[str, float | None]]:
    """Per target, ``COMPARISON_CI_COLUMNS`` of one side: the splined bounds (tok/s/GPU; tok/s/user), None when
    some frontier point of the side has no interval, and each tier's cost interval ($/M tok, ``price_per_mtok``
    over the tok/s/GPU bounds, the high cost from the low throughput), None where the tok/s/GPU interval or the
    tier's price is missing.

    Args:
        points: the side's frontier rows (``FRONTIER_SCHEMA``), in point order.
        targets: target interactivities (tok/s/user).
    """
    rows: list[dict[str, float | None]] = [dict.fromkeys(COMPARISON_CI_COLUMNS) for _ in targets]
    whole = whole_interval_columns(points)
    if not whole or not points:
        return rows
    x = np.array([p["x_intvty"] for p in points], dtype=float)  # the frontier's x-axis, as the values use
    values = interpolate(x, np.array([[p[c] for c in whole] for p in points], dtype=float), targets, clamp=True)
    prices = {tier: price_per_mtok(points, tier) for tier in PRICE_TIERS}
    for row, at_target in zip(rows, values):
        row.update(zip(whole, map(float, at_target)))
        lo, hi = row["tput_per_gpu_ci_lo"], row["tput_per_gpu_ci_hi"]
        for tier, price in prices.items():
            if price is not None and lo is not None and hi is not None and lo > 0:
                row[f"cost_per_mtok_{tier}_ci_lo"], row[f"cost_per_mtok_{tier}_ci_hi"] = price / hi, price / lo
    return rows


def whole_interval_columns(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``SPLINED_CI_COLUMNS`` every frontier point of a side has as a finite number: a bound some point lacks,
    or holds as NaN or infinity, is no interval for the side (never bridged over, never splined)."""
    return [c for c in SPLINED_CI_COLUMNS if all(p.get(c) is not None and math.isfinite(p[c]) for p in points)]


def price_per_mtok(points: Sequence[Mapping[str, Any]], tier: str = "hyperscaler") -> float | None:
    """The side's $/GPU-h at ``tier`` divided by 0.0036 (so that cost in $/M tok = this / tok/s/GPU), recovered
    from its first frontier point as cost × tok/s/GPU: the same at every point of one GPU and price book (docs/
    metrics.md section 12a). None when that point has no cost at the tier (or no tok/s/GPU).

    Args:
        points: the side's frontier rows (``FRONTIER_SCHEMA``), in point order, at least one.
        tier: ``hyperscaler``, ``neocloud`` or ``rental``.
    """
    cost, tput = points[0].get(f"cost_per_mtok_{tier}"), points[0].get("tput_per_gpu")
    return None if cost is None or tput is None else cost * tput


def intervals_apart(a_lo: float | None, a_hi: float | None, b_lo: float | None,
                    b_hi: float | None) -> bool | None:
    """The rule "a difference is said only when it exists" (docs/metrics.md section 14): True when the two
    intervals [a_lo, a_hi] and [b_lo, b_hi] do not overlap, False when they do (touching counts as overlap), None
    when any bound is missing. Units: any, the same for both."""
    if a_lo is None or a_hi is None or b_lo is None or b_hi is None:
        return None
    return bool(a_lo > b_hi or b_lo > a_hi)


def difference_significant(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool | None:
    """True when the two sides' tok/s/GPU intervals at one target do not overlap, False when they do, None when
    either side has no interval."""
    return intervals_apart(a["tput_per_gpu_ci_lo"], a["tput_per_gpu_ci_hi"], b["tput_per_gpu_ci_lo"],
                           b["tput_per_gpu_ci_hi"])
