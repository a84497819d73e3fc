"""The latest-run rule, repeats and duplicates (docs/metrics.md "Latest run per line").

Small hand-built tables first (never skip), then a history built from the real dashboard export: re-dated copies
with changed numbers, a partial re-sweep, a repeat and a raw vLLM result beside the InferenceX agg row made from
it, every expectation computed here by hand.
"""

import copy
import datetime as dt
import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pytest
from conftest import unrestricted
from scipy import stats

from pipeline.comparisons.confidence import difference_significant, side_intervals
from pipeline.comparisons.trends import build_trends
from pipeline.frontiers.latest import frontier_runs, t_intervals
from pipeline.frontiers.points import build_frontiers
from pipeline.frontiers.sides import Side, enumerate_comparisons
from pipeline.ingest.keys import (
    normalize_framework,
    normalize_hw,
    normalize_precision,
    normalize_spec,
)
from pipeline.validate.lines import (
    LINE_COLUMNS,
    current_sweeps_by_date,
    line_id,
    row_codes,
    run_lineage,
    sweep_id,
    sweep_order_key,
)
from pipeline.validate.rules import find_duplicates

T_975_1 = 12.706204736174698  # Student t, 97.5th percentile, 1 degree of freedom (printed tables: 12.706)
T_975_2 = 4.302652729749464   # 2 degrees of freedom (tables: 4.303)
D1, D2, D3 = dt.date(2026, 7, 1), dt.date(2026, 7, 2), dt.date(2026, 7, 3)


