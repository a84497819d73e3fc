"""The trend mart against hand-computed values (docs/metrics.md trend rule: null outside the frontier)."""

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.comparisons.trends import build_trends

D1, D2 = dt.date(2026, 7, 1), dt.date(2026, 7, 2)


def _run(date, x, y, conc, framework="sglang"):
    cost = 1.48 / (y * 3600 / 1e6)
    return {"price_book": "seed", "model": "dsr1", "isl": 1024, "osl": 1024, "hw": "mi355x", "framework": framework,
            "precision": "fp4", "spec_decoding": "none", "benchmark_type": "fixed_seq", "x_intvty_stat": "median_intvty",
            "run_date": date,
            "x_intvty": x, "conc": conc,
            "tput_per_gpu": y, "output_tput_per_gpu": y / 2, "cost_per_mtok_hyperscaler": cost,
            "cost_per_mtok_neocloud": cost, "cost_per_mtok_rental": cost, "tok_s_per_mw": y * 1000 / 2.65,
            # one line per framework, one sweep per day: a day's sweep supersedes the earlier ones
            "run_id": f"{date}-{framework}-{conc}", "line_id": framework,
            "sweep_id": f"date:{date}"}


RUNS = [
    # 2026-07-01: frontier (20, 1200), (40, 900), (60, 300); (30, 500) dominated
    _run(D1, 20, 1200, 64), _run(D1, 30, 500, 48), _run(D1, 40, 900, 32), _run(D1, 60, 300, 8),
    # 2026-07-02: only high interactivity
    _run(D2, 40, 800, 16), _run(D2, 60, 350, 8),
    # no date: no place on a time axis
    _run(None, 30, 2000, 64),
    # another framework is another group
    _run(D1, 30, 100, 4, framework="vllm"),
]


def test_trend_values_by_hand():
    rows = {(r["run_date"], r["framework"]): r for r in build_trends(RUNS, target_intvty=30).to_pylist()}
    assert set(rows) == {(D1, "sglang"), (D2, "sglang"), (D1, "vllm")}
    d1 = rows[(D1, "sglang")]
    # Steffen: s = -15, -30; m1 = -2*min(15, 30, 11.25) = -22.5; m0 = (3*-15 + 22.5)/2 = -11.25
    # at t = 0.5 on [20, 40]: 600 + 2.5*(-11.25) + 450 - 2.5*(-22.5) = 1078.125
    assert d1["tput_per_gpu"] == pytest.approx(1078.125)
    assert (d1["runs"], d1["frontier_points"], d1["in_range"]) == (4, 3, True)
    # concurrency on its own values 64, 32, 8 -> 47.25 (hand-computed in test_comparisons)
    assert d1["concurrency"] == pytest.approx(47.25)
    # output tok/s/GPU is half of the throughput at every point, so its spline is half too
    assert d1["output_tput_per_gpu"] == pytest.approx(1078.125 / 2)


def test_outside_the_frontier_is_null_not_clamped():
    d2 = {(r["run_date"], r["framework"]): r for r in build_trends(RUNS, target_intvty=30).to_pylist()}[(D2, "sglang")]
    assert d2["in_range"] is False
    assert d2["tput_per_gpu"] is None and d2["cost_per_mtok_hyperscaler"] is None
    assert (d2["frontier_intvty_min"], d2["frontier_intvty_max"]) == (40, 60)


def test_single_point_frontier_only_at_its_own_interactivity():
    rows = {(r["run_date"], r["framework"]): r for r in build_trends(RUNS, target_intvty=30).to_pylist()}
    assert rows[(D1, "vllm")]["tput_per_gpu"] == 100
    rows = {(r["run_date"], r["framework"]): r for r in build_trends(RUNS, target_intvty=35).to_pylist()}
    assert rows[(D1, "vllm")]["tput_per_gpu"] is None


def test_default_target_is_35():
    assert {r["target_intvty"] for r in build_trends(RUNS).to_pylist()} == {35.0}


