"""Value tests for the rule modules: each expectation is hand-computed (the arithmetic is in the
comment) or comes from an independent implementation written here, never from the code under test. Each test
names the mutant it is there to kill; README "Tests" gives the mutation command and scores."""

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pytest
from rule_reference import every_rule_on_every_run, good_run

from pipeline.comparisons.band import band_phrase, default_targets, interactivity_band
from pipeline.comparisons.compare import _bracket, cell_basis, cell_note, compare, headline, sentences
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import enumerate_comparisons
from pipeline.frontiers.spline import interpolate, steffen_tangents
from pipeline.ingest.parsers.base import (
    FieldError,
    integer,
    interactivity,
    interactivity_block,
    latency_block,
    number,
    require,
)
from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate.rules import _unit_mismatch, check_run, rules, validate_table

# --- Steffen / d3.curveMonotoneX, written again as d3 writes it: one point at a time, plain floats ----------


def _sign(v: float) -> float:
    return -1.0 if v < 0 else 1.0


def _d3_tangents(x: list[float], y: list[float]) -> list[float]:
    """d3's slope3 at interior points, slope2 at the ends (first end first), as scalar Python."""
    n = len(x)
    h = [x[i + 1] - x[i] for i in range(n - 1)]
    s = [(y[i + 1] - y[i]) / h[i] for i in range(n - 1)]
    m = [0.0] * n
    for i in range(1, n - 1):
        h0, h1, s0, s1 = h[i - 1], h[i], s[i - 1], s[i]
        p = (s0 * h1 + s1 * h0) / (h0 + h1)
        m[i] = (_sign(s0) + _sign(s1)) * min(abs(s0), abs(s1), 0.5 * abs(p))
    m[0] = (3 * s[0] - m[1]) / 2
    m[n - 1] = (3 * s[n - 2] - m[n - 2]) / 2
    return m


def _hermite(x: list[float], y: list[float], m: list[float], t: float) -> float:
    """Cubic Hermite between the two points around t, with the textbook basis functions."""
    i = max(j for j in range(len(x) - 1) if x[j] <= t)
    h = x[i + 1] - x[i]
    u = (t - x[i]) / h
    h00, h10 = 2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u
    h01, h11 = -2 * u**3 + 3 * u**2, u**3 - u**2
    return h00 * y[i] + h10 * h * m[i] + h01 * y[i + 1] + h11 * h * m[i + 1]


def test_steffen_four_uneven_points_by_hand():
    # x 0,1,4,6; y 10,8,3,2 (a frontier's shape: y falls, slopes flatten). h = 1,3,2; s = -2, -5/3, -1/2.
    # m1: p = (s0·h1 + s1·h0)/(h0+h1) = (-6 - 5/3)/4 = -23/12; ½|p| = 23/24 < 5/3 → m1 = -2·23/24 = -23/12
    #     (with h0, h1 swapped p = (-2 - 5)/4 = -7/4 → -7/4: a different value)
    # m2: p = (-5/3·2 + -1/2·3)/5 = (-10/3 - 3/2)/5 = -29/30; ½|p| = 29/60 < 1/2 → m2 = -29/30
    # m0 = (3·-2 - m1)/2 = (-6 + 23/12)/2 = -49/24; m3 = (3·-1/2 - m2)/2 = (-3/2 + 29/30)/2 = -4/15
    #     (m3 from m1, the wrong neighbour: (-3/2 + 23/12)/2 = 5/24)
    np.testing.assert_allclose(steffen_tangents([0, 1, 4, 6], [10, 8, 3, 2]),
                               [-49 / 24, -23 / 12, -29 / 30, -4 / 15], rtol=1e-13)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_steffen_uneven_frontiers_match_an_independent_implementation(seed):
    rng = np.random.default_rng(seed)
    n = 4 + seed  # 5, 6, 7 points
    x = np.cumsum(rng.uniform(0.5, 20.0, n)).tolist()  # unevenly spaced
    y = np.sort(rng.uniform(100.0, 3000.0, n))[::-1].tolist()  # decreasing, as a frontier
    y[2] = y[1]  # a flat stretch: sgn(0) = +1, slope 0
    expected = _d3_tangents(x, y)
    np.testing.assert_allclose(steffen_tangents(x, y), expected, rtol=1e-12, atol=1e-12)
    # and the spline through them, between every pair of points
    targets = [x[i] + f * (x[i + 1] - x[i]) for i in range(n - 1) for f in (0.2, 0.5, 0.9)]
    got = interpolate(x, y, targets, clamp=False)
    np.testing.assert_allclose(got, [_hermite(x, y, expected, t) for t in targets], rtol=1e-12)


def test_steffen_columns_are_independent_curves():
    x = [0, 1, 4, 6, 10]
    a, b = [10, 8, 3, 2, 1.5], [1, 2, 2, 7, 20]
    both = steffen_tangents(x, np.column_stack([a, b]))
    np.testing.assert_allclose(both[:, 0], _d3_tangents(x, a), rtol=1e-13)
    np.testing.assert_allclose(both[:, 1], _d3_tangents(x, b), rtol=1e-13)


def test_steffen_rejects_bad_input():
    with pytest.raises(ValueError, match="^tangents need at least 2 points$"):
        steffen_tangents([1.0], [2.0])
    with pytest.raises(ValueError, match="^x must be strictly increasing$"):
        steffen_tangents([0, 1, 1], [3, 2, 1])


def test_float32_columns_are_computed_in_float64():
    # a float32 column (an Arrow float32 frontier) gives the tangents and values of the same numbers as float64
    x, y = [0.1, 1.3, 4.7, 6.2, 9.9], [1000.3, 812.7, 301.1, 250.9, 20.3]
    x32, y32 = np.array(x, dtype=np.float32), np.array(y, dtype=np.float32)
    x64, y64 = x32.astype(np.float64).tolist(), y32.astype(np.float64).tolist()
    tangents = steffen_tangents(x32, y32)
    assert tangents.dtype == np.float64
    np.testing.assert_allclose(tangents, _d3_tangents(x64, y64), rtol=1e-14)
    targets = np.array([0.7, 3.3, 8.1], dtype=np.float32)
    got = interpolate(x32, y32, targets, clamp=True)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [_hermite(x64, y64, _d3_tangents(x64, y64), float(t)) for t in targets],
                               rtol=1e-14)


def test_clamp_takes_each_metrics_own_end_value_exactly():
    # x 125, 142; tok/s/GPU 1886 → 420 and a cost 1.25 → 7.75. Evaluated at x = 142 the cubic lands a rounding
    # error past each metric's end (419.9999999999997 and 7.750000000000001): the clamp into each metric's own
    # [min, max] returns the measured values exactly (clamping into the range of all metrics together would not)
    out = interpolate([125.0, 142.0], np.column_stack([[1886.0, 420.0], [1.25, 7.75]]), [142.0, 300.0], clamp=True)
    assert out.tolist() == [[420.0, 7.75], [420.0, 7.75]]
    assert interpolate([125.0, 142.0], [1886.0, 420.0], [142.0], clamp=True).tolist() == [420.0]


def test_single_point_frontier_with_several_metrics():
    # integer inputs give float output, as every other frontier does
    assert interpolate([25], [400], [10, 25], clamp=True).dtype == np.float64
    assert interpolate([25], [[400, 2]], [10], clamp=True).dtype == np.float64
    out = interpolate([25.0], np.array([[400.0, 3.5, 64.0]]), [10.0, 25.0, 90.0], clamp=True)
    assert out.tolist() == [[400.0, 3.5, 64.0]] * 3
    trend = interpolate([25.0], np.array([[400.0, 3.5]]), [10.0, 25.0], clamp=False)
    assert np.isnan(trend[0]).all() and trend[1].tolist() == [400.0, 3.5]


def test_interpolation_clamps_each_metric_to_its_own_range():
    # two metrics; the targets beyond both ends take each metric's own end value (clamped x), never extrapolated
    x = [10.0, 20.0, 40.0]
    v = np.column_stack([[900.0, 700.0, 100.0], [1.0, 2.0, 9.0]])
    out = interpolate(x, v, [0.0, 10.0, 40.0, 55.0], clamp=True)
    np.testing.assert_allclose(out, [[900, 1], [900, 1], [100, 9], [100, 9]], rtol=1e-12)
    trend = interpolate(x, v, [9.99, 10.0, 40.0, 40.01], clamp=False)
    assert np.isnan(trend[0]).all() and np.isnan(trend[3]).all()
    np.testing.assert_allclose(trend[1:3], [[900, 1], [100, 9]], rtol=1e-12)
    with pytest.raises(ValueError, match="bad frontier"):
        interpolate([], [], [1.0], clamp=True)
    with pytest.raises(ValueError, match="bad frontier"):
        interpolate([1.0, 2.0], [1.0], [1.0], clamp=True)


# --- the band and its targets ----------------------------------------------------------------------------------


def test_band_quarter_points_on_half_round_up():
    # lo 10, hi 12: 10.5, 11, 11.5 → half up 11, 11, 12 (banker's would give 10, 11, 12)
    assert default_targets(10, 12) == [11, 11, 12]
    # lo 1, hi 3: 1.5, 2, 2.5 → 2, 2, 3 (banker's: 2, 2, 2)
    assert default_targets(1, 3) == [2, 2, 3]


def test_band_uses_each_sides_extremes():
    # a = [30, 5, 20] (min 5, max 30), b = [25, 8, 12] → overlap [8, 25]
    assert interactivity_band([30, 5, 20], [25, 8, 12]) == (8.0, 25.0, False)
    # disjoint: union of [5, 6] and [7, 9]
    assert interactivity_band([6, 5], [9, 7]) == (5.0, 9.0, True)
    with pytest.raises(ValueError):
        interactivity_band([], [1.0])
    with pytest.raises(ValueError):
        interactivity_band([1.0], [])


def test_band_phrase_at_the_thirds():
    # displayed band 10–40: u = (t − 10)/30; t = 20 is u = ⅓ exactly → "around the middle" (not < ⅓);
    # t = 30 is u = ⅔ → "around the middle" (not > ⅔)
    assert band_phrase(19.9, 10, 40) == "near the low end"
    assert band_phrase(20, 10, 40) == "around the middle"
    assert band_phrase(30, 10, 40) == "around the middle"
    assert band_phrase(30.1, 10, 40) == "toward the upper edge"
    # phrased on the displayed band ceil(9.2)=10 – floor(40.7)=40, not on 9.2–40.7: t = 19.95 is u < ⅓ on
    # the displayed band, u = 0.342 > ⅓ on the raw one
    assert band_phrase(19.95, 9.2, 40.7) == "near the low end"
    # a displayed band of one integer (10.2–11.0 shows as 11–11): u = ½ whatever the target
    assert band_phrase(99, 10.2, 11.0) == "around the middle"


