"""Sides, frontiers per side and comparison rows on hand-built runs (docs/metrics.md)."""

import pytest

from pipeline.comparisons.compare import compare, headline
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import enumerate_comparisons

H = 1.48  # mi355x hyperscaler $/GPU-h


def _run(i, spec, framework, x, y, conc, precision="fp4", hw="mi355x"):
    cost = H / (y * 3600 / 1e6)
    return {"run_id": f"r{i}", "price_book": "book", "price_book_version": "v1", "spec_metric_source": None,
            "measured_tok_s_per_mw": None, "source_file": f"f{i}", "model": "dsr1", "isl": 1024, "osl": 1024, "hw": hw,
            "precision": precision, "spec_decoding": spec, "framework": framework, "conc": conc,
            "median_intvty": x, "x_intvty": x, "benchmark_type": "fixed_seq", "tput_per_gpu": y,
            "output_tput_per_gpu": y / 2, "input_tput_per_gpu": y / 2,
            "cost_per_mtok_hyperscaler": cost, "cost_per_mtok_neocloud": cost, "cost_per_mtok_rental": cost,
            **{f"{d}_cost_per_mtok_{t}": 2 * cost for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")},
            "tok_s_per_mw": y * 1000 / 2.65, "length_off_nominal": False,
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


def test_hardware_pairs_follow_the_gpu_reference_order_and_precision_pairs_fp4_with_fp8():
    """GPUs pair in gpu_reference.csv's row order (h100, h200, b200, b300, gb200, gb300, mi300x, mi325x, mi355x),
    not alphabetically, and a GPU the table lacks comes after every listed one (then by key); a precision
    comparison's challenger side is fp4 and its baseline fp8."""
    gpus = ("mi355x", "zz1", "b200", "aa9", "h200")
    runs = [_run(i, "none", "sglang", 15, 800, 16, precision="fp8", hw=hw) for i, hw in enumerate(gpus)]
    runs.append(_run(9, "none", "sglang", 15, 800, 16, precision="fp4", hw="mi355x"))
    comparisons = enumerate_comparisons(runs)
    # by hand: the rank order is h200 (row 2), b200 (row 3), mi355x (row 9), then the unlisted aa9, zz1; each
    # pair's first GPU is the earlier one (alphabetical order would pair aa9 first, then b200, h200, mi355x, zz1)
    ranked = ["h200", "b200", "mi355x", "aa9", "zz1"]
    expected = {(ranked[i], ranked[j]) for i in range(5) for j in range(i + 1, 5)}
    assert {(c.a.hw, c.b.hw) for c in comparisons if c.kind == "hardware"} == expected
    [precision] = [c for c in comparisons if c.kind == "precision"]
    assert precision.comparison_id == ("precision:dsr1|1024/1024|mi355x|fp4|spec=all|framework=all"
                                       "~dsr1|1024/1024|mi355x|fp8|spec=all|framework=all")


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
    # the sentence's N by hand. Cost is splined on its own: with K = H/0.0036, MTP's frontier costs are K/1200,
    # K/900, K/300 at x 20, 40, 60: s0 = K/72000, s1 = K/9000, p = K/16000 → m1 = 2·min(s0, s1, ½p) = K/36000,
    # m0 = (3·s0 − m1)/2 = K/144000; at 30 (t = ½): ½(K/1200 + K/900) + ⅛·20·(m0 − m1) = K·132.5/144000.
    # Off at its point 30: K/600 = K·240/144000. Ratio 240/132.5 = 1.8113 → "81% cheaper"
    a, b = off_at_30
    K = H / 0.0036
    assert a["cost_per_mtok_hyperscaler"] == pytest.approx(K * 132.5 / 144000, rel=1e-12)
    assert b["cost_per_mtok_hyperscaler"] == pytest.approx(K / 600, rel=1e-12)
    # MTP's neighbours 20 and 40 are 2× apart (> GAP_RATIO 1.5): the sentence keeps N and says the value bridges a gap
    gap = "MTP's values are interpolated across a gap between 20.0 and 40.0 tok/s/user"
    assert a["cost_sentence"] == f"MTP is 81% cheaper per token ({gap})"
    assert (a["cell_basis"], a["bracket_ratio"], b["cell_basis"]) == ("interpolated_gap", 2.0, "measured")


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


# Honest cells: MTP has two measured points far apart, Off a dense frontier with points at 30 and 55 tok/s/user.
GAP_RUNS = [
    _run(20, "mtp", "sglang", 10, 1000, 64), _run(21, "mtp", "sglang", 50, 100, 4),
    *[_run(22 + i, "none", "sglang", x, y, 64 >> i)
      for i, (x, y) in enumerate([(10, 800), (20, 600), (30, 400), (40, 300), (55, 200)])],
]


def _gap_comparison():
    comparison = next(c for c in enumerate_comparisons(GAP_RUNS) if c.kind == "spec_decoding")
    table = build_frontiers(GAP_RUNS, [comparison.a, comparison.b])
    return comparison, frontiers_by_side(table.to_pylist())


def test_bracket_and_sparse_frontier_by_hand():
    comparison, frontiers = _gap_comparison()
    a, b = compare(comparison, frontiers, targets=[30])
    # two points, h = 40: tangents 1.5·s and 0.75·s, so at the midpoint v = (v0 + v1)/2 + 0.09375·(v1 − v0)
    # tok/s/GPU: 550 − 84.375 = 465.625. Cost c = K/y with K = $/GPU-h / 0.0036: c0 = K/1000, c1 = K/100,
    # splined 0.0055·K + 0.00084375·K = 0.00634375·K, but 465.625 tok/s/GPU implies K/465.625 = 0.0021477·K:
    # 2.95× apart, far beyond 5 %.
    K = H / 0.0036
    assert a["tput_per_gpu"] == pytest.approx(465.625)
    assert a["cost_per_mtok_hyperscaler"] == pytest.approx(0.00634375 * K)
    assert a["implied_cost_per_mtok_hyperscaler"] == pytest.approx(K / 465.625)
    assert (a["bracket_lo_intvty"], a["bracket_hi_intvty"], a["sparse_frontier"]) == (10, 50, True)
    assert a["cell_note"] == "MTP's values are interpolated across a gap between 10.0 and 50.0 tok/s/user"
    # Off is measured at 30: bracketed by that point itself, cost and throughput agree
    assert (b["bracket_lo_intvty"], b["bracket_hi_intvty"], b["sparse_frontier"], b["cell_note"]) == (30, 30, False, None)
    assert b["implied_cost_per_mtok_hyperscaler"] == pytest.approx(b["cost_per_mtok_hyperscaler"])
    # Off's K/400 against MTP's 0.00634375·K: 2.5375 → N = 154 ≥ 100, said as the ratio with one decimal (2.5×)
    # and the dashboard's N; throughput 465.625/400 = 1.164 → 16 %
    caveat = "MTP's values are interpolated across a gap between 10.0 and 50.0 tok/s/user"
    assert a["cost_sentence"] == f"Off is 2.5× cheaper per token (MTP costs 154% more) ({caveat})"
    assert a["tput_sentence"] == f"MTP delivers 16% more tok/s/GPU ({caveat})"
    assert headline(a) == f"Off is 2.5× cheaper per token (MTP costs 154% more); MTP delivers 16% more tok/s/GPU ({caveat})"
    assert (a["bracket_ratio"], a["cell_basis"], b["bracket_ratio"], b["cell_basis"]) == (
        5.0, "interpolated_gap", 1.0, "measured")


def test_sparse_frontier_when_the_implied_cost_is_the_larger():
    # The flag compares the larger of the two costs with the smaller: here the throughput-implied cost is the
    # larger one (the case above has the splined cost larger). MTP's frontier (5, 1950), (10, 900), (25, 100), target 8.
    # tok/s/GPU: h = 5, 15; s = -210, -160/3; p = (-210·15 - 160/3·5)/20 = -170.83; min(210, 53.33, 85.42) = 160/3,
    #   m1 = -320/3, m0 = (3·-210 + 320/3)/2 = -785/3. At u = 3/5: h00 .352, h10 .096, h01 .648, h11 -.144:
    #   .352·1950 + .096·5·(-785/3) + .648·900 - .144·5·(-320/3) = 686.4 - 125.6 + 583.2 + 76.8 = 1220.8.
    # cost / K (c = 1/y): s0 = (1/900 - 1/1950)/5 = 7/58500, s1 = (1/100 - 1/900)/15 = 2/3375,
    #   p = (s0·15 + s1·5)/20 = 167/702000, ½p = 167/1404000 is the least → m1 = 167/702000,
    #   m0 = (3·7/58500 - 167/702000)/2 = 17/280800; at u = 3/5: .352/1950 + .096·5·m0 + .648/900 - .144·5·m1
    #   = 1109/1462500 (0.00075829) against the implied 1/1220.8 = 0.00081913: 1.0802 apart, beyond 1.05.
    runs = [_run(60 + i, "mtp", "sglang", x, y, 64 >> i) for i, (x, y) in enumerate([(5, 1950), (10, 900), (25, 100)])]
    runs += [_run(70 + i, "none", "sglang", x, y, 64 >> i) for i, (x, y) in enumerate([(5, 1000), (25, 200)])]
    comparison = next(c for c in enumerate_comparisons(runs) if c.kind == "spec_decoding")
    frontiers = frontiers_by_side(build_frontiers(runs, [comparison.a, comparison.b]).to_pylist())
    a, _ = compare(comparison, frontiers, targets=[8])
    K = H / 0.0036
    assert a["tput_per_gpu"] == pytest.approx(1220.8)
    assert a["cost_per_mtok_hyperscaler"] == pytest.approx(K * 1109 / 1462500)
    assert a["implied_cost_per_mtok_hyperscaler"] == pytest.approx(K / 1220.8)
    assert a["sparse_frontier"] is True


def test_agreeing_splines_across_a_wide_gap_are_still_a_gap():
    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    a, b = compare(comparison, _frontiers([comparison]), targets=[30])
    # MTP between 20 and 40: splined cost within 1 % of the one 1078.125 tok/s/GPU implies (not sparse), but the
    # neighbours are 40/20 = 2× apart, above GAP_RATIO 1.5: interpolated across a gap whatever the splines agree on
    assert (a["bracket_lo_intvty"], a["bracket_hi_intvty"], a["sparse_frontier"]) == (20, 40, False)
    assert a["implied_cost_per_mtok_hyperscaler"] == pytest.approx(H / (1078.125 * 3600 / 1e6))
    assert (a["bracket_ratio"], a["cell_basis"]) == (2.0, "interpolated_gap")
    assert a["cell_note"] == "MTP's values are interpolated across a gap between 20.0 and 40.0 tok/s/user"
    assert a["sentence_caveat"] == a["cell_note"]


def test_dense_frontier_cell_is_interpolated_without_a_note():
    # points 20, 25, 30 (1.25× and 1.2× apart), tok/s/GPU 1000, 900, 800 on a line: tangents all −20, so at 22.5
    # the spline is the line, 950. Cost K/y: K/1000, K/900, K/800; s0 = K/45000, s1 = K/36000, p = K/40000,
    # m1 = 2·min(s0, s1, ½p) = K/40000, m0 = (3·s0 − m1)/2 = K/48000; at t = ½ (h = 5):
    # ½(K/1000 + K/900) + ⅛·5·(m0 − m1) = K·(0.00105556 − 0.0000026042) = 0.00105295·K against the implied K/950 =
    # 0.00105263·K: 1.0003 apart, well within 1.05
    runs = [_run(40 + i, "mtp", "sglang", x, y, 64 >> i) for i, (x, y) in enumerate([(20, 1000), (25, 900), (30, 800)])]
    runs += [_run(50 + i, "none", "sglang", x, y, 64 >> i) for i, (x, y) in enumerate([(20, 700), (30, 500)])]
    comparison = next(c for c in enumerate_comparisons(runs) if c.kind == "spec_decoding")
    frontiers = frontiers_by_side(build_frontiers(runs, [comparison.a, comparison.b]).to_pylist())
    a, _ = compare(comparison, frontiers, targets=[22.5])
    K = H / 0.0036
    assert a["tput_per_gpu"] == pytest.approx(950)
    by_hand = K * (0.5 * (1 / 1000 + 1 / 900) + 0.625 * (1 / 48000 - 1 / 40000))
    assert a["cost_per_mtok_hyperscaler"] == pytest.approx(by_hand)
    assert (a["bracket_lo_intvty"], a["bracket_hi_intvty"], a["bracket_ratio"]) == (20, 25, 1.25)
    assert (a["sparse_frontier"], a["cell_basis"], a["cell_note"]) == (False, "interpolated", None)


def test_clamped_target_sentence_says_where_the_frontier_ends():
    comparison, frontiers = _gap_comparison()
    a, b = compare(comparison, frontiers, targets=[55])
    # MTP's frontier ends at 50: its value is the point (50, 100); Off is measured at 55 (200 tok/s/GPU)
    assert (a["target_clamped"], a["evaluated_intvty"], a["tput_per_gpu"]) == (True, 50, pytest.approx(100))
    assert (a["bracket_lo_intvty"], a["bracket_hi_intvty"], a["sparse_frontier"]) == (50, None, False)
    note = "MTP is outside its measured range: its frontier ends at 50.0 tok/s/user, below the 55 tok/s/user target"
    assert a["cell_note"] == note and b["cell_note"] is None
    # K/100 against K/200: ratio 2.0, N = 100 → the ratio form
    assert a["cost_sentence"] == f"Off is 2.0× cheaper per token (MTP costs 100% more) ({note})"
    assert (a["cell_basis"], a["bracket_ratio"]) == ("clamped", None)
    assert a["tput_sentence"] == f"Off delivers 100% more tok/s/GPU ({note})"
    low = compare(comparison, frontiers, targets=[5])[0]
    assert (low["bracket_lo_intvty"], low["bracket_hi_intvty"]) == (None, 10)
    assert low["cell_note"] == ("MTP is outside its measured range: its frontier starts at 10.0 tok/s/user, above "
                                "the 5 tok/s/user target")


def test_cli_report_and_ui_tables_say_a_cell_is_not_measured():
    from pipeline.__main__ import format_comparison
    from pipeline.comparisons.report import comparison_tables_markdown, sentences

    comparison, frontiers = _gap_comparison()
    rows = compare(comparison, frontiers, targets=[30, 55])
    note = "MTP is outside its measured range: its frontier ends at 50.0 tok/s/user, below the 55 tok/s/user target"
    gap = "MTP's values are interpolated across a gap between 10.0 and 50.0 tok/s/user"
    cli = format_comparison(rows, comparison.comparison_id)
    assert f"not measured at the target: {note}" in cli and f"not measured at the target: {gap}" in cli
    assert f"Off is 2.0× cheaper per token (MTP costs 100% more); Off delivers 100% more tok/s/GPU ({note})" in cli
    assert "10.0–50.0" in cli and "50.0–—" in cli  # the measured points around each target
    ui = comparison_tables_markdown(rows)
    assert "| 30 | MTP | 465.6 |" in ui and "| interpolated_gap |" in ui and "| clamped |" in ui and note in ui
    page = sentences(rows[2:4])
    assert "(not measured at this target)" in page[1] and page[2].endswith(f"({note}).")


def test_a_side_splined_once_gives_the_rows_of_a_side_splined_per_comparison(sample_run):
    """``compare_all`` splines each side once and reads it at every comparison's targets: every row equals what
    ``compare`` gives building the side's spline for that comparison alone (every price book, every SLO)."""
    from pipeline.comparisons.compare import compare_all_slos
    import duckdb

    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        sides = conn.sql("select distinct model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type "
                         "from run_metrics").to_arrow_table().to_pylist()
        frontier_rows = conn.sql("select * from frontiers").to_arrow_table().to_pylist()
    # a second price book: same points, other costs, so a spline kept per side alone would give wrong costs
    frontier_rows += [{**r, "price_book": "zz-discount", **{k: v / 2 for k, v in r.items()
                                                            if k.startswith("cost_per_mtok") and v is not None}}
                      for r in frontier_rows if r["price_book"] == frontier_rows[0]["price_book"]]
    shared = compare_all_slos(sides, frontier_rows).to_pylist()
    alone = []
    by_book_slo: dict = {}
    for row in frontier_rows:
        by_book_slo.setdefault((row["slo"], row["price_book"]), []).append(row)
    comparisons = enumerate_comparisons(sides)
    slos = ["none"] + sorted({slo for slo, _ in by_book_slo} - {"none"})
    for slo in slos:
        for book in sorted(book for s, book in by_book_slo if s == slo):
            by_side = frontiers_by_side(by_book_slo[(slo, book)])
            alone += [{**row, "slo": slo} for c in comparisons for row in compare(c, by_side)]
    assert len(shared) > 100 and len({r["side_id"] for r in shared}) < len(shared) / 6  # sides recur
    assert shared == alone


def test_side_curves_built_together_read_as_each_side_built_alone():
    """``side_curves`` takes every side's Steffen tangents from one grouped pass; each side must read, at targets
    inside, outside and on its points, exactly what ``SideCurve.of`` gives for that side alone, with the same
    metrics splined: a one-point side, a side whose optional metric has a hole (not splined), a side with every
    optional metric, sides whose points a neighbour's NaN column could leak into."""
    import math

    import numpy as np

    from pipeline.comparisons.compare import SideCurve, side_curves
    from pipeline.frontiers.points import OPTIONAL_METRICS, SPLINED_METRICS

    def point(x, scale, optional=True, hole=()):
        row = {m: scale * (1 + k) * (100 - x) ** 1.3 for k, m in enumerate(SPLINED_METRICS)}
        row.update({m: (None if m in hole or not optional else scale * (2 + k) * math.sqrt(x))
                    for k, m in enumerate(OPTIONAL_METRICS)})
        return {"x_intvty": x, **row}

    by_side = {
        "full": [point(x, 1.0) for x in (5.0, 11.0, 12.5, 40.0, 77.0)],
        "one point": [point(30.0, 2.0)],
        "hole": [point(8.0, 0.5), point(20.0, 0.5, hole=("measured_tok_s_per_mw",)), point(60.0, 0.5)],
        "no optional": [point(x, 3.0, optional=False) for x in (10.0, 90.0)],
        "after nan": [point(x, 0.7) for x in (3.0, 4.0, 9.0, 50.0)],
    }
    targets = [0.0, 3.0, 5.0, 7.7, 11.0, 12.0, 20.0, 30.0, 41.0, 59.9, 77.0, 95.0]
    together = side_curves(by_side)
    assert list(together) == list(by_side)
    for side, points in by_side.items():
        alone = SideCurve.of(points)
        assert together[side].splined == alone.splined, side
        assert np.array_equal(together[side].x, alone.x)
        for clamp in (True, False):
            assert np.array_equal(together[side].at(targets, clamp=clamp), alone.at(targets, clamp=clamp),
                                  equal_nan=True), (side, clamp)
    assert "measured_tok_s_per_mw" not in together["hole"].splined
    assert together["full"].splined == list(SPLINED_METRICS + OPTIONAL_METRICS)
    assert side_curves({}) == {}


def test_sides_of_reads_an_id_written_by_hand():
    from pipeline.frontiers.sides import Side, sides_of

    a = "dsr1|1024/8192|h200|fp8|spec=mtp|framework=sglang"
    b = "dsr1|1024/8192|h200|fp8|spec=none|framework=sglang"
    assert sides_of(f"spec_decoding:{a}~{b}") == (
        "spec_decoding",
        Side(model="dsr1", isl=1024, osl=8192, hw="h200", precision="fp8", spec_decoding="mtp", framework="sglang",
             benchmark_type="fixed_seq"),
        Side(model="dsr1", isl=1024, osl=8192, hw="h200", precision="fp8", spec_decoding="none", framework="sglang",
             benchmark_type="fixed_seq"))
    agentic = "kimi|agentic_traces|b200|fp4|spec=all|framework=all"
    assert sides_of(f"hardware:{agentic}~{agentic.replace('b200', 'mi355x')}")[2] == Side(
        model="kimi", isl=None, osl=None, hw="mi355x", precision="fp4", spec_decoding="all", framework="all",
        benchmark_type="agentic_traces")
    # the kind ends at the first colon: a key may hold one
    colon = "qwen:7b|1024/1024|h200|fp8|spec=none|framework=vllm"
    assert sides_of(f"framework:{colon}~{colon}")[1].model == "qwen:7b"
    for text in (f"{a}~{b}",                         # no kind
                 f"spec_decoding:{a}",               # one side
                 f"spec_decoding:{a}~{b}~{b}",       # three sides
                 f"spec_decoding:{a}|x~{b}",         # seven fields
                 f"spec_decoding:{a.replace('spec=', '')}~{b}",
                 f"spec_decoding:{a.replace('framework=', '')}~{b}",
                 f"spec_decoding:{a.replace('1024/8192', '1024/')}~{b}",
                 f"spec_decoding:{a.replace('1024/8192', 'fixed_seq')}~{b}"):
        assert sides_of(text) is None, text


def _side(hw="mi355x", benchmark_type="fixed_seq"):
    from pipeline.frontiers.sides import Side

    lengths = (1024, 1024) if benchmark_type == "fixed_seq" else (None, None)
    return Side("dsr1", *lengths, hw, "fp4", benchmark_type=benchmark_type)


def test_build_frontiers_of_one_run_of_chosen_runs_and_of_sides_without_runs():
    """One run is a frontier of one point; ``only_runs`` builds from those runs alone; a side without runs (here
    b200, first in side_id order) yields no rows and the sides after it still do; sides none of which has a run
    give the empty FRONTIER_SCHEMA table; a run whose length_off_nominal is null is kept (not off nominal)."""
    from pipeline.frontiers.points import FRONTIER_SCHEMA

    [one] = build_frontiers([_run(0, "mtp", "sglang", 20, 1200, 64)], [_side()]).to_pylist()
    assert (one["run_id"], one["point_index"], one["side_runs"], one["excluded_runs"]) == ("r0", 0, 1, 0)
    # over every run the pooled side's frontier is r0 (20, 1200), r2 (40, 900), r3 (60, 300); over r0 and r3
    # alone neither dominates the other, so both are points and r2 is not
    chosen = build_frontiers(RUNS, [_side()], only_runs={"r0", "r3"})
    assert chosen["run_id"].to_pylist() == ["r0", "r3"] and chosen["side_runs"].to_pylist() == [2, 2]
    rows = build_frontiers(RUNS, [_side("b200"), _side()])
    assert set(rows["side_id"].to_pylist()) == {_side().side_id}
    assert rows["run_id"].to_pylist() == ["r0", "r2", "r3"]
    empty = build_frontiers(RUNS, [_side("b200")])
    assert empty.num_rows == 0 and empty.schema == FRONTIER_SCHEMA
    import pyarrow as pa

    table = pa.Table.from_pylist([_run(0, "mtp", "sglang", 20, 1200, 64)])
    table = table.set_column(table.schema.get_field_index("length_off_nominal"), "length_off_nominal",
                             pa.array([None], pa.bool_()))
    unknown = build_frontiers(table, [_side()])
    assert unknown["run_id"].to_pylist() == ["r0"] and unknown["excluded_runs"].to_pylist() == [0]


def test_build_frontiers_names_every_missing_column_in_input_order():
    from pipeline.frontiers.points import build_frontiers

    rows = [{k: v for k, v in _run(0, "mtp", "sglang", 20, 1200, 64).items() if k not in ("tput_per_gpu", "conc")}]
    with pytest.raises(ValueError) as raised:
        build_frontiers(rows, [_side()])
    # FRONTIER_INPUT_COLUMNS lists conc before the metrics
    assert str(raised.value) == "build_frontiers: runs lack column(s) conc, tput_per_gpu"


def test_a_side_left_without_points_by_one_x_statistic_does_not_stop_the_sides_after_it():
    """The b200 agentic side holds a repeat group whose two runs mix the definition with the stand-in (share 0.5)
    and a stand-in run (share 0): neither point has the definition on every run, so the side has no frontier (no
    row); the mi355x side after it still gets its point."""
    def agentic(i, hw, stat, line):
        return {**_run(i, "none", "sglang", 20.0 + i, 1000.0, 8, hw=hw), "benchmark_type": "agentic_traces",
                "isl": None, "osl": None, "x_intvty_stat": stat, "line_id": line}

    runs = [agentic(0, "b200", "e2e_norm_intvty_p90", "mixed"), agentic(1, "b200", "mean_osl_over_p90_e2el", "mixed"),
            agentic(2, "b200", "mean_osl_over_p90_e2el", "standin"),
            agentic(3, "mi355x", "e2e_norm_intvty_p90", "kept")]
    rows = build_frontiers(runs, [_side("b200", "agentic_traces"), _side("mi355x", "agentic_traces")])
    assert rows["run_id"].to_pylist() == ["r3"]
    assert rows["side_id"].to_pylist() == [_side("mi355x", "agentic_traces").side_id]


def test_one_x_statistic_keeps_only_points_whose_every_run_has_the_definition():
    import numpy as np

    from pipeline.frontiers.points import one_x_statistic

    share = np.array([1.0, 0.5, 0.0, 1.0, 0.0, 0.0])
    kept, out = one_x_statistic(np.array([0, 1, 2, 3]), share)
    assert (kept.tolist(), out.tolist()) == ([0, 3], [1, 2])
    # a mixed group and a stand-in point: no point has the definition on every run, so none is kept
    kept, out = one_x_statistic(np.array([1, 2]), share)
    assert (kept.tolist(), out.tolist()) == ([], [1, 2])
    kept, out = one_x_statistic(np.array([1]), share)  # a side of one point, a group mixing the two: left out too
    assert (kept.tolist(), out.tolist()) == ([], [1])
    for one_statistic in ([0, 3], [2, 4]):  # all on the definition, all on another: nothing left out
        kept, out = one_x_statistic(np.array(one_statistic), share)
        assert (kept.tolist(), out.tolist()) == (one_statistic, [])


def test_with_x_statistic_derives_the_statistic_and_the_definition_share():
    import pyarrow as pa

    from pipeline.frontiers.points import X_DEFINITION_SHARE, with_x_statistic

    # no x_intvty_stat column: fixed_seq and a null benchmark_type (read as fixed_seq) get median_intvty, which
    # is their axis' definition (share 1); an agentic run's statistic is unknown (null), so not the definition (0)
    table = pa.table({"benchmark_type": pa.array(["fixed_seq", None, "agentic_traces"], pa.string())})
    derived = with_x_statistic(table)
    assert derived["x_intvty_stat"].type == pa.string()
    assert derived["x_intvty_stat"].to_pylist() == ["median_intvty", "median_intvty", None]
    assert derived[X_DEFINITION_SHARE].to_pylist() == [1.0, 1.0, 0.0]
    # given statistics: each compared with its type's definition (null type: fixed_seq's; null statistic: not it)
    given = pa.table({"benchmark_type": pa.array(["agentic_traces", "agentic_traces", None, "fixed_seq", "fixed_seq"]),
                      "x_intvty_stat": pa.array(["e2e_norm_intvty_p90", "mean_osl_over_p90_e2el", "median_intvty",
                                                 "e2e_norm_intvty_p90", None]),
                      X_DEFINITION_SHARE: pa.array([9.0] * 5)})  # a stale share is replaced, not kept
    out = with_x_statistic(given)
    assert out.column_names == ["benchmark_type", "x_intvty_stat", X_DEFINITION_SHARE]
    assert out[X_DEFINITION_SHARE].to_pylist() == [1.0, 0.0, 1.0, 0.0, 0.0]


def test_with_slo_sets_the_column_on_every_row_also_of_an_empty_table():
    import pyarrow as pa

    from pipeline.frontiers.points import FRONTIER_SCHEMA, with_slo

    empty = with_slo(FRONTIER_SCHEMA.empty_table(), "none")
    assert (empty.num_rows, empty.schema.field("slo").type) == (0, pa.string())
    two = with_slo(pa.table({"a": [1, 2]}), "chat")
    assert two["slo"].type == pa.string() and two["slo"].to_pylist() == ["chat", "chat"]


def test_two_sides_on_different_x_statistics_give_no_rows_and_say_so_in_the_log():
    """Two frontiers whose x-axes hold different statistics are not read at one target: ``compare`` returns no
    rows and logs the comparison id with both statistics, a side's first. (A handler of its own, not ``caplog``:
    the mutation run turns pytest's logging plugin off.)"""
    import logging

    class Kept(logging.Handler):
        def __init__(self):
            super().__init__(logging.INFO)
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    comparison = next(c for c in enumerate_comparisons(RUNS) if c.kind == "spec_decoding")
    frontiers = _frontiers([comparison])
    frontiers[comparison.b.side_id] = [{**p, "x_intvty_stat": "e2e_norm_intvty_p90"}
                                       for p in frontiers[comparison.b.side_id]]
    assert frontiers[comparison.a.side_id][0]["x_intvty_stat"] == "median_intvty"
    logger, kept = logging.getLogger("pipeline.comparisons.compare"), Kept()
    level = logger.level
    logger.setLevel(logging.INFO)  # setLevel, not .level =: it clears the cached "INFO is off" of earlier tests
    logger.addHandler(kept)
    try:
        assert compare(comparison, frontiers) == []
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
    assert kept.messages == [
        f"{comparison.comparison_id} not compared: x-axes hold median_intvty and e2e_norm_intvty_p90"]


def test_compare_all_splines_each_compared_side_once_and_never_per_comparison(monkeypatch):
    """``compare_all`` builds every compared side's spline in its one ``side_curves`` pass: no comparison splines
    a side again (``SideCurve.of`` is never called), and the rows are those of ``compare`` splining per
    comparison, in comparison order."""
    import pyarrow as pa

    from pipeline.comparisons import compare as compare_module
    from pipeline.comparisons.compare import COMPARISON_SCHEMA, compare_all

    comparisons = enumerate_comparisons(RUNS)
    assert len(comparisons) == 2  # MTP vs Off and SGLang vs vLLM: the sides recur in no two comparisons
    frontier_rows = build_frontiers(RUNS, [s for c in comparisons for s in (c.a, c.b)]).to_pylist()
    by_side = frontiers_by_side(frontier_rows)
    alone = pa.Table.from_pylist([row for c in comparisons for row in compare(c, by_side)], schema=COMPARISON_SCHEMA)

    def splined_again(points):
        raise AssertionError(f"a side splined per comparison: {points[0]['side_id']}")

    monkeypatch.setattr(compare_module.SideCurve, "of", classmethod(lambda cls, points: splined_again(points)))
    shared = compare_all(RUNS, frontier_rows)
    assert shared.num_rows == 12  # 2 comparisons × 3 default targets × 2 sides
    assert shared.to_pylist() == alone.to_pylist()


def test_compare_all_slos_puts_every_run_first_then_each_slo_in_name_order():
    """``compare_all_slos``: the ``none`` block (every run) first, then one block per SLO sorted by name, each
    exactly ``compare_all`` over that SLO's frontier rows with its ``slo`` set."""
    from pipeline.comparisons.compare import compare_all, compare_all_slos

    comparisons = enumerate_comparisons(RUNS)
    everything = build_frontiers(RUNS, [s for c in comparisons for s in (c.a, c.b)]).to_pylist()
    # an SLO that keeps the MTP/Off frontiers only where tok/s/GPU is at least 600 (the SGLang/vLLM sides too)
    strict = [{**r, "slo": "ttft_p99<=1s"} for r in everything if r["tput_per_gpu"] >= 600]
    loose = [{**r, "slo": "e2el_p99<=60s"} for r in everything]
    table = compare_all_slos(RUNS, strict + [{**r, "slo": None} for r in everything] + loose)
    blocks = [compare_all(RUNS, rows) for rows in (everything, loose, strict)]
    assert table["slo"].to_pylist() == (["none"] * blocks[0].num_rows + ["e2el_p99<=60s"] * blocks[1].num_rows
                                        + ["ttft_p99<=1s"] * blocks[2].num_rows)
    assert all(b.num_rows > 0 for b in blocks)
    assert table.drop_columns(["slo"]).to_pylist() == [row for b in blocks for row in b.to_pylist()]


def test_a_cell_note_reads_the_cells_own_basis_before_working_one_out():
    """``cell_note`` takes the cell's ``cell_basis`` when it has one (a mart row), and works it out from the
    bracket only when it is absent: the same bracket, 1.2× apart, reads as a gap only when the row says so."""
    from pipeline.comparisons.compare import cell_note

    cell = {"bracket_lo_intvty": 20.0, "bracket_hi_intvty": 24.0, "sparse_frontier": False}
    assert cell_note("MTP", 22, cell) is None  # 24 / 20 = 1.2 ≤ 1.5 and the splines agree: interpolated
    assert cell_note("MTP", 22, {**cell, "cell_basis": "interpolated_gap"}) == (
        "MTP's values are interpolated across a gap between 20.0 and 24.0 tok/s/user")
