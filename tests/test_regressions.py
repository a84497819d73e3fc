"""Regressions found and announced: the detector on hand-made series, the metric rules as data, the
status across runs, the webhook against a real HTTP server on loopback, and the whole pipeline over a nightly
history built from real InferenceX export rows with one injected −15 % step (and the same history without it)."""

import datetime as dt
import io
import json
import math
import threading
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.regressions import evaluate
from pipeline.comparisons.regressions import (
    DetectionSettings,
    MetricRule,
    RegressionRulesError,
    METHOD,
    REGRESSION_SCHEMA,
    Change,
    JudgedSeries,
    assign_status,
    change_points,
    change_text,
    detect,
    direction_of,
    failure_runs,
    find_changes,
    format_value,
    frontier_series,
    frontier_series_batches,
    line_series,
    line_series_by_metric,
    load_metric_rules,
    first_cut_gains,
    prefix_sums,
    quiet_rows,
    quiet_series,
    recovered,
    regression_id,
    regressions_markdown,
    repeat_stats,
    robust_noise,
    series_label,
    slack_message,
    Series,
    widest_change,
)
from pipeline.comparisons.regressions import _judge, _repeat_noise, cumulative_l2_cost
from pipeline.io.webhook import WebhookError, post_json

TPUT = MetricRule("line", "tput_per_gpu", "higher", "relative", 0.05, 0.005)
TPOT = MetricRule("line", "median_tpot_s", "lower", "relative", 0.05, 0.005)


def noisy(n: int, cv: float = 0.01, seed: int = 1, level: float = 1000.0) -> np.ndarray:
    return level * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))


# --- the detector -------------------------------------------------------------------------------------------------

def test_a_step_is_found_at_its_night_with_its_size():
    values = noisy(20)
    values[12:] *= 0.85
    [change] = find_changes(values, TPUT)
    assert change.index == 12
    assert change.mean_before == pytest.approx(values[:12].mean())
    assert change.mean_after == pytest.approx(values[12:].mean())
    assert change.magnitude == pytest.approx(values[12:].mean() / values[:12].mean() - 1)
    assert -0.17 < change.magnitude < -0.13 and change.p_value < 1e-6


def test_no_step_no_change_and_small_steps_stay_below_the_minimum_magnitude():
    assert find_changes(noisy(40, seed=2), TPUT) == []
    values = noisy(40, cv=0.002, seed=3)
    values[20:] *= 0.97  # significant against 0.2 % noise, but under the 5 % minimum
    assert find_changes(values, TPUT) == []
    assert len(find_changes(values, TPUT, DetectionSettings(min_magnitude=0.02))) == 1


def test_one_bad_night_is_not_a_regression_two_are():
    # a long quiet history, so one outlier's residual barely moves the pooled noise: only the rule that each of
    # the first two nights after a change look like the new level keeps a single bad night from being one
    values = noisy(40, seed=4)
    values[-1] *= 0.8
    assert find_changes(values, TPUT) == []  # the morning after one bad night: nothing yet
    values = np.append(values, 0.8 * noisy(1, seed=5))
    [change] = find_changes(values, TPUT)
    assert change.index == 39 and change.after == range(39, 41)
    # an outlier night followed by a normal one is not a change either
    values[-1] = 1000.0
    assert find_changes(values, TPUT) == []


def test_the_direction_is_the_metric_s_not_the_sign():
    values = noisy(20, seed=6)
    values[10:] *= 1.2  # TPOT up 20 %: slower
    [tpot] = find_changes(values, TPOT)
    rows = detect([_series("median_tpot_s", values)], {("line", "median_tpot_s"): TPOT})
    assert tpot.magnitude > 0 and [r["direction"] for r in rows] == ["regression"]
    rows = detect([_series("tput_per_gpu", values)], {("line", "tput_per_gpu"): TPUT})
    assert [r["direction"] for r in rows] == ["improvement"]


def test_a_step_undone_later_is_recovered():
    values = noisy(30, seed=7)
    values[10:20] *= 0.8
    rows = detect([_series("tput_per_gpu", values)], {("line", "tput_per_gpu"): TPUT})
    assert [(r["direction"], r["status"], r["first_bad_date"]) for r in rows] == [
        ("regression", "recovered", dt.date(2026, 7, 11)), ("improvement", "new", dt.date(2026, 7, 21))]


def test_repeats_give_the_noise_when_they_show_more_than_the_residuals():
    values = noisy(12, cv=0.001, seed=8)
    values[8:] *= 0.94
    sd, counts = np.full(12, 0.05 * 1000), np.full(12, 3)  # repeats 5 % apart: a 6 % step is within noise
    assert find_changes(values, TPUT) != []
    assert find_changes(values, TPUT, repeat_sd=sd, repeat_n=counts) == []
    [change] = find_changes(values, TPUT, repeat_sd=np.full(12, 0.002 * 1000), repeat_n=counts)
    assert change.noise_source in ("residuals", "floor")


def test_absolute_metric_failure_rate():
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    values = np.r_[np.zeros(8), [0.3, 0.35, 0.3]]
    [change] = find_changes(values, rule)
    assert change.index == 8 and change.magnitude == pytest.approx(np.mean([0.3, 0.35, 0.3]))


def _series(metric, values, start=dt.date(2026, 7, 1)):
    dates = [start + dt.timedelta(days=i) for i in range(len(values))]
    return Series("line", "L|conc=8", {"model": "m", "isl": 1024, "osl": 1024, "hw": "h200", "framework": "sglang",
                                       "precision": "fp8", "spec_decoding": "none", "benchmark_type": "fixed_seq",
                                       "line_id": "L", "conc": 8, "price_book": None, "target_intvty": None},
                  metric, dates, [f"date:{d}" for d in dates], list(values), [float("nan")] * len(values),
                  [1] * len(values), [f"https://example.invalid/runs/{i}" for i in range(len(values))])


# --- the detector's parts, on hand-made numbers -----------------------------------------------------------------------

def test_robust_noise_is_the_scaled_median_absolute_difference():
    """robust_noise: 1.4826 × median |first difference| / √2; NaN for fewer than 2 points."""
    assert np.isnan(robust_noise(np.array([])))
    assert np.isnan(robust_noise(np.array([5.0])))
    assert robust_noise(np.array([1.0, 4.0])) == pytest.approx(1.4826 * 3 / 2 ** 0.5)  # two points: one difference
    assert type(robust_noise(np.array([1.0, 4.0]))) is float  # a Python float, not a numpy scalar
    # differences −2, −1, +10: |.| = 2, 1, 10, median 2 (the mean would be 13/3, the signed median −1)
    assert robust_noise(np.array([3.0, 1.0, 0.0, 10.0])) == pytest.approx(1.4826 * 2 / 2 ** 0.5)
    # rows: each row's own, as an array
    rows = robust_noise(np.array([[3.0, 1.0, 0.0, 10.0], [0.0, 4.0, 4.0, 8.0]]))
    assert rows.shape == (2,) and rows == pytest.approx([1.4826 * 2 / 2 ** 0.5, 1.4826 * 4 / 2 ** 0.5])


def test_change_points_cut_where_the_gain_beats_the_penalty():
    """change_points: a cut where splitting saves more than penalty × noise² × ln n; none beyond the end; []
    below 2 × min_size points."""
    step = np.array([0.0] * 5 + [1.0] * 5)  # one cut at 5 saves 10 × 0.5² = 2.5 of the L2 cost
    assert change_points(step, 0.1, 2, 4.0) == [5]
    assert change_points(step, 0.5, 2, 4.0) == [5]  # penalty 4 × 0.25 × ln 10 = 2.30 < 2.5
    assert change_points(step, 0.55, 2, 4.0) == []  # penalty 4 × 0.3025 × ln 10 = 2.79 > 2.5
    assert change_points(step, 0.5, 2, 5.0) == []  # penalty 5 × 0.25 × ln 10 = 2.88 > 2.5
    assert change_points(np.array([0.0, 0.0, 1.0, 1.0]), 0.1, 2, 4.0) == [2]  # exactly 2 × min_size points
    assert change_points(np.array([0.0, 0.0, 1.0]), 0.1, 2, 4.0) == []
    assert change_points(np.array([0.0] * 3 + [1.0] * 4 + [3.0] * 3), 0.1, 2, 4.0) == [3, 7]
    assert change_points(np.array([0.0, 1.0]), 0.1, 3, 4.0) == []  # 2 points, fewer than 2 × 3
    # segments of ≥ 4 points: one cut, at 4, 5 or 6; their costs 0.75 + 6, 1.2 + 4.8, 1.5 + 3: at 6
    assert change_points(np.array([0.0] * 3 + [1.0] * 4 + [3.0] * 3), 0.1, 4, 4.0) == [6]


def test_change_points_searches_with_the_cumulative_cost(monkeypatch):
    """change_points: the search's cost is ``cumulative_l2_cost`` (ruptures' CostL2 from prefix sums)."""
    from pipeline.comparisons import regressions

    made = []

    def counted():
        made.append(cumulative_l2_cost())
        return made[-1]

    monkeypatch.setattr(regressions, "cumulative_l2_cost", counted)
    assert change_points(np.array([0.0] * 5 + [1.0] * 5), 0.1, 2, 4.0) == [5]
    assert len(made) == 1 and made[0].signal is not None and made[0].signal.shape == (10, 1)


def _p_two_sided_df2(t):
    """Two-sided Student t p-value for 2 degrees of freedom, in closed form: 1 − |t| / √(2 + t²)."""
    return 1 - abs(t) / (2 + t * t) ** 0.5


def test_judge_tests_the_step_with_the_pooled_noise():
    """_judge: the points on each side (up to the window), the two-sided t-test p-value with the given noise and
    df, and the means of y (metric units), both directions."""
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    y = np.array([10.0, 10.0, 10.0, 20.0, 20.0, 40.0])  # means 10 and 80 / 3
    before, after, p, mean_before, mean_after = _judge(x, y, 0, 3, 6, DetectionSettings(), 0.5, 2)
    # t = 1 / (0.5 × √(1/3 + 1/3)) = √6
    assert (before, after, mean_before) == (range(0, 3), range(3, 6), 10.0)
    assert mean_after == pytest.approx(80 / 3) and p == pytest.approx(_p_two_sided_df2(6 ** 0.5))
    before, after, p, _, _ = _judge(-x, y, 0, 3, 6, DetectionSettings(), 0.5, 2)  # the same step down
    assert (before, after) == (range(0, 3), range(3, 6)) and p == pytest.approx(_p_two_sided_df2(6 ** 0.5))
    # a window of 2: points 1–2 before, 3–4 after; t = 1 / (0.5 × √(1/2 + 1/2)) = 2
    before, after, p, mean_before, mean_after = _judge(x, y, 0, 3, 6, DetectionSettings(min_points_before=2,
                                                                                         window=2), 0.5, 2)
    assert (before, after, mean_before, mean_after) == (range(1, 3), range(3, 5), 10.0, 20.0)
    assert p == pytest.approx(_p_two_sided_df2(2.0))
    # df 1 (Cauchy): p = 1 − 2 atan(|t|) / π
    assert _judge(x, y, 0, 3, 6, DetectionSettings(), 0.5, 1)[2] == pytest.approx(
        1 - 2 * np.arctan(6 ** 0.5) / np.pi)


def test_judge_needs_enough_points_each_side():
    """_judge: None when fewer than min_points_before points lie before the cut or fewer than min_points_after
    after it; exactly that many suffice."""
    x = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert _judge(x, x, 1, 4, 7, DetectionSettings(), 0.5, 2)[:2] == (range(1, 4), range(4, 7))
    assert _judge(x, x, 2, 4, 7, DetectionSettings(), 0.5, 2) is None  # 2 before
    assert _judge(x, x, 1, 4, 6, DetectionSettings(), 0.5, 2)[:2] == (range(1, 4), range(4, 6))
    assert _judge(x, x, 1, 4, 5, DetectionSettings(), 0.5, 2) is None  # 1 after
    assert _judge(x, x, 0, 4, 6, DetectionSettings(min_points_after=3), 0.5, 2) is None
    assert _judge(x, x, 1, 4, 7, DetectionSettings(min_points_before=4), 0.5, 2) is None


