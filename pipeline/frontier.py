"""Pareto frontiers, monotone cubic interpolation, interactivity bands and targets: the seed pages' rules exactly
(DESIGN.md §4).

- Frontier on x = median interactivity (tok/s/user), y = tok/s/GPU: y strictly decreasing in x.
- Interpolation: cubic Hermite with Steffen tangents, as d3.curveMonotoneX computes them, evaluated by scipy's
  ``CubicHermiteSpline``. Comparison tables clamp the target into the frontier's x-range and the result into the
  metric's [min, max] over the frontier; trend tables return NaN outside the range.
- Band: overlap of the two sides' interactivity ranges over all their runs, or their union when they do not
  overlap; default targets at 25/50/75 % of the band, rounded half up.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.interpolate import CubicHermiteSpline

TARGET_FRACTIONS = (0.25, 0.5, 0.75)


def pareto_frontier(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Indices of the Pareto-optimal points, in ascending x (higher x and higher y are both better).

    Rule: sort by x ascending (ties: y descending); of equal x only the larger y is kept; each point removes the
    earlier points whose y is ≤ its y. The result has x strictly increasing and y strictly decreasing.

    Args:
        x: interactivity per point (tok/s/user), shape (n,).
        y: throughput per point (tok/s/GPU), shape (n,).
    Returns:
        int array of indices into ``x``/``y``, shape (k,), k ≤ n; empty for n = 0.
    Raises:
        ValueError: ``x`` and ``y`` differ in length, or contain NaN.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y differ in shape: {xs.shape} vs {ys.shape}")
    if np.isnan(xs).any() or np.isnan(ys).any():
        raise ValueError("frontier input contains NaN")
    order = np.lexsort((-ys, xs))  # primary key x ascending, then y descending
    kept: list[int] = []
    last_x = None
    for i in order:
        if last_x is not None and xs[i] == last_x:
            continue  # same x: the first seen has the larger y
        last_x = xs[i]
        while kept and ys[kept[-1]] <= ys[i]:
            kept.pop()
        kept.append(int(i))
    return np.asarray(kept, dtype=int)


def steffen_tangents(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Tangents of d3.curveMonotoneX (Steffen 1990) at each point.

    Interior: m = (sgn s0 + sgn s1)·min(|s0|, |s1|, ½|p|), p = (s0·h1 + s1·h0)/(h0 + h1), sgn(0) = +1.
    Endpoints, in this order: m0 = (3·s0 − m1)/2, then m_last = (3·s_last − m_{n−2})/2 (so for n = 2, with m1
    still 0: m0 = 1.5·s, m1 = 0.75·s).

    Args:
        x: strictly increasing abscissae, shape (n,), n ≥ 2.
        y: ordinates, shape (n,).
    Returns:
        float array of dy/dx, shape (n,).
    Raises:
        ValueError: fewer than 2 points, or x not strictly increasing.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    n = xs.size
    if n < 2:
        raise ValueError("tangents need at least 2 points")
    h = np.diff(xs)
    if (h <= 0).any():
        raise ValueError("x must be strictly increasing")
    s = np.diff(ys) / h
    m = np.zeros(n)
    if n > 2:
        h0, h1, s0, s1 = h[:-1], h[1:], s[:-1], s[1:]
        p = (s0 * h1 + s1 * h0) / (h0 + h1)
        sign = lambda v: np.where(v < 0, -1.0, 1.0)  # noqa: E731 — d3's sign: sgn(0) = +1
        m[1:-1] = (sign(s0) + sign(s1)) * np.minimum(np.minimum(np.abs(s0), np.abs(s1)), 0.5 * np.abs(p))
    m[0] = (3 * s[0] - m[1]) / 2
    m[-1] = (3 * s[-1] - m[-2]) / 2
    return m


def interpolate(x: Sequence[float], v: Sequence[float], targets: Sequence[float], *, clamp: bool) -> np.ndarray:
    """Values of metric ``v`` at ``targets`` along a frontier, by monotone cubic Hermite interpolation.

    Args:
        x: frontier interactivity, strictly increasing, shape (n,), n ≥ 1.
        v: the metric at those points (tok/s/GPU, $/M tokens, tok/s/MW, concurrency …), shape (n,).
        targets: interactivities to evaluate at, shape (t,).
        clamp: True for comparison tables (target clamped into [x0, x_last], result into [min v, max v]);
            False for trend tables (NaN outside [x0, x_last]; never extrapolates).
    Returns:
        float array, shape (t,).
    Raises:
        ValueError: empty frontier or shape mismatch.
    """
    xs = np.asarray(x, dtype=float)
    vs = np.asarray(v, dtype=float)
    ts = np.asarray(targets, dtype=float)
    if xs.size == 0 or xs.shape != vs.shape:
        raise ValueError(f"bad frontier: x {xs.shape}, v {vs.shape}")
    inside = (ts >= xs[0]) & (ts <= xs[-1])
    evaluated = np.clip(ts, xs[0], xs[-1])
    if xs.size == 1:
        out = np.full(ts.shape, vs[0])
    else:
        spline = CubicHermiteSpline(xs, vs, steffen_tangents(xs, vs), extrapolate=False)
        out = spline(evaluated)
    if clamp:
        return np.clip(out, vs.min(), vs.max())
    return np.where(inside, out, np.nan)


def interactivity_band(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, bool]:
    """The band both sides cover: lo = max(min_a, min_b), hi = min(max_a, max_b); the union if lo ≥ hi.

    Args:
        a, b: median interactivity of every run of each side (tok/s/user), non-empty.
    Returns:
        (lo, hi, is_union), unrounded.
    Raises:
        ValueError: a side with no runs.
    """
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need runs for a band")
    a_min, a_max, b_min, b_max = float(np.min(a)), float(np.max(a)), float(np.min(b)), float(np.max(b))
    lo, hi = max(a_min, b_min), min(a_max, b_max)
    if lo >= hi:
        return min(a_min, b_min), max(a_max, b_max), True
    return lo, hi, False


def round_half_up(value: float) -> int:
    """Round to the nearest integer, .5 away from zero for positives (dashboard rounding, not banker's)."""
    return math.floor(value + 0.5)


def default_targets(lo: float, hi: float) -> list[int]:
    """round-half-up(lo + (hi − lo)·f) for f in 0.25, 0.5, 0.75 (tok/s/user)."""
    return [round_half_up(lo + (hi - lo) * f) for f in TARGET_FRACTIONS]


def displayed_band(lo: float, hi: float) -> tuple[int, int]:
    """The band as the page prints it: ceil(lo)–floor(hi)."""
    return math.ceil(lo), math.floor(hi)


def band_phrase(target: float, lo: float, hi: float) -> str:
    """Where a target sits in the displayed band: u < ⅓ "near the low end", u > ⅔ "toward the upper edge",
    else "around the middle"; u = (t − min)/(max − min) on the displayed (ceil/floor) band."""
    d_lo, d_hi = displayed_band(lo, hi)
    u = 0.5 if d_hi == d_lo else (target - d_lo) / (d_hi - d_lo)
    if u < 1 / 3:
        return "near the low end"
    if u > 2 / 3:
        return "toward the upper edge"
    return "around the middle"
