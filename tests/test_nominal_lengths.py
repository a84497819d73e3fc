"""Nominal vs measured ISL/OSL (docs/metrics.md section 5): a run whose measured mean length is more than 10 % off
its nominal one is kept and flagged, left off frontiers by default, and counted in the ledger and in the
comparison's ``excluded_runs``."""

import json

import duckdb
import pyarrow as pa
import pytest
from conftest import unrestricted

from pipeline.ingest.schema import RUN_COLUMNS, RUN_SCHEMA
from pipeline.io.paths import sql_text
from pipeline.io.storage import write_table


def _lengths(*runs: dict) -> list[dict]:
    rows = []
    for i, run in enumerate(runs):
        row = dict.fromkeys(RUN_COLUMNS)
        row.update({"run_id": f"r{i:02d}", "source_file": f"f{i}", "source_row": 0, "isl": 1000, "osl": 1000,
                    "completed": 10, **run})
        rows.append(row)
    conn = duckdb.connect()
    write_table(conn, "validated_runs", pa.Table.from_pylist(rows, schema=RUN_SCHEMA))
    conn.execute(sql_text("run_lengths"))
    return conn.sql("select * from run_lengths order by run_id").to_arrow_table().to_pylist()


def test_more_than_ten_percent_off_nominal_is_flagged():
    exact, osl_20_off, isl_9_off, isl_11_over, unknown = _lengths(
        {"total_input_tokens": 10000, "total_output_tokens": 10000},
        {"total_input_tokens": 10000, "total_output_tokens": 8000},   # OSL 800 vs 1000: 20 % off
        {"total_input_tokens": 9100, "total_output_tokens": 10000},   # ISL 910: 9 % off, kept
        {"total_input_tokens": 11100, "total_output_tokens": 10000},  # ISL 1110: 11 % over
        {"total_input_tokens": None, "total_output_tokens": None},    # neither totals nor latencies: unverified
    )
    assert (exact["mean_input_len"], exact["mean_output_len"], exact["length_off_nominal"]) == (1000, 1000, False)
    assert (osl_20_off["mean_output_len"], osl_20_off["length_off_nominal"]) == (800, True)
    assert (isl_9_off["mean_input_len"], isl_9_off["length_off_nominal"]) == (910, False)
    assert isl_11_over["length_off_nominal"] is True
    assert (unknown["length_check"], unknown["length_off_nominal"]) == ("unverified", True)  # kept off frontiers


def _latencies(e2el_s: float, ttft_s: float = 0.5, tpot_s: float = 0.125) -> dict:
    return {"median_e2el_s": e2el_s, "median_ttft_s": ttft_s, "median_tpot_s": tpot_s}


def test_length_rule_boundaries_by_hand():
    # nominal ISL/OSL 1000 (expected mean 1000 without a range ratio); latency-implied OSL = (e2el − ttft)/tpot + 1,
    # with tpot 0.125 s and ttft 0.5 s: e2el 125.375 → 999 + 1 = 1000, 156.625 → 1250, 162.875 → 1300, 0.5 → 1
    none = {"total_input_tokens": None, "total_output_tokens": None}
    rows = _lengths(
        {"completed": 1, "total_input_tokens": 1000, "total_output_tokens": 1000},  # one request: its own length
        {**none, **_latencies(125.375)},                                    # 1000 from latencies
        {"total_input_tokens": 10000, "total_output_tokens": 10000, **_latencies(125.375)},  # totals win
        {**none, **_latencies(0.5)},                                        # e2el = ttft: 1 token, far off
        {**none, **_latencies(156.625)},                                    # 1250: exactly 25 % off, kept
        {**none, **_latencies(162.875)},                                    # 1300: 30 % off
        {"total_input_tokens": 11000, "total_output_tokens": 9000},         # 1100 and 900: exactly 10 % off, kept
        {"total_input_tokens": 9000, "total_output_tokens": 9000, "random_range_ratio": 0.8},  # mean of [0.8n, n]
        {"isl": None, "osl": None, **none},                                 # no nominal lengths: nothing to check
        {**none, **_latencies(125.375, tpot_s=0.0)},                        # no TPOT: no latency-implied OSL
        {"isl": None, "total_input_tokens": 10000, "total_output_tokens": 10000},  # OSL alone is still checked
        {"total_input_tokens": 10000, "total_output_tokens": None},         # input totals alone: checked by totals
    )
    got = [(r["mean_input_len"], r["mean_output_len"], r["latency_output_len"], r["expected_input_len"],
            r["expected_output_len"], r["length_check"], r["length_off_nominal"]) for r in rows]
    assert got == [
        (1000, 1000, None, 1000, 1000, "totals", False),
        (None, None, 1000, 1000, 1000, "latencies", False),
        (1000, 1000, None, 1000, 1000, "totals", False),
        (None, None, 1, 1000, 1000, "latencies", True),
        (None, None, 1250, 1000, 1000, "latencies", False),
        (None, None, 1300, 1000, 1000, "latencies", True),
        (1100, 900, None, 1000, 1000, "totals", False),
        (900, 900, None, 900, 900, "totals", False),
        (None, None, None, None, None, None, False),
        (None, None, None, 1000, 1000, "unverified", True),
        (1000, 1000, None, None, 1000, "totals", False),
        (1000, None, None, 1000, 1000, "totals", False),
    ]