# --- comparisons: band from all runs, targets from the unrounded band -------------------------------------------

H = 1.48  # mi355x hyperscaler $/GPU-h


def _run(i, spec, x, y, conc):
    cost = H / (y * 3600 / 1e6)
    return {"run_id": f"r{i}", "price_book": "book", "price_book_version": "v1", "spec_metric_source": None,
            "measured_tok_s_per_mw": None, "source_file": f"f{i}", "model": "dsr1", "isl": 1024, "osl": 1024,
            "hw": "mi355x", "precision": "fp4", "spec_decoding": spec, "framework": "sglang", "conc": conc,
            "median_intvty": x, "x_intvty": x, "benchmark_type": "fixed_seq", "tput_per_gpu": y,
            "output_tput_per_gpu": y / 2, "input_tput_per_gpu": y / 2,
            "cost_per_mtok_hyperscaler": cost, "cost_per_mtok_neocloud": cost, "cost_per_mtok_rental": cost,
            **{f"{d}_cost_per_mtok_{t}": 2 * cost for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")},
            "tok_s_per_mw": y * 1000 / 2.65, "length_off_nominal": False,
            # every run its own line and one undated sweep: nothing superseded, nothing averaged
            "run_date": None, "line_id": f"line{i}", "sweep_id": "undated"}


# MTP: frontier (20.4, 1200), (60, 300); the run (5, 100) is dominated but widens the side's range to 5.
# Off: frontier (10, 1000), (49.6, 200).
BAND_RUNS = [_run(0, "mtp", 5.0, 100, 256), _run(1, "mtp", 20.4, 1200, 64), _run(2, "mtp", 60.0, 300, 8),
             _run(3, "none", 10.0, 1000, 128), _run(4, "none", 49.6, 200, 4)]


def test_band_from_all_runs_and_targets_from_the_unrounded_band():
    comparison = next(c for c in enumerate_comparisons(BAND_RUNS) if c.kind == "spec_decoding")
    frontiers = frontiers_by_side(build_frontiers(BAND_RUNS, [comparison.a, comparison.b]).to_pylist())
    assert [p["x_intvty"] for p in frontiers[comparison.a.side_id]] == [20.4, 60.0]  # (5, 100) is not on it
    rows = compare(comparison, frontiers)
    # band over all runs: lo = max(5, 10) = 10, hi = min(60, 49.6) = 49.6 (frontier points only: lo = 20.4)
    assert {(r["band_min"], r["band_max"], r["band_is_union"]) for r in rows} == {(10.0, 49.6, False)}
    assert {(r["band_display_min"], r["band_display_max"]) for r in rows} == {(10, 49)}
    # targets: 10 + 39.6·(¼, ½, ¾) = 19.9, 29.8, 39.7 → 20, 30, 40
    # (from the displayed band 10–49: 19.75, 29.5, 39.25 → 20, 30, 39)
    assert [r["target_intvty"] for r in rows if r["side"] == "a"] == [20.0, 30.0, 40.0]
    # target 20 lies below MTP's first frontier point: clamped to 20.4, no measured point below it
    first = next(r for r in rows if r["side"] == "a" and r["target_index"] == 1)
    assert (first["evaluated_intvty"], first["target_clamped"]) == (20.4, True)
    assert (first["bracket_lo_intvty"], first["bracket_hi_intvty"]) == (None, 20.4)
    assert first["tput_per_gpu"] == 1200.0
    assert first["cell_note"] == ("MTP is outside its measured range: its frontier starts at 20.4 tok/s/user, "
                                  "above the 20 tok/s/user target")


# --- sentences: tie threshold and half-up percentages ----------------------------------------------------------


def _cell(cost: float, tput: float) -> dict:
    return {"cost_per_mtok_hyperscaler": cost, "tput_per_gpu": tput}


@pytest.mark.parametrize("cost_b, sentence", [
    (1.0099, "A and B are essentially tied on cost per token"),  # ratio 1.0099 < 1.01
    (1.01, "A is 1% cheaper per token"),  # ratio exactly 1.01 is not a tie
    (1.0101, "A is 1% cheaper per token"),
    (1.02, "A is 2% cheaper per token"),  # a 1.05 threshold would call this a tie
])
def test_cost_tie_threshold_on_both_sides_of_1_01(cost_b, sentence):
    assert sentences("A", "B", _cell(1.0, 500.0), _cell(cost_b, 500.0))["cost_sentence"] == sentence


@pytest.mark.parametrize("tput_a, sentence", [
    (1009.9, "A and B are essentially tied on tok/s/GPU"),
    (1010.0, "A delivers 1% more tok/s/GPU"),
    (1010.1, "A delivers 1% more tok/s/GPU"),
    (1020.0, "A delivers 2% more tok/s/GPU"),
])
def test_throughput_tie_threshold_on_both_sides_of_1_01(tput_a, sentence):
    assert sentences("A", "B", _cell(1.0, tput_a), _cell(1.0, 1000.0))["tput_sentence"] == sentence


def test_sentence_percentages_round_half_up_not_bankers():
    # cost 1.125 vs 1.0: (1.125 − 1)·100 = 12.5 exactly → 13 (banker's: 12); B is the cheaper side
    # tok/s/GPU 1000 vs 1125: 12.5 → 13, B faster; 1.625 vs 1.0 and 1625 vs 1000: 62.5 → 63 (banker's: 62)
    s = sentences("A", "B", _cell(1.125, 1000.0), _cell(1.0, 1125.0))
    assert s == {"cost_sentence": "B is 13% cheaper per token", "tput_sentence": "B delivers 13% more tok/s/GPU"}
    s = sentences("A", "B", _cell(1.625, 1625.0), _cell(1.0, 1000.0), caveat="note")
    assert s == {"cost_sentence": "B is 63% cheaper per token (note)", "tput_sentence": "A delivers 63% more tok/s/GPU (note)"}


@pytest.mark.parametrize("cost_b, sentence", [
    (1.994, "A is 99% cheaper per token"),                          # 99.4 → 99: the dashboard's own sentence
    (1.995, "A is 2.0× cheaper per token (B costs 100% more)"),      # 99.5 → 100: said as a ratio
    (2.2205, "A is 2.2× cheaper per token (B costs 122% more)"),    # a real MI355X MTP vs Off cell
    (5.07, "A is 5.1× cheaper per token (B costs 407% more)"),
])
def test_a_cost_ratio_of_two_or_more_keeps_the_dashboards_n_in_a_sentence_that_reads_right(cost_b, sentence):
    assert sentences("A", "B", _cell(1.0, 500.0), _cell(cost_b, 500.0))["cost_sentence"] == sentence


def test_overlapping_intervals_are_noise_and_apart_ones_are_said():
    a = {**_cell(1.0, 1030.0), "tput_per_gpu_ci_lo": 1000.0, "tput_per_gpu_ci_hi": 1060.0,
         "cost_per_mtok_hyperscaler_ci_lo": 0.97, "cost_per_mtok_hyperscaler_ci_hi": 1.03}
    b = {**_cell(1.03, 1000.0), "tput_per_gpu_ci_lo": 970.0, "tput_per_gpu_ci_hi": 1000.0,  # touches a's: overlap
         "cost_per_mtok_hyperscaler_ci_lo": 1.03, "cost_per_mtok_hyperscaler_ci_hi": 1.06}
    said = sentences("A", "B", a, b)
    assert said["tput_sentence"] == "A and B are within run-to-run noise (95 % intervals overlap) on tok/s/GPU"
    assert said["cost_sentence"] == "A and B are within run-to-run noise (95 % intervals overlap) on cost per token"
    b.update(tput_per_gpu_ci_hi=999.0, cost_per_mtok_hyperscaler_ci_lo=1.031)  # apart by a hair: the difference
    said = sentences("A", "B", a, b)
    assert said == {"cost_sentence": "A is 3% cheaper per token", "tput_sentence": "A delivers 3% more tok/s/GPU"}
    # one side without intervals: nothing to judge the difference by, today's sentence
    said = sentences("A", "B", a, _cell(1.03, 1000.0))
    assert said == {"cost_sentence": "A is 3% cheaper per token", "tput_sentence": "A delivers 3% more tok/s/GPU"}


def test_the_copy_kept_of_a_duplicate_stays_on_the_frontier_then_has_counts_then_a_date():
    """``_keep_order``: four copies of one measurement, each better than the next on one criterion only."""
    from pipeline.validate.rules import find_duplicates

    def copy(name, off, completed, dated):
        return {**good_run(0), "source_file": name, "run_id": name, "content_sha256": name,
                "length_off_nominal": off, "completed": completed,
                "run_date": dt.date(2026, 1, 1) if dated else None}
    # sorted by name the reverse of the rule, so the file order cannot be what decides
    runs = [copy("a.json", True, 80, True),     # off its nominal lengths: never the one kept over one on it
            copy("b.json", False, None, True),  # on them, but an agg row without request counts
            copy("c.json", False, 80, False),   # on them, with counts, undated
            copy("d.json", False, 80, True)]    # on them, with counts, dated: kept
    found = find_duplicates(runs)
    assert sorted(found) == [0, 1, 2] and {kept for _, _, kept in found.values()} == {"d.json"}
    assert find_duplicates(runs[:3])[1][2] == "c.json"  # counts before a date
    assert find_duplicates(runs[:2])[0][2] == "b.json"  # the frontier before counts
    assert find_duplicates([copy("e.json", False, 80, True), runs[3]])[0][2] == "d.json"  # a tie: the file order


@pytest.mark.parametrize("lo, hi, sparse, basis", [
    (None, 30.0, False, "clamped"), (30.0, None, False, "clamped"),
    (30.0, 30.0, False, "measured"), (30.0, 30.0, True, "measured"),   # a point is measured whatever the splines
    (30.0, 45.0, False, "interpolated"),                               # 1.5× exactly: not a gap
    (30.0, 45.0000001, False, "interpolated_gap"),                     # just over 1.5×
    (30.0, 40.0, True, "interpolated_gap"),                            # close points whose splines disagree
])
def test_cell_basis_from_the_bracket_itself(lo, hi, sparse, basis):
    cell = {"bracket_lo_intvty": lo, "bracket_hi_intvty": hi, "sparse_frontier": sparse}
    assert cell_basis(cell) == basis
    # a given bracket_ratio is the one used (compare writes it); without it the bracket's own ratio
    if lo is not None and hi is not None and lo != hi:
        assert cell_basis({**cell, "bracket_ratio": 1.0}) == ("interpolated_gap" if sparse else "interpolated")
        assert cell_basis({**cell, "bracket_ratio": 2.0}) == "interpolated_gap"


def test_bracket_gives_its_ratio_and_each_points_repeat_spread():
    x, spreads = [10.0, 20.0, 40.0], [None, 0.04, 0.15]
    assert _bracket(x, 30.0, spreads) == {"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 40.0, "bracket_ratio": 2.0,
                                          "bracket_lo_repeat_spread": 0.04, "bracket_hi_repeat_spread": 0.15}
    assert _bracket(x, 20.0, spreads) == {"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 20.0, "bracket_ratio": 1.0,
                                          "bracket_lo_repeat_spread": 0.04, "bracket_hi_repeat_spread": 0.04}
    assert _bracket(x, 50.0, spreads) == {"bracket_lo_intvty": 40.0, "bracket_hi_intvty": None, "bracket_ratio": None,
                                          "bracket_lo_repeat_spread": 0.15, "bracket_hi_repeat_spread": None}
    assert _bracket(x, 5.0, spreads) == {"bracket_lo_intvty": None, "bracket_hi_intvty": 10.0, "bracket_ratio": None,
                                         "bracket_lo_repeat_spread": None, "bracket_hi_repeat_spread": None}
    assert _bracket(x, float("nan"), spreads) == dict.fromkeys(
        ("bracket_lo_intvty", "bracket_hi_intvty", "bracket_ratio", "bracket_lo_repeat_spread",
         "bracket_hi_repeat_spread"))
    assert _bracket(x, 30.0)["bracket_hi_repeat_spread"] is None  # no spreads given: none


@pytest.mark.parametrize("cell, note", [
    ({"bracket_lo_intvty": 17.8, "bracket_hi_intvty": None},
     "MTP is outside its measured range: its frontier ends at 17.8 tok/s/user, below the 24 tok/s/user target"),
    ({"bracket_lo_intvty": None, "bracket_hi_intvty": 30.04},
     "MTP is outside its measured range: its frontier starts at 30.0 tok/s/user, above the 24 tok/s/user target"),
    ({"bracket_lo_intvty": 20.1, "bracket_hi_intvty": 95.3},
     "MTP's values are interpolated across a gap between 20.1 and 95.3 tok/s/user"),
    ({"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 25.0}, None),
    ({"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 25.0, "bracket_hi_repeat_spread": 0.1},  # 10 %: noise
     None),
    ({"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 25.0, "bracket_lo_repeat_spread": 0.125},
     "MTP's point at 20.0 tok/s/user averages repeats 13% apart in tok/s/GPU"),  # 12.5 rounds half up
    ({"bracket_lo_intvty": 24.0, "bracket_hi_intvty": 24.0, "bracket_lo_repeat_spread": 0.2,
      "bracket_hi_repeat_spread": 0.2},
     "MTP's point at 24.0 tok/s/user averages repeats 20% apart in tok/s/GPU"),  # one point, said once
    ({"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 25.0, "bracket_lo_repeat_spread": 0.05,
      "bracket_hi_repeat_spread": 0.3},  # the lower point is noise, the upper one is said
     "MTP's point at 25.0 tok/s/user averages repeats 30% apart in tok/s/GPU"),
    ({"bracket_lo_intvty": 10.0, "bracket_hi_intvty": 40.0, "bracket_lo_repeat_spread": 0.5,
      "bracket_hi_repeat_spread": 0.3},
     "MTP's values are interpolated across a gap between 10.0 and 40.0 tok/s/user; MTP's point at 10.0 tok/s/user "
     "averages repeats 50% apart in tok/s/GPU; MTP's point at 40.0 tok/s/user averages repeats 30% apart in "
     "tok/s/GPU"),
])
def test_cell_note_says_clamps_gaps_and_disagreeing_repeats(cell, note):
    assert cell_note("MTP", 24.0, {"sparse_frontier": False, **cell}) == note


def test_sentences_at_another_tier_and_without_its_price():
    a = {"cost_per_mtok_rental": 1.0, "tput_per_gpu": 1000.0}
    b = {"cost_per_mtok_rental": 1.2, "tput_per_gpu": 1000.0}  # equal throughput: side a counts as faster
    assert sentences("A", "B", a, b, tier="rental") == {"cost_sentence": "A is 20% cheaper per token at rental prices",
                                                         "tput_sentence": "A and B are essentially tied on tok/s/GPU"}
    assert sentences("A", "B", a, {**b, "cost_per_mtok_rental": 1.005}, tier="rental")["cost_sentence"] == (
        "A and B are essentially tied on cost per token at rental prices")
    assert sentences("A", "B", a, {**b, "cost_per_mtok_rental": 3.0}, tier="rental")["cost_sentence"] == (
        "A is 3.0× cheaper per token at rental prices (B costs 200% more)")
    assert sentences("A", "B", a, {**b, "cost_per_mtok_rental": None}, tier="rental")["cost_sentence"] == (
        "no rental price for one side")
    assert sentences("A", "B", {**a, "tput_per_gpu": 1500.0}, {**b, "tput_per_gpu": 1500.0}, tier="rental")[
        "tput_sentence"] == "A and B are essentially tied on tok/s/GPU"
    assert sentences("A", "B", {"cost_per_mtok_hyperscaler": 1.0, "tput_per_gpu": 900.0},
                     {"cost_per_mtok_hyperscaler": 1.0, "tput_per_gpu": 1000.0})["tput_sentence"] == (
        "B delivers 11% more tok/s/GPU")


def test_validate_table_keeps_the_twin_that_stays_on_the_frontier():
    """A raw result 12 % short of its nominal ISL (a ratio of 1 assumed) and its agg twin without token totals,
    whose latencies imply an OSL of (20 − 0.5) / 0.02 + 1 = 976 (4.7 % off, inside the 25 %): the twin is kept,
    though the raw copy is the dated one with request counts; with a range ratio of 0.8 the raw copy is on
    nominal (900 and 920 vs 0.9 · 1024 = 921.6) and is kept."""
    raw = good_run(0, total_input_tokens=80 * 900, total_output_tokens=80 * 920, completed=80)
    twin = good_run(1, conc=8, completed=None, num_prompts=None, failed=None, run_date=None)
    accepted, rejected = validate_table(pa.Table.from_pylist([raw, twin], schema=RUN_SCHEMA), KNOWN_HW)
    assert accepted["source_file"].to_pylist() == ["f1.json"]
    assert [(q["source_file"], q["reason_code"], q["duplicate_of"]) for q in rejected.to_pylist()] == [
        ("f0.json", "duplicate_run", "r1")]
    stated = dict(raw, random_range_ratio=0.8)
    accepted, rejected = validate_table(pa.Table.from_pylist([stated, twin], schema=RUN_SCHEMA), KNOWN_HW)
    assert accepted["source_file"].to_pylist() == ["f0.json"]
    assert rejected.column("duplicate_of").to_pylist() == ["r0"]


def test_headline_states_the_caveat_once():
    row = {"cost_sentence": "B is 3% cheaper per token (note)", "tput_sentence": "A delivers 3% more tok/s/GPU (note)",
           "sentence_caveat": "note"}
    assert headline(row) == "B is 3% cheaper per token; A delivers 3% more tok/s/GPU (note)"
    assert headline({**row, "sentence_caveat": None}) == (
        "B is 3% cheaper per token (note); A delivers 3% more tok/s/GPU (note)")


# --- validation rules ------------------------------------------------------------------------------------------

KNOWN_HW = load_gpu_reference().column("hw").to_pylist()


def _rules():
    return rules(KNOWN_HW)


def _both_paths(runs):
    """Codes by source file from every rule on every run (the tests' reference) and from ``validate_table`` (must
    agree, and both must accept exactly the runs they do not quarantine)."""
    slow_ok, slow = every_rule_on_every_run(runs, KNOWN_HW)
    fast_ok, fast = validate_table(pa.Table.from_pylist(runs, schema=RUN_SCHEMA), KNOWN_HW)
    slow_codes = {q["source_file"]: q["reason_code"] for q in slow}
    assert slow_codes == dict(zip(fast["source_file"].to_pylist(), fast["reason_code"].to_pylist()))
    accepted = [r["source_file"] for r in slow_ok]
    assert fast_ok["source_file"].to_pylist() == accepted
    assert sorted(accepted + list(slow_codes)) == sorted(r["source_file"] for r in runs)
    return slow_codes


def test_zero_tpot_is_rejected_from_seconds_and_ms_keyed_rows_on_both_paths():
    runs = [good_run(0, median_tpot_s=0.0, latency_unit_in_file="ms"),
            good_run(1, median_tpot_s=0.0, latency_unit_in_file="s"),
            good_run(2, median_tpot_s=-0.0, latency_unit_in_file="s"),
            good_run(3, median_tpot_s=None, latency_unit_in_file="s"),
            good_run(4, latency_unit_in_file="s")]
    assert _both_paths(runs) == {"f0.json": "non_positive:median_tpot_ms", "f1.json": "non_positive:median_tpot_ms",
                                 "f2.json": "non_positive:median_tpot_ms", "f3.json": "missing_field:median_tpot_ms"}


@pytest.mark.parametrize("value, code", [
    (float("-inf"), "non_finite:median_tpot_ms"),  # not non_positive: it is not a number of seconds at all
    (float("inf"), "non_finite:median_tpot_ms"),
    (float("nan"), "non_finite:median_tpot_ms"),
    (-1e-9, "non_positive:median_tpot_ms"),
    (1e-3, None),  # 1 ms/token
])
def test_tpot_sign_and_finiteness(value, code):
    runs = [good_run(0, median_tpot_s=value, median_e2el_s=None)]  # no E2EL: nothing to hold the TPOT against
    assert _both_paths(runs).get("f0.json") == code
    assert (check_run(runs[0], _rules()) or (None,))[0] == code


def test_negative_infinite_throughput_is_non_finite():
    run = good_run(0, total_tput_tok_s=float("-inf"))
    assert check_run(run, _rules())[0] == "non_finite:total_token_throughput"
    # the per-GPU figure stands in for a missing total
    assert check_run(good_run(0, total_tput_tok_s=None, reported_tput_per_gpu=600.0), _rules()) is None
    assert check_run(good_run(0, total_tput_tok_s=None, reported_tput_per_gpu=0.0), _rules())[0] == \
        "non_positive:total_token_throughput"


@pytest.mark.parametrize("unit, tpot, code", [
    # ms keys: below 0.5 ms/token (> 2000 tok/s/user) is impossible; exactly 0.5 ms is allowed
    ("ms", 0.5e-3, None),
    ("ms", 0.4999e-3, "implausible_value:median_tpot_ms"),
    ("ms", 4e-3, None),  # a limit moved 10× up (5 ms) would reject this
    ("ms", 0.06e-3, "implausible_value:median_tpot_ms"),  # a limit moved 10× down (0.05 ms) would accept this
    # seconds keys: above 5 s/token is impossible; exactly 5 s is allowed
    ("s", 5.0, None),
    ("s", 5.0001, "implausible_value:median_tpot_ms"),
    ("s", 0.6, None),  # a limit moved 10× down (0.5 s) would reject this
    ("s", 40.0, "implausible_value:median_tpot_ms"),  # 10× up (50 s) would accept this
])
def test_plausibility_limits_at_their_boundaries(unit, tpot, code):
    # E2EL = TTFT 0.5 s + TPOT × (OSL 1024 − 1): above TTFT and consistent with the TPOT whatever it is (the range
    # decides, not inconsistent:e2el); no duration → no Little's-law evidence
    runs = [good_run(0, median_tpot_s=tpot, latency_unit_in_file=unit, median_e2el_s=0.5 + tpot * 1023,
                      mean_e2el_s=None)]
    assert _both_paths(runs).get("f0.json") == code


def test_unit_mismatch_confirmed_by_littles_law_with_the_numbers_in_the_detail():
    # ms keys holding seconds: TPOT 0.02 "ms", mean E2EL 20 "ms" → read as 0.02e-3 s and 0.02 s.
    # completed·E2EL/(conc·duration) = 100·0.02/(10·200) = 0.001 as read, 1.0 if the file meant s → unit_mismatch
    run = good_run(0, median_tpot_s=0.02e-3, latency_unit_in_file="ms", mean_e2el_s=0.02, median_e2el_s=0.02,
                    median_ttft_s=0.001, completed=100, num_prompts=100, conc=10, duration_s=200.0)
    code, detail = check_run(run, _rules())
    assert code == "unit_mismatch"  # the detail names every failing rule, the first one first
    assert detail.startswith("unit_mismatch: median TPOT 0.02 ms as read from 'ms' keys; completed×E2EL/(conc×duration) "
                             "= 0.001 as read, 1 if the file meant s; ")
    # seconds keys holding ms: TPOT 20 "s", E2EL 20000 "s": 100·20000/(10·200) = 1000 as read, 1 as ms
    run = good_run(0, median_tpot_s=20.0, latency_unit_in_file="s", mean_e2el_s=20000.0, median_e2el_s=20000.0,
                    completed=100, num_prompts=100, conc=10, duration_s=200.0)
    code, detail = check_run(run, _rules())
    assert code == "unit_mismatch" and detail.startswith(
        "unit_mismatch: median TPOT 2e+04 ms as read from 's' keys; completed×E2EL/(conc×duration) = 1e+03 as "
        "read, 1 if the file meant ms; ")
    # the evidence says the unit was right (ratio 1 as read): the impossible TPOT stays implausible
    run = good_run(0, median_tpot_s=0.02e-3, latency_unit_in_file="ms", mean_e2el_s=20.0, median_e2el_s=20.0,
                    completed=100, num_prompts=100, conc=10, duration_s=200.0)
    assert check_run(run, _rules())[0] == "implausible_value:median_tpot_ms"


def test_unit_mismatch_from_per_gpu_output_rate():
    # per-GPU row, no totals: (out/GPU · GPUs / conc)/(OSL/E2EL); GPUs = tp·pp·pcp = 2·2·2 = 8,
    # out/GPU 100 → 800 tok/s over conc 16 = 50 tok/s/user; OSL 1000 over E2EL 0.02 s (20 "ms") = 50000
    # → 0.001 as read, 1 as seconds
    run = good_run(0, median_tpot_s=0.02e-3, latency_unit_in_file="ms", mean_e2el_s=0.02, median_e2el_s=0.02,
                    median_ttft_s=0.001, completed=None, num_prompts=None, duration_s=None, conc=16, osl=1000,
                    tp=2, pp=2, pcp=2, reported_output_tput_per_gpu=100.0)
    code, detail = check_run(run, _rules())
    assert code == "unit_mismatch" and detail.startswith(
        "unit_mismatch: median TPOT 0.02 ms as read from 'ms' keys; (output tok/s per user)/(OSL/E2EL) = 0.001 as "
        "read, 1 if the file meant s; ")
    # pp and pcp absent count as 1: GPUs 2 → 12.5 tok/s/user → 0.00025 as read, 0.25 as seconds
    run.update(pp=None, pcp=None)
    assert "= 0.00025 as read, 0.25 if the file meant s;" in check_run(run, _rules())[1]
    # disaggregated rows do not use this evidence (their GPUs are split by role)
    run.update(disagg=True, num_prefill_gpu=1, num_decode_gpu=1)
    assert check_run(run, _rules())[0] == "implausible_value:median_tpot_ms"


# _unit_mismatch called with the range [LOW, HIGH] = [5e-4, 5] s/token given here, not read from plausibility.csv
_LOW, _HIGH = 5e-4, 5.0
_IMPLAUSIBLE_MS = ("implausible_value:median_tpot_ms",
                   "median TPOT 0.01 ms as read from 'ms' keys is outside what any LLM server does")


@pytest.mark.parametrize("run", [
    {"median_tpot_s": None, "latency_unit_in_file": "ms"},
    {"median_tpot_s": math.nan, "latency_unit_in_file": "ms"},
    {"median_tpot_s": -math.inf, "latency_unit_in_file": "ms"},
    {"median_tpot_s": math.inf, "latency_unit_in_file": "s"},
    {"median_tpot_s": 0.0, "latency_unit_in_file": "ms"},
    {"median_tpot_s": -1.0, "latency_unit_in_file": "ms"},
    {"median_tpot_s": 1e-5, "latency_unit_in_file": None},
    {"median_tpot_s": 1e-5, "latency_unit_in_file": "us"},
    {"median_tpot_s": 5e-4, "latency_unit_in_file": "ms"},   # at the low limit: not below it
    {"median_tpot_s": 5.0, "latency_unit_in_file": "s"},     # at the high limit: not above it
    {"median_tpot_s": 1e-5, "latency_unit_in_file": "s"},    # too fast, but a seconds key cannot hold ms there
    {"median_tpot_s": 10.0, "latency_unit_in_file": "ms"},   # too slow, but an ms key cannot hold seconds there
])
def test_unit_mismatch_ignores_what_it_cannot_judge(run):
    """No finding for a TPOT absent, non-finite, ≤ 0, of no known unit or not beyond its unit's side's limit."""
    evidence = dict(mean_e2el_s=0.02, completed=100, conc=10, duration_s=200.0)  # ratio 0.001: says "seconds"
    assert _unit_mismatch({**run, **evidence}, _LOW, _HIGH) is None


def test_unit_mismatch_without_evidence_is_an_implausible_tpot():
    """An impossible TPOT with no Little's-law inputs is ``implausible_value:median_tpot_ms``, the TPOT in ms."""
    # 1e-5 s = 0.01 ms
    assert _unit_mismatch({"median_tpot_s": 1e-5, "latency_unit_in_file": "ms"}, _LOW, _HIGH) == _IMPLAUSIBLE_MS


def test_unit_mismatch_reads_mean_e2el_before_median():
    """The Little's-law ratio uses mean E2EL, and median E2EL when the mean is absent or zero."""
    run = {"median_tpot_s": 1e-5, "latency_unit_in_file": "ms", "completed": 100, "conc": 10, "duration_s": 200.0,
           "mean_e2el_s": 0.04, "median_e2el_s": 0.02}
    # 100·0.04/(10·200) = 0.002 as read, ×1e3 = 2 if the file meant s
    assert _unit_mismatch(run, _LOW, _HIGH) == ("unit_mismatch", (
        "median TPOT 0.01 ms as read from 'ms' keys; completed×E2EL/(conc×duration) = 0.002 as read, "
        "2 if the file meant s"))
    # 100·0.02/(10·200) = 0.001 as read, 1 as seconds
    for mean in (None, 0.0):
        assert _unit_mismatch({**run, "mean_e2el_s": mean}, _LOW, _HIGH) == ("unit_mismatch", (
            "median TPOT 0.01 ms as read from 'ms' keys; completed×E2EL/(conc×duration) = 0.001 as read, "
            "1 if the file meant s"))


@pytest.mark.parametrize("missing", [
    {"mean_e2el_s": None}, {"completed": None}, {"completed": 0}, {"duration_s": math.inf}, {"duration_s": -200.0},
    {"conc": None}, {"conc": 0}])
def test_unit_mismatch_needs_every_littles_law_input(missing):
    """Little's-law evidence needs E2EL, completed, duration and conc finite and > 0; else the TPOT is implausible."""
    run = {"median_tpot_s": 1e-5, "latency_unit_in_file": "ms", "completed": 100, "conc": 10, "duration_s": 200.0,
           "mean_e2el_s": 0.02, **missing}
    assert _unit_mismatch(run, _LOW, _HIGH) == _IMPLAUSIBLE_MS


@pytest.mark.parametrize("missing", [
    {"mean_e2el_s": None}, {"conc": None}, {"osl": None}, {"osl": 0}, {"reported_output_tput_per_gpu": None},
    {"reported_output_tput_per_gpu": -100.0}, {"tp": None}, {"disagg": True}])
def test_unit_mismatch_per_gpu_evidence_needs_every_input(missing):
    """Per-GPU evidence needs E2EL, conc, OSL, output tok/s per GPU and tp finite and > 0, on an aggregated row."""
    run = {"median_tpot_s": 1e-5, "latency_unit_in_file": "ms", "conc": 16, "osl": 1000, "tp": 8,
           "reported_output_tput_per_gpu": 100.0, "mean_e2el_s": 0.02, "disagg": False}
    # all present: (100·8/16)/(1000/0.02) = 50/50000 = 0.001 as read, 1 as seconds
    assert _unit_mismatch(run, _LOW, _HIGH) == ("unit_mismatch", (
        "median TPOT 0.01 ms as read from 'ms' keys; (output tok/s per user)/(OSL/E2EL) = 0.001 as read, "
        "1 if the file meant s"))
    assert _unit_mismatch({**run, **missing}, _LOW, _HIGH) == _IMPLAUSIBLE_MS


def test_unit_mismatch_ratio_that_underflows_to_zero_is_no_evidence():
    """A Little's-law ratio that is 0 in floats (no logarithm) leaves the TPOT implausible rather than failing."""
    # 1·5e-324/(1·1e300) underflows to 0.0
    run = {"median_tpot_s": 1e-5, "latency_unit_in_file": "ms", "completed": 1, "conc": 1, "duration_s": 1e300,
           "mean_e2el_s": 5e-324}
    assert _unit_mismatch(run, _LOW, _HIGH) == _IMPLAUSIBLE_MS


def test_unit_mismatch_other_unit_is_a_factor_of_exactly_1000():
    """The ratio "if the file meant s" is the ratio as read times 1000, shown to three significant digits."""
    # completed 1, conc 1, duration 1: the ratio is E2EL = 0.000999; × 1000 = 0.999 (a factor of 1001 would show 1)
    run = {"median_tpot_s": 1e-5, "latency_unit_in_file": "ms", "completed": 1, "conc": 1, "duration_s": 1.0,
           "mean_e2el_s": 0.000999}
    assert _unit_mismatch(run, _LOW, _HIGH) == ("unit_mismatch", (
        "median TPOT 0.01 ms as read from 'ms' keys; completed×E2EL/(conc×duration) = 0.000999 as read, "
        "0.999 if the file meant s"))


@pytest.mark.parametrize("unit, tpot, ratio, shown", [
    ("ms", 1e-5, 0.031622776601683784, "0.01 ms as read from 'ms' keys"),   # 10^-1.5: 1.5 decades from 1 either way
    ("s", 20.0, 31.622776601683785, "2e+04 ms as read from 's' keys"),     # 10^1.5
])
def test_unit_mismatch_tie_keeps_the_files_unit(unit, tpot, ratio, shown):
    """When the ratio as read and as the other unit are equally far from 1 (in decades) the file's unit stands."""
    # completed 1, conc 1, duration 1: the ratio is the E2EL itself; |log10(r)| = |log10(r·10^±3)| = 1.5 in floats
    assert abs(math.log10(ratio)) == abs(math.log10(ratio * (1e3 if unit == "ms" else 1e-3))) == 1.5
    run = {"median_tpot_s": tpot, "latency_unit_in_file": unit, "completed": 1, "conc": 1, "duration_s": 1.0,
           "mean_e2el_s": ratio}
    assert _unit_mismatch(run, _LOW, _HIGH) == ("implausible_value:median_tpot_ms",
                                                 f"median TPOT {shown} is outside what any LLM server does")


@pytest.mark.parametrize("over, detail", [
    ({"completed": 70, "failed": 10}, "failed_requests: 10 of 80 requests failed (12.5%)"),
    ({"completed": 70, "failed": None, "num_prompts": 80}, "failed_requests: completed 70 of num_prompts 80 (12.5% lost)"),
    ({"completed": 0, "failed": 80}, "no_completed_requests: completed=0 (failed=80, num_prompts=80)"),
    ({"completed": 80, "failed": 0, "num_prompts": 80}, None),
    ({"completed": 81, "failed": 0, "num_prompts": 80}, None),
    ({"completed": None, "failed": 0, "num_prompts": 80}, None),
    ({"output_tput_tok_s": 5000.0 * (1 + 1e-10)}, None),  # within the 1e-9 tolerance
    ({"output_tput_tok_s": 5001.0}, "inconsistent:output_throughput: output_throughput 5001.0 > total_token_throughput 5000.0"),
    # the first token after the last: E2EL − TTFT = −0.001 s is also −0.001 / (0.02 × 1023 = 20.46 s) = −4.88759e-05
    # of the decoding time the TPOT gives, below the tolerance's 0
    ({"median_ttft_s": 20.001}, "inconsistent:ttft_ms: median TTFT 20.001 s > median E2EL 20.0 s; inconsistent:e2el: "
     "(median E2EL 20 s − median TTFT 20.001 s) / (median TPOT 20 ms × (OSL 1024 − 1)) = -4.88759e-05, outside "
     "[0, 10]: the decoding time and the TPOT disagree (e2el_decode_ratio, data/reference/plausibility.csv)"),
    ({"median_ttft_s": 20.0}, None),
])
def test_rule_details(over, detail):
    finding = check_run(good_run(0, **over), _rules())
    assert (None if finding is None else finding[1]) == detail


@pytest.mark.parametrize("over, code", [
    # the decode GPUs first; an implied count is named with its value and the keys to state
    ({"disagg": True, "tp": None, "num_prefill_gpu": 1, "num_decode_gpu": 1,
      "metadata_sources": "num_decode_gpu=engine;num_prefill_gpu=engine"}, "missing_metadata:num_decode_gpu"),
    ({"disagg": True, "tp": None, "num_prefill_gpu": 1, "num_decode_gpu": 8,
      "metadata_sources": "num_decode_gpu=sidecar;num_prefill_gpu=engine"}, "missing_metadata:num_prefill_gpu"),
    ({"disagg": True, "tp": None, "num_prefill_gpu": 1, "num_decode_gpu": 8,
      "metadata_sources": "num_decode_gpu=sidecar;num_prefill_gpu=runs.csv"}, None),
    ({"tp": 8, "metadata_sources": "tp=engine"}, "missing_metadata:tp"),
    ({"tp": 8, "pp": 2, "metadata_sources": "tp=file;pp=engine"}, "missing_metadata:pp"),
    ({"tp": 8, "metadata_sources": "tp=file;conc=engine"}, None),  # only GPU-count keys count
    # a per-GPU value the source reported needs no count at all
    ({"tp": 8, "reported_tput_per_gpu": 600.0, "metadata_sources": "tp=engine"}, None),
])
def test_a_count_the_engine_only_implies_is_never_a_denominator(over, code):
    finding = check_run(good_run(0, **over), _rules())
    assert (None if finding is None else finding[0]) == code
    if code is not None and over.get("metadata_sources", "").count("=engine"):
        assert "only implied by the engine output" in finding[1]


@pytest.mark.parametrize("itl_ratio, spec, source, code", [
    (1.0, "none", "spec_decoding=default", None),        # one token per chunk
    (1.49, "none", "spec_decoding=default", None),       # just below the band
    (1.5, "none", "spec_decoding=default", "metadata_conflict:spec_decoding"),   # the band's ends belong to it
    (3.3, "none", "spec_decoding=sidecar", "metadata_conflict:spec_decoding"),
    (5.0, "none", "spec_decoding=file", "metadata_conflict:spec_decoding"),
    (5.01, "none", "spec_decoding=file", None),          # a stream interval, not drafting
    (9.95, "none", "spec_decoding=file", None),
    (2.5, "mtp", "spec_decoding=sidecar", None),         # the method is stated
])
def test_speculative_decoding_the_latencies_show(itl_ratio, spec, source, code):
    tpot = 0.02
    run = good_run(0, spec_decoding=spec, mean_tpot_s=tpot, mean_itl_s=tpot * itl_ratio, metadata_sources=source)
    finding = check_run(run, _rules())
    assert (None if finding is None else finding[0]) == code
    if code:
        assert f"mean ITL / mean TPOT = {itl_ratio:.2f}" in finding[1]
        said = "only the default" if source.endswith("default") else f"comes from {source.split('=')[1]}"
        assert said in finding[1]
    # without means, the medians tell the same
    medians = good_run(0, spec_decoding=spec, median_itl_s=tpot * itl_ratio, metadata_sources=source)
    assert (check_run(medians, _rules()) or (None,))[0] == code


def test_latency_statistics_detail_and_a_reference_without_an_e2el_bound():
    from pipeline.validate.plausibility import Plausibility, Range
    from pipeline.validate.rules import latency_statistics_rule

    e2el = Range("e2el_decode_ratio", "e2el", 0.0, 10.0, "ratio")
    rule = latency_statistics_rule(Plausibility((Range("median_e2el_s", "median_e2el_ms", 0.001, 100.0, "s"),),
                                                {}, {}, {}, e2el, 0.5, 8.0))
    assert rule(good_run(0, p90_tpot_s=0.03, p99_tpot_s=0.025)) == (
        "inconsistent:tpot_percentiles", "p90 TPOT 0.03 s > p99 TPOT 0.025 s")
    assert rule(good_run(0, p99_e2el_s=100.5)) == (
        "implausible:p99_e2el_ms", "p99_e2el_s = 100.5 s is longer than any request may take (100 s, median_e2el_s "
        "in data/reference/plausibility.csv)")
    unbounded = latency_statistics_rule(Plausibility((), {}, {}, {}, e2el, 0.5, 8.0))  # no E2EL row: finiteness alone
    assert unbounded(good_run(0, p99_e2el_s=1e308)) is None
    assert unbounded(good_run(0, std_e2el_s=-1.0))[0] == "implausible:std_e2el_ms"


def test_gpu_count_and_metadata_rules():
    assert check_run(good_run(0, tp=0), _rules())[0] == "missing_metadata:tp"
    assert check_run(good_run(0, tp=None, reported_tput_per_gpu=500.0), _rules()) is None
    disagg = good_run(0, disagg=True, tp=None, num_prefill_gpu=0, num_decode_gpu=None)
    code, detail = check_run(disagg, _rules())
    assert code == "missing_metadata:num_decode_gpu"  # the decode GPUs first: they divide the output throughput
    assert detail.startswith("missing_metadata:num_decode_gpu: GPU count needs num_decode_gpu, num_prefill_gpu")
    assert check_run(good_run(0, disagg=True, tp=None, num_prefill_gpu=2, num_decode_gpu=6), _rules()) is None
    # agentic runs need no ISL/OSL, fixed-sequence runs do
    agentic = good_run(0, benchmark_type="agentic_traces", isl=None, osl=None, e2e_norm_intvty_p90=2.0)
    assert check_run(agentic, _rules()) is None
    assert check_run(good_run(0, isl=None, osl=None), _rules()) == (
        "missing_metadata:isl", "missing_metadata:isl: no value for isl, osl in the file, a <file>.meta.json "
        "sidecar or a runs.csv row")
    assert check_run(good_run(0, hw=None), _rules())[0] == "missing_metadata:hw"
    assert check_run(good_run(0, metadata_conflicts="tp: file=8 sidecar=4"), _rules()) == (
        "metadata_conflict:tp", "metadata_conflict:tp: tp: file=8 sidecar=4")


def test_duplicates_keep_the_first_by_file_then_row():
    a = good_run(0)
    b = good_run(1, conc=8)  # same line, conc and every number as run 0: the same measurement in another file
    c = good_run(2, content_sha256="sha0", conc=99)  # same content as run 0
    d = good_run(3, conc=8, median_tpot_s=0.021)  # same line and conc, another TPOT: a repeat, accepted
    accepted, rejected = every_rule_on_every_run([b, c, d, a], KNOWN_HW)
    assert [r["source_file"] for r in accepted] == ["f3.json", "f0.json"]
    assert [(q["source_file"], q["reason_code"], q["duplicate_of"]) for q in rejected] == [
        ("f1.json", "duplicate_run", a["run_id"]), ("f2.json", "duplicate_run", a["run_id"])]
    assert "same measurement as f0.json row 0 (kept)" in rejected[0]["detail"]
    assert rejected[1]["detail"] == "f2.json row 0: same content as f0.json row 0 (kept)"
    fast_accepted, fast_rejected = validate_table(pa.Table.from_pylist([b, c, d, a], schema=RUN_SCHEMA), KNOWN_HW)
    assert fast_accepted["source_file"].to_pylist() == ["f3.json", "f0.json"]
    assert fast_rejected.to_pylist() == rejected


# --- parsers' unit handling ------------------------------------------------------------------------------------


def test_interactivity_per_unit_and_zero():
    assert interactivity(20.0, "ms") == 50.0  # 1000 / 20 ms
    assert interactivity(0.02, "s") == 1 / 0.02
    assert interactivity(8.0, "ms") == 125.0 and interactivity(8.0, "s") == 0.125
    for unit in ("ms", "s"):
        assert interactivity(0.0, unit) is None and interactivity(0, unit) is None and interactivity(None, unit) is None
    with pytest.raises(ValueError, match="'us'"):
        interactivity(1.0, "us")
    assert interactivity_block({"median_tpot_ms": 20.0, "p90_tpot_ms": 0.0, "mean_tpot_ms": 40}, "{stat}_tpot_ms", "ms") == {
        "mean_intvty": 25.0, "median_intvty": 50.0, "p90_intvty": None, "p99_intvty": None}
    assert interactivity_block({"median_tpot": 0.0, "p99_tpot": 0.5}, "{stat}_tpot", "s") == {
        "mean_intvty": None, "median_intvty": None, "p90_intvty": None, "p99_intvty": 2.0}


def test_latency_block_scales_and_renames():
    doc = {"median_ttft_ms": 250, "p99_e2e_latency_ms": 4000.0, "mean_tpot_ms": None}
    out = latency_block(doc, "{stat}_{metric}_ms", 1e-3, (("e2el", "e2e_latency"),))
    assert out["median_ttft_s"] == 0.25 and out["p99_e2el_s"] == 4.0
    assert out["mean_tpot_s"] is None and out["median_e2el_s"] is None
    assert latency_block({"median_itl": 0.03}, "{stat}_{metric}", 1.0)["median_itl_s"] == 0.03
    with pytest.raises(FieldError) as err:
        latency_block({"median_ttft_ms": "fast"}, "{stat}_{metric}_ms", 1e-3)
    assert err.value.reason_code == "not_a_number:median_ttft_ms"


def test_number_integer_require():
    assert number({"v": 3}, "v") == 3.0 and type(number({"v": 3}, "v")) is float
    assert number({"v": 2.5}, "v") == 2.5 and number({}, "v") is None and number({"v": None}, "v") is None
    assert number({"v": " Infinity "}, "v") == math.inf and number({"v": "-inf"}, "v") == -math.inf
    assert math.isnan(number({"v": "NaN"}, "v"))
    for bad in (True, "12", [1], {"a": 1}):
        with pytest.raises(FieldError) as err:
            number({"v": bad}, "v", label="median_tpot_ms")
        assert err.value.reason_code == "not_a_number:median_tpot_ms"
    assert integer({"n": 4}, "n") == 4 and integer({"n": 4.0}, "n") == 4 and integer({}, "n") is None
    for bad in (True, 4.5, math.inf, "4"):
        with pytest.raises(FieldError) as err:
            integer({"n": bad}, "n")
        assert err.value.reason_code == "not_an_integer:n"
    assert require(0, "k") == 0
    with pytest.raises(FieldError) as err:
        require(None, "median_tpot_ms")
    assert err.value.reason_code == "missing_field:median_tpot_ms"
    assert err.value.detail == "field 'median_tpot_ms': required and absent (or null)"


# one fault per run, through both paths: the table path's screens must flag every run a rule rejects
AGENTIC = {"benchmark_type": "agentic_traces", "isl": None, "osl": None, "median_tpot_s": None,
           "e2e_norm_intvty_p90": 2.0}
SINGLE_FAULTS = [
    ({}, None),
    ({"tp": 0}, "missing_metadata:tp"),
    ({"tp": None}, "missing_metadata:tp"),
    ({"tp": None, "reported_tput_per_gpu": 600.0}, None),  # the source gave per-GPU values itself
    ({"tp": 1}, None),
    ({"disagg": None}, None),  # a null disagg reads as aggregated: tp counts
    ({"disagg": None, "tp": None}, "missing_metadata:tp"),
    ({"disagg": True, "tp": None, "num_prefill_gpu": 2, "num_decode_gpu": 6}, None),
    ({"disagg": True, "tp": 8, "num_prefill_gpu": 0, "num_decode_gpu": 6}, "missing_metadata:num_prefill_gpu"),
    ({"disagg": True, "tp": 8, "num_prefill_gpu": 2, "num_decode_gpu": None}, "missing_metadata:num_decode_gpu"),
    ({"hw": "rtx4090"}, "unknown_hw"),
    ({"hw": None}, "missing_metadata:hw"),
    ({"benchmark_type": None, "median_tpot_s": 0.0}, "non_positive:median_tpot_ms"),  # null type is fixed_seq
    ({"benchmark_type": None, "median_tpot_s": None}, "missing_field:median_tpot_ms"),
    ({"total_tput_tok_s": None, "reported_tput_per_gpu": None}, "missing_field:total_token_throughput"),
    ({"total_tput_tok_s": 0.5, "output_tput_tok_s": 0.25}, None),
    ({"total_tput_tok_s": -3.0}, "non_positive:total_token_throughput"),
    ({"total_tput_tok_s": None, "reported_tput_per_gpu": float("nan")}, "non_finite:total_token_throughput"),
    (AGENTIC, None),  # no TPOT and no ISL/OSL needed
    ({**AGENTIC, "e2e_norm_intvty_p90": 0.0}, "non_positive:p90_e2e_norm_intvty"),
    ({**AGENTIC, "e2e_norm_intvty_p90": None}, "missing_field:p90_e2e_norm_intvty"),
    ({**AGENTIC, "e2e_norm_intvty_p90": float("-inf")}, "non_finite:p90_e2e_norm_intvty"),
    ({"e2e_norm_intvty_p90": 0.0}, None),  # the agentic x-axis is not required of fixed-sequence runs
    ({"median_tpot_s": None, "e2e_norm_intvty_p90": 66.8}, None),  # LLMPerf: placed by its E2E-normalized axis
    ({"median_tpot_s": None, "e2e_norm_intvty_p90": -1.0}, "non_positive:median_tpot_ms"),
    ({"disagg": True, "tp": None, "num_prefill_gpu": 1, "num_decode_gpu": 1,
      "metadata_sources": "num_decode_gpu=engine;num_prefill_gpu=engine"}, "missing_metadata:num_decode_gpu"),
    ({"mean_tpot_s": 0.02, "mean_itl_s": 0.05}, "metadata_conflict:spec_decoding"),  # 2.5 tokens per chunk
    ({"median_itl_s": 0.05}, "metadata_conflict:spec_decoding"),  # no means: the medians (0.05 / 0.02) tell
    ({"mean_tpot_s": 0.02, "mean_itl_s": 0.2}, None),  # a stream interval of 10 tokens
    # secondary statistics: finite, not negative, under a day, percentiles ordered
    ({"p99_itl_s": 1e308}, "implausible:p99_itl_ms"),
    ({"p99_itl_s": 86400.0}, None),  # a day is the longest a request may take: inclusive
    ({"std_ttft_s": -0.001}, "implausible:std_ttft_ms"),
    ({"std_ttft_s": 0.0}, None),
    ({"p90_e2el_s": float("inf")}, "non_finite:p90_e2el_ms"),
    ({"p99_tpot_s": float("nan")}, "non_finite:p99_tpot_ms"),
    ({"p99_tpot_s": 0.019}, "inconsistent:tpot_percentiles"),  # below the median's 0.02
    ({"p99_tpot_s": 0.02 * (1 - 1e-10)}, None),  # rounding
    ({"p90_tpot_s": 0.03, "p99_tpot_s": 0.025}, "inconsistent:tpot_percentiles"),
    ({"p90_ttft_s": 0.9, "p99_ttft_s": 0.7}, "inconsistent:ttft_percentiles"),
    ({"median_ttft_s": 0.5, "p95_ttft_s": 0.4}, "inconsistent:ttft_percentiles"),  # p90 absent: median vs p95
    ({"mean_ttft_s": 5.0, "p99_ttft_s": 1.0}, None),  # a heavy tail can put the mean above p99
    ({"p90_ttft_s": 0.4}, "inconsistent:ttft_percentiles"),  # next to each other: median 0.5 > p90
    ({"median_tpot_s": 0.02 * (1 + 1e-9), "p99_tpot_s": 0.02}, None),  # exactly the rounding allowance
    ({"completed": 79}, "failed_requests"),
    ({"failed": 1}, "failed_requests"),
    ({"metadata_conflicts": "hw: file=h200 sidecar=b200"}, "metadata_conflict:hw"),
    ({"output_tput_tok_s": 6000.0}, "inconsistent:output_throughput"),
    # plausibility without a wildcard: a model model_active_params.csv does not list has no ceiling to be held to
    ({"model": "glm-6"}, "unknown_model_size"),
    # tok/s/user under 4.8 TB/s × 1 GPU / (37B × 0.5 bytes) = 259.46 on one H200 (E2EL kept at TTFT + TPOT × 1023)
    ({"tp": 1, "median_tpot_s": 0.003, "median_e2el_s": 0.5 + 0.003 * 1023}, "implausible:median_intvty"),  # 333
    ({"tp": 1, "median_tpot_s": 0.004, "median_e2el_s": 0.5 + 0.004 * 1023}, None),  # 250
    ({"spec_decoding": "mtp", "spec_accept_length": 8.5}, "implausible:spec_accept_length"),  # more than 8 per step
    ({"spec_decoding": "mtp", "spec_accept_length": 0.9}, "implausible:spec_accept_length"),  # less than the 1 emitted
    # E2EL − TTFT within [0, 10] × TPOT × (OSL − 1), means first: 249.5 / 20.46 = 12.19, 200.1 / 20.46 = 9.78
    ({"mean_e2el_s": 250.0, "mean_ttft_s": 0.5, "mean_tpot_s": 0.02}, "inconsistent:e2el"),
    ({"mean_e2el_s": 200.6, "mean_ttft_s": 0.5, "mean_tpot_s": 0.02}, None),
]


def test_every_single_fault_on_both_paths():
    runs = [good_run(i, **over) for i, (over, _) in enumerate(SINGLE_FAULTS)]
    expected = {f"f{i}.json": code for i, (_, code) in enumerate(SINGLE_FAULTS) if code}
    assert _both_paths(runs) == expected


def test_empty_table_on_the_table_path():
    accepted, rejected = validate_table(RUN_SCHEMA.empty_table(), KNOWN_HW)
    assert accepted.num_rows == 0 and rejected.num_rows == 0


def test_detail_joins_every_failing_rule_and_unknown_hw_names_the_reference():
    code, detail = check_run(good_run(0, hw="rtx4090", completed=0, failed=80), _rules())
    assert code == "no_completed_requests"
    assert detail == ("no_completed_requests: completed=0 (failed=80, num_prompts=80); unknown_hw: hw 'rtx4090' is "
                      f"not in the GPU reference ({', '.join(sorted(KNOWN_HW))})")
    assert {"h200", "b200", "mi355x"} <= set(KNOWN_HW)


def test_same_measurement_names_the_line_and_the_kept_copy():
    a = good_run(0, run_date_partition="2026-01-01")
    b = good_run(1, conc=8, source_row=3, run_date_partition="2026-01-01")
    rejected = validate_table(pa.Table.from_pylist([a, b], schema=RUN_SCHEMA), KNOWN_HW)[1].to_pylist()
    assert [(q["source_file"], q["source_row"], q["reason_code"], q["stage"]) for q in rejected] == [
        ("f1.json", 3, "duplicate_run", "validate")]
    assert rejected[0]["detail"].startswith(
        "f1.json row 3: same measurement as f0.json row 0 (kept): line dsr1|1024/1024|h200|vllm|fp8|spec=none|"
        "tp=8,ep=1,dpa=false|conc=8")


def test_quarantine_table_sorts_ingest_and_rule_rejects_together():
    from pipeline.ingest.schema import QUARANTINE_SCHEMA
    from pipeline.validate.rules import quarantine_table

    def row(file, line, code):
        return {"source_file": file, "source_format": "x", "source_row": line, "reason_code": code, "detail": "d",
                "stage": "s", "run_date_partition": None}
    ingest = pa.Table.from_pylist([row("b.json", 2, "i1"), row("a.json", 0, "i2")], schema=QUARANTINE_SCHEMA)
    rule = pa.Table.from_pylist([row("b.json", 1, "r1"), row("c.json", 0, "r2")], schema=QUARANTINE_SCHEMA)
    out = quarantine_table(ingest, rule)
    assert out.schema.equals(QUARANTINE_SCHEMA)
    assert out.column("reason_code").to_pylist() == ["i2", "r1", "i1", "r2"]


# --- one comparison row, every column by hand ------------------------------------------------------------------

K = H / 0.0036  # $/M tokens at 1 tok/s/GPU: cost = K / tok/s/GPU
# MTP: (30, 1000) is its only frontier point; (20, 500) is dominated but counts for the band and side_runs.
# Off: (10, 1200) and (40, 400), both on the frontier, a wide gap between them.
ROW_RUNS = [_run(0, "mtp", 20.0, 500, 64), _run(1, "mtp", 30.0, 1000, 32),
            _run(2, "none", 10.0, 1200, 64), _run(3, "none", 40.0, 400, 8)]


def _row_comparison():
    comparison = next(c for c in enumerate_comparisons(ROW_RUNS) if c.kind == "spec_decoding")
    return comparison, frontiers_by_side(build_frontiers(ROW_RUNS, [comparison.a, comparison.b]).to_pylist())


def test_comparison_row_every_column_by_hand():
    comparison, frontiers = _row_comparison()
    rows = compare(comparison, frontiers)
    # band: MTP [20, 30] (all its runs), Off [10, 40] → [20, 30]; targets 22.5, 25, 27.5 → 23, 25, 28
    assert [(r["target_index"], r["side"], r["target_intvty"]) for r in rows] == [
        (1, "a", 23.0), (1, "b", 23.0), (2, "a", 25.0), (2, "b", 25.0), (3, "a", 28.0), (3, "b", 28.0)]
    a, b = rows[2], rows[3]
    note_a = "MTP is outside its measured range: its frontier starts at 30.0 tok/s/user, above the 25 tok/s/user target"
    note_b = "Off's values are interpolated across a gap between 10.0 and 40.0 tok/s/user"
    caveat = f"{note_a}; {note_b}"
    # MTP at 25: its single point, clamped to x = 30; every metric that point's own value
    assert a == {
        "comparison_id": comparison.comparison_id, "price_book": "book", "price_book_version": "v1",
        "kind": "spec_decoding", "title": "MI355X FP4: MTP vs Off", "model": "dsr1", "isl": 1024, "osl": 1024,
        "side": "a", "side_label": "MTP", "side_id": comparison.a.side_id, "hw": "mi355x", "precision": "fp4",
        "spec_decoding": "mtp", "framework": comparison.a.framework, "benchmark_type": "fixed_seq",
        "x_intvty_stat": "median_intvty",  # derived: these hand-built runs carry no x_intvty_stat
        "side_runs": 2, "excluded_runs": 0, "frontier_points": 1,
        "band_min": 20.0, "band_max": 30.0, "band_is_union": False, "band_display_min": 20, "band_display_max": 30,
        "target_index": 2, "target_intvty": 25.0, "evaluated_intvty": 30.0, "target_clamped": True,
        "bracket_lo_intvty": None, "bracket_hi_intvty": 30.0,
        "bracket_ratio": None, "bracket_lo_repeat_spread": None, "bracket_hi_repeat_spread": None,  # clamped
        "cell_basis": "clamped",
        "tput_per_gpu": 1000.0, "output_tput_per_gpu": 500.0, "input_tput_per_gpu": 500.0,
        "cost_per_mtok_hyperscaler": H / (1000 * 3600 / 1e6), "cost_per_mtok_neocloud": H / (1000 * 3600 / 1e6),
        "cost_per_mtok_rental": H / (1000 * 3600 / 1e6),
        **{f"{d}_cost_per_mtok_{t}": 2 * H / (1000 * 3600 / 1e6) for d in ("output", "input")
           for t in ("hyperscaler", "neocloud", "rental")},
        "tok_s_per_mw": 1000 * 1000 / 2.65, "measured_tok_s_per_mw": None, "concurrency": 32.0,
        "implied_cost_per_mtok_hyperscaler": pytest.approx(K / 1000, rel=1e-12), "sparse_frontier": False,
        "cell_note": note_a, "measured_power_coverage": 0.0, "cross_engine": False,
        "band_phrase": "around the middle",  # (25 − 20)/(30 − 20) = ½
        # cost K/1000 vs Off's K·0.00182292 (below): 82 % cheaper; 1000 vs 725 tok/s/GPU: 37.9 % → 38 %
        "cost_sentence": f"MTP is 82% cheaper per token ({caveat})",
        "tput_sentence": f"MTP delivers 38% more tok/s/GPU ({caveat})",
        "sentence_caveat": caveat,
        # single runs, no repeats: no interval, nothing to call significant
        "repeat_points": 0, "tput_per_gpu_ci_lo": None, "tput_per_gpu_ci_hi": None, "median_intvty_ci_lo": None,
        "median_intvty_ci_hi": None, "difference_significant": None,
        **{f"cost_per_mtok_{t}_ci_{e}": None for t in ("hyperscaler", "neocloud", "rental") for e in ("lo", "hi")},
    }
    # Off at 25, halfway between 10 and 40 (h = 30): two-point Steffen tangents m0 = 1.5·s, m1 = 0.75·s, and
    # at u = ½ the Hermite value is ½(y0 + y1) + ⅛·h·(m0 − m1) = ½(y0 + y1) + 3.75·0.75·s.
    # tok/s/GPU: s = −800/30 → 800 − 75 = 725. Cost (splined on its own): y K/1200, K/400, s = K/18000
    # → K/600 + 2.8125·K/18000 = K·0.001822916…; implied by 725 tok/s/GPU: K/725; ratio 1.32 > 1.05 → sparse
    assert b["tput_per_gpu"] == pytest.approx(725.0, rel=1e-12)
    assert b["cost_per_mtok_hyperscaler"] == pytest.approx(K / 600 + 2.8125 * K / 18000, rel=1e-12)
    assert b["implied_cost_per_mtok_hyperscaler"] == pytest.approx(K / 725, rel=1e-12)
    assert (b["sparse_frontier"], b["cell_note"], b["frontier_points"], b["side_runs"]) == (True, note_b, 2, 2)
    assert (b["bracket_lo_intvty"], b["bracket_hi_intvty"], b["target_clamped"]) == (10.0, 40.0, False)
    assert (b["bracket_ratio"], b["cell_basis"]) == (4.0, "interpolated_gap")  # 40 / 10 > 1.5
    assert (b["spec_decoding"], b["side_label"], b["side_id"]) == ("none", "Off", comparison.b.side_id)
    # a side without a frontier: no rows
    assert compare(comparison, {comparison.a.side_id: frontiers[comparison.a.side_id]}) == []
    assert compare(comparison, {comparison.b.side_id: frontiers[comparison.b.side_id]}) == []
    # the sides' roles swapped (the single-point frontier as side b): the same band
    swapped = compare(comparison, {comparison.a.side_id: frontiers[comparison.b.side_id],
                                   comparison.b.side_id: frontiers[comparison.a.side_id]})
    assert {(r["band_min"], r["band_max"]) for r in swapped} == {(20.0, 30.0)}


def test_two_frontiers_on_different_x_statistics_are_not_compared():
    comparison, frontiers = _row_comparison()
    a, b = frontiers[comparison.a.side_id], frontiers[comparison.b.side_id]
    assert {p["x_intvty_stat"] for p in a + b} == {"median_intvty"} and compare(comparison, frontiers)
    other = {comparison.a.side_id: a, comparison.b.side_id: [dict(p, x_intvty_stat="e2e_norm_intvty_p90") for p in b]}
    assert compare(comparison, other) == []


def test_a_cell_bracketed_by_disagreeing_repeats_says_so_through_compare():
    comparison, frontiers = _row_comparison()
    off = frontiers[comparison.b.side_id]  # (10, 1200) and (40, 400)
    spread = {comparison.a.side_id: frontiers[comparison.a.side_id],
              comparison.b.side_id: [dict(off[0], repeat_spread=0.25, repeat_n=2), off[1]]}
    rows = compare(comparison, spread)
    b = rows[3]  # Off at 25, between 10 and 40
    assert (b["bracket_lo_repeat_spread"], b["bracket_hi_repeat_spread"]) == (0.25, None)
    assert b["cell_note"] == ("Off's values are interpolated across a gap between 10.0 and 40.0 tok/s/user; Off's "
                              "point at 10.0 tok/s/user averages repeats 25% apart in tok/s/GPU")
    assert b["cell_note"] in b["sentence_caveat"] and b["tput_sentence"].endswith(f"({b['sentence_caveat']})")


@pytest.mark.parametrize("repeat_n, expected", [((None, 1), 0), ((2, None), 1), ((1, 2), 1), ((2, 3), 2)])
def test_repeat_points_count_the_frontier_points_that_average_repeats(repeat_n, expected):
    """``repeat_points``: the side's frontier points with ``repeat_n`` > 1 (an absent count is one run)."""
    comparison, frontiers = _row_comparison()
    off = frontiers[comparison.b.side_id]
    assert len(off) == 2
    rows = compare(comparison, {comparison.a.side_id: frontiers[comparison.a.side_id],
                                comparison.b.side_id: [dict(p, repeat_n=n) for p, n in zip(off, repeat_n)]})
    assert [r["repeat_points"] for r in rows if r["side"] == "b"] == [expected] * 3
    assert [r["repeat_points"] for r in rows if r["side"] == "a"] == [0] * 3


def test_sparse_flag_is_strictly_above_1_05():
    # MTP frontier x 10, 20, 30; tok/s/GPU 1000, 500, 400; hyperscaler cost 1.0, 2.1, 3.0 $/M. $/GPU-h implied by
    # the first point: 1.0·1000; at x = 20 the spline returns the point itself: implied 1000/500 = 2.0 against
    # the splined 2.1: ratio 2.1/2.0 = 1.05 exactly → not sparse. At x = 30: 1000/400 = 2.5 vs 3.0 → 1.2, sparse.
    mtp = [dict(_run(i, "mtp", x, y, 8), cost_per_mtok_hyperscaler=c)
           for i, (x, y, c) in enumerate([(10.0, 1000, 1.0), (20.0, 500, 2.1), (30.0, 400, 3.0)])]
    data = mtp + [_run(5, "none", 10.0, 900, 8), _run(6, "none", 30.0, 300, 8)]
    comparison = next(c for c in enumerate_comparisons(data) if c.kind == "spec_decoding")
    frontiers = frontiers_by_side(build_frontiers(data, [comparison.a, comparison.b]).to_pylist())
    at_20, _, at_30, _ = compare(comparison, frontiers, targets=[20, 30])
    assert (at_20["cost_per_mtok_hyperscaler"], at_20["implied_cost_per_mtok_hyperscaler"]) == (2.1, 2.0)
    assert (at_20["sparse_frontier"], at_20["cell_note"]) == (False, None)
    assert at_30["implied_cost_per_mtok_hyperscaler"] == 2.5 and at_30["sparse_frontier"] is True


def test_cross_engine_and_measured_power_coverage():
    def runs(frameworks, measured):
        out = []
        for i, (spec, fw, x, y) in enumerate([("mtp", frameworks[0], 10.0, 900), ("mtp", frameworks[1], 20.0, 600),
                                              ("none", frameworks[2], 10.0, 800), ("none", frameworks[3], 20.0, 500)]):
            out.append({**_run(i, spec, x, y, 16), "framework": fw, "measured_tok_s_per_mw": measured[i]})
        return out

    def rows(frameworks, measured=(None, None, None, None)):
        data = runs(frameworks, measured)
        comparison = next(c for c in enumerate_comparisons(data) if c.kind == "spec_decoding")
        frontiers = frontiers_by_side(build_frontiers(data, [comparison.a, comparison.b]).to_pylist())
        return compare(comparison, frontiers, targets=[15])

    # spec-decoding points from SGLang and vLLM: different acceptance conventions
    assert {r["cross_engine"] for r in rows(("sglang", "vllm", "sglang", "sglang"))} == {True}
    # one family under two names (dynamo-sglang is SGLang); the Off side's engines do not count
    assert {r["cross_engine"] for r in rows(("sglang", "dynamo-sglang", "vllm", "trtllm"))} == {False}
    # engines the family table does not know are their own family
    assert {r["cross_engine"] for r in rows(("engine-x", "engine-y", "sglang", "sglang"))} == {True}
    assert {r["cross_engine"] for r in rows(("engine-x", "engine-x", "sglang", "vllm"))} == {False}
    # measured tok/s/MW on one of MTP's two points, both of Off's: coverage ½ and 1; splined only when 1
    a, b = rows(("sglang",) * 4, measured=(300.0, None, 250.0, 150.0))
    assert (a["measured_power_coverage"], a["measured_tok_s_per_mw"]) == (0.5, None)
    assert b["measured_power_coverage"] == 1.0 and 150.0 < b["measured_tok_s_per_mw"] < 250.0


def test_compare_all_every_book_in_name_order():
    from pipeline.comparisons.compare import COMPARISON_SCHEMA, compare_all

    comparison, _ = _row_comparison()
    books = {"zeta": ROW_RUNS, "alpha": [{**r, "price_book": "alpha"} for r in ROW_RUNS]}
    frontier_rows = [row for book in ("zeta", "alpha") for row in build_frontiers(
        [{**r, "price_book": book} for r in books[book]], [comparison.a, comparison.b]).to_pylist()]
    table = compare_all(ROW_RUNS, frontier_rows)
    assert table.schema.equals(COMPARISON_SCHEMA)
    assert table.column("price_book").to_pylist() == ["alpha"] * 6 + ["zeta"] * 6
    assert table.column("target_intvty").to_pylist() == [23.0, 23.0, 25.0, 25.0, 28.0, 28.0] * 2
    assert compare_all(ROW_RUNS, []).num_rows == 0


# --- band, Pareto and parser helpers: errors and edge cases ----------------------------------------------------


def test_band_needs_runs_on_both_sides_but_one_is_enough():
    assert interactivity_band([5.0], [7.0, 9.0]) == (5.0, 9.0, True)
    assert interactivity_band([8.0, 3.0], [6.0]) == (3.0, 8.0, True)
    for a, b in (([], [1.0]), ([1.0], []), ([], [])):
        with pytest.raises(ValueError, match="^both sides need runs for a band$"):
            interactivity_band(a, b)


def test_pareto_null_is_nan_and_shapes_must_agree():
    from pipeline.frontiers.pareto import (
        float_values,
        grouped_pareto_frontiers,
        pareto_frontier,
    )

    with pytest.raises(ValueError, match="^frontier input contains NaN$"):
        pareto_frontier([1.0, None], [2.0, 1.0])  # a null from an Arrow column's to_pylist
    with pytest.raises(ValueError, match="^frontier input contains NaN$"):
        pareto_frontier([1.0, 2.0], [None, 1.0])
    with pytest.raises(ValueError, match="^frontier input contains NaN$"):
        grouped_pareto_frontiers([0, 1], [1.0, None], [2.0, 1.0])
    with pytest.raises(ValueError, match=r"^group, x and y differ in shape: \(2,\), \(3,\), \(3,\)$"):
        grouped_pareto_frontiers([0, 0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"^group, x and y differ in shape: \(2,\), \(2,\), \(1,\)$"):
        grouped_pareto_frontiers([0, 0], [1.0, 2.0], [3.0])
    assert pareto_frontier([7.0], [3.0]).tolist() == [0]
    assert pareto_frontier([], []).tolist() == []
    values = float_values(pa.chunked_array([[1, None], [3]], pa.int32()))
    assert values.dtype == np.float64 and values[0] == 1.0 and math.isnan(values[1]) and values[2] == 3.0


def test_field_errors_and_row_rejections_carry_code_and_detail():
    from pipeline.ingest.parsers.base import RowRejected, metadata_keys_in

    with pytest.raises(FieldError) as err:
        number({"v": "12"}, "v", label="median_tpot_ms")
    assert str(err.value) == "median_tpot_ms: expected a number, got str '12'"
    assert err.value.detail == "field 'median_tpot_ms': expected a number, got str '12'"
    with pytest.raises(FieldError) as err:
        integer({"n": True}, "n")
    assert str(err.value) == "n: expected an integer, got True"
    with pytest.raises(FieldError) as err:
        integer({"n": 2.5}, "n", label="conc")
    assert (err.value.reason_code, str(err.value)) == ("not_an_integer:conc", "conc: expected an integer, got 2.5")
    rejected = RowRejected("agentic_row", "an agentic-benchmark row")
    assert (rejected.reason_code, rejected.detail, str(rejected)) == (
        "agentic_row", "an agentic-benchmark row", "an agentic-benchmark row")
    doc = {"hw": "h200", "tp": None, "framework": "", "conc": 0, "other": 1}
    assert metadata_keys_in(doc, ("hw", "tp", "framework", "conc", "model")) == {"hw": "h200", "conc": 0}


@pytest.mark.parametrize("text", ["inf", "INF", " Inf ", "infinity", "INFINITY", "Infinity"])
def test_number_reads_infinity_in_any_case(text):
    assert number({"v": text}, "v") == math.inf
