"""Frontier, interpolation, band and target rules against hand-computed cases (docs/metrics.md)."""

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy.interpolate import CubicHermiteSpline
from test_rule_values import _d3_tangents, _hermite

from pipeline.comparisons.band import (
    band_phrase,
    default_targets,
    displayed_band,
    interactivity_band,
    round_half_up,
)
from pipeline.frontiers.pareto import grouped_pareto_frontiers, pareto_frontier
from pipeline.frontiers.spline import (
    frontiers_at,
    grouped_steffen_tangents,
    interpolate,
    interpolate_frontiers,
    monotone_spline,
    slices,
    steffen_tangents,
)


def _points(x, y):
    idx = pareto_frontier(x, y)
    return [(x[i], y[i]) for i in idx]


def test_frontier_drops_dominated_point():
    x, y = [10, 15, 20, 30], [800, 100, 700, 300]
    assert _points(x, y) == [(10, 800), (20, 700), (30, 300)]


def test_frontier_input_order_does_not_matter():
    x, y = [30, 10, 20, 15], [300, 800, 700, 100]
    assert _points(x, y) == [(10, 800), (20, 700), (30, 300)]


def test_frontier_equal_x_keeps_larger_y():
    assert _points([10, 10, 20], [500, 800, 100]) == [(10, 800), (20, 100)]


def test_frontier_later_point_with_equal_y_removes_earlier():
    # (20, 800) is as fast as (10, 800) and more interactive: (10, 800) is dominated.
    assert _points([10, 20, 30], [800, 800, 100]) == [(20, 800), (30, 100)]


def test_frontier_result_is_strictly_decreasing():
    rng = np.random.default_rng(7)
    x, y = rng.uniform(1, 100, 200), rng.uniform(1, 5000, 200)
    pts = _points(x, y)
    assert all(a[0] < b[0] and a[1] > b[1] for a, b in zip(pts, pts[1:]))
    # every dropped point is dominated by a kept one
    kept = set(pts)
    for p in zip(x, y):
        if p not in kept:
            assert any(k[0] >= p[0] and k[1] >= p[1] for k in kept)


def test_frontier_matches_the_rule_point_by_point_with_many_ties():
    """On a coarse grid (equal x, equal y, exact duplicates), the kept indices are the rule's, checked pairwise:
    i stays iff no point has a larger x and a y as high, none has its x and a higher y, and no earlier point is
    the same (x, y)."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        x, y = rng.integers(0, 8, n).astype(float), rng.integers(0, 8, n).astype(float)
        expected = [i for i in range(n) if not any(
            (x[j] > x[i] and y[j] >= y[i]) or (x[j] == x[i] and y[j] > y[i]) or (j < i and (x[j], y[j]) == (x[i], y[i]))
            for j in range(n))]
        assert pareto_frontier(x, y).tolist() == sorted(expected, key=lambda i: x[i])


def test_grouped_frontiers_are_each_groups_frontier():
    """All groups at once (labels unsorted, interleaved, negative) give, group by group in label order, exactly
    the frontier of that group alone; a group's points never remove another group's."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        group = rng.choice([-4, 3, 10, 11], n)
        x, y = rng.integers(0, 6, n).astype(float), rng.integers(0, 6, n).astype(float)
        expected = [int(i) for label in sorted(set(group.tolist())) for i in np.flatnonzero(group == label)[
            pareto_frontier(x[group == label], y[group == label])]]
        assert grouped_pareto_frontiers(group, x, y).tolist() == expected
    # a tall point in another group removes nothing here
    assert grouped_pareto_frontiers([0, 0, 1], [1.0, 2.0, 9.0], [5.0, 4.0, 99.0]).tolist() == [0, 1, 2]


def test_frontier_empty_and_nan():
    assert pareto_frontier([], []).size == 0
    with pytest.raises(ValueError):
        pareto_frontier([1.0, float("nan")], [1.0, 2.0])


def test_steffen_two_points():
    np.testing.assert_allclose(steffen_tangents([0, 10], [0, 100]), [15, 7.5])


def test_steffen_interior_hand_computed():
    # x 0,1,3; y 0,2,3: s0=2, s1=0.5, h0=1, h1=2; p=(2*2+0.5*1)/3=1.5; m1=2*min(2,0.5,0.75)=1.0
    # m0=(3*2-1)/2=2.5; m2=(3*0.5-1)/2=0.25
    np.testing.assert_allclose(steffen_tangents([0, 1, 3], [0, 2, 3]), [2.5, 1.0, 0.25])