def test_judge_moves_past_weak_first_nights_at_most_two():
    """_judge: while a first night after the cut is not beyond the midpoint of the two levels (on it counts as
    not beyond), the change is dated one night later, up to MATCH_POINTS (2) nights; past that, None."""
    # first night 0.2 against levels 0 and 0.8 (midpoint 0.4): dated a night later, levels 0.05 and 1
    x = np.array([0.0, 0.0, 0.0, 0.2, 1.0, 1.0, 1.0])
    before, after, p, mean_before, mean_after = _judge(x, x, 0, 3, 7, DetectionSettings(), 0.5, 2)
    assert (before, after, mean_after) == (range(0, 4), range(4, 7), 1.0) and mean_before == pytest.approx(0.05)
    assert p == pytest.approx(_p_two_sided_df2(0.95 / (0.5 * (1 / 4 + 1 / 3) ** 0.5)))
    # a first night exactly on the midpoint: levels 0 and (0.25 + 0.625 + 0.625) / 3 = 0.5, midpoint 0.25
    x = np.array([0.0, 0.0, 0.0, 0.25, 0.625, 0.625])
    assert _judge(x, x, 0, 3, 6, DetectionSettings(), 0.5, 2)[:2] == (range(0, 4), range(4, 6))
    # the same downwards: levels 0 and −0.5, first night −0.25 on the midpoint
    assert _judge(-x, x, 0, 3, 6, DetectionSettings(), 0.5, 2)[:2] == (range(0, 4), range(4, 6))
    # three weak nights: shifts 0, 1 and 2 all fail (their first nights 0.2, 0.2 | 0.2, 0.2 | 0.2, 1 are not
    # beyond the midpoints 0.3, 0.365, 0.44); shift 3 is not tried
    x = np.array([0.0, 0.0, 0.0, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0])
    assert _judge(x, x, 0, 3, 9, DetectionSettings(), 0.5, 2) is None
    # a second weak night alone also moves the date (every one of the first min_points_after nights counts)
    x = np.array([0.0, 0.0, 0.0, 1.0, 0.2, 1.0, 1.0, 1.0])
    assert _judge(x, x, 0, 3, 8, DetectionSettings(), 0.5, 2)[:2] == (range(0, 5), range(5, 8))


def test_repeat_noise_pools_the_points_with_two_runs_or_more():
    """_repeat_noise: the pooled within-point variance (log units: sd / value) of points with ≥ 2 runs and a
    finite sd, over the harmonic mean of every point's run count; (0, 0) when no point has two runs."""
    rel = MetricRule("line", "tput_per_gpu", "higher", "relative", 0.05, 0.005)
    y = np.array([100.0, 200.0, 50.0, 80.0])
    sd = np.array([10.0, 40.0, np.nan, 8.0])
    counts = np.array([2.0, 3.0, 3.0, 1.0])
    # used: points 0 and 1 (2 has no sd, 3 one run); sd/value 0.1 and 0.2; df = 1 + 2 = 3
    # pooled = (1 × 0.01 + 2 × 0.04) / 3 = 0.03; harmonic mean of 2, 3, 3, 1 = 4 / (1/2 + 1/3 + 1/3 + 1) = 24/13
    noise, df = _repeat_noise(y, sd, counts, rel)
    assert df == 3 and noise == pytest.approx((0.03 * 13 / 24) ** 0.5)
    absolute = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    # in metric units (a value of 0 is fine): pooled (0.01² + 0.03²) / 2 = 0.0005, harmonic mean 2
    noise, df = _repeat_noise(np.array([0.0, 0.1]), np.array([0.01, 0.03]), np.array([2.0, 2.0]), absolute)
    assert df == 2 and noise == pytest.approx(0.00025 ** 0.5)
    assert _repeat_noise(y, sd, np.ones(4), rel) == (0.0, 0)
    assert _repeat_noise(y, np.full(4, np.nan), counts, rel) == (0.0, 0)


def _change(magnitude, mean_before, later_level, last=False):
    return Change(10, range(0, 10), range(10, 20), later_level, last, mean_before, mean_before * (1 + magnitude),
                  magnitude, 1e-9, 0.01, "residuals")


def test_direction_follows_the_metric_better_side():
    """direction_of: up is an improvement where higher is better and a regression where lower is, and down the
    reverse."""
    lower = MetricRule("line", "median_tpot_s", "lower", "relative", 0.05, 0.005)
    assert direction_of(_change(0.2, 1.0, 1.2), TPUT) == "improvement"
    assert direction_of(_change(-0.2, 1.0, 0.8), TPUT) == "regression"
    assert direction_of(_change(0.2, 1.0, 1.2), lower) == "regression"
    assert direction_of(_change(-0.2, 1.0, 0.8), lower) == "improvement"
    # a change of exactly 0 (reachable only with a minimum magnitude of 0) counts as not up: a regression where
    # higher is better, an improvement where lower is
    assert direction_of(_change(0.0, 1.0, 1.0), TPUT) == "regression"
    assert direction_of(_change(0.0, 1.0, 1.0), lower) == "improvement"


def test_recovered_when_the_last_level_is_back_within_the_minimum():
    """recovered: never while the change's segment is the last; else the last level moved from the level before,
    signed the change's way, is under the minimum magnitude (the metric's, or the settings' override): back,
    or beyond."""
    # relative, down 20 %: back at 99 (moved −1 %), still down at 82 (−18 %), beyond at 120 (+20 %)
    assert recovered(_change(-0.2, 100.0, 99.0), TPUT)
    assert not recovered(_change(-0.2, 100.0, 82.0), TPUT)
    assert recovered(_change(-0.2, 100.0, 120.0), TPUT)
    assert not recovered(_change(-0.2, 100.0, 80.0), TPUT)  # 80 / 100 − 1 = −0.2: the change's own level
    assert not recovered(_change(-0.2, 100.0, 99.0, last=True), TPUT)
    assert not recovered(_change(0.2, 100.0, 120.0), TPUT)  # up 20 % and still up
    # the settings' minimum replaces the metric's: −10 % moved is under 0.5
    assert recovered(_change(-0.2, 100.0, 90.0), TPUT, DetectionSettings(min_magnitude=0.5))
    assert not recovered(_change(-0.2, 100.0, 90.0), TPUT, DetectionSettings())
    # absolute (metric units), up 0.25 from 0 with a minimum of 0.25: 0.125 is back; 0.25 (equal) is not
    rate = MetricRule("line", "failure_rate", "lower", "absolute", 0.25, 0.002)
    assert recovered(_change(0.25, 0.0, 0.125), rate)
    assert not recovered(_change(0.25, 0.0, 0.25), rate)
    assert recovered(Change(10, range(0, 10), range(10, 20), 2.125, False, 2.0, 2.25, 0.25, 1e-9, 0.01, "floor"),
                     rate)  # 2.125 − 2.0 = 0.125 (a ratio would be 0.0625 too, a sum 4.125)


def test_regression_id_hashes_series_metric_direction_and_date():
    """regression_id: the first 16 hex digits of sha256 of ``series|metric|direction|first bad date``."""
    row = {"series_id": "L|conc=8", "metric": "tput_per_gpu", "direction": "regression",
           "first_bad_date": dt.date(2026, 7, 7), "status": "new"}
    # printf 'L|conc=8|tput_per_gpu|regression|2026-07-07' | sha256sum
    assert regression_id(row) == "4bc7069ecead06eb"
    assert regression_id({**row, "status": "recovered"}) == "4bc7069ecead06eb"  # other columns do not count


def _plain_change(c):
    return (c.index, c.before, c.after, c.later_level, c.last, c.mean_before, c.mean_after, c.magnitude,
            c.noise_source)


RATE = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)


def test_find_changes_on_a_clean_step_uses_the_floor():
    """find_changes: a noiseless step is tested against the noise floor (source ``floor``: the residuals and the
    robust estimate are no larger), df = n − segments; an absolute metric's magnitude is the difference."""
    settings = DetectionSettings(min_points_before=2)
    [change] = find_changes([0.0, 0.0, 1.0, 1.0], RATE, settings)
    assert _plain_change(change) == (2, range(0, 2), range(2, 4), 1.0, True, 0.0, 1.0, 1.0, "floor")
    assert change.noise == 0.002
    t = 1 / (0.002 * (1 / 2 + 1 / 2) ** 0.5)  # 500, df 4 − 2 = 2
    assert change.p_value == pytest.approx(_p_two_sided_df2(t), rel=1e-6)
    assert find_changes([0.0, 0.0, 1.0], RATE, settings) == []  # 3 points: fewer than 2 + 2
    # an empty series has no change, also when no point is needed before one (no search is run on it)
    assert find_changes([], RATE) == [] and find_changes([], RATE, DetectionSettings(min_points_before=0)) == []
    # relative: log values; the floor is log(1 + 0.005); magnitude 200 / 100 − 1
    rel = DetectionSettings(min_points_before=2, max_p_value=1e-3)
    [change] = find_changes([100.0, 100.0, 200.0, 200.0], TPUT, rel)
    assert _plain_change(change) == (2, range(0, 2), range(2, 4), 200.0, True, 100.0, 200.0, 1.0, "floor")
    assert change.noise == pytest.approx(np.log1p(0.005))
    assert change.p_value == pytest.approx(_p_two_sided_df2(np.log(2) / np.log1p(0.005)), rel=1e-6)


def test_find_changes_rejects_values_it_cannot_test():
    """find_changes: a non-finite value, or a non-positive one for a relative metric, raises ValueError naming
    the metric; zero is fine for an absolute metric."""
    with pytest.raises(ValueError, match=r"^tput_per_gpu: values must be finite and > 0$"):
        find_changes([1.0, 0.0, 1.0, 1.0, 1.0], TPUT)
    with pytest.raises(ValueError, match=r"^tput_per_gpu: values must be finite and > 0$"):
        find_changes([1.0, float("nan"), 1.0, 1.0, 1.0], TPUT)
    with pytest.raises(ValueError, match=r"^failure_rate: values must be finite$"):
        find_changes([0.0, float("inf"), 0.0, 0.0, 0.0], RATE)
    assert find_changes([0.0] * 5, RATE) == []


def test_find_changes_repeats_give_the_noise_and_df():
    """find_changes: when the repeats show more noise than the residuals, they give the noise, its df and the
    source ``repeats``; the p-value then decides against max_p_value."""
    sd, counts = [0.1, 0.1, float("nan"), float("nan")], [2, 2, 1, 1]
    # repeat noise: pooled 0.01 over the harmonic mean of 2, 2, 1, 1 (4/3): √0.0075, df 1 + 1 = 2
    settings = DetectionSettings(min_points_before=2, max_p_value=0.05)
    [change] = find_changes([0.0, 0.0, 1.0, 1.0], RATE, settings, sd, counts)
    assert _plain_change(change) == (2, range(0, 2), range(2, 4), 1.0, True, 0.0, 1.0, 1.0, "repeats")
    assert change.noise == pytest.approx(0.0075 ** 0.5)
    t = 1 / 0.0075 ** 0.5  # 11.55: p = 0.0074
    assert change.p_value == pytest.approx(_p_two_sided_df2(t))
    assert find_changes([0.0, 0.0, 1.0, 1.0], RATE, DetectionSettings(min_points_before=2, max_p_value=0.007),
                        sd, counts) == []
    # repeats quieter than the floor: the floor stays
    [change] = find_changes([0.0, 0.0, 1.0, 1.0], RATE, settings, [0.001] * 4, [2] * 4)
    assert change.noise_source == "floor" and change.noise == 0.002


def test_find_changes_minimum_magnitude_from_the_rule_or_the_settings():
    """find_changes: a change is announced when |magnitude| reaches the minimum (equal is enough): the rule's,
    or the settings' override."""
    settings = DetectionSettings(min_points_before=2)
    at_one = MetricRule("line", "failure_rate", "lower", "absolute", 1.0, 0.002)
    assert len(find_changes([0.0, 0.0, 1.0, 1.0], at_one, settings)) == 1  # magnitude 1.0 = minimum
    assert find_changes([0.0, 0.0, 1.0, 1.0], MetricRule("line", "failure_rate", "lower", "absolute", 1.5, 0.002),
                        settings) == []
    assert find_changes([0.0, 0.0, 1.0, 1.0], RATE, DetectionSettings(min_points_before=2, min_magnitude=1.5)) == []
    assert len(find_changes([0.0, 0.0, 1.0, 1.0], at_one, DetectionSettings(min_points_before=2,
                                                                            min_magnitude=0.5))) == 1
    assert find_changes([1.0, 1.0, 0.0, 0.0], at_one, DetectionSettings(min_points_before=2, min_magnitude=1.5)) \
        == []  # a step down: |−1| < 1.5


def test_find_changes_up_and_back_two_changes():
    """find_changes: a step up and back down gives two changes, each tested between its neighbouring cuts; the
    first is not the last and sees the series' current level (the last segment's mean)."""
    changes = find_changes([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5], RATE)
    assert [_plain_change(c) for c in changes] == [
        (3, range(0, 3), range(3, 6), 0.5, False, 0.0, 1.0, 1.0, "floor"),
        (6, range(3, 6), range(6, 9), 0.5, True, 1.0, 0.5, -0.5, "floor")]
    assert all(c.p_value < 1e-10 for c in changes)  # t ≥ 0.5 / (0.002 × √(2/3)) = 306, df 6


