"""Pareto frontiers on x = median interactivity (tok/s/user), y = tok/s/GPU: y strictly decreasing in x.

The rule is the seed pages' (the dashboard's frontier): sort by x ascending (ties: y descending); an equal x keeps
the larger y; a point removes earlier points whose y is at most its own.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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
    # y's rank, offset so every point of a later group ranks below every point of an earlier one
    y_rank_across_groups = y_rank.astype(np.int64) + (g.max() - g).astype(np.int64) * n
    best_rank_from = np.maximum.accumulate(y_rank_across_groups[::-1])[::-1]  # best rank from each sorted position on
    first_of_x = np.ones(n, dtype=bool)
    first_of_x[1:] = (g[1:] != g[:-1]) | (xo[1:] != xo[:-1])
    firsts = np.flatnonzero(first_of_x)
    keep = np.ones(firsts.size, dtype=bool)
    # the next first-of-x is in the same group, or in a later one whose ranks are all lower
    keep[:-1] = y_rank_across_groups[firsts[:-1]] > best_rank_from[firsts[1:]]
    return order[firsts[keep]]


def float_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric Arrow column as float64 numpy (tok/s/user, tok/s/GPU …), nulls as NaN: the x and y arrays the
    frontier and interpolation functions take."""
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