def test_steffen_extremum_gets_flat_tangent():
    # a local maximum: slopes of opposite sign -> sgn sum 0 -> m = 0
    assert steffen_tangents([0, 1, 2], [0, 1, 0])[1] == 0.0


def test_linear_series_interpolates_linearly():
    x = [10.0, 20.0, 35.0, 50.0]
    y = [1000.0 - 12.0 * v for v in x]
    t = [12.0, 20.0, 27.5, 49.0]
    np.testing.assert_allclose(interpolate(x, y, t, clamp=True), [1000.0 - 12.0 * v for v in t])


def test_interpolation_passes_through_points_and_stays_monotone():
    x, y = [10, 20, 30, 45], [900, 700, 300, 250]
    np.testing.assert_allclose(interpolate(x, y, x, clamp=True), y)
    grid = np.linspace(10, 45, 200)
    values = interpolate(x, y, grid, clamp=True)
    assert np.all(np.diff(values) <= 1e-9)


def test_two_point_spline_matches_hermite_by_hand():
    # m = [15, 7.5], h = 10, t = 0.5: h10 = 0.125, h11 = -0.125 -> 0 + 0.125*10*15 + 0.5*100 - 0.125*10*7.5
    assert interpolate([0, 10], [0, 100], [5], clamp=True)[0] == pytest.approx(59.375)


def _random_frontiers(rng, count):
    """``count`` frontiers of 1-7 points (x strictly increasing, 2 metrics), concatenated: (x, v, sizes)."""
    sizes = rng.integers(1, 8, size=count)
    x = np.concatenate([np.sort(rng.choice(np.arange(5, 400), size=n, replace=False)) + rng.random(n) * 0.5
                        for n in sizes])
    v = rng.random((x.size, 2)) * 1000
    return x, v, sizes


def test_grouped_tangents_are_each_curves_d3_tangents():
    """Against d3's tangents written point by point (tests/test_rule_values.py), curve by curve and column by
    column: the grouped pass must not let one curve's points reach another's tangents."""
    rng = np.random.default_rng(7)
    x, v, sizes = _random_frontiers(rng, 300)
    sizes[-1] = 1  # a last curve of one point, after a drop in x
    x, v = x[:sizes.sum()], v[:sizes.sum()]
    grouped = grouped_steffen_tangents(x, v, sizes)
    start = 0
    for n in sizes:
        for column in range(2):
            expected = _d3_tangents(list(x[start:start + n]), list(v[start:start + n, column])) if n >= 2 else [0.0]
            np.testing.assert_allclose(grouped[start:start + n, column], expected, rtol=1e-12, atol=1e-12)
        start += n


def test_grouped_tangents_of_a_single_point_after_a_curve():
    # the drop from 3.0 to 0.5 is where the second curve starts: not an error, and no tangent crosses it
    m = grouped_steffen_tangents([1.0, 2.0, 3.0, 0.5], [1.0, 3.0, 4.0, 9.0], [3, 1])
    np.testing.assert_allclose(m, _d3_tangents([1.0, 2.0, 3.0], [1.0, 3.0, 4.0]) + [0.0])
    m = grouped_steffen_tangents([9.0, 1.0, 2.0, 4.0], [5.0, 1.0, 3.0, 4.0], [1, 3])  # and before one
    np.testing.assert_allclose(m, [0.0] + _d3_tangents([1.0, 2.0, 4.0], [1.0, 3.0, 4.0]))


def test_grouped_tangents_reject_bad_curves():
    with pytest.raises(ValueError, match="strictly increasing"):
        grouped_steffen_tangents([1.0, 2.0, 2.0, 0.5], [1.0, 2.0, 3.0, 4.0], [3, 1])
    for x, y, sizes in (([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [2, 2]),  # sizes add up to more than x
                        ([1.0, 2.0, 3.0], [1.0, 2.0], [3]),  # y shorter than x
                        ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [3, 0])):  # an empty curve
        with pytest.raises(ValueError, match="bad curves"):
            grouped_steffen_tangents(x, y, sizes)