def test_repeat_stats_small_and_large_groups():
    """repeat_stats: per group the mean and the sample sd (NaN for one value); groups of 8 and more are
    numpy's own sums, bit for bit."""
    means, sds = repeat_stats(np.array([1.0, 2.0, 3.0, 10.0, 4.0, 6.0]), np.array([3, 1, 2]))
    assert means.tolist() == [2.0, 10.0, 5.0]
    assert sds[0] == 1.0 and np.isnan(sds[1]) and sds[2] == pytest.approx(2 ** 0.5)  # (1 + 1) / 1; (1 + 1) / 1
    nine = np.arange(1.0, 10.0)  # mean 5, Σ(i − 5)² = 60, sd √(60 / 8)
    means, sds = repeat_stats(np.r_[nine, 7.0], np.array([9, 1]))
    assert means[0] == 5.0 and sds[0] == pytest.approx(7.5 ** 0.5) and means[1] == 7.0 and np.isnan(sds[1])
    # eight values whose sum in order from 0 differs from numpy's pairwise sum (numpy's mean is the reference)
    eight = np.array([1e16, 1.0, 1.0, 1.0, -1e16, 1.0, 1.0, 1.0])
    assert sum(eight.tolist()) != np.sum(eight)
    means, sds = repeat_stats(eight, np.array([8]))
    assert means[0] == np.mean(eight) and sds[0] == np.std(eight, ddof=1)
    seven = eight[:7]  # seven values: summed in order from 0, as numpy does below eight
    means, _ = repeat_stats(seven, np.array([7]))
    assert means[0] == np.mean(seven) == sum(seven.tolist()) / 7
    means, _ = repeat_stats(np.array([1.0, 2.0, 3.0, 10.0]), [3.0, 1.0])  # sizes as floats: the same groups
    assert means.tolist() == [2.0, 10.0]


def test_cumulative_l2_cost_is_the_sum_of_squared_deviations():
    """cumulative_l2_cost: error(start, end) = Σ(x − mean)² over [start, end); an empty segment raises
    NotEnoughPoints; a signal of two columns raises ValueError."""
    from ruptures.costs import NotEnoughPoints

    cost = cumulative_l2_cost().fit(np.array([1.0, 2.0, 3.0, 10.0]))
    assert cost.error(0, 4) == pytest.approx(50.0)  # mean 4: 9 + 4 + 1 + 36
    assert cost.error(0, 3) == pytest.approx(2.0)  # mean 2: 1 + 0 + 1
    assert cost.error(1, 3) == pytest.approx(0.5)  # mean 2.5: 0.25 + 0.25
    assert cost.error(3, 4) == 0.0 and cost.min_size == 1
    assert cost.fit(np.array([[0.1], [0.1], [0.1]])).error(0, 3) == 0.0  # never below 0
    with pytest.raises(NotEnoughPoints):
        cost.error(2, 2)
    with pytest.raises(ValueError, match=r"one column expected, got shape \(3, 2\)"):
        cumulative_l2_cost().fit(np.zeros((3, 2)))


def _binseg_first_step(x, min_size):
    """(cut, gain) of ruptures' Binseg's first step over the whole of ``x``, computed by ruptures' own loop
    (``single_bkp``) on the same cost."""
    import ruptures

    algo = ruptures.Binseg(custom_cost=cumulative_l2_cost(), min_size=min_size, jump=1).fit(x.reshape(-1, 1))
    return algo.single_bkp(0, x.size)


def _random_series(rng, count):
    """``count`` series of 4–40 points: noise alone, noise with a step, constant, and values far from 0."""
    for _ in range(count):
        n = int(rng.integers(4, 41))
        x = rng.normal(0.0, 1.0, n)
        kind = rng.integers(0, 4)
        if kind == 1:
            x[int(rng.integers(1, n)):] += rng.normal(0.0, 3.0)
        elif kind == 2:
            x[:] = 0.25
        elif kind == 3:
            x = 1e6 + 1e-3 * x
        yield x


def test_best_first_gain_is_binseg_first_step_to_the_last_bit():
    """cumulative_l2_cost().best_first_gain(min_size): exactly (==) the gain ruptures' Binseg computes for its
    first cut over the whole series, with the cost's floor of 1 point per segment; −inf with no cut to make."""
    rng = np.random.default_rng(20261128)
    for x in _random_series(rng, 400):
        for min_size in (0, 1, 2, 3):
            cost = cumulative_l2_cost().fit(x)
            if x.size < 2 * max(min_size, 1):
                assert cost.best_first_gain(min_size) == -np.inf
                continue
            assert cost.best_first_gain(min_size) == _binseg_first_step(x, min_size)[1], (x.tolist(), min_size)
    assert cumulative_l2_cost().fit(np.array([1.0, 2.0, 3.0])).best_first_gain(2) == -np.inf
    # [0, 0, 1, 1]: the cut at 2 leaves two flat halves, the whole costs 4 × 0.5² = 1
    assert cumulative_l2_cost().fit(np.array([0.0, 0.0, 1.0, 1.0])).best_first_gain(2) == 1.0


def test_change_points_are_binseg_cuts_with_or_without_its_first_step_done_first():
    """change_points: the cuts of ruptures' Binseg run whole on the same cost (the first step done first only
    skips the search where it would stop at once), on series near and far from the penalty."""
    import ruptures

    rng = np.random.default_rng(7)
    penalties = 0
    for x in _random_series(rng, 300):
        for min_size in (1, 2, 3):
            if x.size < 2 * min_size:
                continue
            gain = _binseg_first_step(x, min_size)[1]
            # noises that put the penalty just below, at and just above the first gain, and far from it
            for noise in (0.01, 0.5, 2.0, *(np.sqrt(gain / (4.0 * np.log(x.size))) * np.array([0.999, 1.0, 1.001])
                                              if gain > 0 else ())):
                pen = 4.0 * noise * noise * math.log(x.size)
                algo = ruptures.Binseg(custom_cost=cumulative_l2_cost(), min_size=min_size, jump=1)
                whole = [b for b in algo.fit(x.reshape(-1, 1)).predict(pen=pen) if b < x.size]
                assert change_points(x, noise, min_size, 4.0) == whole, (x.tolist(), noise, min_size)
                penalties += 1
    assert penalties > 2000


def test_frontier_series_points_per_date_gaps_and_shared_targets():
    """frontier_series_batches: per price book, group and target one point per date with a value (two comparisons' rows
    of a date are one point, NaN a gap, undated rows left out), keyed and sorted by series id then metric."""
    group = {"model": "m", "isl": 1024, "osl": 2048, "hw": "h200", "precision": "fp8", "spec_decoding": "none",
             "framework": "sglang", "benchmark_type": "fixed_seq", "x_intvty_stat": "median"}

    def row(day, book, target, tput, comparison="c1"):
        return {"run_date": day, "price_book": book, **group, "target_intvty": target, "comparison_id": comparison,
                "tput_per_gpu": tput, "tok_s_per_mw": None}

    table = pa.Table.from_pylist([
        row(D3, "list", 50.0, 120.0), row(D1, "list", 50.0, 100.0), row(D1, "list", 50.0, 100.0, "c2"),
        row(D2, "list", 50.0, float("nan")), row(None, "list", 50.0, 999.0), row(D2, "spot", 12.5, 90.0),
        row(D3, "spot", 12.5, 95.0), row(D3, "spot", 12.5, 95.0, "c2"), row(D1, "spot", 12.5, 80.0)])
    table = table.set_column(table.schema.get_field_index("tok_s_per_mw"), "tok_s_per_mw",
                             pa.nulls(table.num_rows, pa.float64()))
    # no tok/s/MW anywhere: no series of it
    got = [s for batch in frontier_series_batches(table, ["tok_s_per_mw", "tput_per_gpu"]) for s in batch]
    keys = {k: group[k] for k in ("model", "isl", "osl", "hw", "precision", "spec_decoding", "framework",
                                  "benchmark_type")}
    assert [(s.kind, s.series_id, s.keys, s.metric, s.dates, s.sweeps, s.values, s.repeat_n, s.links)
            for s in got] == [
        ("frontier", "list|m|1024|2048|h200|fp8|none|sglang|fixed_seq|median|at=50",
         {**keys, "line_id": None, "conc": None, "price_book": "list", "target_intvty": 50.0}, "tput_per_gpu",
         [D1, D3], ["2026-07-01", "2026-07-03"], [100.0, 120.0], [1, 1], [None, None]),
        ("frontier", "spot|m|1024|2048|h200|fp8|none|sglang|fixed_seq|median|at=12.5",
         {**keys, "line_id": None, "conc": None, "price_book": "spot", "target_intvty": 12.5}, "tput_per_gpu",
         [D1, D2, D3], ["2026-07-01", "2026-07-02", "2026-07-03"], [80.0, 90.0, 95.0], [1, 1, 1],
         [None, None, None])]
    assert [len(s.repeat_sd) for s in got] == [2, 3] and all(np.isnan(v) for s in got for v in s.repeat_sd)
    assert list(frontier_series_batches(table.slice(4, 1), ["tput_per_gpu"])) == []  # only an undated row
    assert list(frontier_series_batches(table.slice(0, 0), ["tput_per_gpu"])) == []  # no row at all


def test_frontier_series_batches_hold_the_set_number_of_series_ids_in_order(monkeypatch):
    """frontier_series_batches with FRONTIER_SERIES_BATCH at 1: one list per series id, each with that id's series
    of every metric (sorted by metric), the ids in order: the lists of frontier_series cut by id; an id with no
    value of any metric gives no list."""
    from pipeline.comparisons import regressions

    group = {"model": "m", "isl": 1024, "osl": 2048, "hw": "h200", "precision": "fp8", "spec_decoding": "none",
             "framework": "sglang", "benchmark_type": "fixed_seq", "x_intvty_stat": "median"}

    def row(day, book, target, tput, mw):
        return {"run_date": day, "price_book": book, **group, "target_intvty": target, "tput_per_gpu": tput,
                "tok_s_per_mw": mw}

    table = pa.Table.from_pylist([
        row(D1, "spot", 12.5, 80.0, 5.0), row(D2, "spot", 12.5, 90.0, None), row(D1, "list", 50.0, 100.0, 7.0),
        row(D2, "list", 50.0, 110.0, 8.0), row(D1, "list", 25.0, None, None), row(D1, "list", 37.5, 60.0, None)])
    whole = frontier_series(table, ["tput_per_gpu", "tok_s_per_mw"])
    monkeypatch.setattr(regressions, "FRONTIER_SERIES_BATCH", 1)
    batches = list(regressions.frontier_series_batches(table, ["tput_per_gpu", "tok_s_per_mw", "tput_per_gpu"]))
    # at=37.5 has no tok/s/MW: its list holds its tok/s/GPU series alone
    assert [[(s.series_id.split("|")[0] + s.series_id.split("|")[-1], s.metric) for s in b] for b in batches] == [
        [("listat=37.5", "tput_per_gpu")],
        [("listat=50", "tok_s_per_mw"), ("listat=50", "tput_per_gpu")],
        [("spotat=12.5", "tok_s_per_mw"), ("spotat=12.5", "tput_per_gpu")]]
    assert [s for b in batches for s in b] == whole
    assert [(s.dates, s.values) for s in whole] == [([D1], [60.0]), ([D1, D2], [7.0, 8.0]),
                                                    ([D1, D2], [100.0, 110.0]), ([D1], [5.0]),
                                                    ([D1, D2], [80.0, 90.0])]


def test_failure_runs_rate_and_ids():
    """failure_runs: failed / (failed + completed), a null failed read as 0, null where completed is null or the
    sum is 0; line and sweep ids as validation writes them; absent key columns null."""
    base = {"run_id": "r", "model": "dsr1", "isl": 1024, "osl": 1024, "hw": "h200", "framework": "sglang",
            "precision": "fp8", "spec_decoding": "none", "tp": 8, "run_url": None, "sweep_id": None,
            "run_date": D1, "conc": 8, "source_file": "f.json"}
    counts = [(2, 8), (None, 10), (3, 0), (0, 0), (1, None), (0, 1), (1, 0)]
    table = pa.Table.from_pylist([{**base, "run_id": f"r{i}", "failed": f, "completed": c}
                                  for i, (f, c) in enumerate(counts)])
    table = table.set_column(table.schema.get_field_index("run_url"), "run_url",
                             pa.array(["https://github.com/o/r/actions/runs/123/attempts/1"] + [None] * 6, pa.string()))
    out = failure_runs(table)
    assert out.column_names == ["run_id", "run_date", "conc", "model", "isl", "osl", "hw", "precision",
                                "spec_decoding", "framework", "benchmark_type", "run_url", "source_file", "line_id",
                                "sweep_id", "failure_rate"]
    # 2/10, 0/10, 3/3, 0/0, no completed, 0/1, 1/1
    assert out["failure_rate"].to_pylist() == [0.2, 0.0, 1.0, None, None, 0.0, 1.0]
    assert out["line_id"].to_pylist() == ["dsr1|1024/1024|h200|sglang|fp8|spec=none|tp=8,ep=1,dpa=false"] * 7
    assert out["sweep_id"].to_pylist() == ["gha:123"] + ["date:2026-07-01"] * 6
    assert out["benchmark_type"].to_pylist() == [None] * 7 and out["run_id"].to_pylist() == [f"r{i}" for i in range(7)]
    assert out.schema.field("benchmark_type").type == pa.string()  # an absent column: null text
    empty = failure_runs(table.slice(0, 0))  # no rows: the same columns and types
    assert empty.num_rows == 0 and empty.schema.names == out.schema.names
    assert [empty.schema.field(c).type for c in ("line_id", "sweep_id", "failure_rate", "benchmark_type")] == [
        pa.string(), pa.string(), pa.float64(), pa.string()]


