"""Frontier, interpolation, band and target rules against hand-computed cases (docs/metrics.md)."""

import numpy as np
import pytest
from test_rule_values import _d3_tangents

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
