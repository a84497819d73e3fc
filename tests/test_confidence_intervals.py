"""A side's intervals at the comparison's targets (``pipeline.comparisons.confidence``), worked out by hand: each
tier's cost interval from its own price and the tok/s/GPU bounds, no cost interval where the low bound is not
positive, and no answer where a bound is missing."""

import pytest

from pipeline.comparisons.confidence import intervals_apart, price_per_mtok, side_intervals


def _point(x, tput, lo, hi, hyperscaler=2.0, neocloud=1.0, rental=None):
    return {"x_intvty": x, "tput_per_gpu": tput, "tput_per_gpu_ci_lo": lo, "tput_per_gpu_ci_hi": hi,
            "median_intvty_ci_lo": x - 1.0, "median_intvty_ci_hi": x + 1.0,
            "cost_per_mtok_hyperscaler": hyperscaler, "cost_per_mtok_neocloud": neocloud,
            "cost_per_mtok_rental": rental}


def test_each_tier_s_cost_interval_comes_from_its_own_price():
    # price per tier = cost × tok/s/GPU of the first point: hyperscaler 2.0 × 1000 = 2000, neocloud 1.0 × 1000 =
    # 1000, rental none. At the target 10 (the first point): tok/s/GPU in [900, 1100], so hyperscaler's cost
    # interval is [2000 / 1100, 2000 / 900] = [1.8182, 2.2222] and neocloud's [1000 / 1100, 1000 / 900].
    points = [_point(10.0, 1000.0, 900.0, 1100.0), _point(20.0, 500.0, 450.0, 550.0, 4.0, 2.0)]
    (row,) = side_intervals(points, [10.0])
    assert (row["tput_per_gpu_ci_lo"], row["tput_per_gpu_ci_hi"]) == (pytest.approx(900.0), pytest.approx(1100.0))
    assert (row["median_intvty_ci_lo"], row["median_intvty_ci_hi"]) == (pytest.approx(9.0), pytest.approx(11.0))
    assert row["cost_per_mtok_hyperscaler_ci_lo"] == pytest.approx(2000 / 1100)
    assert row["cost_per_mtok_hyperscaler_ci_hi"] == pytest.approx(2000 / 900)
    assert row["cost_per_mtok_neocloud_ci_lo"] == pytest.approx(1000 / 1100)
    assert row["cost_per_mtok_neocloud_ci_hi"] == pytest.approx(1000 / 900)
    assert row["cost_per_mtok_rental_ci_lo"] is None and row["cost_per_mtok_rental_ci_hi"] is None


def test_a_low_bound_at_or_below_zero_gives_no_cost_interval_and_a_small_positive_one_does():
    # the low bound of tok/s/GPU is the high cost's divisor: 0 would be an infinite cost, so no interval; 0.5 is a
    # real (if poor) throughput: hyperscaler price 2.0 × 1.0 = 2.0, cost interval [2.0 / 1.5, 2.0 / 0.5] = [1.333, 4]
    zero = side_intervals([_point(10.0, 1.0, 0.0, 2.0), _point(20.0, 0.5, 0.0, 1.0)], [10.0])[0]
    assert zero["tput_per_gpu_ci_lo"] == pytest.approx(0.0)
    assert zero["cost_per_mtok_hyperscaler_ci_lo"] is None and zero["cost_per_mtok_hyperscaler_ci_hi"] is None
    half = side_intervals([_point(10.0, 1.0, 0.5, 1.5), _point(20.0, 0.5, 0.25, 0.75)], [10.0])[0]
    assert half["cost_per_mtok_hyperscaler_ci_lo"] == pytest.approx(2.0 / 1.5)
    assert half["cost_per_mtok_hyperscaler_ci_hi"] == pytest.approx(2.0 / 0.5)


def test_points_without_intervals_give_empty_rows():
    bare = [{"x_intvty": 10.0, "tput_per_gpu": 1000.0, "cost_per_mtok_hyperscaler": 2.0},
            {"x_intvty": 20.0, "tput_per_gpu": 500.0, "cost_per_mtok_hyperscaler": 4.0}]
    rows = side_intervals(bare, [10.0, 15.0])
    assert len(rows) == 2 and all(value is None for row in rows for value in row.values())
    assert side_intervals([], [10.0]) == [dict.fromkeys(rows[0])]


@pytest.mark.parametrize("bounds", [(None, 2.0, 3.0, 4.0), (1.0, None, 3.0, 4.0), (1.0, 2.0, None, 4.0),
                                    (1.0, 2.0, 3.0, None)])
def test_a_missing_bound_says_nothing_about_the_difference(bounds):
    assert intervals_apart(*bounds) is None


def test_intervals_apart_only_when_they_do_not_touch():
    assert intervals_apart(1.0, 2.0, 3.0, 4.0) is True and intervals_apart(3.0, 4.0, 1.0, 2.0) is True
    assert intervals_apart(1.0, 3.0, 3.0, 4.0) is False  # touching is overlap


@pytest.mark.parametrize("cost,tput", [(None, 1000.0), (2.0, None)])
def test_no_price_without_both_cost_and_throughput(cost, tput):
    assert price_per_mtok([{"cost_per_mtok_neocloud": cost, "tput_per_gpu": tput}], "neocloud") is None
    assert price_per_mtok([{"cost_per_mtok_neocloud": 2.0, "tput_per_gpu": 1000.0}], "neocloud") == 2000.0