def test_detect_row_of_a_failure_rate_step():
    """detect: a change's row holds the series keys, the dates and sweeps and links either side, the means, the
    change and noise in %, the method, a new status, its id and the dates near its first bad point."""
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    series = _series("failure_rate", [0.0, 0.0, 0.0, 0.5, 0.5])
    [row] = detect([_series("p99_ttft_s", [1.0] * 5), series], {("line", "failure_rate"): rule})  # TTFT: no rule
    dates = series.dates
    p = row.pop("p_value")
    assert row == {
        "series_kind": "line", "series_id": "L|conc=8", **series.keys, "metric": "failure_rate", "better": "lower",
        "direction": "regression", "status": "new", "last_good_date": dates[2], "first_bad_date": dates[3],
        "latest_date": dates[4], "before_points": 3, "after_points": 2,
        "before_sweeps": [f"date:{d}" for d in dates[:3]], "after_sweeps": [f"date:{d}" for d in dates[3:]],
        "last_good_run": "https://example.invalid/runs/2", "first_bad_run": "https://example.invalid/runs/3",
        "mean_before": 0.0, "mean_after": 0.5, "latest_value": 0.5, "magnitude_pct": 50.0, "noise_pct": 0.2,
        "noise_source": "floor", "method": METHOD, "detected_at": None, "notified_at": None,
        "_near": set(dates[1:5]),  # points 1 to 5 (3 ± 2), the series ending at 4
        # printf 'L|conc=8|failure_rate|regression|2026-07-04' | sha256sum
        "regression_id": "d7240da91f7cba79"}
    assert p < 5e-5


def test_detect_leaves_non_positive_values_out_of_a_relative_series():
    """detect: a relative metric's value ≤ 0 is no point (dates, sweeps and links skip it); the latest value is
    the last point's; noise in % is expm1 of the log noise."""
    values = [100.0, 100.0, 0.0, 100.0, 200.0, 210.0]
    series = _series("tput_per_gpu", values)
    [row] = detect([series], {("line", "tput_per_gpu"): TPUT}, DetectionSettings(max_p_value=1e-3))
    dates = series.dates
    assert (row["direction"], row["last_good_date"], row["first_bad_date"], row["latest_date"]) == (
        "improvement", dates[3], dates[4], dates[5])
    assert row["before_sweeps"] == [f"date:{dates[i]}" for i in (0, 1, 3)] and row["before_points"] == 3
    assert (row["last_good_run"], row["first_bad_run"]) == ("https://example.invalid/runs/3",
                                                            "https://example.invalid/runs/4")
    assert (row["mean_before"], row["mean_after"], row["latest_value"]) == (100.0, 205.0, 210.0)
    assert row["magnitude_pct"] == pytest.approx(105.0)  # 205 / 100 − 1
    # log differences 0, 0, ln 2, ln 1.05: median ln(1.05) / 2, robust noise 1.4826 × that / √2 (above the
    # residual sd √(2 × (ln(1.05) / 2)² / 3)); in % of the level: 100 × expm1
    noise = 1.4826 * np.log(1.05) / 2 / 2 ** 0.5
    assert row["noise_source"] == "residuals" and row["noise_pct"] == pytest.approx(100 * np.expm1(noise))
    assert row["_near"] == {dates[i] for i in (1, 3, 4, 5)}  # kept points 1 to 4 of 0 to 4
    # printf 'L|conc=8|tput_per_gpu|improvement|2026-07-05' | sha256sum
    assert row["regression_id"] == "097df1df04cb5f81"


def test_detect_passes_repeats_settings_and_dates_near_the_change():
    """detect: each point's repeats reach the test (source ``repeats``), the settings' minimum decides
    ``recovered``, and the near dates run from 2 points before the first bad one to 2 after, within the series;
    values under 1 are points of a relative series."""
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    series = _series("failure_rate", [0.0, 0.0, 0.0, 0.5, 0.5])
    series.repeat_sd, series.repeat_n = [0.1] * 5, [3] * 5  # pooled 0.01 over 3 runs a point: √(0.01 / 3)
    [row] = detect([series], {("line", "failure_rate"): rule})
    assert row["noise_source"] == "repeats" and row["noise_pct"] == pytest.approx(100 * (0.01 / 3) ** 0.5)
    # up by 1, then back to 0.6: moved 0.6, not back within 0.02; within a minimum of 0.7 it is back
    up = _series("failure_rate", [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.6, 0.6, 0.6])
    assert [r["status"] for r in detect([up], {("line", "failure_rate"): rule})] == ["new", "new"]
    assert [r["status"] for r in detect([up], {("line", "failure_rate"): rule},
                                        DetectionSettings(min_magnitude=0.7))] == ["recovered"]
    # a change at point 2 of 4: near points 0 to 3; at point 3 of 8: near points 1 to 5
    short = _series("median_tpot_s", [0.05, 0.05, 0.1, 0.1])
    [row] = detect([short], {("line", "median_tpot_s"): TPOT}, DetectionSettings(min_points_before=2,
                                                                                 max_p_value=1e-3))
    assert row["first_bad_date"] == short.dates[2] and row["_near"] == set(short.dates)
    long = _series("failure_rate", [0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5])
    [row] = detect([long], {("line", "failure_rate"): rule})
    assert row["_near"] == set(long.dates[1:6])


def _found(first_bad, status="new", direction="regression", near=None, sid="L|conc=8"):
    row = {name: None for name in REGRESSION_SCHEMA.names}
    row.update(series_id=sid, series_kind="line", metric="tput_per_gpu", direction=direction, status=status,
               first_bad_date=first_bad, regression_id=f"id-{first_bad}-{direction}")
    if near is not None:
        row["_near"] = near
    return row


def test_assign_status_matches_near_dates_once_and_keeps_recovered():
    """assign_status: a found change takes the id, detection and notification of a previous row of its series,
    metric and direction dated among its near dates (each previous row once); ongoing unless recovered; the
    others new, detected now; without near dates only the same first bad date matches."""
    then = dt.datetime(2026, 7, 1, tzinfo=dt.timezone.utc)
    sent = dt.datetime(2026, 7, 1, 2, tzinfo=dt.timezone.utc)
    now = dt.datetime(2026, 7, 9, tzinfo=dt.timezone.utc)
    previous = pa.Table.from_pylist([{**_found(D2), "regression_id": "old", "detected_at": then,
                                      "notified_at": sent}], schema=REGRESSION_SCHEMA)
    found = [_found(D3, near={D1, D2, D3}), _found(D3, status="recovered", near={D2, D3}),
             _found(D3, direction="improvement", near={D2, D3}), _found(D3, sid="M|conc=8", near={D2, D3})]
    out = assign_status(found, previous, now).to_pylist()
    assert [(r["regression_id"], r["status"], r["detected_at"], r["notified_at"]) for r in out] == [
        ("old", "ongoing", then, sent),  # D2 is near D3: the same change
        (f"id-{D3}-regression", "recovered", now, None),  # "old" is taken
        (f"id-{D3}-improvement", "new", now, None),  # another direction
        (f"id-{D3}-regression", "new", now, None)]  # another series
    # recovered stays recovered when matched; no near dates: only the same date
    out = assign_status([_found(D2, status="recovered"), _found(D3)], previous, now).to_pylist()
    assert [(r["regression_id"], r["status"]) for r in out] == [("old", "recovered"), (f"id-{D3}-regression", "new")]
    assert out[0]["detected_at"] == then and "_near" not in out[0]
    assert assign_status([_found(D2)], None, now).to_pylist()[0]["status"] == "new"
    assert assign_status([], previous, now).num_rows == 0  # a previous row nothing matches is dropped


def test_judged_series_counts_and_sorts():
    """JudgedSeries: every batch's changes kept, series counted, those with min_points_before +
    min_points_after points counted as long enough; sort_found orders by series id then metric, stably."""
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    rules = {("line", "failure_rate"): rule}

    def named(sid, values):
        s = _series("failure_rate", values)
        s.series_id = sid
        return s

    judged = JudgedSeries(rules, DetectionSettings())
    judged.add([named("B", [0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0]), named("C", [0.0] * 4)])
    judged.add([named("A", [0.0, 0.0, 0.0, 0.5, 0.5]), named("D", [0.0] * 5)])
    assert (judged.series, judged.long_enough) == (4, 3)  # C has 4 points, fewer than 3 + 2
    assert [(r["series_id"], r["direction"]) for r in judged.found] == [
        ("B", "regression"), ("B", "improvement"), ("A", "regression")]
    judged.sort_found()
    assert [(r["series_id"], r["direction"]) for r in judged.found] == [
        ("A", "regression"), ("B", "regression"), ("B", "improvement")]
    # the settings reach the detector: a 0.5 step is under a minimum of 0.6
    strict = JudgedSeries(rules, DetectionSettings(min_magnitude=0.6))
    strict.add([named("A", [0.0, 0.0, 0.0, 0.5, 0.5])])
    assert (strict.found, strict.series, strict.long_enough) == ([], 1, 1)


def test_find_changes_noise_from_residuals_around_each_segment():
    """find_changes: when the points wander within each segment more than their first differences show, the
    pooled residual sd (df = n − segments) is the noise, source ``residuals``."""
    wave = [0.0, 0.1, 0.2, 0.3, 0.2, 0.1, 0.0]  # differences all 0.1: robust noise 1.4826 × 0.1 / √2 = 0.1048
    [change] = find_changes(wave + [v + 10 for v in wave], RATE)
    # each segment: Σx² − (Σx)²/7 = 0.19 − 0.81/7; two segments over df 14 − 2 = 12: sd 0.1113 > 0.1048
    assert (change.index, change.noise_source) == (7, "residuals")
    assert change.noise == pytest.approx((2 * (0.19 - 0.81 / 7) / 12) ** 0.5)


def test_find_changes_few_points_per_segment_df_and_residual_bound():
    """find_changes: with one point each side allowed, df is at least 1 (no residual left: the floor), and one
    residual degree of freedom is enough for the robust estimate to bound the noise from below."""
    one = DetectionSettings(min_points_before=1, min_points_after=1, max_p_value=0.01, penalty=0.1)
    [change] = find_changes([0.0, 1.0], RATE, one)  # two segments of one point: df_res 0, the floor, df 1
    assert (change.index, change.noise_source, change.noise) == (1, "floor", 0.002)
    t = 1 / (0.002 * 2 ** 0.5)
    assert change.p_value == pytest.approx(1 - 2 * np.arctan(t) / np.pi)  # df 1 (Cauchy)
    # 0, 1, 1 cut at 1 (a penalty of 0.1): df_res 1; residuals 0, so the robust estimate
    # 1.4826 × median(1, 0) / √2 = 1.4826 × 0.5 / √2 is the noise
    settings = DetectionSettings(min_points_before=1, min_points_after=1, max_p_value=0.9, penalty=0.1)
    [change] = find_changes([0.0, 1.0, 1.0], RATE, settings)
    noise = 1.4826 * 0.5 / 2 ** 0.5
    assert (change.index, change.noise_source) == (1, "residuals") and change.noise == pytest.approx(noise)
    t = 1 / (noise * (1 + 1 / 2) ** 0.5)
    assert change.p_value == pytest.approx(1 - 2 * np.arctan(t) / np.pi)


def test_find_changes_repeats_of_one_point_and_a_tie_with_the_floor():
    """find_changes: one point with two runs is enough for the repeats (df 1); repeat noise equal to the floor
    leaves the floor (only larger noise replaces it); a missing sd (None) is no repeat."""
    settings = DetectionSettings(min_points_before=2, max_p_value=0.1)
    [change] = find_changes([0.0, 0.0, 1.0, 1.0], RATE, settings, [0.1, None, None, None], [2, 1, 1, 1])
    noise = (0.01 * 7 / 8) ** 0.5  # pooled 0.01 (df 1), harmonic mean of 2, 1, 1, 1 = 4 / 3.5
    assert change.noise_source == "repeats" and change.noise == pytest.approx(noise)
    assert change.p_value == pytest.approx(1 - 2 * np.arctan(1 / noise) / np.pi)  # t = 1 / (noise × 1), df 1
    # sd 0.25 in four runs each: pooled 0.0625, harmonic mean 4: 0.125, exactly the floor
    floor = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.125)
    [change] = find_changes([0.0, 0.0, 10.0, 10.0], floor, settings, [0.25] * 4, [4] * 4)
    assert (change.noise_source, change.noise) == ("floor", 0.125)


def test_find_changes_a_first_cut_too_early_does_not_stop_the_next():
    """find_changes: a cut with too few points before it is skipped and the later cut is still judged."""
    # cuts at 2 (two points before: fewer than 3) and 6
    [change] = find_changes([0.0, 0.0, 5.0, 5.0, 5.0, 5.0, 0.0, 0.0, 0.0], RATE)
    assert _plain_change(change) == (6, range(2, 6), range(6, 9), 0.0, True, 5.0, 0.0, -5.0, "floor")