@pytest.mark.parametrize("target", [35.0, 120.25, 250.0])
def test_frontiers_read_together_match_each_frontier_read_alone(target):
    rng = np.random.default_rng(int(target * 4))
    x, v, sizes = _random_frontiers(rng, 400)
    together = interpolate_frontiers(x, v, sizes, target)
    start = 0
    for row, n in zip(together, sizes):
        alone = interpolate(x[start:start + n], v[start:start + n], [target], clamp=False)[0]
        np.testing.assert_allclose(row, alone, rtol=1e-9, atol=1e-9)  # NaN where alone is NaN
        start += n
    assert np.isfinite(together).any() and np.isnan(together).any()  # both kinds of frontier were drawn


def test_several_targets_per_frontier_in_one_spline_match_each_frontier_read_alone():
    """``frontiers_at`` (the trends' reader: each frontier at each of its comparisons' targets, one spline per
    date): read i is frontier[i] at targets[i], the one-frontier value, NaN outside the frontier."""
    rng = np.random.default_rng(7)
    x, v, sizes = _random_frontiers(rng, 200)
    frontier = np.repeat(np.arange(len(sizes)), 3)
    targets = rng.uniform(0.0, 300.0, frontier.size)
    out = frontiers_at(x, v, sizes, frontier, targets)
    starts = np.cumsum(sizes) - sizes
    for row, g, t in zip(out, frontier, targets):
        alone = interpolate(x[starts[g]:starts[g] + sizes[g]], v[starts[g]:starts[g] + sizes[g]], [t], clamp=False)[0]
        np.testing.assert_allclose(row, alone, rtol=1e-9, atol=1e-9)  # NaN where alone is NaN
    assert np.isfinite(out).any() and np.isnan(out).any()
    # one target per frontier: exactly interpolate_frontiers
    assert np.array_equal(frontiers_at(x, v, sizes, np.arange(len(sizes)), np.full(len(sizes), 35.0)),
                          interpolate_frontiers(x, v, sizes, 35.0), equal_nan=True)


def test_frontier_endpoints_read_exactly_and_single_points_only_at_their_x():
    x = np.array([10.0, 20.0, 30.0, 35.0, 12.0, 18.0])
    v = np.array([[100.0], [80.0], [50.0], [7.0], [60.0], [40.0]])
    out = interpolate_frontiers(x, v, [3, 1, 2], 35.0)
    assert np.isnan(out[0, 0]) and out[1, 0] == 7.0 and np.isnan(out[2, 0])
    assert interpolate_frontiers(x, v, [3, 1, 2], 30.0)[0, 0] == 50.0
    assert interpolate_frontiers(x, v, [3, 1, 2], 12.0)[2, 0] == 60.0


def test_points_too_close_for_the_shared_axis_get_their_own_spline():
    # 1e-12 tok/s/user apart: shifted past a 1e6-wide frontier the two points would merge; the frontier after
    # them shares the axis with the first
    x = np.array([0.0, 1e6, 35.0, 35.0 + 1e-12, 36.0, 30.0, 40.0])
    v = np.array([[1.0], [2.0], [30.0], [20.0], [10.0], [8.0], [4.0]])
    out = interpolate_frontiers(x, v, [2, 3, 2], 35.5)
    assert out[1, 0] == interpolate(x[2:5], v[2:5], [35.5], clamp=False)[0, 0]
    np.testing.assert_allclose(out[0, 0], interpolate(x[:2], v[:2], [35.5], clamp=False)[0, 0], rtol=1e-9)
    np.testing.assert_allclose(out[2, 0], interpolate(x[5:], v[5:], [35.5], clamp=False)[0, 0], rtol=1e-9)


def test_a_missing_value_stays_in_its_own_frontier():
    """A NaN or infinite metric (the caller masks that frontier's cell) must not reach the next frontier's value,
    not even at its end point, where the shared spline evaluates the piece joining the two."""
    x = np.array([10.0, 20.0, 30.0, 5.0, 35.0, 50.0])
    v = np.array([[100.0, 1.0], [80.0, 2.0], [50.0, 3.0], [np.nan, np.inf], [70.0, -np.inf], [60.0, 6.0]])
    out = interpolate_frontiers(x, v, [3, 3], 30.0)
    assert out[0].tolist() == [50.0, 3.0]
    assert np.isfinite(interpolate_frontiers(x, v, [3, 3], 40.0)[1]).all()


