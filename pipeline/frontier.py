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
import pyarrow as pa
import pyarrow.compute as pc
from scipy.interpolate import CubicHermiteSpline

TARGET_FRACTIONS = (0.25, 0.5, 0.75)


def pareto_frontier(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Indices of the Pareto-optimal points, in ascending x (higher x and higher y are both better).

    Rule: sort by x ascending (ties: y descending); of equal x only the larger y is kept; each point removes the
    earlier points whose y is ≤ its y. The result has x strictly increasing and y strictly decreasing. Of two
    identical points the earlier one is kept.

    Args:
        x: interactivity per point (tok/s/user), shape (n,).
        y: throughput per point (tok/s/GPU), shape (n,).
    Returns:
        int array of indices into ``x``/``y``, shape (k,), k ≤ n; empty for n = 0.
    Raises:
        ValueError: ``x`` and ``y`` differ in length, or contain NaN.
    """
    xs = np.asarray(x, dtype=float)
    return grouped_pareto_frontiers(np.zeros(xs.shape, dtype=np.int64), xs, y)


def grouped_pareto_frontiers(group: Sequence[int], x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """``pareto_frontier`` of every group at once, in array operations (no loop over groups or points).

    The rule in closed form: within a group, the first point of each x (the larger y) stays unless a point of a
    larger x has a y as high or higher; the first point of the group's largest x always stays. "As high or
    higher" is compared on y's dense rank plus a per-group offset that puts every later group below every
    earlier one, so one reversed running maximum serves all groups.

    Args:
        group: a group label per point (any integers), shape (n,).
        x: interactivity per point (tok/s/user), shape (n,).
        y: throughput per point (tok/s/GPU), shape (n,).
    Returns:
        int array of indices of every group's frontier points, ordered by group label, then ascending x.
    Raises:
        ValueError: the arrays differ in length, or ``x``/``y`` contain NaN.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = np.asarray(group)
    if xs.shape != ys.shape or labels.shape != xs.shape:
        raise ValueError(f"group, x and y differ in shape: {labels.shape}, {xs.shape}, {ys.shape}")
    if np.isnan(xs).any() or np.isnan(ys).any():
        raise ValueError("frontier input contains NaN")
    n = xs.size
    if n <= 1:
        return np.arange(n)
    _, g = np.unique(labels, return_inverse=True)
    # by group, x ascending, y descending; lexsort is stable, so identical points keep their input order
    order = np.lexsort((-ys, xs, g))
    g, xo = g[order], xs[order]
    _, y_rank = np.unique(ys[order], return_inverse=True)  # equal y, equal rank
    height = y_rank.astype(np.int64) + (g.max() - g).astype(np.int64) * n
    best_from = np.maximum.accumulate(height[::-1])[::-1]  # highest point from each sorted position on
    first_of_x = np.ones(n, dtype=bool)
    first_of_x[1:] = (g[1:] != g[:-1]) | (xo[1:] != xo[:-1])
    firsts = np.flatnonzero(first_of_x)
    keep = np.ones(firsts.size, dtype=bool)
    # the next first-of-x is in the same group, or in a later one whose heights are all lower
    keep[:-1] = height[firsts[:-1]] > best_from[firsts[1:]]
    return order[firsts[keep]]


def float_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric Arrow column as float64 numpy (tok/s/user, tok/s/GPU …), nulls as NaN: the x and y arrays the
    frontier and interpolation functions take."""
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


def steffen_tangents(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Tangents of d3.curveMonotoneX (Steffen 1990) at each point.

    Interior: m = (sgn s0 + sgn s1)·min(|s0|, |s1|, ½|p|), p = (s0·h1 + s1·h0)/(h0 + h1), sgn(0) = +1.
    Endpoints, in this order: m0 = (3·s0 − m1)/2, then m_last = (3·s_last − m_{n−2})/2 (so for n = 2, with m1
    still 0: m0 = 1.5·s, m1 = 0.75·s).

    Args:
        x: strictly increasing abscissae, shape (n,), n ≥ 2.
        y: ordinates, shape (n,), or (n, k) for k curves over the same x (each column on its own).
    Returns:
        float array of dy/dx, the shape of ``y``.
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
    if ys.ndim == 2:
        h = h[:, None]
    s = np.diff(ys, axis=0) / h
    m = np.zeros(ys.shape)
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
        v: the metric at those points (tok/s/GPU, $/M tokens, tok/s/MW, concurrency …), shape (n,); or
            (n, k) for k metrics at once, one spline each (the same numbers as k calls, one scipy spline object).
        targets: interactivities to evaluate at, shape (t,).
        clamp: True for comparison tables (target clamped into [x0, x_last], result into [min v, max v] per
            metric); False for trend tables (NaN outside [x0, x_last]; never extrapolates).
    Returns:
        float array, shape (t,), or (t, k).
    Raises:
        ValueError: empty frontier or shape mismatch.
    """
    xs = np.asarray(x, dtype=float)
    vs = np.asarray(v, dtype=float)
    ts = np.asarray(targets, dtype=float)
    if xs.size == 0 or vs.ndim not in (1, 2) or xs.shape[0] != vs.shape[0]:
        raise ValueError(f"bad frontier: x {xs.shape}, v {vs.shape}")
    inside = (ts >= xs[0]) & (ts <= xs[-1])
    evaluated = np.clip(ts, xs[0], xs[-1])
    if xs.size == 1:
        out = np.broadcast_to(vs[0], ts.shape + vs.shape[1:]).copy()
    else:
        spline = CubicHermiteSpline(xs, vs, steffen_tangents(xs, vs), extrapolate=False)
        out = spline(evaluated)
    if clamp:
        return np.clip(out, vs.min(axis=0), vs.max(axis=0))
    return np.where(inside if vs.ndim == 1 else inside[:, None], out, np.nan)


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