def test_find_changes_p_value_equal_to_the_maximum_passes_and_values_under_one():
    """find_changes: a p-value equal to max_p_value is announced; relative values between 0 and 1 are fine, a
    None value is not finite."""
    settings = DetectionSettings(min_points_before=2, max_p_value=1e-3)
    [change] = find_changes([0.05, 0.05, 0.1, 0.1], TPOT, settings)  # seconds: below 1
    assert change.magnitude == pytest.approx(1.0)
    again = find_changes([0.05, 0.05, 0.1, 0.1], TPOT, DetectionSettings(min_points_before=2,
                                                                         max_p_value=change.p_value))
    assert [c.index for c in again] == [2]
    with pytest.raises(ValueError, match="values must be finite"):
        find_changes([1.0, None, 1.0, 1.0, 1.0], TPUT)



def test_widest_change_is_the_series_range_widened_by_the_rounding_of_a_mean():
    """widest_change: max/min − 1 (relative) or max − min (absolute), at least that and only a rounding more."""
    relative = widest_change(np.array([104.0, 100.0, 102.0]), "relative")
    assert 0.04 <= relative - 1e-16 and relative == pytest.approx(0.04, abs=1e-8)
    absolute = widest_change(np.array([0.04, 0.01, 0.02]), "absolute")
    assert 0.03 <= absolute and absolute == pytest.approx(0.03, abs=1e-8)
    assert widest_change(np.array([0.5, 0.5]), "absolute") == pytest.approx(1e-9)  # a flat series: the widening
    assert type(widest_change(np.array([0.5, 0.5]), "absolute")) is float  # a Python float, not a numpy scalar
    # rows: each row's own, as an array; an absolute metric's range holds for negative values too
    rows = widest_change(np.array([[104.0, 100.0, 102.0], [1.0, 2.0, 1.5]]), "relative")
    assert rows.shape == (2,) and rows == pytest.approx([0.04, 1.0], abs=1e-8)
    rows = widest_change(np.array([[-0.03, -0.01], [0.01, 0.03]]), "absolute")
    assert rows.tolist() == [widest_change(np.array([-0.03, -0.01]), "absolute"), widest_change(
        np.array([0.01, 0.03]), "absolute")] and rows == pytest.approx([0.02, 0.02], abs=1e-8)


def test_a_change_whose_means_round_past_the_range_is_still_announced():
    """A mean numpy computes can lie an ulp outside the points' range: a change whose computed magnitude is the
    minimum exactly, above max − min (or max/min − 1), is announced as it was before the range guard."""
    rate = [0.0] * 3 + [0.1] * 3
    magnitude = float(np.mean(rate[3:]) - np.mean(rate[:3]))
    assert magnitude > 0.1  # 0.10000000000000002
    [change] = find_changes(rate, RATE, DetectionSettings(min_magnitude=magnitude))
    assert change.magnitude == magnitude
    tpot = [0.7] * 3 + [1.1] * 3
    ratio = float(np.mean(tpot[3:]) / np.mean(tpot[:3]) - 1)
    assert ratio > 1.1 / 0.7 - 1
    [change] = find_changes(tpot, TPOT, DetectionSettings(min_magnitude=ratio))
    assert change.magnitude == ratio


def test_a_series_narrower_than_the_minimum_magnitude_is_not_searched(monkeypatch):
    """No change of a series narrower than the minimum magnitude could be announced: find_changes returns none
    without the change-point search; a series as wide as the minimum is searched."""
    from pipeline.comparisons import regressions

    searched: list[int] = []
    real = regressions.change_points

    def counted(x, noise, min_size, penalty):
        searched.append(x.size)
        return real(x, noise, min_size, penalty)

    monkeypatch.setattr(regressions, "change_points", counted)
    narrow = [100.0, 104.9, 100.0, 104.9, 100.0, 104.9]  # 4.9 % wide, the minimum is 5 %
    assert find_changes(narrow, TPUT) == [] and searched == []
    find_changes([100.0] * 3 + [105.0] * 3, TPUT)  # 5 % wide: searched (too few points to pass the test)
    assert searched == [6]
    assert find_changes([0.0, 0.0, 0.0, 0.019, 0.019], RATE) == [] and searched == [6]
    assert find_changes(narrow, TPUT, DetectionSettings(min_magnitude=0.04)) == [] and searched == [6, 6]


@pytest.mark.parametrize("seed", range(40))
def test_the_range_guard_changes_no_result(monkeypatch, seed):
    """Random series around the minimum magnitude (steps of 0–8 %, noise 0.2–3 %, both scales, repeats, overridden
    minimums): find_changes gives exactly what it gives when every series is searched."""
    from pipeline.comparisons import regressions

    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    step = np.where(np.arange(n) >= rng.integers(2, n - 1), rng.uniform(-0.08, 0.08), 0.0)
    values = (1000.0 * np.exp(step + rng.normal(0.0, rng.uniform(0.002, 0.03), n))).tolist()
    rates = np.clip(np.abs(step) / 2 + rng.normal(0.0, 0.005, n), 0.0, 1.0).tolist()
    sd, counts = rng.uniform(0.0, 20.0, n).tolist(), rng.integers(1, 4, n).tolist()
    cases = [(values, TPUT, DetectionSettings()), (values, TPOT, DetectionSettings(min_magnitude=0.03)),
             (rates, RATE, DetectionSettings()), (values, TPUT, DetectionSettings(window=5, min_points_before=2))]
    guarded = [find_changes(v, rule, settings, sd, counts) for v, rule, settings in cases]
    monkeypatch.setattr(regressions, "widest_change", lambda y, scale: float("inf"))
    assert guarded == [find_changes(v, rule, settings, sd, counts) for v, rule, settings in cases]

def _screen_cases(seed):
    """(rule, settings, rows) of one length: flat, narrow, stepped and noisy series of both scales, a NaN row and
    (relative) a row holding 0 and one holding a negative value."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    step = (np.arange(n) >= rng.integers(2, n - 1))[None, :] * rng.uniform(-0.08, 0.08, (12, 1))
    noise = rng.normal(0.0, 1.0, (12, n)) * rng.uniform(0.0, 0.03, (12, 1))
    values = 1000.0 * np.exp(step + noise)
    rates = np.clip(np.abs(step) / 2 + noise / 5, 0.0, 1.0)
    values[0], rates[0] = 1000.0, 0.0  # flat rows
    values[1, 0] = rates[1, -1] = np.nan
    values[2, n // 2] = 0.0
    values[3, 0] = -5.0
    return [(TPUT, DetectionSettings(), values), (TPOT, DetectionSettings(min_magnitude=0.03), values),
            (RATE, DetectionSettings(), rates), (TPUT, DetectionSettings(window=5, min_points_before=2), values),
            (TPUT, DetectionSettings(penalty=0.5), values)]


@pytest.mark.parametrize("seed", range(25))
def test_quiet_rows_are_the_early_exits_of_find_changes(seed):
    """quiet_rows over rows of one length: a row is quiet exactly where the one-series arithmetic exits early
    (too short, narrower than the minimum magnitude, or no first cut gaining more than the penalty), except a
    row whose gain is within 1e-6 of the penalty (left to find_changes); a quiet row gives find_changes []; a
    row find_changes raises for (NaN, or 0 in a relative series) is not quiet."""
    for rule, settings, rows in _screen_cases(seed):
        quiet = quiet_rows(rows, rule, settings)
        assert quiet.shape == (rows.shape[0],) and quiet.dtype == bool
        for row, q in zip(rows, quiet.tolist()):
            if not np.all(np.isfinite(row)) or (rule.scale == "relative" and np.any(row <= 0)):
                assert not q
                with pytest.raises(ValueError):
                    find_changes(row.tolist(), rule, settings)
                continue
            if q:
                assert find_changes(row.tolist(), rule, settings) == []
            minimum = rule.min_magnitude if settings.min_magnitude is None else settings.min_magnitude
            if widest_change(row, rule.scale) < minimum:
                assert q
                continue
            x = np.log(row) if rule.scale == "relative" else row
            floor = math.log1p(rule.noise_floor) if rule.scale == "relative" else rule.noise_floor
            penalty = settings.penalty * max(robust_noise(x), floor) ** 2 * math.log(x.size)
            min_size = min(settings.min_points_before, settings.min_points_after)
            gain = cumulative_l2_cost().fit(x).best_first_gain(min_size)
            if abs(gain - penalty) > 1e-6 * (penalty + float(np.sum((x - x.mean()) ** 2))):
                assert q == (gain <= penalty), (row.tolist(), gain, penalty)


def test_quiet_rows_per_row_are_the_one_series_arithmetic():
    """prefix_sums and first_cut_gains over rows give each row's own sums and best first gain (the one-series
    cost's, cumulative_l2_cost().fit(row).best_first_gain): per row up to rounding."""
    rows = noisy(3 * 12, seed=5).reshape(3, 12)
    rows[1, 6:] *= 1.2
    sums, squares = prefix_sums(rows)
    assert sums.shape == squares.shape == (3, 13) and (sums[:, 0] == 0).all() and (squares[:, 0] == 0).all()
    gains = first_cut_gains(sums, squares, 2)
    for row, gain, row_sums in zip(rows, gains, sums):
        assert gain == pytest.approx(cumulative_l2_cost().fit(row).best_first_gain(2), rel=1e-12)
        assert row_sums == pytest.approx(np.concatenate(([0.0], np.cumsum(row - row.mean()))), abs=1e-9)
    # a step of 1 between 0, 0, 0 and 1, 1, 1: the whole's 1.5 less the halves' 0; one side of ≥ 3 points: only
    # that cut; sides of ≥ 1 point: the same best cut
    step = np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])
    assert first_cut_gains(*prefix_sums(step), 3).tolist() == [1.5] == first_cut_gains(*prefix_sums(step), 1).tolist()
    assert first_cut_gains(*prefix_sums(step[0]), 3) == 1.5
    assert type(first_cut_gains(*prefix_sums(step[0]), 3)) is float  # a Python float, not a numpy scalar


def test_quiet_rows_exits_of_length_scale_and_floor():
    """The exits of quiet_rows on hand-made rows, each against what find_changes does with the row:
    - a step of 10 in 4 points (fewer than 3 + 2) is quiet, in 5 it is searched; with one point a side, 2 points
      are searched where the penalty lets a cut through (0.1: the gain 50 beats 0.1 × 10.48² × ln 2);
    - a flat relative series under 1 (TPOT in seconds) is quiet, as any positive flat series;
    - a relative series' noise floor is log(1 + floor): a step of ln-size 0.010915 in 6 points gains 1.7871e-4
      (6/4 × 0.010915²), above the penalty 4 × log1p(0.005)² × ln 6 = 1.7828e-4, below the 1.7918e-4 that the
      floor itself (0.005) would give: searched.
    """
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.5, 1.0)
    step = [0.0, 0.0, 10.0, 10.0, 10.0]
    assert quiet_rows(np.array([step[1:]]), rule, DetectionSettings(min_points_before=3)).tolist() == [True]
    assert find_changes(step[1:], rule, DetectionSettings(min_points_before=3)) == []
    assert quiet_rows(np.array([step]), rule, DetectionSettings(min_points_before=3)).tolist() == [False]
    both = DetectionSettings(min_points_before=2, min_points_after=2)
    assert quiet_rows(np.array([step[1:], [0.0, 0.0, 0.0, 10.0]]), rule, both).tolist() == [False, False]
    assert quiet_rows(np.array([step]), rule, both).tolist() == [False]
    one = DetectionSettings(min_points_before=1, min_points_after=1, penalty=0.1)
    assert quiet_rows(np.array([[0.0, 10.0]]), rule, one).tolist() == [False]
    assert change_points(np.array([0.0, 10.0]), 1.4826 * 10 / 2 ** 0.5, 1, 0.1) == [1]
    assert quiet_rows(np.array([[0.0, 10.0]]), rule, DetectionSettings(min_points_before=1,
                                                                       min_points_after=1)).tolist() == [True]
    assert quiet_rows(np.array([[0.05] * 6, [0.8] * 6, [3.0] * 6]), TPOT).tolist() == [True, True, True]
    ratio = math.exp(0.010915)
    tiny = DetectionSettings(min_magnitude=0.001)
    assert 4 * math.log1p(0.005) ** 2 * math.log(6) < 1.5 * math.log(ratio) ** 2 < 4 * 0.005 ** 2 * math.log(6)
    assert quiet_rows(np.array([[1000.0] * 3 + [1000.0 * ratio] * 3]), TPUT, tiny).tolist() == [False]
    assert quiet_rows(np.array([[1000.0] * 3 + [1000.0 * ratio] * 3]), TPUT,
                      DetectionSettings(min_magnitude=0.001, penalty=4.0 * 1.01)).tolist() == [True]