# x 10, 20, 30 and values 100, 0, 40 (the tests below): h = 10, s0 = -10, s1 = 4 -> opposite signs, m1 = 0;
# m0 = (3 s0 - m1)/2 = -15, m2 = (3 s1 - m1)/2 = 6. Halfway (u = 1/2: h00 = h01 = 1/2, h10 = 1/8, h11 = -1/8):
# at 15, 100/2 + 10 (-15)/8 = 31.25; at 25, 40/2 - 10 * 6/8 = 12.5; at the knot 20, exactly 0.
HAND_X = [10.0, 20.0, 30.0]


def test_a_missing_or_infinite_value_is_read_as_zero_at_its_point_and_between():
    """frontiers_at's documented rule: a non-finite metric (NaN, +inf, -inf, or None as a database null arrives
    in a Python list) is the value 0, so the frontier's spline goes through 0 there (the caller masks the cell)."""
    v = [[100.0, 100.0, 100.0, 100.0], [np.nan, np.inf, -np.inf, None], [40.0, 40.0, 40.0, 40.0],
         [7.0, 7.0, 7.0, 7.0], [9.0, 9.0, 9.0, 9.0]]
    out = frontiers_at(HAND_X + [5.0, 50.0], v, [3, 2], [0, 0, 0, 1], [15.0, 20.0, 25.0, 5.0])
    np.testing.assert_allclose(out[[0, 2]], [[31.25] * 4, [12.5] * 4], rtol=1e-12)
    assert out[1].tolist() == [0.0] * 4 and out[3].tolist() == [7.0] * 4


def test_decimal_inputs_are_read_as_their_float_values():
    # DuckDB returns DECIMAL columns as Python Decimals; they are converted before any arithmetic
    x = [Decimal("10"), Decimal("20"), Decimal("30")]
    out = frontiers_at(x, [[Decimal("100")], [Decimal("0")], [Decimal("40")]], [3], [0, 0], [15.0, 25.0])
    np.testing.assert_allclose(out, [[31.25], [12.5]], rtol=1e-12)
    # steffen_tangents([0, 1, 3], [0, 2, 3]) by hand in test_steffen_interior_hand_computed
    np.testing.assert_allclose(grouped_steffen_tangents([Decimal(0), Decimal(1), Decimal(3)], [0, 2, 3], [3]),
                               [2.5, 1.0, 0.25])


@pytest.mark.parametrize("clamp", [False, True])
def test_decimal_x_is_compared_as_floats_also_with_a_nan_target(clamp):
    # a NaN target (no interactivity) reads NaN, as with float x, and the others their values (a Decimal x
    # compared with NaN as it is would raise decimal.InvalidOperation)
    x = [Decimal("10"), Decimal("20"), Decimal("30")]
    values = interpolate(x, [100.0, 0.0, 40.0], [np.nan, 15.0, 25.0], clamp=clamp)
    assert np.isnan(values[0]) and values[1:] == pytest.approx([31.25, 12.5], rel=1e-12)


def test_a_target_of_none_reads_nan():
    # a null target (None in a Python list) is no interactivity: NaN in the trend and the comparison rule alike
    out = frontiers_at(HAND_X, [[100.0], [0.0], [40.0]], [3], [0, 0], [None, 15.0])
    assert np.isnan(out[0, 0]) and out[1, 0] == pytest.approx(31.25, rel=1e-12)
    for clamp in (False, True):
        values = interpolate(HAND_X, [100.0, 0.0, 40.0], [None, 15.0], clamp=clamp)
        assert np.isnan(values[0]) and values[1] == pytest.approx(31.25, rel=1e-12)


def test_no_frontiers_or_no_reads_give_an_empty_result():
    # a date with nothing to read: lists and empty arrays made without a dtype (numpy makes those float64)
    assert frontiers_at([], np.empty((0, 2)), [], [], []).shape == (0, 2)
    assert frontiers_at(np.array([]), np.empty((0, 2)), np.array([]), np.array([]), np.array([])).shape == (0, 2)
    assert frontiers_at(HAND_X, [[1.0], [2.0], [3.0]], [3], [], []).shape == (0, 1)
    assert interpolate_frontiers([], np.empty((0, 3)), [], 30.0).shape == (0, 3)


def test_slices_are_int64_indices_also_of_empty_float_arrays():
    got = slices(np.array([3, 0]), np.array([2, 1]))
    assert got.dtype == np.int64 and got.tolist() == [3, 4, 0]
    none = slices(np.array([]), np.array([]))  # float64 arrays: no slice at all
    assert none.dtype == np.int64 and none.size == 0 and np.arange(5)[none].size == 0