def _row(run_id, day, sweep, conc, x, y, line="L"):
    cost = 1.48 / (y * 3600 / 1e6)
    return {"run_id": run_id, "price_book": "seed", "price_book_version": "v", "source_file": f"{run_id}.json",
            "model": "dsr1", "isl": 1024, "osl": 1024, "hw": "mi355x", "precision": "fp4", "spec_decoding": "none",
            "framework": "sglang", "spec_metric_source": None, "conc": conc, "run_date": day, "line_id": line,
            "sweep_id": sweep, "median_intvty": x, "x_intvty": x, "benchmark_type": "fixed_seq",
            "x_intvty_stat": "median_intvty",
            "length_off_nominal": False, "tput_per_gpu": y, "output_tput_per_gpu": y / 2,
            "input_tput_per_gpu": y / 2, "cost_per_mtok_hyperscaler": cost, "cost_per_mtok_neocloud": cost,
            "cost_per_mtok_rental": cost, "tok_s_per_mw": y * 1000 / 2.65, "measured_tok_s_per_mw": None,
            **{f"{d}_cost_per_mtok_{t}": 2 * cost for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")}}


# Line L: a full sweep on D1 (conc 4, 8, 16), a partial re-sweep on D2 (conc 4, 8; conc 8 twice: a repeat).
# Line M: one sweep on D1 only.
HISTORY = [
    _row("a4", D1, "date:2026-07-01", 4, 60.0, 300.0), _row("a8", D1, "date:2026-07-01", 8, 40.0, 500.0),
    _row("a16", D1, "date:2026-07-01", 16, 20.0, 800.0),
    _row("b4", D2, "date:2026-07-02", 4, 62.0, 320.0), _row("b8", D2, "date:2026-07-02", 8, 41.0, 540.0),
    _row("b8r", D2, "date:2026-07-02", 8, 43.0, 560.0),
    _row("m4", D1, "date:2026-07-01", 4, 30.0, 100.0, line="M"),
]


def test_latest_sweep_wins_and_older_concurrencies_are_not_stitched_in():
    lineage = {r["run_id"]: r for r in run_lineage(HISTORY).to_pylist()}
    assert {k for k, r in lineage.items() if r["current"]} == {"b4", "b8", "b8r", "m4"}
    assert {k: lineage[k]["superseded_by"] for k in ("a4", "a8", "a16")} == dict.fromkeys(("a4", "a8", "a16"),
                                                                                           "date:2026-07-02")
    assert lineage["b8"]["repeat_n"] == lineage["b8r"]["repeat_n"] == 2 and lineage["b4"]["repeat_n"] == 1
    assert lineage["b8"]["repeat_group"] == "L|date:2026-07-02|conc=8"
    # as of D1 the D2 sweep does not exist yet: the whole D1 sweep is current
    as_of = {r["run_id"]: r for r in run_lineage(HISTORY, as_of=D1).to_pylist()}
    assert {k for k, r in as_of.items() if r["current"]} == {"a4", "a8", "a16", "m4"}
    assert as_of["b4"]["superseded_by"] is None and not as_of["b4"]["current"]


def test_each_sweep_is_superseded_by_the_one_right_after_it():
    """A third sweep changes the superseded_by of the sweep it replaces and of no older one, so a night's new sweep
    rewrites the rows (and runs/ files) of one earlier sweep, not of the line's whole history."""
    d3 = dt.date(2026, 7, 3)
    third = [_row("c4", d3, "date:2026-07-03", 4, 63.0, 330.0)]
    before = {r["run_id"]: r["superseded_by"] for r in run_lineage(HISTORY).to_pylist()}
    after = {r["run_id"]: r["superseded_by"] for r in run_lineage(HISTORY + third).to_pylist()}
    assert {k: after[k] for k in ("a4", "a8", "a16")} == dict.fromkeys(("a4", "a8", "a16"), "date:2026-07-02")
    assert {k: after[k] for k in ("b4", "b8", "b8r")} == dict.fromkeys(("b4", "b8", "b8r"), "date:2026-07-03")
    assert after["c4"] is None and after["m4"] is None
    assert {k for k in before if before[k] != after[k]} == {"b4", "b8", "b8r"}


def test_sweep_order_newest_date_then_id_numerically():
    assert sweep_order_key(D2, "date:2026-07-02") > sweep_order_key(D1, "gha:999")  # date first
    assert sweep_order_key(D1, "gha:100") > sweep_order_key(D1, "gha:99")  # 100 > 99 (as text "99" > "100")
    assert sweep_order_key(D1, "gha:1") > sweep_order_key(D1, "sweep:zz") > sweep_order_key(D1, "date:2026-07-01")
    assert sweep_order_key(D1, "date:2026-07-01") > sweep_order_key(None, "undated")
    runs = [dict(_row("x", D1, "gha:99", 4, 50.0, 400.0)), dict(_row("y", D1, "gha:100", 8, 30.0, 600.0))]
    assert [r["current"] for r in run_lineage(runs).to_pylist()] == [False, True]


@pytest.mark.parametrize("sweep", ["12345", "nightly:7", "", "GHA:1"])
def test_a_sweep_id_without_a_known_kind_is_refused_by_name(sweep):
    """``sweep_order_key`` refuses an id that is not ``<kind>:<value>`` of a known kind with a ValueError that
    quotes the id and lists the kinds, instead of a bare KeyError (or ranking it as the oldest sweep)."""
    with pytest.raises(ValueError) as raised:
        sweep_order_key(D1, sweep)
    assert str(raised.value) == (f"sweep id {sweep!r} does not start with a known kind (undated, date, sweep, gha) "
                                 "and ':'")


def test_sweep_ids_from_run_url_metadata_or_date():
    url = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/22469096331/attempts/1"
    assert sweep_id({"run_url": url, "sweep_id": "s", "run_date": D1}) == "gha:22469096331"
    assert sweep_id({"sweep_id": "nightly-7", "run_date": D1}) == "sweep:nightly-7"
    assert sweep_id({"run_date": D1}) == "date:2026-07-01" and sweep_id({}) == "undated"


def test_line_reads_absent_defaults_and_separates_disagg_topologies():
    raw = {"model": "kimik2.5", "isl": 1024, "osl": 1024, "hw": "mi355x", "framework": "vllm", "precision": "int4",
           "spec_decoding": "mtp", "tp": 8, "ep": None, "dp_attention": False, "disagg": False}
    agg = dict(raw, ep=1, pp=1, is_multinode=False, prefill_tp=8)
    assert line_id(raw) == line_id(agg) == "kimik2.5|1024/1024|mi355x|vllm|int4|spec=mtp|tp=8,ep=1,dpa=false"
    pd = dict(raw, disagg=True, is_multinode=True, prefill_tp=8, prefill_ep=8, prefill_dp_attention=True,
              prefill_num_workers=1, decode_num_workers=4, num_prefill_gpu=8, num_decode_gpu=32, ep=1)
    assert line_id(pd) != line_id(dict(pd, prefill_ep=1))  # the real export has exactly this pair


def test_repeats_are_averaged_with_a_student_t_interval():
    points = frontier_runs(HISTORY, ["cost_per_mtok_hyperscaler"]).to_pylist()
    b8 = next(p for p in points if p["repeat_group"] == "L|date:2026-07-02|conc=8")
    assert b8["repeat_n"] == 2 and b8["tput_per_gpu"] == pytest.approx(550.0) and b8["median_intvty"] == 42.0
    # s = |560 − 540| / √2, s/√n = 10; 95 % half width = t(0.975, 1) × 10
    assert (b8["tput_per_gpu_ci_lo"], b8["tput_per_gpu_ci_hi"]) == pytest.approx((550 - 10 * T_975_1, 550 + 10 * T_975_1))
    assert (b8["median_intvty_ci_lo"], b8["median_intvty_ci_hi"]) == pytest.approx((42 - T_975_1, 42 + T_975_1))
    # the cost is the mean of the two runs' costs
    assert b8["cost_per_mtok_hyperscaler"] == pytest.approx((1.48 / (540 * 0.0036) + 1.48 / (560 * 0.0036)) / 2)
    single = next(p for p in points if p["run_id"] == "b4")
    assert single["repeat_n"] == 1 and single["tput_per_gpu_ci_lo"] is None
    assert {p["run_id"] for p in points} == {"b4", "b8", "m4"}  # superseded a4, a8, a16 gone; b8r inside b8


def test_three_repeats_interval():
    runs = [_row(f"r{i}", D1, "gha:1", 4, x, y) for i, (x, y) in enumerate([(10, 100.0), (10, 110.0), (10, 120.0)])]
    (point,) = frontier_runs(runs, []).to_pylist()
    # mean 110, s = 10, s/√3 = 5.7735; half width = t(0.975, 2) × 5.7735
    half = T_975_2 * 10 / math.sqrt(3)
    assert (point["tput_per_gpu_ci_lo"], point["tput_per_gpu"], point["tput_per_gpu_ci_hi"]) == pytest.approx(
        (110 - half, 110, 110 + half))
    assert point["median_intvty_ci_lo"] == pytest.approx(10.0)  # no spread, zero width


def test_frontier_uses_only_current_runs_and_as_of():
    side = Side("dsr1", 1024, 1024, "mi355x", "fp4", "none", "all")
    now = build_frontiers(HISTORY, [side]).to_pylist()
    # current: m4 (30, 100), b8+b8r (42, 550), b4 (62, 320); (30, 100) is dominated by (42, 550)
    assert [(p["run_id"], p["median_intvty"], p["tput_per_gpu"]) for p in now] == [
        ("b8", 42.0, pytest.approx(550.0)), ("b4", 62.0, 320.0)]
    assert now[0]["side_runs"] == 4  # b4, b8, b8r, m4
    then = build_frontiers(HISTORY, [side], as_of=D1).to_pylist()
    assert [p["run_id"] for p in then] == ["a16", "a8", "a4"]


def test_trends_use_each_line_as_of_each_date():
    rows = {r["run_date"]: r for r in build_trends(HISTORY, target_intvty=50).to_pylist()}
    assert set(rows) == {D1, D2}
    # D1: a4, a8, a16 and m4; D2: L's D2 sweep (b8 and b8r one point) and M as of D2 (its D1 sweep)
    assert (rows[D1]["runs"], rows[D2]["runs"]) == (4, 4)
    assert rows[D2]["frontier_points"] == 2 and rows[D2]["frontier_intvty_max"] == 62.0
    assert list(build_trends(HISTORY, 50, dates=[D2]).column("run_date").to_pylist()) == [D2]


def test_current_sweeps_by_date_agrees_with_run_lineage():
    table = pa.Table.from_pylist(HISTORY)
    for day, current in current_sweeps_by_date(table, [D1, D2, D3]):
        from_lineage = {i for i, c in enumerate(run_lineage(table, as_of=day)["current"].to_pylist()) if c}
        assert {i for rows in current.values() for i in rows} == from_lineage


def _run(run_id, source, row=0, date=None, **numbers):
    base = {"run_id": run_id, "source_file": source, "source_row": row, "run_date": date, "content_sha256": run_id,
            "model": "kimik2.5", "isl": 1024, "osl": 1024, "hw": "mi355x", "framework": "vllm", "precision": "int4",
            "spec_decoding": "mtp", "tp": 8, "ep": None, "dp_attention": False, "disagg": False, "conc": 4}
    return {**base, **numbers}


def test_duplicates_only_same_content_or_same_measurement():
    raw = _run("raw", "vllm/x.json", date=D1, median_tpot_s=17.393898241078155e-3, median_ttft_s=296.9768075272441e-3,
               median_e2el_s=16261.2041993998e-3, total_tput_tok_s=445.0136269213033)
    agg = _run("agg", "inferencex/agg_x.json", ep=1, median_tpot_s=0.017393898241078155,
               median_ttft_s=0.2969768075272441, median_e2el_s=16.2612041993998, reported_tput_per_gpu=55.62670336516291)
    repeat = _run("rep", "vllm/y.json", date=D1, median_tpot_s=0.0175, median_ttft_s=0.2969768075272441,
                  median_e2el_s=16.2612041993998)
    copy_of_raw = dict(raw, run_id="copy", source_file="vllm/z.json", content_sha256="raw", median_tpot_s=1.0)
    found = find_duplicates([agg, raw, repeat, copy_of_raw])
    assert {i: (f[0], f[2]) for i, f in found.items()} == {0: ("duplicate_run", "raw"), 3: ("duplicate_run", "raw")}
    assert "same measurement" in found[0][1] and "same content" in found[3][1]
    # 1e-9 relative is rounding only: 1e-8 apart is another measurement
    near = dict(agg, median_tpot_s=0.017393898241078155 * (1 + 1e-8))
    assert find_duplicates([near, raw]) == {}


def test_repeat_spread_flags_repeats_that_disagree():
    """``repeat_spread`` = (max − min) / min of a group's tok/s/GPU; ``repeats_disagree`` above 0.10 (docs/metrics.md
    section 8a); the point's value stays the mean."""
    points = frontier_runs(HISTORY, []).to_pylist()
    b8 = next(p for p in points if p["repeat_group"] == "L|date:2026-07-02|conc=8")
    assert b8["repeat_spread"] == pytest.approx(20 / 540) and b8["repeats_disagree"] is False  # 540, 560: noise
    single = next(p for p in points if p["run_id"] == "b4")
    assert single["repeat_spread"] is None and single["repeats_disagree"] is False
    for ys, spread, disagree in (((100.0, 110.0), 0.10, False),            # exactly 10 %: not above the limit
                                 ((100.0, 111.0), 0.11, True),
                                 ((100.0, 115.0, 104.0), 0.15, True)):     # three runs: max 115 over min 100
        runs = [_row(f"r{i}", D1, "gha:1", 4, 10.0, y) for i, y in enumerate(ys)]
        (point,) = frontier_runs(runs, []).to_pylist()
        assert point["repeat_spread"] == pytest.approx(spread) and point["repeats_disagree"] is disagree
        assert point["tput_per_gpu"] == pytest.approx(sum(ys) / len(ys))


def test_comparison_intervals_and_significance():
    points = [{"median_intvty": 20.0, "x_intvty": 20.0, "tput_per_gpu_ci_lo": 700.0, "tput_per_gpu_ci_hi": 900.0,
               "median_intvty_ci_lo": 19.0, "median_intvty_ci_hi": 21.0},
              {"median_intvty": 40.0, "x_intvty": 40.0, "tput_per_gpu_ci_lo": 300.0, "tput_per_gpu_ci_hi": 500.0,
               "median_intvty_ci_lo": 39.0, "median_intvty_ci_hi": 41.0}]
    at = side_intervals(points, [20.0, 40.0, 99.0])  # at a point its bounds; beyond the frontier clamped
    assert [(r["tput_per_gpu_ci_lo"], r["tput_per_gpu_ci_hi"]) for r in at] == [(700, 900), (300, 500), (300, 500)]
    holed = side_intervals([points[0], dict(points[1], tput_per_gpu_ci_lo=None, tput_per_gpu_ci_hi=None)], [30.0])
    assert holed[0]["tput_per_gpu_ci_lo"] is None and holed[0]["median_intvty_ci_lo"] is not None
    a = {"tput_per_gpu_ci_lo": 100.0, "tput_per_gpu_ci_hi": 110.0}
    assert difference_significant(a, {"tput_per_gpu_ci_lo": 111.0, "tput_per_gpu_ci_hi": 120.0}) is True
    assert difference_significant(a, {"tput_per_gpu_ci_lo": 109.0, "tput_per_gpu_ci_hi": 120.0}) is False
    assert difference_significant(a, {"tput_per_gpu_ci_lo": None, "tput_per_gpu_ci_hi": None}) is None


# --- a history built from the real dashboard export -------------------------------------------------------------

EXPORT = "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
RAW = "vllm/ix_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355.json"
AGG = "inferencex/ix_agg_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355.json"
TOPOLOGY = ("hardware", "framework", "precision", "spec_method", "disagg", "is_multinode", "prefill_tp", "prefill_ep",
            "prefill_dp_attention", "prefill_num_workers", "decode_tp", "decode_ep", "decode_dp_attention",
            "decode_num_workers", "num_prefill_gpu", "num_decode_gpu", "isl", "osl")


def _workflow(row):
    return int(row["run_url"].split("/actions/runs/")[1].split("/")[0])


def _scaled(row, day, workflow, factor):
    """A copy of an export row re-dated into another sweep with other numbers: throughput × factor, TPOT, TTFT, ITL
    and E2EL ÷ √factor (a uniformly faster run, so the output length its latencies imply stays the row's own)."""
    new = copy.deepcopy(row)
    new["date"], new["run_url"] = day.isoformat(), f"https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{workflow}/attempts/1"
    m = new["metrics"]
    for key in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
        m[key] *= factor
    for key in [k for k in m if k.endswith(("_tpot", "_ttft", "_itl", "_e2el"))]:
        m[key] /= factor ** 0.5
    for key in [k for k in m if k.endswith("_intvty") and not k.startswith("std")]:
        m[key] *= factor ** 0.5  # the row's own interactivity stays 1 / TPOT
    return new


@pytest.fixture
def history(real_logs, tmp_path_factory):
    export = json.loads((real_logs / EXPORT).read_text())
    lines = {}
    for row in export:
        lines.setdefault(tuple(row[k] for k in TOPOLOGY), []).append(row)
    # a single-node line measured in one sweep at four or more concurrencies
    key, rows = next((k, v) for k, v in sorted(lines.items(), key=lambda kv: str(kv[0]))
                     if not v[0]["disagg"] and len(v) >= 4 and len({_workflow(r) for r in v}) == 1)
    rows = sorted(rows, key=lambda r: r["conc"])
    day0 = max(dt.date.fromisoformat(r["date"]) for r in export)  # after every real date: nothing real supersedes
    redated = [_scaled(r, day0 + dt.timedelta(days=10), 9_000_000_001, 1.25) for r in rows]
    partial = [_scaled(r, day0 + dt.timedelta(days=20), 9_000_000_002, 3.0) for r in rows[:2]]
    repeat = _scaled(rows[0], day0 + dt.timedelta(days=20), 9_000_000_002, 3.2)
    raw_dir = tmp_path_factory.mktemp("history") / "raw"
    (raw_dir / "inferencex").mkdir(parents=True)
    (raw_dir / "vllm").mkdir()
    (raw_dir / "inferencex" / "history.json").write_text(json.dumps(export + redated + partial + [repeat]))
    shutil.copy(real_logs / RAW, raw_dir / RAW)
    shutil.copy(real_logs / AGG, raw_dir / AGG)
    # the raw result's metadata, as the agg row states it (the raw file has only the engine and conc), and the
    # length range InferenceX draws from (RANDOM_RANGE_RATIO 0.8: lengths in [0.8·n, n])
    (raw_dir / (RAW + ".meta.json")).write_text(json.dumps({
        "model": "kimik2.5", "hw": "mi355x", "precision": "int4", "spec_decoding": "mtp", "tp": 8, "ep": 1,
        "isl": 1024, "osl": 1024, "random_range_ratio": 0.8}))
    return {"raw_dir": raw_dir, "export": export, "rows": rows, "redated": redated, "partial": partial,
            "repeat": repeat, "day0": day0}


@pytest.mark.long
def test_history_from_the_real_export(history, run_pipeline):
    run = run_pipeline(history["raw_dir"])
    assert run.result.success and all(run.check_results().values()), run.check_results()
    runs = [r for r in run.mart("runs").to_pylist() if r["price_book"] == "inferencex-seed"]
    ours = [r for r in runs if r["source_file"] == "inferencex/history.json"]
    n_export, rows = len(history["export"]), history["rows"]
    concs = [r["conc"] for r in rows]
    hw, framework, precision, spec = rows[0]["hardware"], rows[0]["framework"], rows[0]["precision"], rows[0]["spec_method"]

    def of_line(r):
        return (r["hw"], r["framework"], r["precision"], r["spec_decoding"], r["tp"], r["ep"], r["isl"], r["osl"]) == (
            hw, framework, precision, spec, rows[0]["decode_tp"], rows[0]["decode_ep"], rows[0]["isl"], rows[0]["osl"]) \
            and bool(r["dp_attention"]) == rows[0]["decode_dp_attention"] and not r["disagg"]

    line_runs = sorted((r for r in ours if of_line(r)), key=lambda r: r["source_row"])
    # source rows: the export's own rows of the line, then the re-dated copy, the partial re-sweep, the repeat
    n = len(rows)
    assert len(line_runs) == 2 * n + 3
    original, redated = line_runs[:n], line_runs[n:2 * n]
    partial, repeat = line_runs[2 * n:2 * n + 2], line_runs[-1]
    assert [r["source_row"] for r in redated] == list(range(n_export, n_export + n))
    # 1. the partial re-sweep is the line's newest sweep: both older sweeps are superseded, all their concurrencies,
    #    each by the sweep right after its own (the export's sweep -> its re-dated copy -> the partial re-sweep)
    assert {r["superseded_by"] for r in original} == {"gha:9000000001"}
    assert {r["superseded_by"] for r in redated} == {"gha:9000000002"}
    assert [r["superseded_by"] for r in partial + [repeat]] == [None, None, None]
    assert {r["sweep_id"] for r in redated} == {"gha:9000000001"}
    # 2. the repeat: same line, sweep and conc as the partial sweep's lowest concurrency, other numbers
    assert repeat["conc"] == partial[0]["conc"] == concs[0]
    assert repeat["repeat_n"] == partial[0]["repeat_n"] == 2 and partial[1]["repeat_n"] == 1
    assert repeat["repeat_group"] == partial[0]["repeat_group"]

    # frontiers: no superseded run anywhere; the line's points are the partial sweep's two concurrencies
    frontiers = [p for p in unrestricted(run.mart("frontiers")).to_pylist() if p["price_book"] == "inferencex-seed"]
    superseded = {r["run_id"] for r in runs if r["superseded_by"] is not None}
    assert superseded and not superseded & {p["run_id"] for p in frontiers}
    line_points = [p for p in frontiers if p["line_id"] == partial[0]["line_id"]]
    assert line_points and {p["run_id"] for p in line_points} <= {r["run_id"] for r in partial + [repeat]}
    # the repeat group's point carries the run_id of its member that sorts first
    mean_point = next(p for p in line_points if p["repeat_group"] == partial[0]["repeat_group"])
    assert mean_point["run_id"] == min(partial[0]["run_id"], repeat["run_id"])
    t1, t2 = (history["rows"][0]["metrics"]["tput_per_gpu"] * f for f in (3.0, 3.2))
    assert mean_point["repeat_n"] == 2 and mean_point["tput_per_gpu"] == pytest.approx((t1 + t2) / 2)
    half = T_975_1 * abs(t2 - t1) / 2
    assert (mean_point["tput_per_gpu_ci_lo"], mean_point["tput_per_gpu_ci_hi"]) == pytest.approx(
        ((t1 + t2) / 2 - half, (t1 + t2) / 2 + half))
    i1, i2 = (1 / (history["rows"][0]["metrics"]["median_tpot"] / f ** 0.5) for f in (3.0, 3.2))
    assert mean_point["median_intvty"] == pytest.approx((i1 + i2) / 2)

    # as of a day between the re-dated copy and the partial re-sweep: the re-dated sweep, every concurrency
    side = Side("dsr1", rows[0]["isl"], rows[0]["osl"], hw, precision, spec, framework)
    as_of = history["day0"] + dt.timedelta(days=15)
    then = build_frontiers([r for r in run.mart("runs").to_pylist()], [side], as_of=as_of).to_pylist()
    redated_ids = {r["run_id"] for r in redated}
    then_line = [p for p in then if p["line_id"] == partial[0]["line_id"]]
    assert then_line and {p["run_id"] for p in then_line} <= redated_ids
    assert not {p["run_id"] for p in then} & {r["run_id"] for r in partial + [repeat]}

    # trends: on the partial re-sweep's day the line contributes its three runs, the group's other lines theirs as
    # of that day (counted here from the export: each line's newest date, then newest workflow, up to that day)
    day = history["day0"] + dt.timedelta(days=20)
    group = [r for r in history["export"] if (r["hardware"], r["framework"], r["precision"], r["spec_method"],
                                              r["isl"], r["osl"]) == (hw, framework, precision, spec, rows[0]["isl"], rows[0]["osl"])]
    others = {}
    for r in group:
        k = tuple(r[t] for t in TOPOLOGY)
        if k != tuple(rows[0][t] for t in TOPOLOGY):
            others.setdefault(k, []).append(r)
    expected = 3
    for members in others.values():
        newest = max((r["date"], _workflow(r)) for r in members)
        expected += sum((r["date"], _workflow(r)) == newest for r in members)
    trend = [t for t in run.mart("trends").to_pylist() if t["price_book"] == "inferencex-seed" and t["run_date"] == day
             and (t["hw"], t["framework"], t["precision"], t["spec_decoding"]) == (hw, framework, precision, spec)]
    # one row per target of each comparison holding the group, every one of the same day's frontier
    assert trend and {t["runs"] for t in trend} == {expected}

    # the raw vLLM result and its agg row: one measurement; the raw run, with its request counts, is kept
    quarantine = run.mart("quarantine").to_pylist()
    (dup,) = [q for q in quarantine if q["reason_code"] == "duplicate_run"]
    (raw_run,) = [r for r in runs if r["source_file"] == RAW]
    assert dup["source_file"] == AGG and dup["duplicate_of"] == raw_run["run_id"]
    assert not [r for r in runs if r["source_file"] == AGG]

    # every comparison the export's configurations give is still there
    # (the export's keys normalized as ingest normalizes every source's; the latest rule plays no part here)
    configs = [{"model": r["model"], "isl": r["isl"], "osl": r["osl"], "hw": normalize_hw(r["hardware"]),
                "precision": normalize_precision(r["precision"]), "spec_decoding": normalize_spec(r["spec_method"]),
                "framework": normalize_framework(r["framework"])} for r in history["export"]]
    expected_ids = {c.comparison_id for c in enumerate_comparisons(configs)}
    assert expected_ids <= set(unrestricted(run.mart("comparisons")).column("comparison_id").to_pylist())


def test_a_partition_run_never_displaces_a_run_accepted_in_another_partition():
    from pipeline.ingest.schema import RUN_SCHEMA
    from pipeline.validate.rules import validate_table

    raw = _run("raw", "vllm/x.json", date=D1, median_tpot_s=0.0174, median_ttft_s=0.297, median_e2el_s=16.26,
               total_tput_tok_s=445.0, run_date_partition="2026-07-01", source_format="vllm_bench_serve")
    agg = _run("agg", "inferencex/agg_x.json", ep=1, median_tpot_s=0.0174, median_ttft_s=0.297, median_e2el_s=16.26,
               reported_tput_per_gpu=55.6, run_date_partition="undated", source_format="inferencex_agg")
    table = lambda *rows: pa.Table.from_pylist(list(rows), schema=RUN_SCHEMA)  # noqa: E731
    # the undated agg row arrives while the dated raw result is accepted: the agg row is the duplicate
    accepted, rejected = validate_table(table(agg), ["mi355x"], accepted_elsewhere=table(raw))
    assert accepted.num_rows == 0 and rejected.to_pylist()[0]["duplicate_of"] == "raw"
    # the other way round the accepted agg row stays (a full refresh keeps the dated copy instead)
    accepted, rejected = validate_table(table(raw), ["mi355x"], accepted_elsewhere=table(agg))
    assert accepted.num_rows == 0 and rejected.to_pylist()[0]["duplicate_of"] == "agg"
    assert validate_table(table(raw, agg), ["mi355x"])[1].to_pylist()[0]["duplicate_of"] == "raw"


def test_intervals_of_many_groups_equal_each_groups_interval_by_numpy():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 6, size=500)
    group = np.repeat(np.arange(sizes.size), sizes)
    rng.shuffle(group)  # members of a group are spread over the rows
    values = rng.random(group.size) * 1000
    lo, hi = t_intervals(values, group, np.bincount(group))
    for g, n in enumerate(sizes):
        members = values[group == g]
        if n < 2:
            assert np.isnan(lo[g]) and np.isnan(hi[g])
            continue
        half = stats.t.ppf(0.975, n - 1) * members.std(ddof=1) / np.sqrt(n)
        assert (lo[g], hi[g]) == (members.mean() - half, members.mean() + half)


def test_row_codes_number_combinations_in_order_of_first_appearance():
    table = pa.Table.from_batches([pa.record_batch({"a": ["x", "y", "x"], "b": [1, 2, 1]}),
                                   pa.record_batch({"a": [None, "y", None], "b": [1, 3, 1]})])
    assert row_codes(table, ["a", "b"]).tolist() == [0, 1, 0, 2, 3, 2]  # null is a value of its own
    assert row_codes(table, ["b"]).tolist() == [0, 1, 0, 0, 2, 0]


def _random_history(rng, rows):
    """Rows that reach every branch of the latest rule: several lines, sweeps of every kind (gha ids of any
    length, numeric and textual sweep ids with leading zeros, dates, undated), repeats, rows shared by two price
    books, undated and pre-1970 runs, a null conc."""
    sweeps = ["gha:9", "gha:10", "gha:0010", "gha:123456789012345678901234567890", "sweep:alpha", "sweep:007",
              "sweep:7", "date:2026-07-01", "date:2026-07-02", "undated"]
    days = [None, dt.date(1969, 12, 31), dt.date(2026, 7, 1), dt.date(2026, 7, 2), dt.date(2026, 7, 9)]
    out = []
    for i in range(rows):
        run = f"r{rng.integers(0, rows)}"  # repeats of one run_id: one row per price book
        out.append({"run_id": run, "line_id": f"L{rng.integers(0, 6)}", "sweep_id": sweeps[rng.integers(0, 10)],
                    "conc": None if rng.random() < 0.05 else int(rng.choice([4, 8, 16])),
                    "run_date": days[rng.integers(0, len(days))]})
    return out


@pytest.mark.parametrize("seed", range(6))
def test_lineage_as_column_work_equals_the_row_by_row_rule(seed):
    from lineage_reference import reference_lineage

    rng = np.random.default_rng(seed)
    runs = _random_history(rng, 400)
    for as_of in (None, dt.date(1969, 12, 31), dt.date(2026, 7, 1), dt.date(2026, 7, 5)):
        assert run_lineage(runs, as_of).equals(reference_lineage(runs, as_of)), as_of
    assert run_lineage(runs[:1]).equals(reference_lineage(runs[:1]))  # one row: no successor, alone


@pytest.mark.parametrize("seed", range(6))
def test_current_sweeps_by_date_equals_the_lineage_as_of_each_day(seed):
    """The one-pass state trends read (one step per sweep and date) against ``run_lineage(as_of=day)`` on random
    histories: the same current rows every day, each line's rows in pass order (undated first, then by date,
    then table order), and only rows of that line."""
    runs = pa.Table.from_pylist(_random_history(np.random.default_rng(seed), 400))
    days = [dt.date(1969, 12, 31), dt.date(2026, 7, 1), dt.date(2026, 7, 2), dt.date(2026, 7, 5), dt.date(2026, 7, 9)]
    dates, lines = runs["run_date"].to_pylist(), runs["line_id"].to_pylist()
    seen = 0
    for day, current in current_sweeps_by_date(runs, days):
        flags = run_lineage(runs, as_of=day)["current"].to_pylist()
        assert sorted(i for rows in current.values() for i in rows) == [i for i, c in enumerate(flags) if c], day
        for line, rows in current.items():
            assert rows == sorted(rows, key=lambda i: (dates[i] is not None, dates[i] or dt.date.min, i))
            assert {lines[i] for i in rows} == {line}
        seen += 1
    assert seen == len(days)


def _random_fleet(rng, runs):
    """``validated_runs``-like rows for ``refresh_lineage``: a few lines (models), sweeps named by a workflow URL,
    a sweep_id key or the date, dates that go back and forth (undated and pre-1970 too), each run priced in one
    or two price books (one row per book in ``run_metrics``)."""
    days = [None, dt.date(1969, 12, 31), dt.date(2026, 7, 1), dt.date(2026, 7, 2), dt.date(2026, 7, 9)]
    urls = [None, None, "https://github.com/o/r/actions/runs/9/job/1", "https://github.com/o/r/actions/runs/10",
            "https://example.com/sweep"]
    out = []
    for i in range(runs):
        out.append({"run_id": f"r{i:04d}", "model": f"m{rng.integers(0, 4)}", "conc": int(rng.choice([4, 8])),
                    "run_url": urls[rng.integers(0, len(urls))],
                    "sweep_id": None if rng.random() < 0.6 else str(rng.choice(["7", "007", "alpha"])),
                    "run_date": days[rng.integers(0, len(days))], "books": int(rng.integers(1, 3))})
    return out


@pytest.mark.parametrize("seed", range(8))
def test_refreshing_the_lineage_night_by_night_equals_computing_it_whole(seed, monkeypatch):
    """Runs arrive in random nights (some sweeps only growing at their line's newest end, some landing in a
    line's past), and some leave again: after every night ``refresh_lineage`` leaves run_metrics' lineage columns
    equal to ``run_lineage`` over every run, and names every run date whose rows changed. Both the
    newest-end path and the whole-line path run."""
    import duckdb

    import pipeline.metrics.lineage as lineage_module
    from pipeline.metrics.lineage import LINEAGE_COLUMNS, refresh_lineage

    rng = np.random.default_rng(seed)
    fleet = _random_fleet(rng, 160)
    if seed % 2:  # mostly in date order, as a fleet's nights arrive
        fleet.sort(key=lambda r: (r["run_date"] is not None, r["run_date"] or dt.date.min))
    paths = {"appended": 0, "whole": 0}
    real = lineage_module.appended_lines

    def spy(conn, lines):
        appended, heads = real(conn, lines)
        paths["appended"] += len(appended)
        paths["whole"] += len(lines) - len(appended)
        return appended, heads

    monkeypatch.setattr(lineage_module, "appended_lines", spy)
    conn = duckdb.connect()
    others = [c for c in LINE_COLUMNS if c != "model"]  # the rest of a line's columns, null here
    conn.execute("create table validated_runs (run_id varchar, model varchar, run_url varchar, sweep_id varchar, "
                 f"run_date date, {', '.join(f'{c} varchar' for c in others)})")
    conn.execute("create table run_metrics (run_id varchar, price_book varchar, conc integer, run_date date, "
                 "run_date_partition varchar, line_id varchar, sweep_id varchar, superseded_by varchar, "
                 "repeat_group varchar, repeat_n integer)")
    present: list[dict] = []
    start = 0
    while start < len(fleet):
        night = fleet[start:start + int(rng.integers(5, 30))]
        start += len(night)
        lost = set()
        if present and rng.random() < 0.3:  # some runs leave (their files were removed)
            gone = {r["run_id"] for r in present if rng.random() < 0.1}
            lost = {row[0] for row in conn.execute(
                "select distinct line_id from run_metrics where list_contains(?, run_id)", [sorted(gone)]).fetchall()}
            conn.execute("delete from validated_runs where list_contains(?, run_id)", [sorted(gone)])
            conn.execute("delete from run_metrics where list_contains(?, run_id)", [sorted(gone)])
            present = [r for r in present if r["run_id"] not in gone]
        before = {row[0]: row[1:] for row in conn.execute(
            "select run_id || price_book, superseded_by, repeat_group, repeat_n, run_date_partition "
            "from run_metrics").fetchall()}
        for run in night:
            conn.execute(f"insert into validated_runs values (?, ?, ?, ?, ?{', null' * len(others)})",
                         [run["run_id"], run["model"], run["run_url"], run["sweep_id"], run["run_date"]])
            partition = "undated" if run["run_date"] is None else run["run_date"].isoformat()
            for book in range(run["books"]):
                conn.execute("insert into run_metrics values (?, ?, ?, ?, ?, null, null, null, null, null)",
                             [run["run_id"], f"book{book}", run["conc"], run["run_date"], partition])
        present += night
        changed = refresh_lineage(conn, lost)

        stored = conn.sql("select run_id, price_book, conc, run_date, line_id, sweep_id, superseded_by, "
                          "repeat_group, repeat_n, run_date_partition from run_metrics "
                          "order by run_id, price_book").to_arrow_table()
        expected = run_lineage(stored.select(["run_id", "conc", "run_date", "line_id", "sweep_id"]))
        for column in LINEAGE_COLUMNS:
            assert stored[column].equals(expected[column].cast(stored[column].type)), (seed, start, column)
        moved = {row[4] for row in conn.execute(
            "select run_id || price_book, superseded_by, repeat_group, repeat_n, run_date_partition "
            "from run_metrics").fetchall() if before.get(row[0]) != row[1:] and row[0] in before}
        assert moved <= set(changed), (seed, start)
    assert paths["appended"] > 0 and paths["whole"] > 0, paths


def test_refreshing_the_lineage_reads_only_the_lines_of_the_batch(monkeypatch):
    """Work follows the batch: a new run in one line's past recomputes that line's runs alone; the other
    line's rows are not read, and a night with no new run and no lost line reads none."""
    import duckdb

    import pipeline.metrics.lineage as lineage_module
    from pipeline.metrics.lineage import refresh_lineage

    read: list[set[str]] = []
    read_runs: list[set[str]] = []
    real = lineage_module.run_lineage

    def spy(runs):
        read.append(set(runs["line_id"].to_pylist()))
        read_runs.append(set(runs["run_id"].to_pylist()))
        return real(runs)

    monkeypatch.setattr(lineage_module, "run_lineage", spy)
    conn = duckdb.connect()
    others = [c for c in LINE_COLUMNS if c != "model"]
    conn.execute("create table validated_runs (run_id varchar, model varchar, run_url varchar, sweep_id varchar, "
                 f"run_date date, {', '.join(f'{c} varchar' for c in others)})")
    conn.execute("create table run_metrics (run_id varchar, price_book varchar, conc integer, run_date date, "
                 "run_date_partition varchar, line_id varchar, sweep_id varchar, superseded_by varchar, "
                 "repeat_group varchar, repeat_n integer)")

    def arrive(run_id, model, day, sweep=None):
        conn.execute(f"insert into validated_runs values (?, ?, null, ?, ?{', null' * len(others)})",
                     [run_id, model, sweep, day])
        conn.execute("insert into run_metrics values (?, 'book', 8, ?, ?, null, null, null, null, null)",
                     [run_id, day, day.isoformat()])

    for n, model in enumerate(("m0", "m1")):
        arrive(f"a{n}", model, dt.date(2026, 7, 2))
        arrive(f"b{n}", model, dt.date(2026, 7, 9))
    refresh_lineage(conn)
    line = dict(conn.execute("select run_id, line_id from run_metrics").fetchall())
    assert line["a0"] == line["b0"] != line["a1"] == line["b1"]
    read.clear()
    arrive("c0", "m0", dt.date(2026, 7, 1))  # an older sweep of m0's line: its whole history is read again
    assert refresh_lineage(conn) == ["2026-07-01"]  # only the new row's partition changed
    assert read == [{line["a0"]}]
    read.clear()
    read_runs.clear()
    # a newer date extends m1's line at its newest end: its current sweep (b1's date) and the new row are read,
    # not its older sweep
    arrive("d1", "m1", dt.date(2026, 7, 10))
    assert refresh_lineage(conn) == ["2026-07-09", "2026-07-10"]  # b1 is superseded now
    assert read_runs == [{"b1", "d1"}]
    # sweeps are ordered by their newest date before their id: sweep 5 of 07-10 is newer than sweep 20 of 07-09,
    # which superseded sweep 30 of 07-01, so m2's new row only extends its line too
    arrive("e2", "m2", dt.date(2026, 7, 1), "30")
    arrive("f2", "m2", dt.date(2026, 7, 9), "20")
    refresh_lineage(conn)
    read_runs.clear()
    arrive("g2", "m2", dt.date(2026, 7, 10), "5")
    refresh_lineage(conn)
    assert read_runs == [{"f2", "g2"}]
    read.clear()
    refresh_lineage(conn)  # nothing new: the lineage of no line is read
    assert read in ([], [set()])
    # the tables it registered on the connection (_ids, _lines, _head, _touched, _lineage) are gone again
    assert conn.sql("select view_name from duckdb_views() where not internal").fetchall() == []


def test_frontier_runs_names_missing_columns_keeps_price_books_apart_and_reads_only_runs():
    """The missing-column message in full (LINEAGE_INPUT_COLUMNS order); one run priced in two books is two
    points, one per book, not a repeat of itself; an empty only_runs keeps no run."""
    with pytest.raises(ValueError) as raised:
        frontier_runs([{"run_id": "r", "price_book": "b", "conc": 8}], [])
    assert str(raised.value) == "frontier_runs: runs lack column(s) run_date, line_id, sweep_id"
    one = _row("r1", D1, "date:2026-07-01", 8, 10.0, 100.0)
    books = [{**one, "price_book": "b1", "cost_per_mtok_hyperscaler": 1.0},
             {**one, "price_book": "b2", "cost_per_mtok_hyperscaler": 3.0}]
    points = frontier_runs(books, ["cost_per_mtok_hyperscaler"])
    assert points["price_book"].to_pylist() == ["b1", "b2"]
    assert points["repeat_n"].to_pylist() == [1, 1]
    assert points["cost_per_mtok_hyperscaler"].to_pylist() == [1.0, 3.0]  # each book's own cost, not their mean
    assert frontier_runs(books, [], only_runs=[]).num_rows == 0


def test_average_repeats_nulls_a_mean_some_member_lacks_and_keeps_each_column_type():
    """A group one of whose members lacks a metric gets null there (not the mean of the others over all
    members); an integer column's mean keeps its type; without any repeat the interval columns are float64
    nulls."""
    from pipeline.frontiers.latest import CI_COLUMNS, average_repeats

    table = pa.table({"median_intvty": [1.0, 3.0, 5.0], "tput_per_gpu": [10.0, 30.0, 50.0],
                      "m": pa.array([1.0, None, 7.0]), "k": pa.array([2, 4, 6], pa.int64())})
    out = average_repeats(table, ["a", "a", "b"], ["m", "k"])
    # by hand: group a = rows 0, 1 (means 2.0, 20.0; m lacks row 1's value; k (2 + 4) / 2 = 3), group b = row 2
    assert out["median_intvty"].to_pylist() == [2.0, 5.0] and out["tput_per_gpu"].to_pylist() == [20.0, 50.0]
    assert out["m"].to_pylist() == [None, 7.0]
    assert out["k"].type == pa.int64() and out["k"].to_pylist() == [3, 6]
    single = average_repeats(pa.table({"median_intvty": [1.0], "tput_per_gpu": [2.0]}), ["x"], [])
    for name in CI_COLUMNS:
        assert single[name].type == pa.float64() and single[name].to_pylist() == [None]


def test_repeat_spread_needs_a_positive_smallest_member():
    """(max − min) / min is read only where the smallest member is positive: members 0 and 5 have no spread
    (null, and so no disagreement), members 0.5 and 1.0 a spread of (1.0 − 0.5) / 0.5 = 1.0, which disagrees."""
    from pipeline.frontiers.latest import average_repeats, repeat_spreads

    spread = repeat_spreads(np.array([0.0, 5.0, 0.5, 1.0]), np.array([0, 0, 1, 1]), np.array([2, 2]))
    assert np.isnan(spread[0]) and spread[1] == 1.0
    out = average_repeats(pa.table({"median_intvty": [1.0, 1.0, 2.0, 2.0], "tput_per_gpu": [0.0, 5.0, 0.5, 1.0]}),
                          ["a", "a", "b", "b"], [])
    assert out["repeat_spread"].to_pylist() == [None, 1.0]
    assert out["repeats_disagree"].to_pylist() == [False, True]


# --- every id string, every lineage column, written out by hand ------------------------------------------------

D0 = dt.date(2026, 6, 30)


def test_line_id_writes_every_part_of_a_single_node_line():
    """A single-node line id in full: PP and PCP only when not 1, EP and DP attention read from absent values, the
    KV-cache offload only when it names one, and ``agentic`` in place of the ISL/OSL of an agentic-trace run."""
    base = {"model": "gptoss", "isl": 8192, "osl": 1024, "hw": "b200", "framework": "trt", "precision": "fp8",
            "spec_decoding": "none", "tp": 4, "ep": 8, "dp_attention": True, "disagg": False}
    # pp 2, pcp 3: both written after dpa, in that order; kv_offload lmcache: after spec
    assert line_id(dict(base, pp=2, pcp=3, kv_offload="lmcache")) == (
        "gptoss|8192/1024|b200|trt|fp8|spec=none|kv=lmcache|tp=4,ep=8,dpa=true,pp=2,pcp=3")
    # pp 1 and pcp absent are the default: not written; an offload of none, '' or null is no offload
    for offload in ("none", "", None):
        assert line_id(dict(base, pp=1, kv_offload=offload)) == "gptoss|8192/1024|b200|trt|fp8|spec=none|tp=4,ep=8,dpa=true"
    # pcp 2 alone; ep 0 or absent reads 1; dp_attention absent reads false
    assert line_id(dict(base, pcp=2, ep=0, dp_attention=None)) == (
        "gptoss|8192/1024|b200|trt|fp8|spec=none|tp=4,ep=1,dpa=false,pcp=2")
    # an agentic-trace run: 'agentic' where 8192/1024 stood, whatever its ISL/OSL columns say
    assert line_id(dict(base, benchmark_type="agentic_traces", kv_offload="lmcache")) == (
        "gptoss|agentic|b200|trt|fp8|spec=none|kv=lmcache|tp=4,ep=8,dpa=true")
    assert line_id(dict(base, benchmark_type="fixed_seq")) == "gptoss|8192/1024|b200|trt|fp8|spec=none|tp=4,ep=8,dpa=true"
    # nothing at all: every absent value as Python writes None, EP 1, flags false
    assert line_id({}) == "None|None/None|None|None|None|spec=None|tp=None,ep=1,dpa=false"


def test_line_id_writes_every_part_of_a_disaggregated_line():
    """A disaggregated line id in full: multinode flag, the prefill side (tp, ep, dpa, workers, gpus) and the decode
    side (its topology, workers, gpus), absent EPs read 1 and absent flags false."""
    pd = {"model": "dsr1", "isl": 1024, "osl": 1024, "hw": "mi355x", "framework": "sglang", "precision": "fp4",
          "spec_decoding": "none", "tp": 8, "ep": None, "dp_attention": False, "disagg": True, "is_multinode": True,
          "prefill_tp": 8, "prefill_ep": 8, "prefill_dp_attention": True, "prefill_num_workers": 1,
          "decode_num_workers": 4, "num_prefill_gpu": 8, "num_decode_gpu": 32}
    assert line_id(pd) == ("dsr1|1024/1024|mi355x|sglang|fp4|spec=none|disagg,multinode=true"
                           "|prefill:tp=8,ep=8,dpa=true,workers=1,gpus=8|decode:tp=8,ep=1,dpa=false,workers=4,gpus=32")
    # prefill_ep absent reads 1, prefill dpa and multinode absent read false; decode pp 2 follows the decode dpa
    other = {k: v for k, v in pd.items() if k not in ("prefill_ep", "prefill_dp_attention", "is_multinode")}
    assert line_id(dict(other, tp=2, ep=4, dp_attention=True, pp=2, prefill_tp=4, prefill_num_workers=3,
                        decode_num_workers=2, num_prefill_gpu=12, num_decode_gpu=16)) == (
        "dsr1|1024/1024|mi355x|sglang|fp4|spec=none|disagg,multinode=false"
        "|prefill:tp=4,ep=1,dpa=false,workers=3,gpus=12|decode:tp=2,ep=4,dpa=true,pp=2,workers=2,gpus=16")


@pytest.mark.parametrize(("run", "expected"), [
    ({"run_url": "https://github.com/o/r/actions/runs/77"}, "gha:77"),
    ({"run_url": "https://github.com/o/r/actions/runs/77/job/5", "sweep_id": "s"}, "gha:77"),
    ({"run_url": "https://github.com/o/r/actions/runs/77/attempts/1"}, "gha:77"),
    ({"run_url": "https://github.com/o/r/actions/runs/77/attempts/2"}, "gha:77/attempt/2"),
    ({"run_url": "https://github.com/o/r/actions/runs/77/attempts/13", "run_date": D1}, "gha:77/attempt/13"),
    ({"run_url": "https://example.com/sweeps/9", "sweep_id": "s"}, "sweep:https://example.com/sweeps/9"),
    ({"run_url": "", "sweep_id": "n7", "run_date": D1}, "sweep:n7"),
    ({"run_url": None, "sweep_id": "", "run_date": D1}, "date:2026-07-01"),
    ({"run_url": None, "sweep_id": None, "run_date": None}, "undated"),
])
def test_sweep_id_of_each_kind_of_run(run, expected):
    """``sweep_id``: a workflow URL's run id (attempt 1 or none: ``gha:<id>``; attempt k ≥ 2: ``gha:<id>/attempt/<k>``),
    any other URL whole, else the sweep_id key, else the date, else ``undated``; empty strings count as absent."""
    assert sweep_id(run) == expected


def test_workflow_attempt_reads_only_gha_ids():
    """``workflow_attempt``: (run id, attempt) of ``gha:<id>`` (attempt 1) and ``gha:<id>/attempt/<k>``, the id as
    a number; None for any other kind or a gha value of another shape."""
    from pipeline.validate.lines import workflow_attempt

    assert workflow_attempt("gha:12") == (12, 1)
    assert workflow_attempt("gha:0012") == (12, 1)
    assert workflow_attempt("gha:12/attempt/3") == (12, 3)
    for other in ("sweep:12", "sweep:12/attempt/3", "date:2026-07-01", "undated", "gha:abc", "gha:12/attempt/",
                  "gha:12/attempt/3x", "gha:", "12"):
        assert workflow_attempt(other) is None, other


def test_lower_attempts_map_to_the_highest_attempt_of_their_workflow_run():
    """Each gha sweep of a workflow run with a higher attempt among the ids → that run's highest attempt; a run with
    one attempt, and ids of other kinds (even with the same number), map to nothing."""
    from pipeline.validate.lines import _lower_attempts

    ids = ["gha:5", "gha:5/attempt/3", "gha:6", "gha:5/attempt/2", "sweep:5", "date:2026-07-01", "undated",
           "gha:8/attempt/2"]
    # workflow 5: attempts 1, 3, 2 → 3 is highest; workflow 6 and 8: one attempt each
    assert _lower_attempts(ids) == {"gha:5": "gha:5/attempt/3", "gha:5/attempt/2": "gha:5/attempt/3"}
    assert _lower_attempts(["gha:6"]) == {} and _lower_attempts([]) == {}


def test_sweep_order_key_in_full():
    """Every element of the key: the date's ordinal (−1 undated), the kind's rank (undated 0, date 1, sweep 2,
    gha 3), whether the id is a number, that number (a gha id's workflow run), the attempt, the id's text."""
    assert sweep_order_key(D1, "gha:12/attempt/3") == (D1.toordinal(), 3, True, 12, 3, "12/attempt/3")
    assert sweep_order_key(None, "gha:12") == (-1, 3, True, 12, 1, "12")
    assert sweep_order_key(D2, "sweep:007") == (D2.toordinal(), 2, True, 7, 1, "007")
    assert sweep_order_key(D2, "sweep:alpha") == (D2.toordinal(), 2, False, 0, 1, "alpha")
    assert sweep_order_key(D1, "date:2026-07-01") == (D1.toordinal(), 1, False, 0, 1, "2026-07-01")
    assert sweep_order_key(None, "undated") == (-1, 0, False, 0, 1, "")
    # attempts of one workflow run on one day: by attempt number, after the plain id
    assert sweep_order_key(D1, "gha:12") < sweep_order_key(D1, "gha:12/attempt/2") < sweep_order_key(D1, "gha:12/attempt/10")


def test_line_and_sweep_ids_read_absent_columns_as_null():
    """``line_and_sweep_ids``: one id pair per row, in row order; a column the table lacks reads null; an empty
    table gives two empty lists."""
    from pipeline.validate.lines import line_and_sweep_ids

    table = pa.table({"model": ["a", "b", "a"], "tp": [8, 8, 8],
                      "run_url": [None, "https://github.com/o/r/actions/runs/5", None],
                      "run_date": pa.array([D1, D1, None], pa.date32())})
    assert line_and_sweep_ids(table) == (
        ["a|None/None|None|None|None|spec=None|tp=8,ep=1,dpa=false",
         "b|None/None|None|None|None|spec=None|tp=8,ep=1,dpa=false",
         "a|None/None|None|None|None|spec=None|tp=8,ep=1,dpa=false"],
        ["date:2026-07-01", "gha:5", "undated"])
    assert line_and_sweep_ids(table.slice(0, 0)) == ([], [])


def test_run_lineage_refuses_a_row_without_line_or_sweep():
    """A null ``line_id`` or ``sweep_id`` is refused with the message that says how to compute them."""
    message = "run_lineage: a row without line_id or sweep_id (compute them with line_and_sweep_ids)"
    for line, sweep in ((None, "undated"), ("L", None)):
        with pytest.raises(ValueError) as raised:
            run_lineage([{"run_id": "r", "conc": 4, "run_date": D1, "line_id": line, "sweep_id": sweep}])
        assert str(raised.value) == message


EARLY = dt.date(2026, 6, 1)
# (run_id, line, sweep, conc, run_date): lines that reach every branch of the latest rule
#   L: workflow run 5 (two runs of one conc: a repeat) re-run as attempt 2 on D2
#   M: an older sweep on D0, then workflow run 5 on D1, which attempt 2 did not measure again
#   N: one sweep;  U: undated runs, one with a null conc
#   P: attempt 2 of workflow run 7 dated before its attempt 1
#   Q: sweep:q's undated run and its D1 run, sweep:r on D0
#   R: sweep:z on D0 and again on D2, sweep:a on D1 between them
#   K: workflow run 5 alone, which attempt 2 did not measure again: K has no current sweep once attempt 2 is seen
FLEET = [("a1", "L", "gha:5", 4, D1), ("a1b", "L", "gha:5", 4, D1), ("a2", "L", "gha:5/attempt/2", 4, D2),
         ("m1", "M", "gha:5", 8, D1), ("m0", "M", "sweep:old", 8, D0), ("n1", "N", "gha:9", 4, D1),
         ("u", "U", "undated", 4, None), ("p2", "P", "gha:7/attempt/2", 4, D1), ("p1", "P", "gha:7", 4, D2),
         ("q0", "Q", "sweep:q", 4, None), ("q1", "Q", "sweep:q", 8, D1), ("z0", "R", "sweep:z", 4, D0),
         ("a", "R", "sweep:a", 4, D1), ("z2", "R", "sweep:z", 8, D2), ("r0", "Q", "sweep:r", 4, D0),
         ("u2", "U", "undated", None, None), ("k1", "K", "gha:5", 4, D1)]


def _fleet_rows():
    return [{"run_id": r, "line_id": line, "sweep_id": sweep, "conc": conc, "run_date": day}
            for r, line, sweep, conc, day in FLEET]


def _lineage_by_hand(superseded, current, repeat_n=None):
    """The LINEAGE_SCHEMA rows of FLEET from a hand-made {run_id: superseded_by}, set of current runs and
    {run_id: repeat_n} (1 for the others)."""
    return [{"run_id": r, "line_id": line, "sweep_id": sweep, "superseded_by": superseded.get(r),
             "repeat_group": f"{line}|{sweep}|conc={conc}", "repeat_n": (repeat_n or {}).get(r, 1),
             "current": r in current} for r, line, sweep, conc, day in FLEET]


def test_run_lineage_of_a_fleet_with_attempts_written_out():
    """Every lineage column of every row, now: workflow run 5's attempt 1 leaves both lines it measured (named by
    attempt 2; M falls back to its older sweep), attempt 1 of run 7 is out though dated after attempt 2, a sweep
    dated again later wins on its newest date, an undated sweep is the oldest; the dropped repeat counts 1; K,
    measured by attempt 1 alone, has no current run."""
    lineage = run_lineage(_fleet_rows())
    assert lineage.schema == pa.schema([("run_id", pa.string()), ("line_id", pa.string()), ("sweep_id", pa.string()),
                                        ("superseded_by", pa.string()), ("repeat_group", pa.string()),
                                        ("repeat_n", pa.int32()), ("current", pa.bool_())])
    # L: gha:5 out (attempt 2 visible); M: gha:5 out, sweep:old alone; P: gha:7 out; Q: sweep:q (D1) > sweep:r (D0);
    # R: sweep:z (newest D2) > sweep:a (D1)
    assert lineage.to_pylist() == _lineage_by_hand(
        {"a1": "gha:5/attempt/2", "a1b": "gha:5/attempt/2", "m1": "gha:5/attempt/2", "p1": "gha:7/attempt/2",
         "r0": "sweep:q", "a": "sweep:z", "k1": "gha:5/attempt/2"},
        {"a2", "m0", "n1", "u", "p2", "q0", "q1", "z0", "z2", "u2"})
    # the rows as a table give the same
    assert run_lineage(pa.Table.from_pylist(_fleet_rows())).equals(lineage)


def test_run_lineage_of_a_fleet_as_of_each_day_written_out():
    """Every lineage column as of D1 (attempt 2 of run 5 not yet visible: run 5 is L's and M's newest sweep, the
    repeat counts 2; R's sweep:z is dated D0 only, so sweep:a wins), as of D0 (Q's undated sweep loses to sweep:r)
    and before every date (undated runs alone); runs not yet visible are neither current nor superseded."""
    as_d1 = _lineage_by_hand({"m0": "gha:5", "r0": "sweep:q", "z0": "sweep:a"},
                             {"a1", "a1b", "m1", "n1", "u", "p2", "q0", "q1", "a", "u2", "k1"}, {"a1": 2, "a1b": 2})
    assert run_lineage(_fleet_rows(), as_of=D1).to_pylist() == as_d1
    as_d0 = _lineage_by_hand({"q0": "sweep:r"}, {"m0", "u", "z0", "r0", "u2"})
    assert run_lineage(_fleet_rows(), as_of=D0).to_pylist() == as_d0
    assert run_lineage(_fleet_rows(), as_of=EARLY).to_pylist() == _lineage_by_hand({}, {"u", "q0", "u2"})


def test_current_sweeps_by_date_of_a_fleet_written_out():
    """Each day once, in ascending order, each visible line (iterated in sorted order) → its current sweep's
    visible row positions (undated first, then by date, then table order): a lower attempt leaves the line when the
    higher one appears, a line whose only newer sweep left falls back to its older one, and a line with no other
    sweep leaves the view."""
    table = pa.Table.from_pylist(_fleet_rows())
    # row positions: a1 0, a1b 1, a2 2, m1 3, m0 4, n1 5, u 6, p2 7, p1 8, q0 9, q1 10, z0 11, a 12, z2 13, r0 14,
    # u2 15, k1 16
    expected = {EARLY: {"U": [6, 15], "Q": [9]},
                D0: {"M": [4], "U": [6, 15], "Q": [14], "R": [11]},
                D1: {"L": [0, 1], "M": [3], "N": [5], "U": [6, 15], "P": [7], "Q": [9, 10], "R": [12], "K": [16]},
                D2: {"L": [2], "M": [4], "N": [5], "U": [6, 15], "P": [7], "Q": [9, 10], "R": [11, 13]}}
    seen = []
    for day, current in current_sweeps_by_date(table, [D2, D0, EARLY, D1, D0]):
        assert len(current) == len(expected[day]) and list(current) == sorted(expected[day]), day  # sorted lines
        assert {line: current[line] for line in current} == expected[day], day
        seen.append(day)
    assert seen == [EARLY, D0, D1, D2]


def test_row_codes_keep_a_null_apart_from_every_value_of_a_later_column():
    """A null in a later column is a value of its own: (x, p) and (y, null) are two combinations, and so are
    (x, null) and (x, p); an empty table gives an empty int64 array."""
    table = pa.table({"a": ["x", "y", "x", "x"], "b": ["p", None, None, "p"]})
    # combinations in order of first appearance: (x, p) 0, (y, null) 1, (x, null) 2, (x, p) again 0
    codes = row_codes(table, ["a", "b"])
    assert codes.dtype == np.int64 and codes.tolist() == [0, 1, 2, 0]
    empty = row_codes(table.slice(0, 0), ["a", "b"])
    assert empty.dtype == np.int64 and empty.tolist() == []


def test_first_appearance_numbers_and_first_rows():
    """``first_appearance_numbers`` renumbers keys 0, 1, 2 … in order of first appearance (int64; empty in, empty
    out); ``first_rows`` gives each code's first row."""
    from pipeline.validate.lines import first_appearance_numbers, first_rows

    # 30 first (0), then 10 (1), then 20 (2): not the sorted order 10, 20, 30
    numbers = first_appearance_numbers(np.array([30, 10, 30, 20, 10]))
    assert numbers.dtype == np.int64 and numbers.tolist() == [0, 1, 0, 2, 1]
    empty = first_appearance_numbers(np.array([], dtype=np.int64))
    assert empty.dtype == np.int64 and empty.shape == (0,)
    # code 0 first at row 1, code 1 at row 0, code 2 at row 3
    rows = first_rows(np.array([1, 0, 1, 2, 0]), 3)
    assert rows.dtype == np.int64 and rows.tolist() == [1, 0, 3]


def test_run_lineage_of_no_rows_and_of_rows_priced_twice():
    """No rows in, no rows out (the lineage schema); a run's rows of two price books count once in its repeat
    group, and each row still gets its lineage."""
    empty = pa.table({"run_id": pa.array([], pa.string()), "line_id": pa.array([], pa.string()),
                      "sweep_id": pa.array([], pa.string()), "conc": pa.array([], pa.int64()),
                      "run_date": pa.array([], pa.date32())})
    out = run_lineage(empty)
    assert out.num_rows == 0 and out.schema == pa.schema([
        ("run_id", pa.string()), ("line_id", pa.string()), ("sweep_id", pa.string()), ("superseded_by", pa.string()),
        ("repeat_group", pa.string()), ("repeat_n", pa.int32()), ("current", pa.bool_())])
    # r1 in two books and r2 in one: two distinct runs in L|gha:3|conc=8; r0 (gha:2) superseded by gha:3
    rows = [{"run_id": r, "line_id": "L", "sweep_id": s, "conc": 8, "run_date": D1}
            for r, s in (("r1", "gha:3"), ("r0", "gha:2"), ("r1", "gha:3"), ("r2", "gha:3"))]
    group = "L|gha:3|conc=8"
    assert run_lineage(rows).to_pylist() == [
        {"run_id": "r1", "line_id": "L", "sweep_id": "gha:3", "superseded_by": None, "repeat_group": group,
         "repeat_n": 2, "current": True},
        {"run_id": "r0", "line_id": "L", "sweep_id": "gha:2", "superseded_by": "gha:3", "repeat_group": "L|gha:2|conc=8",
         "repeat_n": 1, "current": False},
        {"run_id": "r1", "line_id": "L", "sweep_id": "gha:3", "superseded_by": None, "repeat_group": group,
         "repeat_n": 2, "current": True},
        {"run_id": "r2", "line_id": "L", "sweep_id": "gha:3", "superseded_by": None, "repeat_group": group,
         "repeat_n": 2, "current": True}]


def test_sweep_order_key_of_a_sweep_named_by_a_url():
    """A ``sweep:<url>`` id splits at its first colon only: kind ``sweep``, the whole URL as the id's text."""
    assert sweep_order_key(D1, "sweep:https://example.com/sweeps/9") == (
        D1.toordinal(), 2, False, 0, 1, "https://example.com/sweeps/9")


def test_run_lineage_orders_sweeps_of_one_day_by_kind_before_number():
    """Sweeps of one line dated the same day: gha beats sweep beats date (whatever their numbers: sweep:99 loses to
    gha:5), and the undated sweep is older than all; each is superseded by the next in that order."""
    runs = [{"run_id": r, "line_id": "L", "sweep_id": s, "conc": 4, "run_date": day}
            for r, s, day in (("g", "gha:5", D1), ("s", "sweep:99", D1), ("d", "date:2026-07-01", D1),
                              ("u", "undated", None))]
    lineage = run_lineage(runs)
    # oldest to newest: undated, date:2026-07-01, sweep:99, gha:5
    assert lineage["superseded_by"].to_pylist() == [None, "gha:5", "sweep:99", "date:2026-07-01"]
    assert lineage["current"].to_pylist() == [True, False, False, False]


def test_run_lineage_as_of_before_the_last_group_is_visible():
    """A repeat group whose only run is dated after ``as_of`` (here the group first seen last): that run is not
    visible, repeat_n 1, not current, no superseded_by; the visible run is current and alone."""
    runs = [{"run_id": "r1", "line_id": "L", "sweep_id": "gha:1", "conc": 4, "run_date": D1},
            {"run_id": "r2", "line_id": "L", "sweep_id": "gha:2", "conc": 4, "run_date": D2}]
    assert run_lineage(runs, as_of=D1).to_pylist() == [
        {"run_id": "r1", "line_id": "L", "sweep_id": "gha:1", "superseded_by": None, "repeat_group": "L|gha:1|conc=4",
         "repeat_n": 1, "current": True},
        {"run_id": "r2", "line_id": "L", "sweep_id": "gha:2", "superseded_by": None, "repeat_group": "L|gha:2|conc=4",
         "repeat_n": 1, "current": False}]


def test_run_lineage_output_has_the_lineage_schema_whatever_the_input_types():
    """The output is LINEAGE_SCHEMA even when the input's run_id is a large string, its conc int32 and its run_date
    a timestamp (read as its date); the undated sweep gha:2 is older than the dated gha:1."""
    table = pa.table({"run_id": pa.array(["r1", "r2"], pa.large_string()), "line_id": ["L", "L"],
                      "sweep_id": ["gha:1", "gha:2"], "conc": pa.array([4, 4], pa.int32()),
                      "run_date": pa.array([dt.datetime(2026, 7, 1, 5), None], pa.timestamp("us"))})
    out = run_lineage(table)
    assert out.schema == pa.schema([("run_id", pa.string()), ("line_id", pa.string()), ("sweep_id", pa.string()),
                                    ("superseded_by", pa.string()), ("repeat_group", pa.string()),
                                    ("repeat_n", pa.int32()), ("current", pa.bool_())])
    assert out["superseded_by"].to_pylist() == [None, "gha:1"] and out["current"].to_pylist() == [True, False]


def test_lower_attempts_of_a_run_named_twice_take_the_first_highest_id():
    """Two ids of one workflow run's same highest attempt (``gha:5/attempt/2`` and ``gha:05/attempt/2``: the run id
    read as a number): neither is lower, and the lower attempt maps to the one listed first."""
    from pipeline.validate.lines import _lower_attempts

    assert _lower_attempts(["gha:5", "gha:5/attempt/2", "gha:05/attempt/2"]) == {"gha:5": "gha:5/attempt/2"}
    assert _lower_attempts(["gha:5", "gha:05/attempt/2", "gha:5/attempt/2"]) == {"gha:5": "gha:05/attempt/2"}


def test_row_codes_stay_exact_where_the_combined_code_passes_two_to_the_53():
    """Four columns of 16384 distinct values each and a fifth of two: the combined code reaches 16385^4 · 3, about
    2^57.6 (past float64's exact integers, below the renumbering bound), and every one of the 32768 distinct rows
    keeps a code of its own, numbered in row order; the same rows again get the same codes."""
    n = 16384
    i = np.repeat(np.arange(n), 2)  # rows 2k and 2k + 1 share the first four columns and differ in the fifth
    table = pa.table({**{f"c{k}": i for k in range(4)}, "last": np.tile(np.array(["p", "q"]), n)})
    twice = pa.concat_tables([table, table])
    # by hand: the first 2n rows are distinct, each new: 0 … 2n − 1; the copy repeats them
    assert row_codes(twice, twice.column_names).tolist() == list(range(2 * n)) * 2


def test_row_codes_renumber_before_the_combined_code_overflows():
    """Six columns of 4095 values each (radix 4096 = 2^12 with the null code): 2^72 combinations do not fit int64, so
    the codes are renumbered on the way; without that, a first-column code 16 apart (16 · 2^60 = 2^64) would wrap
    onto another row's. Rows differing only there stay apart and a repeated row matches."""
    i = np.arange(4095)
    table = pa.table({f"c{k}": i for k in range(6)})
    # row 4095: c0 = 16 (code 17), the rest 0; row 4096: all 0, row 0 again
    extra = pa.table({f"c{k}": np.array([16 if k == 0 else 0, 0]) for k in range(6)})
    both = pa.concat_tables([table, extra])
    # by hand: rows 0 … 4094 distinct (0 … 4094), row 4095 new (4095), row 4096 = row 0 (0)
    assert row_codes(both, both.column_names).tolist() == list(range(4096)) + [0]


def test_row_codes_keep_renumbering_after_a_renumbering():
    """40 columns that split two rows apart (radix 3: 3^40 > 2^62, one renumbering), then 64 columns of a single
    value (radix 2 each: 2^64 more): the bound kept after the renumbering brings a second one, so the two rows stay
    two codes."""
    table = pa.table({**{f"s{k}": ["a", "b"] for k in range(40)}, **{f"z{k}": ["z", "z"] for k in range(64)}})
    assert row_codes(table, table.column_names).tolist() == [0, 1]


def test_line_and_sweep_ids_of_a_table_without_any_of_their_columns():
    """A table with rows but none of the line columns (or none of the sweep columns) puts every row on the all-null
    line (or the undated sweep), as a dict without those keys would."""
    from pipeline.validate.lines import line_and_sweep_ids

    bare = pa.table({"run_id": ["r1", "r2"]})
    # line_id({}) and sweep_id({}), written out: every value None, EP 1, flags false; no url, key or date
    assert line_and_sweep_ids(bare) == (["None|None/None|None|None|None|spec=None|tp=None,ep=1,dpa=false"] * 2,
                                        ["undated", "undated"])
    dated = pa.table({"model": ["m", "m"], "run_date": pa.array([D1, D2], pa.date32())})
    assert line_and_sweep_ids(dated) == (["m|None/None|None|None|None|spec=None|tp=None,ep=1,dpa=false"] * 2,
                                         ["date:2026-07-01", "date:2026-07-02"])


def test_current_sweeps_by_date_of_no_rows():
    """No rows: every asked day is yielded once, in order, with no line current."""
    empty = pa.table({"run_date": pa.array([], pa.date32()), "line_id": pa.array([], pa.string()),
                      "sweep_id": pa.array([], pa.string())})
    assert [(day, dict(current)) for day, current in current_sweeps_by_date(empty, [D2, D1])] == [(D1, {}), (D2, {})]


def test_first_appearance_numbers_of_a_2d_key_array_are_flat():
    """Keys of any shape are numbered in row-major order and come back as one flat int64 array of keys.size."""
    from pipeline.validate.lines import first_appearance_numbers

    # row-major: 30, 10, 30, 20 → 0, 1, 0, 2
    numbers = first_appearance_numbers(np.array([[30, 10], [30, 20]]))
    assert numbers.shape == (4,) and numbers.tolist() == [0, 1, 0, 2]


def test_superseded_by_names_the_next_sweep_exactly_as_given():
    """``superseded_by`` is the next sweep's id character for character, even one ending in a NUL character (a
    fixed-width numpy string would drop it)."""
    runs = [{"run_id": "old", "line_id": "L", "sweep_id": "sweep:b", "conc": 4, "run_date": D1},
            {"run_id": "new", "line_id": "L", "sweep_id": "sweep:a\x00", "conc": 4, "run_date": D2}]
    assert run_lineage(runs)["superseded_by"].to_pylist() == ["sweep:a\x00", None]


D4 = dt.date(2026, 7, 4)


def _runs(rows):
    return [{"run_id": r, "line_id": line, "sweep_id": sweep, "conc": 4, "run_date": day}
            for r, line, sweep, day in rows]


def _current_by_day(rows, days):
    return {day: {line: current[line] for line in current}
            for day, current in current_sweeps_by_date(pa.Table.from_pylist(_runs(rows)), days)}


def test_a_line_whose_newest_sweep_is_re_run_elsewhere_falls_back_to_its_newest_other_sweep():
    """When attempt 2 of workflow run 5 (on line A) takes V's gha:5 away, V's current sweep is its newest remaining
    one by key (sweep:new, dated D1), not the one listed last (sweep:old, D0)."""
    rows = [("v_new", "V", "sweep:new", D1), ("v_old", "V", "sweep:old", D0), ("v5", "V", "gha:5", D1),
            ("a2", "A", "gha:5/attempt/2", D2)]
    # D0: only v_old (1); D1: gha:5 beats sweep:new on the same day by kind (2); D2: gha:5 out, sweep:new (0)
    assert _current_by_day(rows, [D0, D1, D2]) == {D0: {"V": [1]}, D1: {"V": [2]}, D2: {"V": [0], "A": [3]}}
    assert run_lineage(_runs(rows))["superseded_by"].to_pylist() == [None, "sweep:new", "gha:5/attempt/2", None]


def test_attempts_of_one_workflow_run_arriving_out_of_order():
    """Attempt 2 of workflow run 8 first (X, D1), then attempt 1 on Y (D2) and Z (D3), then attempt 3 on W (D4):
    attempt 1 never shows on any line (attempt 2 was already seen), and attempt 3 takes X's attempt 2 away; the
    lineage as of each day agrees."""
    rows = [("x2", "X", "gha:8/attempt/2", D1), ("y1", "Y", "gha:8", D2), ("z1", "Z", "gha:8", D3),
            ("w3", "W", "gha:8/attempt/3", D4)]
    assert _current_by_day(rows, [D1, D2, D3, D4]) == {D1: {"X": [0]}, D2: {"X": [0]}, D3: {"X": [0]},
                                                       D4: {"W": [3]}}
    # as of D3: attempt 2 is the highest seen; as of D4: attempt 3
    assert run_lineage(_runs(rows), as_of=D3)["superseded_by"].to_pylist() == [
        None, "gha:8/attempt/2", "gha:8/attempt/2", None]
    assert run_lineage(_runs(rows))["superseded_by"].to_pylist() == [
        "gha:8/attempt/3", "gha:8/attempt/3", "gha:8/attempt/3", None]


def test_an_attempt_0_sweep_id_is_a_lower_attempt_of_its_workflow_run():
    """``gha:6/attempt/0`` (not an id ``sweep_id`` writes, but one a table may hold) is attempt 0 of workflow run 6:
    shown while alone, replaced once attempt 1 (``gha:6``) is seen, in the one-pass view and in the lineage."""
    rows = [("w0", "W", "gha:6/attempt/0", D1), ("w1", "W", "gha:6", D2), ("y0", "Y", "gha:6/attempt/0", D1)]
    # D1: attempt 0 alone on W and Y; D2: attempt 1 seen, attempt 0 leaves both lines (Y has nothing else)
    assert _current_by_day(rows, [D1, D2]) == {D1: {"W": [0], "Y": [2]}, D2: {"W": [1]}}
    assert run_lineage(_runs(rows))["superseded_by"].to_pylist() == ["gha:6", None, "gha:6"]


def test_an_attempt_0_sweep_id_alone_is_its_workflow_runs_highest_attempt():
    """With only ``gha:6/attempt/0`` of workflow run 6 in sight it is that run's highest attempt: nothing replaces
    it (the lineage as of the first day was a KeyError when no attempt above 0 was visible)."""
    from pipeline.validate.lines import _lower_attempts

    assert _lower_attempts(["gha:6/attempt/0"]) == {}
    assert _lower_attempts(["gha:6/attempt/0", "gha:6"]) == {"gha:6/attempt/0": "gha:6"}
    rows = [("w0", "W", "gha:6/attempt/0", D1), ("w1", "W", "gha:6", D2), ("y0", "Y", "gha:6/attempt/0", D1)]
    # as of D1 only the two attempt-0 runs exist: each is its line's only sweep, so none is superseded
    assert run_lineage(_runs(rows), as_of=D1)["superseded_by"].to_pylist() == [None, None, None]