def test_quiet_rows_leave_a_gain_at_the_penalty_to_find_changes():
    """A step whose best first gain (1.5, the cut between 0, 0, 0 and 1, 1, 1) meets a penalty of 1.5 up to
    rounding is not quiet; a penalty 1e-6 above it is; one 1e-6 below it is searched and cut. Rows shorter than
    the two sides need, or than two minimum segments, are quiet."""
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.5, 1.0)  # noise = the floor, 1
    row = np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])
    at = 1.5 / math.log(6)  # penalty × 1² × ln 6 = 1.5
    assert quiet_rows(row, rule, DetectionSettings(penalty=at)).tolist() == [False]
    assert quiet_rows(row, rule, DetectionSettings(penalty=at * (1 + 1e-6))).tolist() == [True]
    assert quiet_rows(row, rule, DetectionSettings(penalty=at * (1 - 1e-6))).tolist() == [False]
    assert change_points(row[0], 1.0, 3, at * (1 - 1e-6)) == [3]
    assert quiet_rows(row[:, :4], rule, DetectionSettings(min_points_before=3)).tolist() == [True]
    assert quiet_rows(row[:, :5], rule, DetectionSettings(min_points_before=3, min_points_after=3)).tolist() == [True]
    assert quiet_rows(np.array([[0.0, np.nan, 1.0, 1.0, 1.0]]), rule).tolist() == [False]


def test_detect_searches_only_the_series_that_are_not_quiet(monkeypatch):
    """detect screens the series (quiet_series, grouped by rule and length) and runs find_changes only on the
    others: a flat series and a narrow one are never searched, a step is; the rows found are those found with
    every series searched."""
    from pipeline.comparisons import regressions

    rules = {("line", "tput_per_gpu"): TPUT, ("line", "failure_rate"): RATE}
    series = [_series("tput_per_gpu", [1000.0] * 8), _series("tput_per_gpu", [1000.0] * 4 + [1030.0] * 4),
              _series("tput_per_gpu", [1000.0] * 4 + [800.0] * 4), _series("failure_rate", [0.0] * 6 + [0.5] * 3),
              _series("tput_per_gpu", [1000.0, 0.0] + [1000.0] * 3 + [700.0] * 3)]
    assert quiet_series([(rules[(s.kind, s.metric)], s.values) for s in series[:4]]) == [True, True, False, False]
    searched = []
    real = regressions.find_changes

    def counted(values, *args):
        searched.append(list(values))
        return real(values, *args)

    monkeypatch.setattr(regressions, "find_changes", counted)
    screened = detect(series, rules)
    assert searched == [series[2].values, series[3].values, [1000.0] * 4 + [700.0] * 3]
    # the settings reach the screen: under a minimum of 0.1 % the 3 % step is searched too
    searched.clear()
    detect(series[:2], rules, DetectionSettings(min_magnitude=0.001))
    assert searched == [series[1].values]
    monkeypatch.setattr(regressions, "quiet_series", lambda items, settings: [False] * len(items))
    assert detect(series, rules) == screened and len(screened) == 3


def test_detect_keeps_a_relative_series_points_under_one():
    """A relative metric in seconds (TPOT): its points under 1 are points; only the one at 0 is left out."""
    series = _series("median_tpot_s", [0.05, 0.05, 0.0, 0.05, 0.1, 0.1])
    [row] = detect([series], {("line", "median_tpot_s"): TPOT}, DetectionSettings(max_p_value=1e-3))
    assert (row["mean_before"], row["mean_after"]) == (pytest.approx(0.05), pytest.approx(0.1))
    assert (row["before_points"], row["before_sweeps"]) == (3, [f"date:{series.dates[i]}" for i in (0, 1, 3)])
    assert row["first_bad_date"] == series.dates[4] and row["direction"] == "regression"


# --- rules as data --------------------------------------------------------------------------------------------------

def test_the_committed_rules_say_which_way_is_better():
    rules = load_metric_rules()
    assert rules[("line", "tput_per_gpu")].better == "higher"
    assert rules[("line", "median_tpot_s")].better == rules[("line", "p99_ttft_s")].better == "lower"
    assert rules[("frontier", "cost_per_mtok_hyperscaler")].better == "lower"
    assert rules[("line", "failure_rate")].scale == "absolute"


@pytest.mark.parametrize("row, words", [
    ("line,tput_per_gpu,up,relative,0.05,0.005,x", "column better: 'up' is not higher or lower"),
    ("line,tok_s_per_mw,higher,relative,0.05,0.005,x", "column metric: 'tok_s_per_mw' is not a line metric"),
    ("line,tput_per_gpu,higher,relative,-1,0.005,x", "column min_magnitude: '-1' is not a positive"),
])
def test_a_malformed_rule_names_its_line_and_column(tmp_path, row, words):
    path = tmp_path / "regression_metrics.csv"
    path.write_text("series,metric,better,scale,min_magnitude,noise_floor,basis\n" + row + "\n", encoding="utf-8")
    with pytest.raises(RegressionRulesError, match="line 2, " + words.replace("(", r"\(")):
        load_metric_rules(path)


def test_load_metric_rules_reads_every_row(tmp_path):
    """load_metric_rules: one MetricRule per row, keyed by (series, metric), cells stripped, numbers as floats."""
    path = tmp_path / "regression_metrics.csv"
    path.write_text("series,metric,better,scale,min_magnitude,noise_floor\n"
                    " line , failure_rate ,lower, absolute ,0.02,0.002\n"
                    "frontier,tok_s_per_mw,higher,relative,5e-2,1e-3\n", encoding="utf-8")
    assert load_metric_rules(path) == {
        ("line", "failure_rate"): MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002),
        ("frontier", "tok_s_per_mw"): MetricRule("frontier", "tok_s_per_mw", "higher", "relative", 0.05, 0.001)}


@pytest.mark.parametrize("row, words", [
    ("lane,tput_per_gpu,higher,relative,0.05,0.005", "column series: 'lane' is not one of line, frontier"),
    ("frontier,failure_rate,lower,absolute,0.05,0.005",
     "column metric: 'failure_rate' is not a frontier metric (tput_per_gpu, cost_per_mtok_hyperscaler, "
     "tok_s_per_mw)"),
    ("line,tput_per_gpu,higher,log,0.05,0.005", "column scale: 'log' is not relative or absolute"),
    ("line,tput_per_gpu,higher,relative,0.05,x", "column noise_floor: 'x' is not a number"),
    ("line,tput_per_gpu,higher,relative,,0.005", "column min_magnitude: '' is not a number"),
    ("line,tput_per_gpu,higher,relative,inf,0.005", "column min_magnitude: 'inf' is not a positive finite number"),
    ("line,tput_per_gpu,higher,relative,0.05,0", "column noise_floor: '0' is not a positive finite number"),
])
def test_more_malformed_rules_name_their_line_and_column(tmp_path, row, words):
    """load_metric_rules: an unknown series kind or scale, a metric of the other kind, a cell that is not a
    positive finite number: RegressionRulesError naming the file, line and column."""
    path = tmp_path / "regression_metrics.csv"
    path.write_text("series,metric,better,scale,min_magnitude,noise_floor\n" + row + "\n", encoding="utf-8")
    with pytest.raises(RegressionRulesError) as raised:
        load_metric_rules(path)
    assert str(raised.value) == f"{path} line 2, {words}"


def test_load_metric_rules_missing_columns_and_a_row_given_twice(tmp_path):
    """load_metric_rules: the missing columns are named, sorted; a (series, metric) given twice names its second
    line."""
    path = tmp_path / "regression_metrics.csv"
    path.write_text("series,metric,better\nline,tput_per_gpu,higher\n", encoding="utf-8")
    with pytest.raises(RegressionRulesError) as raised:
        load_metric_rules(path)
    assert str(raised.value) == f"{path}: missing columns ['min_magnitude', 'noise_floor', 'scale']"
    path.write_text("series,metric,better,scale,min_magnitude,noise_floor\n"
                    "line,tput_per_gpu,higher,relative,0.05,0.005\nfrontier,tput_per_gpu,higher,relative,0.05,0.005\n"
                    "line,tput_per_gpu,lower,relative,0.05,0.005\n", encoding="utf-8")
    with pytest.raises(RegressionRulesError) as raised:
        load_metric_rules(path)
    assert str(raised.value) == f"{path} line 4, column metric: 'tput_per_gpu' is given twice for this series kind"


# --- status across runs -----------------------------------------------------------------------------------------------

def test_a_change_found_again_keeps_its_id_and_notification_and_is_ongoing():
    values = noisy(20, seed=9)
    values[12:] *= 0.85
    rules = {("line", "tput_per_gpu"): TPUT}
    first = assign_status(detect([_series("tput_per_gpu", values[:15])], rules), None,
                          dt.datetime(2026, 7, 16, tzinfo=dt.timezone.utc))
    assert first["status"].to_pylist() == ["new"]
    sent = dt.datetime(2026, 7, 16, 2, tzinfo=dt.timezone.utc)
    first = first.set_column(first.schema.get_field_index("notified_at"), "notified_at",
                             __import__("pyarrow").array([sent], first.schema.field("notified_at").type))
    again = assign_status(detect([_series("tput_per_gpu", values)], rules), first,
                          dt.datetime(2026, 7, 21, tzinfo=dt.timezone.utc)).to_pylist()
    assert [(r["status"], r["regression_id"], r["notified_at"]) for r in again] == [
        ("ongoing", first["regression_id"][0].as_py(), sent)]


# --- the texts: labels, values, the Markdown table and the Slack message ----------------------------------------------

# a regression of a line (tok/s/GPU), links to both runs
REGRESSION_ROW = {
    "series_kind": "line", "line_id": "dsr1|1024/1024|h200|sglang|fp8|tp8", "conc": 64, "metric": "tput_per_gpu",
    "mean_before": 1234.4, "mean_after": 1049.6, "magnitude_pct": -15.03, "first_bad_date": dt.date(2026, 7, 7),
    "last_good_run": "https://github.com/o/r/actions/runs/9005/attempts/1",
    "first_bad_run": "https://github.com/o/r/actions/runs/9006/attempts/1", "status": "new"}
# an improvement of a frontier ($/M tokens down): no run links (an empty one and a null one)
FRONTIER_ROW = {
    "series_kind": "frontier", "model": "dsr1", "isl": 1024, "osl": 8192, "hw": "b200", "framework": "trt",
    "precision": "fp4", "spec_decoding": "mtp", "target_intvty": 50.0, "price_book": "list", "line_id": None,
    "conc": None, "metric": "cost_per_mtok_hyperscaler", "mean_before": 0.123456, "mean_after": 0.0987654,
    "magnitude_pct": -19.99, "first_bad_date": dt.date(2026, 7, 9), "last_good_run": "", "first_bad_run": None,
    "status": "ongoing"}
# a recovered failure-rate change (percentage points): a file path and an http URL with a space and parentheses
RECOVERED_ROW = {
    "series_kind": "line", "line_id": "L<1>", "conc": 8, "metric": "failure_rate", "mean_before": 0.0,
    "mean_after": 0.25, "magnitude_pct": 25.0, "first_bad_date": dt.date(2026, 7, 3),
    "last_good_run": "raw/a[1].json", "first_bad_run": "http://host/run (2)", "status": "recovered"}


def test_format_value_units_and_rounding():
    """format_value: None is a dash, failure rates in % to one decimal, tok/s grouped without decimals from 100
    up (also below −100) and to 3 significant digits under, seconds and dollars to 4 significant digits."""
    assert format_value(None, "tput_per_gpu") == "—"
    assert format_value(None, "failure_rate") == "—"
    assert format_value(0.125, "failure_rate") == "12.5 %"  # 100 × 0.125
    assert format_value(0.0, "failure_rate") == "0.0 %"
    assert format_value(1234567.8, "tput_per_gpu") == "1,234,568"
    assert format_value(1234.4, "tok_s_per_mw") == "1,234"
    assert format_value(-1234.4, "tput_per_gpu") == "-1,234"  # |−1234.4| ≥ 100: grouped, not 3 digits
    assert format_value(99.96, "tput_per_gpu") == "100"  # under 100: 3 significant digits, 99.96 rounds up
    assert format_value(12.345, "tok_s_per_mw") == "12.3"
    assert format_value(-12.345, "tput_per_gpu") == "-12.3"
    assert format_value(0.0123456, "median_tpot_s") == "0.01235"
    assert format_value(1.23456, "cost_per_mtok_hyperscaler") == "1.235"
    assert format_value(1234.4, "p99_ttft_s") == "1234"  # seconds are never grouped
    assert format_value(1234.4, "input_tput_per_gpu") == "1234"  # an unknown metric: 4 significant digits


def test_series_label_names_a_line_and_a_frontier():
    """series_label: ``<line id> conc=<N>`` for a line; model, lengths (agentic without isl), side keys, target
    (``:g``) and price book for a frontier."""
    assert series_label(REGRESSION_ROW) == "dsr1|1024/1024|h200|sglang|fp8|tp8 conc=64"
    assert series_label(FRONTIER_ROW) == "dsr1 1024/8192 b200 trt fp4 spec=mtp frontier at 50 tok/s/user (list)"
    agentic = {**FRONTIER_ROW, "isl": None, "osl": None, "target_intvty": 12.5, "price_book": "spot"}
    assert series_label(agentic) == "dsr1 agentic b200 trt fp4 spec=mtp frontier at 12.5 tok/s/user (spot)"