def test_trends_built_in_slices_equal_trends_built_whole(sample_run_two_books, sample_run_copy, monkeypatch):
    """The trends asset draws the frontiers from slices of the runs (``TREND_SLICE``, whole frontier groups and
    whole lines each) and reads them at the target together: whatever the number of slices, the same rows in the
    same order, to the last bit, as one ``build_trends`` of every run; in the asset's warehouse table too."""
    import duckdb
    import pyarrow as pa

    from conftest import _materialize_sample
    from pipeline.comparisons.trends import merge_trend_frontiers, trend_frontiers, trends_at_target
    from pipeline.defs.comparisons import report

    with duckdb.connect(str(sample_run_two_books.db_path), read_only=True) as conn:
        def read(where: str = "true", **params) -> pa.Table:
            return conn.sql(f"select * from run_metrics where run_date is not null and not length_off_nominal "
                            f"and {where}", params=params or None).to_arrow_table()

        whole = build_trends(read())
        assert whole.num_rows > 10 and len(set(whole["price_book"].to_pylist())) == 2
        assert sum(whole["in_range"].to_pylist()) > 3
        for parts in (2, 3, 7):
            slices = [read(f"{report.TREND_SLICE} % $parts = $part", parts=parts, part=part) for part in range(parts)]
            assert sum(s.num_rows for s in slices) == read().num_rows
            assert sum(1 for s in slices if s.num_rows) >= 2, parts  # a real split
            merged = trends_at_target(merge_trend_frontiers([trend_frontiers(s) for s in slices]))
            assert merged.equals(whole), parts

    # the asset, every date again over a copy of the sample run, its runs read in slices of at most ~10: the same
    # table and the same mart (tests/test_nightly_batches.py reads and writes the dates in groups too)
    from pipeline.io.storage import content_hash, read_mart

    with duckdb.connect(str(sample_run_copy.db_path), read_only=True) as conn:
        expected = conn.sql("select * from trends").to_arrow_table()
    mart = content_hash(read_mart(sample_run_copy.out_dir, "trends"))
    monkeypatch.setattr(report, "TRENDS_CHUNK_ROWS", 10)
    reads = []
    real = report.trend_frontiers
    monkeypatch.setattr(report, "trend_frontiers", lambda runs, **k: reads.append(runs.num_rows) or real(runs, **k))
    again = _materialize_sample(sample_run_copy.out_dir, sample_run_copy.db_path)
    assert again.result.success and len(reads) > 2 and max(reads) < sum(reads), reads
    with duckdb.connect(str(sample_run_copy.db_path), read_only=True) as conn:
        assert conn.sql("select * from trends").to_arrow_table().equals(expected)
    assert content_hash(read_mart(again.out_dir, "trends")) == mart


def _target(comparison_id, side, index, target, book="seed", hw="mi355x", precision="fp4", spec="all",
            framework="all"):
    """One comparison target as the comparisons mart gives it (a side's keys, ``all`` where pooled)."""
    return {"price_book": book, "comparison_id": comparison_id, "side": side, "target_index": index,
            "target_intvty": float(target), "model": "dsr1", "isl": 1024, "osl": 1024, "hw": hw,
            "framework": framework, "precision": precision, "spec_decoding": spec, "benchmark_type": "fixed_seq",
            "x_intvty_stat": "median_intvty"}


def test_each_group_is_read_at_the_targets_of_the_comparisons_holding_it():
    """A group is read at each target of every comparison one of whose sides holds it (pooled keys take
    any value), null outside the day's frontier; a group no side holds has no row."""
    import pyarrow as pa

    from pipeline.comparisons.trends import COMPARISON_TARGET_SCHEMA, trend_frontiers, trends_at_targets

    runs = [*RUNS, _run(D1, 30, 700, 16, framework="trt")]  # trt: a group of its own, in the framework pair below
    for run in runs[-1:]:
        run["hw"] = "h100"  # on another GPU: no comparison below has a side on h100
    targets = pa.Table.from_pylist([
        *(_target("fw", side, i + 1, t, framework=fw) for side, fw in (("a", "sglang"), ("b", "vllm"))
          for i, t in enumerate((20, 30, 40))),
        _target("prec", "a", 2, 60),  # fp4 with spec and framework pooled: holds both mi355x groups
        _target("prec", "b", 2, 60, precision="fp8"),  # no fp8 run: holds nothing
        _target("spec", "a", 1, 20, spec="mtp"),  # no mtp run: holds nothing
        _target("fw", "a", 1, 20, book="other", framework="sglang"),  # another price book's: not this one's
    ], schema=COMPARISON_TARGET_SCHEMA)
    rows = trends_at_targets(trend_frontiers(runs), targets).to_pylist()
    got = {(r["run_date"], r["framework"], r["comparison_id"], r["side"], r["target_index"]):
           (r["target_intvty"], r["in_range"], r["tput_per_gpu"]) for r in rows}
    assert got == {
        # 2026-07-01 sglang: frontier (20, 1200), (40, 900), (60, 300); at 30 the Steffen value of the test above
        (D1, "sglang", "fw", "a", 1): (20.0, True, 1200.0),
        (D1, "sglang", "fw", "a", 2): (30.0, True, pytest.approx(1078.125)),
        (D1, "sglang", "fw", "a", 3): (40.0, True, 900.0),
        (D1, "sglang", "prec", "a", 2): (60.0, True, 300.0),
        # 2026-07-02 sglang: frontier (40, 800), (60, 350) only: 20 and 30 lie outside, null, not clamped
        (D2, "sglang", "fw", "a", 1): (20.0, False, None),
        (D2, "sglang", "fw", "a", 2): (30.0, False, None),
        (D2, "sglang", "fw", "a", 3): (40.0, True, 800.0),
        (D2, "sglang", "prec", "a", 2): (60.0, True, 350.0),
        # vllm: one point at 30
        (D1, "vllm", "fw", "b", 1): (20.0, False, None),
        (D1, "vllm", "fw", "b", 2): (30.0, True, 100.0),
        (D1, "vllm", "fw", "b", 3): (40.0, False, None),
        (D1, "vllm", "prec", "a", 2): (60.0, False, None),
    }
    # rows in key order: date-less keys first, then the comparison and its target
    assert [(r["run_date"], r["framework"], r["comparison_id"], r["target_index"]) for r in rows][:4] == [
        (D1, "sglang", "fw", 1), (D1, "sglang", "fw", 2), (D1, "sglang", "fw", 3), (D1, "sglang", "prec", 2)]


