"""Sides, frontiers per side and comparison rows on hand-built runs (docs/metrics.md)."""

import pytest

from pipeline.comparisons.compare import compare
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import enumerate_comparisons

H = 1.48  # mi355x hyperscaler $/GPU-h


def _run(i, spec, framework, x, y, conc, precision="fp4", hw="mi355x"):
    cost = H / (y * 3600 / 1e6)
    return {"run_id": f"r{i}", "price_book": "book", "price_book_version": "v1", "spec_metric_source": None,
            "measured_tok_s_per_mw": None, "source_file": f"f{i}", "model": "dsr1", "isl": 1024, "osl": 1024, "hw": hw,
            "precision": precision, "spec_decoding": spec, "framework": framework, "conc": conc,
            "median_intvty": x, "tput_per_gpu": y, "output_tput_per_gpu": y / 2, "input_tput_per_gpu": y / 2,
            "cost_per_mtok_hyperscaler": cost, "cost_per_mtok_neocloud": cost, "cost_per_mtok_rental": cost,
            **{f"{d}_cost_per_mtok_{t}": 2 * cost for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")},
            "tok_s_per_mw": y * 1000 / 2.65,
            # every run its own line and one undated sweep: nothing superseded, nothing averaged
            "run_date": None, "line_id": f"line{i}", "sweep_id": "undated"}


RUNS = [
    # MTP side: frontier (20, 1200), (40, 900), (60, 300); (30, 500) is dominated
    _run(0, "mtp", "sglang", 20, 1200, 64), _run(1, "mtp", "sglang", 30, 500, 48),
    _run(2, "mtp", "vllm", 40, 900, 32), _run(3, "mtp", "sglang", 60, 300, 8),
    # Off side: (10, 1000), (30, 600), (50, 200)
    _run(4, "none", "sglang", 10, 1000, 128), _run(5, "none", "vllm", 30, 600, 32), _run(6, "none", "sglang", 50, 200, 4),
]


def _frontiers(comparisons):
    table = build_frontiers(RUNS, [s for c in comparisons for s in (c.a, c.b)])
    return frontiers_by_side(table.to_pylist())


def test_enumeration_of_kinds():
    kinds = {(c.kind, c.label_a, c.label_b) for c in enumerate_comparisons(RUNS)}
    assert kinds == {("spec_decoding", "MTP", "Off"), ("framework", "SGLang", "vLLM")}
    fp8 = [_run(9, "none", "sglang", 15, 800, 16, precision="fp8"), _run(10, "none", "sglang", 15, 800, 16, hw="b200")]
    kinds = {(c.kind, c.title) for c in enumerate_comparisons(RUNS + fp8)}
    assert ("precision", "MI355X: FP4 vs FP8") in kinds
    assert ("hardware", "B200 vs MI355X FP4") in kinds


def test_spec_comparison_rows_by_hand():
    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    assert comparison.title == "MI355X FP4: MTP vs Off"
    frontiers = _frontiers([comparison])
    assert [p["median_intvty"] for p in frontiers[comparison.a.side_id]] == [20, 40, 60]
    rows = compare(comparison, frontiers)
    # band over all runs: MTP [20, 60], Off [10, 50] -> [20, 50]; targets 27.5->28, 35, 42.5->43
    assert {(r["band_min"], r["band_max"]) for r in rows} == {(20, 50)}
    assert [r["target_intvty"] for r in rows if r["side"] == "a"] == [28, 35, 43]
    off_at_30 = compare(comparison, frontiers, targets=[30])
    assert off_at_30[1]["tput_per_gpu"] == pytest.approx(600)  # a frontier point is returned exactly
    # the sentence's N from the two rows' own costs, rounded half up
    a, b = off_at_30
    ratio = b["cost_per_mtok_hyperscaler"] / a["cost_per_mtok_hyperscaler"]
    assert a["cost_sentence"] == f"MTP is {int(ratio * 100 - 100 + 0.5)}% cheaper per token"


def test_interpolated_value_between_points_matches_hermite_by_hand():
    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    (a, _b) = compare(comparison, _frontiers([comparison]), targets=[30])
    # MTP frontier x 20,40,60 y 1200,900,300: h = 20, s = -15, -30
    # interior m1 = (-1 - 1) * min(15, 30, 0.5*22.5) = -22.5; m0 = (3*-15 + 22.5)/2 = -11.25
    # at t = 0.5 on [20, 40]: 0.5*1200 + 0.125*20*(-11.25) + 0.5*900 - 0.125*20*(-22.5) = 1078.125
    assert a["tput_per_gpu"] == pytest.approx(1078.125)
    # concurrency splined on its own values 64, 32, 8: s = -1.6, -1.2; p = -1.4; m1 = -2*min(1.6, 1.2, 0.7) = -1.4;
    # m0 = (3*-1.6 + 1.4)/2 = -1.7; at t = 0.5: 32 + 0.125*20*(-1.7) + 16 - 0.125*20*(-1.4) = 47.25
    assert a["concurrency"] == pytest.approx(47.25)


def test_targets_outside_a_side_are_clamped_and_flagged():
    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    a, b = compare(comparison, _frontiers([comparison]), targets=[55])
    assert (a["target_clamped"], b["target_clamped"]) == (False, True)
    assert b["evaluated_intvty"] == 50 and b["tput_per_gpu"] == pytest.approx(200)


def test_tied_sentences():
    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    frontiers = _frontiers([comparison])
    # give the Off side the MTP frontier: identical values at every target
    rows = compare(comparison, {comparison.a.side_id: frontiers[comparison.a.side_id],
                                comparison.b.side_id: frontiers[comparison.a.side_id]}, targets=[40])
    assert rows[0]["cost_sentence"] == "MTP and Off are essentially tied on cost per token"
    assert rows[0]["tput_sentence"] == "MTP and Off are essentially tied on tok/s/GPU"