def test_change_text_before_after_and_signed_change():
    """change_text: both means formatted for their metric, an arrow, and the signed change to one decimal in %
    (pp for the failure rate)."""
    assert change_text(REGRESSION_ROW) == "1,234 → 1,050 (-15.0 %)"
    assert change_text(FRONTIER_ROW) == "0.1235 → 0.09877 (-20.0 %)"
    assert change_text(RECOVERED_ROW) == "0.0 % → 25.0 % (+25.0 pp)"
    assert change_text({**REGRESSION_ROW, "mean_before": None, "magnitude_pct": 4.96}) == "— → 1,050 (+5.0 %)"


def test_regressions_markdown_whole_table():
    """regressions_markdown: the header, then one row per regression with escaped cells, links only for URLs
    (space and ``)`` encoded), a dash for a missing run, and the status."""
    assert regressions_markdown([REGRESSION_ROW, FRONTIER_ROW, RECOVERED_ROW]) == "\n".join([
        "| line | metric | before → after | change | first bad date | last good run | first bad run | status |",
        "|---|---|---|---|---|---|---|---|",
        r"| dsr1\|1024/1024\|h200\|sglang\|fp8\|tp8 conc=64 | tok/s/GPU | 1,234 → 1,050 | -15.0 % | 2026-07-07 "
        "| [last good](https://github.com/o/r/actions/runs/9005/attempts/1) "
        "| [first bad](https://github.com/o/r/actions/runs/9006/attempts/1) | new |",
        "| dsr1 1024/8192 b200 trt fp4 spec=mtp frontier at 50 tok/s/user (list) | $/M tokens (hyperscaler) "
        "| 0.1235 → 0.09877 | -20.0 % | 2026-07-09 | — | — | ongoing |",
        r"| L&lt;1&gt; conc=8 | failure rate | 0.0 % → 25.0 % | +25.0 pp | 2026-07-03 | raw/a\[1\].json "
        "| [first bad](http://host/run%20(2%29) | recovered |"])


def test_regressions_markdown_unknown_metric_and_empty():
    """regressions_markdown: a metric without a label shows its column name (escaped); no rows is the header
    alone."""
    row = {**REGRESSION_ROW, "metric": "input|tput", "mean_before": 2.0, "mean_after": 3.0, "magnitude_pct": 50.0,
           "last_good_run": None, "first_bad_run": "x"}
    assert regressions_markdown([row]).splitlines()[2] == (
        r"| dsr1\|1024/1024\|h200\|sglang\|fp8\|tp8 conc=64 | input\|tput | 2 → 3 | +50.0 % | 2026-07-07 | — | x "
        "| new |")
    assert regressions_markdown([]) == (
        "| line | metric | before → after | change | first bad date | last good run | first bad run | status |\n"
        "|---|---|---|---|---|---|---|---|")


def test_slack_message_whole_text():
    """slack_message: the count (plural but for one), the report link when given, one bullet per row with the
    first bad run's link only where it is a URL."""
    assert slack_message([REGRESSION_ROW, RECOVERED_ROW], "https://r/x") == {"text": "\n".join([
        ":warning: 2 new benchmark regressions (<https://r/x|report>)",
        "• dsr1|1024/1024|h200|sglang|fp8|tp8 conc=64: tok/s/GPU 1,234 → 1,050 (-15.0 %), first bad 2026-07-07 "
        "<https://github.com/o/r/actions/runs/9006/attempts/1|first bad run>",
        "• L<1> conc=8: failure rate 0.0 % → 25.0 % (+25.0 pp), first bad 2026-07-03 "
        "<http://host/run (2)|first bad run>"])}
    frontier = {k: v for k, v in FRONTIER_ROW.items() if k != "first_bad_run"}  # no run key at all
    assert slack_message([frontier]) == {"text": ":warning: 1 new benchmark regression\n"
                                         "• dsr1 1024/8192 b200 trt fp4 spec=mtp frontier at 50 tok/s/user (list): "
                                         "$/M tokens (hyperscaler) 0.1235 → 0.09877 (-20.0 %), first bad 2026-07-09"}
    local = {**REGRESSION_ROW, "metric": "other", "mean_before": 2.0, "mean_after": 3.0, "magnitude_pct": 50.0,
             "first_bad_run": "raw/run.json"}
    assert slack_message([local], "") == {"text": ":warning: 1 new benchmark regression\n"
                                          "• dsr1|1024/1024|h200|sglang|fp8|tp8 conc=64: other 2 → 3 (+50.0 %), "
                                          "first bad 2026-07-07"}
    assert slack_message([]) == {"text": ":warning: 0 new benchmark regressions"}


# --- line series from runs --------------------------------------------------------------------------------------------

D1, D2, D3 = dt.date(2026, 7, 1), dt.date(2026, 7, 2), dt.date(2026, 7, 3)


def _line_runs():
    """Two lines' runs: line A's sweep gha:10 on D1 (conc 8 twice, conc 16 once), its sweep gha:11 on D2 and again
    on D3 (conc 8: a null tok/s/GPU, and a run without a concurrency), an undated run; line B's sweeps gha:20 (D2)
    and gha:21 (D3) at conc 16, the only runs with a median TPOT. No run has a p99 TTFT."""
    a = {"model": "m", "isl": 1024, "osl": 1024, "hw": "h200", "precision": "fp8", "spec_decoding": "none",
         "framework": "sglang", "benchmark_type": "fixed_seq"}
    b = {**a, "model": "m2", "hw": "mi300x"}
    rows = [  # (run, line, sweep, date, conc, keys, url, file, tok/s/GPU, TPOT)
        ("r1", "A", "gha:10", D1, 8, a, "", "f10a.json", 100.0, None),
        ("r2", "A", "gha:10", D1, 8, a, "https://x/10b", "f10b.json", 110.0, None),
        ("r3", "A", "gha:10", D1, 16, a, None, "f10c.json", 50.0, None),
        ("r4", "A", "gha:11", D2, 8, a, None, "f11a.json", 120.0, None),
        ("r5", "A", "gha:11", D2, 8, a, "https://x/11", "f11b.json", None, None),
        ("r6", "A", "gha:11", D3, 8, a, "https://x/11c", "f11c.json", 130.0, None),
        ("r7", "A", "gha:11", D3, None, a, "https://x/11d", "f11d.json", 500.0, None),
        ("r8", "A", "gha:12", None, 8, a, "https://x/12", "f12.json", 999.0, None),
        ("r9", "B", "gha:20", D2, 16, b, "", "g20.json", 200.0, 0.05),
        ("r10", "B", "gha:21", D3, 16, b, "https://x/21", "g21.json", 210.0, 0.06),
    ]
    columns = {"run_id": [r[0] for r in rows], "line_id": [r[1] for r in rows], "sweep_id": [r[2] for r in rows],
               "run_date": pa.array([r[3] for r in rows], pa.date32()),
               "conc": pa.array([r[4] for r in rows], pa.int32())}
    for k in a:
        columns[k] = [r[5][k] for r in rows]
    columns.update(run_url=[r[6] for r in rows], source_file=[r[7] for r in rows],
                   tput_per_gpu=pa.array([r[8] for r in rows], pa.float64()),
                   median_tpot_s=pa.array([r[9] for r in rows], pa.float64()),
                   p99_ttft_s=pa.array([None] * len(rows), pa.float64()))
    return pa.table(columns), a, b


def _plain(s):
    """A Series as a tuple, NaN as None (NaN never equals itself)."""
    return (s.kind, s.series_id, s.keys, s.metric, s.dates, s.sweeps,
            [round(v, 9) for v in s.values], [None if np.isnan(v) else round(v, 9) for v in s.repeat_sd],
            s.repeat_n, s.links)


def _expected_line_series():
    _, a, b = _line_runs()
    keys_a = {**a, "line_id": "A", "price_book": None, "target_intvty": None}
    keys_b = {**b, "line_id": "B", "conc": 16, "price_book": None, "target_intvty": None}
    sd = round(50 ** 0.5, 9)  # two runs 10 apart: deviations ±5, (25 + 25) / (2 − 1) = 50
    return {
        # conc 16: one run; link: no URL, the run's file
        ("A|conc=16", "tput_per_gpu"): ("line", "A|conc=16", {**keys_a, "conc": 16}, "tput_per_gpu", [D1],
                                        ["gha:10"], [50.0], [None], [1], ["f10c.json"]),
        # conc 8: gha:10 = mean(100, 110); gha:11 first current on D2, its D3 run joins: mean(120, 130) (r5 null,
        # r7 without conc, r8 undated all left out); links: the first non-empty URL of each point's runs
        ("A|conc=8", "tput_per_gpu"): ("line", "A|conc=8", {**keys_a, "conc": 8}, "tput_per_gpu", [D1, D2],
                                       ["gha:10", "gha:11"], [105.0, 125.0], [sd, sd], [2, 2],
                                       ["https://x/10b", "https://x/11"]),
        # conc 16 as line A's: a series of its own all the same; the last run of all carries its point's link
        ("B|conc=16", "tput_per_gpu"): ("line", "B|conc=16", keys_b, "tput_per_gpu", [D2, D3],
                                        ["gha:20", "gha:21"], [200.0, 210.0], [None, None], [1, 1],
                                        ["g20.json", "https://x/21"]),
        ("B|conc=16", "median_tpot_s"): ("line", "B|conc=16", keys_b, "median_tpot_s", [D2, D3],
                                         ["gha:20", "gha:21"], [0.05, 0.06], [None, None], [1, 1],
                                         ["g20.json", "https://x/21"]),
    }


def test_line_series_by_metric_batches_points_and_links():
    """line_series_by_metric: a batch per metric with a value (few series), in the order asked, sorted by series id;
    a point per successive current sweep dated its first day, the mean and spread of its runs, its link."""
    runs, _, _ = _line_runs()
    expected = _expected_line_series()
    batches = list(line_series_by_metric(runs, ["tput_per_gpu", "p99_ttft_s", "median_tpot_s"]))
    assert [[_plain(s) for s in batch] for batch in batches] == [
        [expected[("A|conc=16", "tput_per_gpu")], expected[("A|conc=8", "tput_per_gpu")],
         expected[("B|conc=16", "tput_per_gpu")]],
        [expected[("B|conc=16", "median_tpot_s")]]]


def test_line_series_by_metric_yields_a_metric_in_batches_of_the_set_size(monkeypatch):
    """With LINE_SERIES_BATCH at 2, line A's two series and line B's come as two batches of tok/s/GPU (series-id
    order across them), then B's TPOT: the same series as one batch per metric, and no batch mixes metrics."""
    from pipeline.comparisons import regressions

    runs, _, _ = _line_runs()
    expected = _expected_line_series()
    monkeypatch.setattr(regressions, "LINE_SERIES_BATCH", 2)
    batches = list(line_series_by_metric(runs, ["tput_per_gpu", "p99_ttft_s", "median_tpot_s"]))
    assert [[_plain(s) for s in batch] for batch in batches] == [
        [expected[("A|conc=16", "tput_per_gpu")], expected[("A|conc=8", "tput_per_gpu")]],
        [expected[("B|conc=16", "tput_per_gpu")]],
        [expected[("B|conc=16", "median_tpot_s")]]]
    monkeypatch.setattr(regressions, "LINE_SERIES_BATCH", 1)
    assert [[s.series_id for s in batch] for batch in line_series_by_metric(runs, ["tput_per_gpu"])] == [
        ["A|conc=16"], ["A|conc=8"], ["B|conc=16"]]

def test_line_series_sorted_by_series_then_metric():
    """line_series: every metric's series in one list sorted by series id, then metric."""
    runs, _, _ = _line_runs()
    expected = _expected_line_series()
    assert [_plain(s) for s in line_series(runs, ["tput_per_gpu", "median_tpot_s"])] == [
        expected[("A|conc=16", "tput_per_gpu")], expected[("A|conc=8", "tput_per_gpu")],
        expected[("B|conc=16", "median_tpot_s")], expected[("B|conc=16", "tput_per_gpu")]]


def test_line_series_without_dated_runs_is_empty():
    """line_series_by_metric: a table with no dated run yields nothing."""
    runs, _, _ = _line_runs()
    undated = runs.set_column(runs.schema.get_field_index("run_date"), "run_date",
                              pa.nulls(runs.num_rows, pa.date32()))
    assert list(line_series_by_metric(undated, ["tput_per_gpu"])) == []
    assert list(line_series_by_metric(runs.slice(0, 0), ["tput_per_gpu"])) == []
    no_conc = runs.set_column(runs.schema.get_field_index("conc"), "conc", pa.nulls(runs.num_rows, pa.int32()))
    assert list(line_series_by_metric(no_conc, ["tput_per_gpu"])) == []  # no run has a concurrency: no point


