"""Monotone cubic interpolation along a frontier: cubic Hermite with Steffen tangents, as d3.curveMonotoneX
computes them, evaluated by scipy's ``CubicHermiteSpline``.

Comparison tables clamp the target into the frontier's x-range and the result into the metric's [min, max] over
the frontier; trend tables return NaN outside the range (no extrapolation).
"""

from __future__ import annotations

from typing import Sequence

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