@pytest.mark.parametrize("close_last", [False, True])
def test_a_frontier_whose_last_points_collapse_on_the_shared_axis_gets_its_own_spline(close_last):
    """Points 1e-12 apart at the end of a frontier that lies past a 1e6-wide one on the shared axis, where that
    step rounds to 0: the frontier is read on its own spline, whether another frontier follows it or not."""
    # 34, 35, 35 + 1e-12; 30, 20, 10: h0 = 1, h1 = 1e-12, s0 = -10, s1 = -1e13, p ~ -1e13 -> m1 = -2 min(10,
    # 1e13, 5e12) = -20; m0 = (3 s0 - m1)/2 = -5. At 34.5 (u = 1/2, h = 1): 15 - 5/8 + 10 + 20/8 = 26.875.
    wide = ([0.0, 1e6], [[1.0], [2.0]])
    close = ([34.0, 35.0, 35.0 + 1e-12], [[30.0], [20.0], [10.0]])
    two_point = ([30.0, 40.0], [[8.0], [4.0]])
    order = [wide, two_point, close] if close_last else [wide, close, two_point]
    x, v = sum((f[0] for f in order), []), sum((f[1] for f in order), [])
    out = interpolate_frontiers(x, v, [len(f[0]) for f in order], 34.5)[:, 0]
    assert out[order.index(close)] == pytest.approx(26.875, rel=1e-12)
    # two points: m = 1.5 s, 0.75 s
    assert out[order.index(two_point)] == pytest.approx(_hermite([30.0, 40.0], [8.0, 4.0], [-0.6, -0.3], 34.5),
                                                        rel=1e-9)
    assert out[0] == pytest.approx(_hermite([0.0, 1e6], [1.0, 2.0], [1.5e-6, 0.75e-6], 34.5), rel=1e-9)


def test_shared_reads_are_the_frontiers_splines_on_the_documented_axis_to_the_bit():
    """frontiers_at's layout: the frontiers read in their range, in frontier order, each starting 1 tok/s/user past
    the end of the one before on an axis from 0 (start_k = sum of (span + 1) before it). A read is then, to the last
    bit, scipy's Hermite spline of its own frontier (d3's tangents, test_rule_values) on that shifted axis: the
    bits trends.py reproduces across a nightly batch and a full refresh. Rebuilt here point by point."""
    rng = np.random.default_rng(5)
    x, v, sizes = _random_frontiers(rng, 200)
    frontier = np.repeat(np.arange(len(sizes)), 3)
    targets = rng.uniform(0.0, 400.0, frontier.size)
    starts = np.cumsum(sizes) - sizes
    inside = [sizes[g] >= 2 and x[starts[g]] <= t <= x[starts[g] + sizes[g] - 1] for g, t in zip(frontier, targets)]
    start, offset = 0.0, {}
    for g in sorted({g for g, read in zip(frontier, inside) if read}):
        offset[g] = start - x[starts[g]]
        start += (x[starts[g] + sizes[g] - 1] - x[starts[g]]) + 1.0
    expected = np.full((frontier.size, 2), np.nan)
    for i, (g, t) in enumerate(zip(frontier, targets)):
        if inside[i]:
            rows = slice(starts[g], starts[g] + sizes[g])
            for k in range(2):
                tangents = _d3_tangents(x[rows].tolist(), v[rows, k].tolist())
                expected[i, k] = CubicHermiteSpline(x[rows] + offset[g], v[rows, k], tangents)(t + offset[g])
    assert sum(inside) > 200 and len(offset) > 100
    assert np.array_equal(frontiers_at(x, v, sizes, frontier, targets), expected, equal_nan=True)


def test_given_tangents_are_used_as_given():
    # x 0, 10; y 0, 100; tangents 20, 0 (not Steffen's 15, 7.5). At 5 (u = 1/2, h = 10): 0/2 + 10 * 20/8 + 100/2
    # - 10 * 0/8 = 75
    at = monotone_spline([0.0, 10.0], [0.0, 100.0], [20.0, 0.0])
    assert at([0.0, 5.0, 10.0], clamp=False).tolist() == [0.0, 75.0, 100.0]