def test_line_series_a_rerun_attempt_replaces_its_earlier_attempt_on_every_line():
    """line_series_by_metric: a line whose only sweep was replaced by a later attempt of its workflow run has no
    point on that day, and the other lines of the day keep theirs."""
    runs, _, _ = _line_runs()
    first = runs.slice(0, 1).to_pylist()[0]

    def run(line, sweep, day, value):
        return {**first, "line_id": line, "sweep_id": sweep, "run_date": day, "tput_per_gpu": value, "run_url": "",
                "source_file": f"{line}-{value:g}.json"}

    # X runs under gha:5 on D1 and D2; on D2 attempt 2 of that workflow run (Y's) is visible, so gha:5 leaves X
    table = pa.Table.from_pylist([run("X", "gha:5", D1, 1.0), run("X", "gha:5", D2, 2.0),
                                  run("Y", "gha:5/attempt/2", D2, 3.0), run("Y", "gha:4", D1, 4.0)],
                                 schema=runs.schema)
    assert [(s.series_id, s.dates, s.sweeps, s.values, s.links) for s in line_series(table, ["tput_per_gpu"])] == [
        ("X|conc=8", [D1], ["gha:5"], [1.0], ["X-1.json"]),
        ("Y|conc=8", [D1, D2], ["gha:4", "gha:5/attempt/2"], [4.0, 3.0], ["Y-4.json", "Y-3.json"])]


def test_line_series_a_sweep_over_several_days_is_one_point_dated_its_first():
    """line_series_by_metric: a sweep whose runs arrive over several days is one point dated its first day, its
    mean over all of them, whether it is the line's first point or a later one; each concurrency its own group."""
    runs, _, _ = _line_runs()
    first = runs.slice(0, 1).to_pylist()[0]
    d4, d5 = D3 + dt.timedelta(days=1), D3 + dt.timedelta(days=2)

    def run(sweep, day, conc, value):
        return {**first, "sweep_id": sweep, "run_date": day, "conc": conc, "tput_per_gpu": value, "run_url": "",
                "source_file": f"{sweep}-{value:g}.json"}

    table = pa.Table.from_pylist([
        run("gha:1", D1, 8, 1.0), run("gha:1", D2, 8, 3.0),  # the line's first point over two days
        run("gha:2", D3, 8, 5.0),
        run("gha:3", d4, 8, 7.0), run("gha:3", d4, 16, 20.0), run("gha:3", d5, 16, 30.0),  # the third, over two
        run("gha:3", d5, 8, 9.0)], schema=runs.schema)
    got = line_series(table, ["tput_per_gpu"])
    assert [(s.series_id, s.dates, s.sweeps, s.values, s.repeat_n, s.links) for s in got] == [
        # conc 16 only on gha:3: its two runs one group, mean 25
        ("A|conc=16", [d4], ["gha:3"], [25.0], [2], ["gha:3-20.json"]),
        # conc 8: (1 + 3) / 2, 5, (7 + 9) / 2
        ("A|conc=8", [D1, D3, d4], ["gha:1", "gha:2", "gha:3"], [2.0, 5.0, 8.0], [2, 1, 2],
         ["gha:1-1.json", "gha:2-5.json", "gha:3-7.json"])]


def test_line_series_of_a_single_run():
    """line_series_by_metric: one dated run is one series of one point (its sd NaN, its link its URL)."""
    runs, a, _ = _line_runs()
    [[one]] = list(line_series_by_metric(runs.slice(1, 1), ["tput_per_gpu"]))  # r2
    assert _plain(one) == ("line", "A|conc=8", {**a, "line_id": "A", "conc": 8, "price_book": None,
                                                "target_intvty": None}, "tput_per_gpu", [D1], ["gha:10"], [110.0],
                           [None], [1], ["https://x/10b"])


# --- the webhook ------------------------------------------------------------------------------------------------------

class _Hook(BaseHTTPRequestHandler):
    received: list = []
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    """A real HTTP server on 127.0.0.1 (a free port) in a thread: (url, handler class with ``received``)."""
    handler = type("Hook", (_Hook,), {"received": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    server.shutdown()
    server.server_close()


def test_post_json_reaches_the_server_and_a_refusal_raises(webhook):
    url, hook = webhook
    assert post_json(url, {"text": "hello"}) == 200
    assert hook.received == [("application/json", {"text": "hello"})]
    hook.status = 500
    with pytest.raises(WebhookError, match="answered HTTP 500"):
        post_json(url, {"text": "again"})
    with pytest.raises(WebhookError, match="must start with http"):
        post_json("file:///etc/passwd", {})


# --- the whole pipeline on a history of real rows -----------------------------------------------------------------------

EXPORT = "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
# four real lines of the export (DeepSeek-R1 1024/1024, SGLang FP8, TP8), five concurrencies each
LINES = [("mi355x", "2026-05-03"), ("mi325x", "2026-02-27"), ("h200", "2026-03-25"), ("mi300x", "2026-02-27")]
STEPPED_HW = "h200"
NIGHTS = [dt.date(2026, 7, 1) + dt.timedelta(days=i) for i in range(10)]
STEP_NIGHT = 6  # NIGHTS[6] = 2026-07-07: the first bad night
THROUGHPUTS = ("tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu")


def write_history(real_logs: Path, folder: Path, step: float | None) -> dict:
    """One export file per night holding the chosen lines' real rows, each night a workflow run of its own, every
    throughput multiplied by exp(N(0, 1 %)) run-to-run noise (seeded); with ``step``, the h200 line's throughputs
    are multiplied by (1 + step) from ``STEP_NIGHT`` on. Returns the h200 rows' tok/s/GPU per (night, conc)."""
    rows = json.loads((real_logs / EXPORT).read_text(encoding="utf-8"))
    chosen = [r for r in rows if (r["hardware"], r["date"]) in LINES and r["framework"] == "sglang"
              and r["precision"] == "fp8" and r["isl"] == 1024 and r["osl"] == 1024 and r["decode_tp"] == 8]
    assert len(chosen) == 20
    rng = np.random.default_rng(38)
    folder.mkdir()
    stepped = {}
    for i, night in enumerate(NIGHTS):
        out = []
        for row in chosen:
            copy = json.loads(json.dumps(row))
            copy["date"] = night.isoformat()
            copy["run_url"] = f"https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{9000 + i}/attempts/1"
            factor = float(np.exp(rng.normal(0.0, 0.01)))
            if step is not None and row["hardware"] == STEPPED_HW and i >= STEP_NIGHT:
                factor *= 1 + step
            for key in THROUGHPUTS:
                copy["metrics"][key] *= factor
            if row["hardware"] == STEPPED_HW:
                stepped[(night, row["conc"])] = copy["metrics"]["tput_per_gpu"]
            out.append(copy)
        (folder / f"api_benchmarks_{night}.json").write_text(json.dumps(out), encoding="utf-8")
    return stepped


def _check(run, name):
    return next(e.event_specific_data for e in run.result.all_events
                if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.check_name == name)


def _cli(*argv) -> str:
    from pipeline.__main__ import main

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(["regressions", *argv]) == 0
    return buffer.getvalue()


@pytest.mark.long
def test_one_injected_step_on_real_rows_is_found_announced_once_and_shown(real_logs, tmp_path, run_pipeline,
                                                                        webhook, monkeypatch):
    url, hook = webhook
    monkeypatch.setenv("PIPELINE_REGRESSION_WEBHOOK", url)
    stepped = write_history(real_logs, tmp_path / "raw", step=-0.15)
    run = run_pipeline(tmp_path / "raw")
    assert run.result.success
    rows = run.mart("regressions").to_pylist()
    first_bad = NIGHTS[STEP_NIGHT]

    # exactly the stepped line: tok/s/GPU at each of its five concurrencies, dated the step's night
    lines = [r for r in rows if r["series_kind"] == "line"]
    assert sorted((r["hw"], r["conc"], r["metric"], r["direction"], r["first_bad_date"], r["status"]) for r in lines) \
        == [(STEPPED_HW, c, "tput_per_gpu", "regression", first_bad, "new") for c in (4, 8, 16, 32, 64)]
    for r in lines:  # the means are the input's own numbers, averaged by hand
        before = [stepped[(n, r["conc"])] for n in NIGHTS[:STEP_NIGHT]]
        after = [stepped[(n, r["conc"])] for n in NIGHTS[STEP_NIGHT:]]
        assert r["mean_before"] == pytest.approx(np.mean(before), rel=1e-9)
        assert r["mean_after"] == pytest.approx(np.mean(after), rel=1e-9)
        assert -17 < r["magnitude_pct"] < -13
        assert r["last_good_run"].endswith(f"/runs/{9000 + STEP_NIGHT - 1}/attempts/1")
        assert r["first_bad_run"].endswith(f"/runs/{9000 + STEP_NIGHT}/attempts/1")
        assert r["after_sweeps"][0] == f"gha:{9000 + STEP_NIGHT}"
    # the h200 side's frontier (the only line of its group) moves with it; no other group, no other metric
    assert {(r["hw"], r["metric"], r["first_bad_date"]) for r in rows if r["series_kind"] == "frontier"} <= {
        (STEPPED_HW, m, first_bad) for m in ("tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw")}
    assert {r["hw"] for r in rows} == {STEPPED_HW}
    assert all(r["notified_at"] is not None for r in rows if r["direction"] == "regression")

    # the check warns and names each new one
    check = _check(run, "no_new_regressions")
    assert not check.passed and check.severity.value == "WARN"
    table = check.metadata["regressions"].value
    assert table.count("| new |") == sum(r["direction"] == "regression" for r in rows)
    assert f"conc=64 | tok/s/GPU |" in table and str(first_bad) in table and "/runs/9006/attempts/1" in table

    # one webhook message with every new regression in it
    assert len(hook.received) == 1
    content_type, message = hook.received[0]
    assert content_type == "application/json"
    assert message["text"].count("\n•") == sum(r["direction"] == "regression" for r in rows)
    assert f"first bad {first_bad}" in message["text"] and STEPPED_HW in message["text"]

    # the index lists them; the CLI prints them with their numbers
    index = (run.out_dir / "report" / "index.html").read_text(encoding="utf-8")
    assert "id='regressions'" in index and "dsr1|1024/1024|h200|sglang|fp8" in index
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(run.out_dir))
    printed = _cli("--metric", "tput_per_gpu")
    conc64 = next(r for r in lines if r["conc"] == 64)
    assert f"{conc64['mean_before']:,.0f} → {conc64['mean_after']:,.0f} ({conc64['magnitude_pct']:+.1f} %)" in printed
    assert printed.count(f"{first_bad}  new") == sum(r["metric"] == "tput_per_gpu" for r in rows
                                                      if r["direction"] == "regression")
    assert "no open regressions since" in _cli("--since", (first_bad + dt.timedelta(days=1)).isoformat())
    assert "no open regressions" in _cli("--metric", "median_tpot_s")

    # the next run finds the same regressions: ongoing, not announced again, the check passes
    again = run_pipeline(tmp_path / "raw")
    assert again.result.success
    rerun = again.mart("regressions").to_pylist()
    assert sorted((r["regression_id"], r["notified_at"]) for r in rerun) == sorted(
        (r["regression_id"], r["notified_at"]) for r in rows)
    assert {r["status"] for r in rerun} == {"ongoing"}
    assert len(hook.received) == 1
    assert _check(again, "no_new_regressions").passed


def test_the_same_history_without_the_step_flags_nothing(real_logs, tmp_path, run_pipeline, webhook, monkeypatch):
    url, hook = webhook
    monkeypatch.setenv("PIPELINE_REGRESSION_WEBHOOK", url)
    write_history(real_logs, tmp_path / "raw", step=None)
    run = run_pipeline(tmp_path / "raw")
    assert run.result.success
    assert run.mart("regressions").num_rows == 0
    assert pq.read_schema(run.out_dir / "regressions.parquet").names == run.mart("regressions").column_names
    assert _check(run, "no_new_regressions").passed
    assert hook.received == []
    assert "id='regressions'" not in (run.out_dir / "report" / "index.html").read_text(encoding="utf-8")


def test_without_a_webhook_nothing_is_sent_and_the_check_still_names_them(real_logs, tmp_path, run_pipeline,
                                                                         monkeypatch):
    monkeypatch.delenv("PIPELINE_REGRESSION_WEBHOOK", raising=False)
    write_history(real_logs, tmp_path / "raw", step=-0.15)
    run = run_pipeline(tmp_path / "raw")
    rows = run.mart("regressions").to_pylist()
    assert rows and all(r["notified_at"] is None for r in rows)
    assert not _check(run, "no_new_regressions").passed


# --- accuracy, measured (benchmarks/regressions.py; not timed) ---------------------------------------------------------

@pytest.mark.long(1)
def test_accuracy_targets_at_the_measured_noise():
    """At the CV measured on the real history (3 %): ≥ 95 % recall at −10 % and −20 %, ≤ 1 false alarm per 100
    series × 60 nights without a step; the HUD rule (0.8 × the median of 3 nights) misses most −10 % steps."""
    steps = evaluate(series=150, steps=(-0.10, -0.20), seed=2026)
    for step in (-0.10, -0.20):
        out = steps[("changepoint", step)]
        assert out.found / out.series >= 0.95, step
        assert np.median(out.nights) <= 4  # announced within days, not weeks
    hud = steps[("hud", -0.10)]
    assert hud.found / hud.series < 0.5
    none = evaluate(series=400, steps=(0.0,), seed=2027)[("changepoint", 0.0)]
    assert 100 * none.false_alarms / none.series <= 1.0
