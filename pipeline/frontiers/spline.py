"""Monotone cubic interpolation along a frontier: cubic Hermite with Steffen tangents, as d3.curveMonotoneX
computes them, evaluated by scipy's ``CubicHermiteSpline``.

Comparison tables clamp the target into the frontier's x-range and the result into the metric's [min, max] over
the frontier; trend tables return NaN outside the range (no extrapolation).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy.interpolate import CubicHermiteSpline


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
    n = np.size(x)  # grouped_steffen_tangents converts x to float64
    if n < 2:
        raise ValueError("tangents need at least 2 points")
    return grouped_steffen_tangents(x, y, [n])


def grouped_steffen_tangents(x: Sequence[float], y: Sequence[float], sizes: Sequence[int]) -> np.ndarray:
    """``steffen_tangents`` of several curves laid end to end, in one pass of array operations: the same
    numbers, element by element, as one call per curve; 0 for a curve of one point.

    Args:
        x: the curves' abscissae concatenated, shape (n,); strictly increasing within each curve.
        y: their ordinates, shape (n,) or (n, k).
        sizes: points per curve, shape (curves,), each ≥ 1, summing to n.
    Returns:
        float array of dy/dx, the shape of ``y``.
    Raises:
        ValueError: sizes do not add up to n, or x not strictly increasing within a curve.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    counts = np.asarray(sizes, dtype=np.int64)
    if counts.sum() != xs.size or ys.shape[0] != xs.size or (counts < 1).any():
        raise ValueError(f"bad curves: x {xs.shape}, y {ys.shape}, sizes summing to {counts.sum()}")
    first = np.cumsum(counts) - counts
    last = first + counts - 1
    m = np.zeros(ys.shape)
    if xs.size < 2:
        return m
    in_curve = np.ones(xs.size - 1, dtype=bool)  # segment i joins points i and i + 1 of one curve
    in_curve[last[last < xs.size - 1]] = False
    h = np.diff(xs)
    if (h[in_curve] <= 0).any():
        raise ValueError("x must be strictly increasing")
    if ys.ndim == 2:
        h = h[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # the segments between two curves are never read
        s = np.diff(ys, axis=0) / h
    interior = np.flatnonzero(in_curve[:-1] & in_curve[1:]) + 1  # points with a segment of their curve on each side
    h0, h1, s0, s1 = h[interior - 1], h[interior], s[interior - 1], s[interior]
    p = (s0 * h1 + s1 * h0) / (h0 + h1)
    sign = lambda v: np.where(v < 0, -1.0, 1.0)  # noqa: E731 — d3's sign: sgn(0) = +1
    m[interior] = (sign(s0) + sign(s1)) * np.minimum(np.minimum(np.abs(s0), np.abs(s1)), 0.5 * np.abs(p))
    ends = counts >= 2
    heads, tails = first[ends], last[ends]
    m[heads] = (3 * s[heads] - m[heads + 1]) / 2
    m[tails] = (3 * s[tails - 1] - m[tails - 1]) / 2
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
    return monotone_spline(x, v)(targets, clamp=clamp)


def monotone_spline(x: Sequence[float], v: Sequence[float],
                    tangents: Sequence[float] | None = None) -> Callable[..., np.ndarray]:
    """``interpolate``'s spline, built once (Steffen tangents, one scipy ``CubicHermiteSpline``) to be read at
    several target sets: ``monotone_spline(x, v)(targets, clamp=c)`` is ``interpolate(x, v, targets, clamp=c)``.
    Arguments, shapes and errors as ``interpolate``'s (raised here, when the spline is built); ``tangents``, the
    shape of ``v``, are ``steffen_tangents(x, v)`` when the caller has them already (``grouped_steffen_tangents``
    of many frontiers at once gives the same numbers), else they are computed here."""
    xs = np.asarray(x, dtype=float)
    vs = np.asarray(v, dtype=float)
    if xs.size == 0 or vs.ndim not in (1, 2) or xs.shape[0] != vs.shape[0]:
        raise ValueError(f"bad frontier: x {xs.shape}, v {vs.shape}")
    if xs.size == 1:
        spline = None
    else:
        dydx = steffen_tangents(xs, vs) if tangents is None else np.asarray(tangents, dtype=float)
        spline = CubicHermiteSpline(xs, vs, dydx, extrapolate=False)
    low, high = vs.min(axis=0), vs.max(axis=0)  # the clamp's bounds, once per spline rather than per read

    def at(targets: Sequence[float], *, clamp: bool) -> np.ndarray:
        ts = np.asarray(targets, dtype=float)
        evaluated = np.clip(ts, xs[0], xs[-1])
        if spline is None:
            out = np.broadcast_to(vs[0], ts.shape + vs.shape[1:]).copy()
        else:
            out = spline(evaluated)
        if clamp:
            return np.clip(out, low, high)
        inside = (ts >= xs[0]) & (ts <= xs[-1])
        return np.where(inside if vs.ndim == 1 else inside[:, None], out, np.nan)

    return at


def interpolate_frontiers(x: Sequence[float], v: Sequence[float], sizes: Sequence[int], target: float) -> np.ndarray:
    """Every frontier's metrics at one target interactivity, trend rule (``interpolate(..., clamp=False)``: NaN
    outside a frontier's [x0, x_last]), with one scipy ``CubicHermiteSpline`` for all of them: ``frontiers_at``
    with every frontier read once at ``target``.

    Args:
        x: the frontiers' interactivities (tok/s/user) concatenated, shape (n,); strictly increasing within each.
        v: their metrics, shape (n, k); non-finite values are read as 0 (mask the result where a frontier lacks
            a metric).
        sizes: points per frontier, shape (frontiers,), each ≥ 1, summing to n.
        target: the interactivity to read every frontier at (tok/s/user).
    Returns:
        float64 array, shape (frontiers, k): NaN for a frontier whose range does not hold ``target``.
    Raises:
        ValueError: sizes do not add up to n, or x not strictly increasing within a frontier.
    """
    frontiers = np.size(sizes)  # frontiers_at converts sizes to int64
    return frontiers_at(x, v, sizes, np.arange(frontiers), np.full(frontiers, float(target)))


def frontiers_at(x: Sequence[float], v: Sequence[float], sizes: Sequence[int], frontier: Sequence[int],
                 targets: Sequence[float]) -> np.ndarray:
    """Frontier ``frontier[i]``'s metrics at ``targets[i]`` (tok/s/user) for every i, trend rule
    (``interpolate(..., clamp=False)``: NaN outside the frontier's [x0, x_last]), with one scipy
    ``CubicHermiteSpline`` for all the frontiers some target of which lies in their range.

    The frontiers are laid end to end on one axis, each shifted past the one before (x + offset, its targets
    shifted with it), and splined with their own Steffen tangents (``grouped_steffen_tangents``); the piece that
    joins two frontiers is never evaluated, because a target outside a frontier's range is NaN. The shift rounds
    x to the spacing of the shifted axis, so a value can differ from a one-frontier ``interpolate`` in its last
    digits (about 1e-12 relative for frontiers spanning hundreds of tok/s/user); a frontier whose points the shift
    would bring closer than that spacing gets its own spline instead. A frontier's value therefore depends on
    which frontiers share the call at that rounding level only: callers that must reproduce a value exactly (a
    nightly batch and a full refresh) pass the same frontiers and targets in the same order.

    Args:
        x, v, sizes: as ``interpolate_frontiers``.
        frontier: which frontier each read is of, int, shape (reads,), each in [0, frontiers).
        targets: the interactivity of each read (tok/s/user), shape (reads,).
    Returns:
        float64 array, shape (reads, k): NaN where the frontier's range does not hold the target.
    Raises:
        ValueError: sizes do not add up to n, or x not strictly increasing within a frontier.
    """
    xs = np.asarray(x, dtype=float)
    vs = np.nan_to_num(np.asarray(v, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    counts = np.asarray(sizes, dtype=np.int64)
    reads, ts = np.asarray(frontier, dtype=np.int64), np.asarray(targets, dtype=float)
    tangents = grouped_steffen_tangents(xs, vs, counts)
    first = np.cumsum(counts) - counts
    last = first + counts - 1
    out = np.full((reads.size, vs.shape[1]), np.nan)
    inside = (xs[first[reads]] <= ts) & (ts <= xs[last[reads]])
    single = inside & (counts[reads] == 1)  # the target equals the one point
    out[single] = vs[first[reads[single]]]
    splined_reads = inside & (counts[reads] >= 2)
    splined = np.unique(reads[splined_reads])  # the frontiers read inside their range, in frontier order
    if splined.size == 0:
        return out
    # each frontier starts one tok/s/user past the end of the one before, on an axis starting at 0
    span = xs[last[splined]] - xs[first[splined]]
    start = np.concatenate(([0.0], np.cumsum(span + 1.0)[:-1]))
    offset = start - xs[first[splined]]
    rows = slices(first[splined], counts[splined])
    point_frontier = np.repeat(np.arange(splined.size), counts[splined])
    shifted = xs[rows] + offset[point_frontier]
    steps = np.diff(shifted)
    joins = np.cumsum(counts[splined])[:-1] - 1  # the segment from one frontier's last point to the next's first
    collapsed = steps <= 0
    collapsed[joins] = False
    own_spline = np.zeros(splined.size, dtype=bool)
    own_spline[np.unique(point_frontier[np.flatnonzero(collapsed)])] = True
    position = np.searchsorted(splined, reads)  # a splined read's frontier's place among ``splined``
    shared = np.flatnonzero(splined_reads)
    shared = shared[~own_spline[position[shared]]]
    if not own_spline.all():
        keep = ~own_spline[point_frontier]
        spline = CubicHermiteSpline(shifted[keep], vs[rows[keep]], tangents[rows[keep]], extrapolate=False)
        out[shared] = spline(ts[shared] + offset[position[shared]])
    for i in np.flatnonzero(splined_reads & own_spline[np.minimum(position, splined.size - 1)]):
        own = slice(first[reads[i]], last[reads[i]] + 1)  # too close to share the shifted axis: its own spline
        out[i] = CubicHermiteSpline(xs[own], vs[own], tangents[own])(ts[i])  # ts[i] lies in its range
    return out


def slices(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The indices of the slices ``[start, start + size)`` concatenated (int64, length ``sizes.sum()``)."""
    starts, sizes = np.asarray(starts, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    offsets = np.cumsum(sizes) - sizes
    return np.arange(sizes.sum()) - np.repeat(offsets - starts, sizes)  # sum of int64: an int64 arange