def _vllm(name: str, spec: str, tpot_ms: float, total: float, output_tokens: int) -> tuple[str, dict]:
    """A vLLM result of 10 requests (nominal ISL/OSL 1000/1000 and the GPU come from runs.csv), its duration and
    output throughput those its tokens and total throughput imply (a run whose numbers disagree is implausible)."""
    duration = (10000 + output_tokens) / total
    return name, {
        "model_id": "deepseek-ai/DeepSeek-R1-0528", "backend": "vllm", "spec_decoding": spec,
        "max_concurrency": int(tpot_ms), "duration": duration, "num_prompts": 10, "completed": 10, "failed": 0,
        "total_input_tokens": 10000, "total_output_tokens": output_tokens,
        "total_token_throughput": total, "output_throughput": output_tokens / duration, "median_ttft_ms": 100.0,
        "median_tpot_ms": tpot_ms, "mean_tpot_ms": tpot_ms, "p99_tpot_ms": tpot_ms, "median_e2el_ms": 5000.0}


def test_off_nominal_run_is_left_off_the_frontier_and_counted(tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    raw.mkdir()
    files = [
        _vllm("mtp_a.json", "mtp", 20.0, 2000.0, 10000), _vllm("mtp_b.json", "mtp", 10.0, 1000.0, 10000),
        # the best MTP run by far, but it measured OSL 800 (20 % under the nominal 1000): another workload
        _vllm("mtp_short.json", "mtp", 12.5, 5000.0, 8000),
        _vllm("off_a.json", "none", 25.0, 1500.0, 10000), _vllm("off_b.json", "none", 12.5, 800.0, 10000),
    ]
    for name, doc in files:
        (raw / name).write_text(json.dumps(doc))
    (raw / "runs.csv").write_text("file,model,hw,precision,tp,isl,osl,run_date\n" + "".join(
        f"{name},dsr1,h200,fp8,1,1000,1000,2026-07-14\n" for name, _ in files))
    result = run_pipeline(raw)
    assert result.result.success
    ledger = {r["source_file"]: r for r in result.mart("ingest_ledger").to_pylist()}
    assert ledger["mtp_short.json"]["length_off_nominal_rows"] == 1
    assert ledger["mtp_short.json"]["outcome"] == "accepted"  # flagged, not quarantined
    assert sum(r["length_off_nominal_rows"] for r in ledger.values()) == 1
    runs = {r["source_file"]: r for r in result.mart("runs").to_pylist() if r["price_book"] == "inferencex-seed"}
    assert runs["mtp_short.json"]["mean_output_len"] == 800 and runs["mtp_short.json"]["length_off_nominal"]
    frontiers = [r for r in unrestricted(result.mart("frontiers")).to_pylist() if r["price_book"] == "inferencex-seed"]
    assert "mtp_short.json" not in {r["source_file"] for r in frontiers}
    comparisons = [r for r in unrestricted(result.mart("comparisons")).to_pylist()
                   if r["price_book"] == "inferencex-seed" and r["kind"] == "spec_decoding"]
    assert comparisons
    assert {(r["side_label"], r["excluded_runs"], r["side_runs"]) for r in comparisons} == {("MTP", 1, 2), ("Off", 0, 2)}
    # the MTP side's band edges come from its two kept runs: 1000/20 = 50 and 1000/10 = 100 tok/s/user; Off 40-80
    assert {(r["band_min"], r["band_max"]) for r in comparisons} == {(50.0, 80.0)}
    assert all(r["tput_per_gpu"] <= 2000.0 for r in comparisons if r["side"] == "a")


def test_include_off_nominal_keeps_the_run():
    from pipeline.frontiers.points import build_frontiers
    from pipeline.frontiers.sides import Side

    base = {"price_book": "b", "price_book_version": "v", "model": "m", "isl": 1000, "osl": 1000, "hw": "h200",
            "precision": "fp8", "spec_decoding": "none", "framework": "vllm", "spec_metric_source": None, "conc": 8,
            "benchmark_type": "fixed_seq", "run_date": None, "sweep_id": "undated",
            "tok_s_per_mw": 1.0, "measured_tok_s_per_mw": None,
            **{m: 1.0 for m in ("cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud", "cost_per_mtok_rental",
                                "output_tput_per_gpu", "input_tput_per_gpu")},
            **{f"{d}_cost_per_mtok_{t}": 1.0 for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")}}
    runs = [{**base, "run_id": "kept", "source_file": "k", "line_id": "line-k", "median_intvty": 10.0, "x_intvty": 10.0, "tput_per_gpu": 100.0,
             "length_off_nominal": False},
            {**base, "run_id": "off", "source_file": "o", "line_id": "line-o", "median_intvty": 20.0, "x_intvty": 20.0, "tput_per_gpu": 90.0,
             "length_off_nominal": True}]
    side = Side("m", 1000, 1000, "h200", "fp8", "none", "vllm")
    default = build_frontiers(runs, [side]).to_pylist()
    assert [(p["run_id"], p["side_runs"], p["excluded_runs"]) for p in default] == [("kept", 1, 1)]
    kept = build_frontiers(runs, [side], include_off_nominal=True).to_pylist()
    assert [(p["run_id"], p["side_runs"], p["excluded_runs"]) for p in kept] == [("kept", 2, 0), ("off", 2, 0)]
    assert pytest.approx(kept[1]["median_intvty"]) == 20.0
