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
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.frontiers.spline import interpolate

CI_METRICS = ("tput_per_gpu", "median_intvty")
COMPARISON_CI_COLUMNS = tuple(f"{m}_ci_{end}" for m in CI_METRICS for end in ("lo", "hi"))


def side_intervals(points: Sequence[Mapping[str, Any]], targets: Sequence[float]) -> list[dict[str, float | None]]:
    """Per target, ``COMPARISON_CI_COLUMNS`` of one side: the splined bounds (tok/s/GPU; tok/s/user), None when
    some frontier point of the side has no interval.

    Args:
        points: the side's frontier rows (``FRONTIER_SCHEMA``), in point order.
        targets: target interactivities (tok/s/user).
    """
    rows: list[dict[str, float | None]] = [dict.fromkeys(COMPARISON_CI_COLUMNS) for _ in targets]
    whole = [c for c in COMPARISON_CI_COLUMNS if all(p.get(c) is not None for p in points)]
    if not whole or not points:
        return rows
    x = np.array([p["x_intvty"] for p in points], dtype=float)  # the frontier's x-axis, as the values use
    values = interpolate(x, np.array([[p[c] for c in whole] for p in points], dtype=float), targets, clamp=True)
    for row, at_target in zip(rows, values):
        row.update(zip(whole, map(float, at_target)))
    return rows


def difference_significant(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool | None:
    """True when the two sides' tok/s/GPU intervals at one target do not overlap, False when they do, None when
    either side has no interval."""
    bounds = (a["tput_per_gpu_ci_lo"], a["tput_per_gpu_ci_hi"], b["tput_per_gpu_ci_lo"], b["tput_per_gpu_ci_hi"])
    if any(v is None for v in bounds):
        return None
    a_lo, a_hi, b_lo, b_hi = bounds
    return bool(a_lo > b_hi or b_lo > a_hi)