def test_tangents_of_counts_given_as_floats_and_of_unsigned_x():
    # whole-number counts as floats (a column that went through a float type) are the same curves:
    # steffen([0, 1, 3], [0, 2, 3]) = [2.5, 1, 0.25] and steffen([0, 10], [0, 100]) = [15, 7.5] by hand above
    np.testing.assert_allclose(grouped_steffen_tangents([0, 1, 3, 0, 10], [0, 2, 3, 0, 100], np.array([3.0, 2.0])),
                               [2.5, 1.0, 0.25, 15.0, 7.5])
    # unsigned x (an unsigned integer column): the same tangents, and a fall in x is refused, not wrapped around
    np.testing.assert_allclose(grouped_steffen_tangents(np.array([0, 1, 3], dtype=np.uint32), [0, 2, 3], [3]),
                               [2.5, 1.0, 0.25])
    with pytest.raises(ValueError, match="strictly increasing"):
        grouped_steffen_tangents(np.array([1, 3, 2], dtype=np.uint32), [1.0, 2.0, 3.0], [3])


@pytest.mark.filterwarnings("error")
def test_a_curve_starting_where_the_one_before_ends_warns_nothing():
    """The step between two curves laid end to end is never read; one of 0 (the next curve starts at the last x of
    the one before) divides by 0 there, silently. Two-point curves: m = 1.5 s, 0.75 s."""
    same_y = grouped_steffen_tangents([1.0, 2.0, 2.0, 3.0], [5.0, 4.0, 4.0, 3.0], [2, 2])  # 0/0 at the join
    assert same_y.tolist() == [-1.5, -0.75, -1.5, -0.75]
    other_y = grouped_steffen_tangents([1.0, 2.0, 2.0, 3.0], [5.0, 4.0, 6.0, 3.0], [2, 2])  # 2/0 at the join
    assert other_y.tolist() == [-1.5, -0.75, -4.5, -2.25]


def test_a_flat_segment_beside_a_falling_one_gives_a_positive_zero_tangent():
    # d3's sign(0) = +1: (sgn 0 + sgn s) min(|0|, ...) = (1 - 1) 0 = +0, bit for bit the chart's tangent
    flat_first = steffen_tangents([0.0, 1.0, 2.0], [5.0, 5.0, 3.0])  # s = 0, -2: m0 = 0, m2 = (3 (-2) - 0)/2
    falling_first = steffen_tangents([0.0, 1.0, 2.0], [5.0, 3.0, 3.0])  # s = -2, 0: m0 = (3 (-2) - 0)/2, m2 = 0
    assert flat_first.tolist() == [0.0, 0.0, -3.0] and falling_first.tolist() == [-3.0, 0.0, 0.0]
    assert math.copysign(1.0, flat_first[1]) == 1.0 and math.copysign(1.0, falling_first[1]) == 1.0


def test_comparison_clamps_target_and_value():
    x, y = [10, 20, 30], [900, 700, 300]
    assert list(interpolate(x, y, [5, 40], clamp=True)) == [900, 300]


def test_trend_returns_nan_outside_range():
    out = interpolate([10, 20, 30], [900, 700, 300], [5, 20, 40], clamp=False)
    assert np.isnan(out[0]) and out[1] == pytest.approx(700) and np.isnan(out[2])


def test_single_point_frontier():
    assert list(interpolate([25], [400], [10, 25, 90], clamp=True)) == [400, 400, 400]


def test_band_overlap():
    assert interactivity_band([10, 50], [15, 45]) == (15, 45, False)
    assert interactivity_band([10, 30], [20, 60]) == (20, 30, False)


def test_band_without_overlap_uses_union():
    assert interactivity_band([10, 20], [30, 40]) == (10, 40, True)
    assert interactivity_band([10, 20], [20, 40]) == (10, 40, True)  # lo == hi is not a band


def test_targets():
    assert default_targets(10, 50) == [20, 30, 40]
    # 12.5 + 0.25*... : lo=11, hi=13 -> 11.5, 12, 12.5 -> half up
    assert default_targets(11, 13) == [12, 12, 13]


def test_round_half_up_is_not_bankers():
    assert [round_half_up(v) for v in (0.5, 1.5, 2.5, 2.49)] == [1, 2, 3, 2]


def test_displayed_band_and_phrases():
    assert displayed_band(14.2, 45.9) == (15, 45)
    assert band_phrase(20, 14.2, 45.9) == "near the low end"  # u = 5/30
    assert band_phrase(30, 14.2, 45.9) == "around the middle"  # u = 0.5
    assert band_phrase(40, 14.2, 45.9) == "toward the upper edge"  # u = 25/30