def test_the_sample_trends_are_read_at_the_comparisons_targets(sample_run):
    """Every trend row's target is the one comparisons.parquet gives its comparison, price book, side and target
    index; the sample's comparisons' targets keep most rows in range (the old global 35 tok/s/user did not)."""
    from pipeline.comparisons.trends import build_trends

    trends = sample_run.mart("trends").to_pylist()
    cells = {(r["comparison_id"], r["price_book"], r["side"], r["target_index"]): r["target_intvty"]
             for r in sample_run.mart("comparisons").to_pylist()}
    assert trends and all(cells[(r["comparison_id"], r["price_book"], r["side"], r["target_index"])]
                          == r["target_intvty"] for r in trends)
    assert {r["target_index"] for r in trends} == {1, 2, 3}
    in_range = sum(r["in_range"] for r in trends) / len(trends)
    import duckdb
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        runs = conn.sql("select * from run_metrics where not length_off_nominal").to_arrow_table()
    at_35 = build_trends(runs).to_pylist()
    assert in_range > 0.9 > sum(r["in_range"] for r in at_35) / len(at_35)


def _in_book(run, book, price_usd_per_gpu_hour):
    """``run`` priced in another price book: every cost tier at ``price_usd_per_gpu_hour`` $/GPU-h."""
    cost = price_usd_per_gpu_hour / (run["tput_per_gpu"] * 3600 / 1e6)
    return {**run, "price_book": book, "cost_per_mtok_hyperscaler": cost, "cost_per_mtok_neocloud": cost,
            "cost_per_mtok_rental": cost}


def test_a_single_run_is_a_one_point_trend():
    # one run, one date: a one-point frontier, read at its own interactivity (30) as its own value
    rows = build_trends([_run(D1, 30, 100, 4)], target_intvty=30).to_pylist()
    assert [(r["run_date"], r["tput_per_gpu"], r["runs"], r["frontier_points"], r["in_range"]) for r in rows] == [
        (D1, 100.0, 1, 1, True)]


def test_no_dated_run_or_no_run_in_the_dates_gives_no_rows():
    from pipeline.comparisons.trends import TREND_SCHEMA

    undated = build_trends([_run(None, 30, 2000, 64), _run(None, 40, 1000, 32)])
    assert undated.num_rows == 0 and undated.schema == TREND_SCHEMA
    # the runs are dated 2026-07-01 and 2026-07-02; 2026-07-05 has none
    elsewhere = build_trends(RUNS, dates=[dt.date(2026, 7, 5)])
    assert elsewhere.num_rows == 0 and elsewhere.schema == TREND_SCHEMA


def test_one_line_in_two_price_books_is_read_in_each_book():
    # one line (sglang), two points (20, 1200) and (40, 900) in book seed at 1.48 $/GPU-h and in book other at
    # 2.96 $/GPU-h. Two points (spline.steffen_tangents): s = -300 / 20 = -15, m0 = 1.5 s, m1 = 0.75 s; at the
    # midpoint (t = 0.5, h = 20) the Hermite value is (y0 + y1) / 2 + h / 8 × (m0 - m1) = 1050 + 2.5 × 0.75 × -15
    # = 1021.875 tok/s/GPU in both books. Cost on its own points: seed 1.48 / (1200 × 0.0036) = 0.342592593 and
    # 1.48 / (900 × 0.0036) = 0.456790123 $/M tok, s = 0.005709877: 0.399691358 + 1.875 × s = 0.410397377; the
    # other book's price is twice seed's, so twice that: 0.820794753.
    seed = [_run(D1, 20, 1200, 64), _run(D1, 40, 900, 32)]
    runs = seed + [_in_book(run, "other", 2.96) for run in seed]
    rows = {r["price_book"]: r for r in build_trends(runs, target_intvty=30).to_pylist()}
    assert set(rows) == {"seed", "other"}
    for book, cost in (("seed", 0.410397377), ("other", 0.820794753)):
        assert (rows[book]["run_date"], rows[book]["runs"], rows[book]["frontier_points"]) == (D1, 2, 2)
        assert rows[book]["tput_per_gpu"] == pytest.approx(1021.875)
        assert rows[book]["cost_per_mtok_hyperscaler"] == pytest.approx(cost, rel=1e-8)


def test_a_price_book_without_runs_on_a_date_has_no_row_that_date():
    # book seed has runs on 2026-07-01 only, book other on 2026-07-02 only: one row each, on its own date (the
    # lines as of 2026-07-02 in book seed are still the 2026-07-01 sweep, but seed has no run that day)
    runs = [_run(D1, 30, 1000, 8), _in_book(_run(D2, 30, 700, 8), "other", 2.96)]
    rows = build_trends(runs, target_intvty=30).to_pylist()
    assert [(r["price_book"], r["run_date"], r["tput_per_gpu"]) for r in rows] == [
        ("other", D2, 700.0), ("seed", D1, 1000.0)]


def test_frontiers_merged_from_slices_of_whole_groups_are_the_whole_runs_frontiers():
    from pipeline.comparisons.trends import merge_trend_frontiers, trend_frontiers

    assert merge_trend_frontiers([]).num_rows == 0
    dated = [run for run in RUNS if run["run_date"] is not None]
    vllm = [run for run in dated if run["framework"] == "vllm"]
    sglang = [run for run in dated if run["framework"] == "sglang"]
    merged = merge_trend_frontiers([trend_frontiers(vllm), trend_frontiers(sglang)])
    # key order: sglang before vllm; 2026-07-01's sglang frontier (20, 1200), (40, 900), (60, 300), then
    # 2026-07-02's (40, 800), (60, 350), then vllm's one point (30, 100)
    assert list(zip(merged["framework"].to_pylist(), merged["x_intvty"].to_pylist(),
                    merged["tput_per_gpu"].to_pylist())) == [
        ("sglang", 20, 1200), ("sglang", 40, 900), ("sglang", 60, 300), ("sglang", 40, 800), ("sglang", 60, 350),
        ("vllm", 30, 100)]
    assert merged.equals(trend_frontiers(dated))


def test_without_comparison_targets_no_group_is_read():
    # the trend mart reads a group only at its comparisons' targets: no comparison (an empty targets table) gives
    # no row, also when there are frontiers; and no frontier with some targets gives none either
    from pipeline.comparisons.trends import (
        COMPARISON_TARGET_SCHEMA, TREND_SCHEMA, trend_frontiers, trends_at_targets)

    frontiers = trend_frontiers([run for run in RUNS if run["run_date"] is not None])
    assert frontiers.num_rows == 6
    none = trends_at_targets(frontiers, COMPARISON_TARGET_SCHEMA.empty_table())
    assert none.num_rows == 0 and none.schema == TREND_SCHEMA
    targets = pa.Table.from_pylist([_target("c1", "a", 1, 30)], schema=COMPARISON_TARGET_SCHEMA)
    assert trends_at_targets(frontiers.slice(0, 0), targets).num_rows == 0


def test_a_dates_rows_are_the_same_to_the_last_bit_with_or_without_other_dates():
    """One spline per date: a date's frontiers share a spline call only with that date's (docs: a nightly batch
    and a full refresh give the same bits). x values with many digits, so that where a frontier sits on the shared
    axis changes the rounding; two groups per date, so the second one is shifted past the first."""
    from pipeline.comparisons.trends import TREND_METRICS, trend_frontiers, trends_at_target

    runs = []
    for framework, xs in (("sglang", (13.371, 27.913, 41.777, 58.219)), ("vllm", (11.123, 29.457, 47.891))):
        for date, shift in ((D1, 0.0), (D2, 1.7331)):
            runs += [_run(date, x + shift, 1500.0 / (1 + i) + 7.77 * i, 64 >> i, framework=framework)
                     for i, x in enumerate(xs)]
    frontiers = trend_frontiers(runs)
    first_day = frontiers.filter(pc.equal(frontiers["run_date"], pa.scalar(D1, pa.date32())))
    for target in (30.0, 33.3, 40.1):
        both = {(r["run_date"], r["framework"]): r for r in trends_at_target(frontiers, target).to_pylist()}
        alone = {(r["run_date"], r["framework"]): r for r in trends_at_target(first_day, target).to_pylist()}
        assert set(alone) == {(D1, "sglang"), (D1, "vllm")}
        assert set(both) == set(alone) | {(D2, "sglang"), (D2, "vllm")}
        for key, row in alone.items():
            assert row["in_range"] is True
            assert [both[key][m] for m in TREND_METRICS] == [row[m] for m in TREND_METRICS]  # equal, not approx
