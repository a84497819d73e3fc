"""Console result blocks (vLLM / SGLang "Serving Benchmark Result", trtllm-bench's report), InferenceX together-runner
baselines with measured power and AgentX agentic-trace rows: each real file's numbers by hand, the named reason of
a cut-off log, the agentic run key and the rules that treat agentic rows on their own terms."""

import json

import pytest

from pipeline.frontiers.sides import Side, enumerate_comparisons
from pipeline.ingest.keys import (
    model_key,
    normalize_hw,
    precision_from_model_id,
)
from pipeline.ingest.parsers import read_file, read_path
from pipeline.validate.rules import check_run, find_duplicates, rules

KNOWN_HW = ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x")


def _only_run(path):
    readout = read_path(path)
    assert not readout.rejects, [(r.reason_code, r.detail) for r in readout.rejects]
    (row, fmt, run), = readout.runs
    return fmt, run


# ---------------------------------------------------------------- vLLM console


def test_vllm_console_block_with_spec_decoding(real_logs):
    fmt, run = _only_run(real_logs / "vllm/ix_local_minimax_eagle3_vllm_bench_serve_conc64.log.txt")
    v = run.values
    assert fmt == "vllm_bench_serve_console"
    # the block: Successful 200, Failed 0, duration 13.49 s, input 98504, generated 51200 tokens
    assert (v["completed"], v["failed"], v["num_prompts"]) == (200, 0, 200)
    assert (v["duration_s"], v["total_input_tokens"], v["total_output_tokens"]) == (13.49, 98504, 51200)
    assert (v["request_throughput_req_s"], v["output_tput_tok_s"], v["total_tput_tok_s"]) == (14.82, 3794.71, 11095.36)
    assert v["input_tput_tok_s"] == pytest.approx(7300.65)  # 11095.36 - 3794.71
    # ms -> s: Mean TTFT 382.33 ms, Median TPOT 13.64 ms, P99 ITL 108.90 ms; no E2EL, no std in the block
    assert v["mean_ttft_s"] == pytest.approx(0.38233)
    assert v["median_tpot_s"] == pytest.approx(0.01364)
    assert v["p99_itl_s"] == pytest.approx(0.1089)
    assert v.get("median_e2el_s") is None and v.get("std_tpot_s") is None
    # vLLM convention: length = 1 + accepted/drafts = 1 + 29445/21744 = 2.354 (printed 2.35);
    # rate = accepted/draft tokens = 29445/65232 = 45.14 % -> 0.4514
    assert v["spec_accept_length"] == 2.35
    assert v["spec_accept_rate"] == pytest.approx(0.4514)
    assert v["spec_metric_source"] == "vllm:spec_decode_counters"
    assert run.in_file_meta == {"conc": "64"}  # dataset 'custom': no nominal ISL/OSL
    assert v["model_id"] == "MiniMaxAI/MiniMax-M2.5"
    # backend='openai': the server engine is not in the log, so no framework is implied
    assert run.fallback_meta == {"model": "minimaxm2.5", "framework": None}  # the dashboard's key


def test_vllm_console_conc32(real_logs):
    _, run = _only_run(real_logs / "vllm/ix_local_minimax_eagle3_vllm_bench_serve_conc32.log.txt")
    v = run.values
    # Median TPOT 12.20 ms, total 5317.03 tok/s, Acceptance rate 44.45 %, length 2.33
    assert v["median_tpot_s"] == pytest.approx(0.0122)
    assert v["total_tput_tok_s"] == 5317.03
    assert (v["spec_accept_length"], v["spec_accept_rate"]) == (2.33, pytest.approx(0.4445))
    assert run.in_file_meta == {"conc": "32"}


VLLM_BLOCK = """============ Serving Benchmark Result ============
Successful requests:                     {n}
Benchmark duration (s):                  10.00
Total input tokens:                      {tin}
Total generated tokens:                  {tout}
Request throughput (req/s):              {rps}
Output token throughput (tok/s):         {out}
Total token throughput (tok/s):          {tot}
---------------Time to First Token----------------
Mean TTFT (ms):                          100.00
Median TTFT (ms):                        90.00
P99 TTFT (ms):                           300.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          20.00
Median TPOT (ms):                        {tpot}
P99 TPOT (ms):                           40.00
---------------Inter-token Latency----------------
Mean ITL (ms):                           20.00
Median ITL (ms):                         18.00
P99 ITL (ms):                            60.00
----------------End-to-end Latency----------------
Mean E2EL (ms):                          2000.00
Median E2EL (ms):                        1900.00
P99 E2EL (ms):                           4000.00
==================================================
"""


def _block(n, tpot):
    # n requests of 100 in + 100 out tokens in 10 s: n*100/10 tok/s each way, 2*n*100/10 total
    return VLLM_BLOCK.format(n=n, tin=n * 100, tout=n * 100, rps=n / 10, out=n * 10.0, tot=n * 20.0, tpot=tpot)


def test_several_blocks_are_several_runs_with_their_own_concurrency():
    ns1 = ("Namespace(backend='vllm', dataset_name='random', random_input_len=100, random_output_len=100, "
           "max_concurrency=4, model='org/Some-Model')\n")
    text = (ns1 + "Maximum request concurrency: 4\n" + _block(40, "15.00")
            + ns1.replace("max_concurrency=4", "max_concurrency=8") + "Maximum request concurrency: 8\n"
            + _block(80, "25.00"))
    readout = read_file("sweep.log", text.encode())
    assert not readout.rejects
    assert [(row, fmt) for row, fmt, _ in readout.runs] == [(0, "vllm_bench_serve_console"),
                                                             (1, "vllm_bench_serve_console")]
    first, second = (run for _, _, run in readout.runs)
    assert first.in_file_meta == {"conc": "4", "isl": "100", "osl": "100"}
    assert second.in_file_meta == {"conc": "8", "isl": "100", "osl": "100"}
    assert (first.values["total_tput_tok_s"], second.values["total_tput_tok_s"]) == (800.0, 1600.0)  # 2*40*100/10
    assert (first.values["median_tpot_s"], second.values["median_tpot_s"]) == (pytest.approx(0.015),
                                                                               pytest.approx(0.025))
    assert first.values["median_e2el_s"] == pytest.approx(1.9)
    assert first.fallback_meta == {"model": "some-model", "framework": "vllm"}
    assert first.values["content_sha256"] != second.values["content_sha256"]


def test_a_cut_off_block_is_truncated_and_the_complete_ones_kept():
    full = _block(40, "15.00")
    cut = _block(80, "25.00").split("-----Time per Output Token")[0]  # the log ends inside the second block
    readout = read_file("cut.log", (full + cut).encode())
    assert [row for row, _, _ in readout.runs] == [0]
    assert [(r.row, r.reason_code) for r in readout.rejects] == [(1, "truncated_console_log")]
    assert "ends inside the block" in readout.rejects[0].detail


def test_a_block_missing_its_numbers_is_truncated():
    lines = [ln for ln in _block(40, "15.00").splitlines() if not ln.startswith("Benchmark duration")]
    readout = read_file("short.log", "\n".join(lines).encode())
    assert not readout.runs
    assert [(r.row, r.reason_code) for r in readout.rejects] == [(None, "truncated_console_log")]
    assert "Benchmark duration (s)" in readout.rejects[0].detail


def test_console_log_without_a_result_block_stays_a_console_log():
    text = "INFO 05-29 13:30:50 Starting vLLM API server\nBenchmark duration (s): see the JSON result\n"
    readout = read_file("server.log", text.encode())
    assert not readout.runs
    assert [r.reason_code for r in readout.rejects] == ["not_a_run_log:console_log"]


def test_sglang_console_block():
    text = """============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Max request concurrency:                 16
Successful requests:                     160
Benchmark duration (s):                  80.00
Total input tokens:                      163840
Total generated tokens:                  163840
Total generated tokens (retokenized):    163700
Request throughput (req/s):              2.00
Input token throughput (tok/s):          2048.00
Output token throughput (tok/s):         2048.00
Total throughput (tok/s):                4096.00
Concurrency:                             15.80
Accept length:                           3.10
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   7900.00
Median E2E Latency (ms):                 7800.00
---------------Time to First Token----------------
Mean TTFT (ms):                          300.00
Median TTFT (ms):                        250.00
P99 TTFT (ms):                           900.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          7.50
Median TPOT (ms):                        7.40
P99 TPOT (ms):                           9.00
---------------Inter-Token Latency----------------
Mean ITL (ms):                           22.00
Median ITL (ms):                         20.00
P95 ITL (ms):                            30.00
P99 ITL (ms):                            40.00
Max ITL (ms):                            80.00
==================================================
"""
    readout = read_file("sglang.log", text.encode())
    (row, fmt, run), = readout.runs
    v = run.values
    assert fmt == "sglang_bench_serving_console" and not readout.rejects
    # 160 requests x 1024 tokens each way in 80 s: 2048 tok/s each way, 4096 total
    assert (v["completed"], v["num_prompts"], v.get("failed")) == (160, 160, None)
    assert (v["total_tput_tok_s"], v["input_tput_tok_s"], v["output_tput_tok_s"]) == (4096.0, 2048.0, 2048.0)
    assert v["median_e2el_s"] == pytest.approx(7.8) and v["p95_itl_s"] == pytest.approx(0.03)
    assert v["median_tpot_s"] == pytest.approx(0.0074)
    # SGLang convention: tokens per verify step (bonus included); no rate
    assert (v["spec_accept_length"], v.get("spec_accept_rate")) == (3.1, None)
    assert run.in_file_meta == {"conc": "16"}  # "Concurrency: 15.80" is the measured mean, not the limit
    assert run.fallback_meta["framework"] == "sglang"


# ---------------------------------------------------------------- trtllm-bench console


def test_trtllm_bench_console_report(real_logs):
    fmt, run = _only_run(real_logs / "trtllm/shaamil_trtllm_bench_throughput_stdout_1024_16384_200.txt")
    v = run.values
    assert fmt == "trtllm_bench_console"
    assert (v["num_prompts"], v["completed"]) == (200, 200)
    assert v["duration_s"] == pytest.approx(836.1305389)  # Total Latency 836130.5389 ms
    # Token Throughput counts output tokens: 200 * 16384 / 836.1305 s = 3919.0 tok/s
    assert v["output_tput_tok_s"] == 3919.0053
    assert 200 * 16384 / v["duration_s"] == pytest.approx(3919.0053, rel=1e-6)
    # total = 3919.0053 * (1024 + 16384) / 16384 = 4163.943; input = 4163.943 - 3919.005 = 244.938
    assert v["total_tput_tok_s"] == pytest.approx(4163.9431, rel=1e-7)
    assert v["input_tput_tok_s"] == pytest.approx(244.9378, rel=1e-6)
    assert (v["total_input_tokens"], v["total_output_tokens"]) == (204800, 3276800)  # 200*1024, 200*16384
    assert v.get("median_tpot_s") is None  # 0.16 prints no TPOT: validation names it
    assert run.in_file_meta == {"tp": "8", "pp": "1"}
    assert run.fallback_meta == {"model": "llama-3.1-70b-instruct", "framework": "trtllm", "precision": "FP8"}


def test_aborted_trtllm_bench_log_has_a_named_reason(real_logs):
    readout = read_path(real_logs / "trtllm/shaamil_trtllm_bench_throughput_stdout_16384_16384_50_TRUNCATED.txt")
    assert not readout.runs
    assert [(r.row, r.reason_code) for r in readout.rejects] == [(None, "truncated_console_log")]
    assert "PERFORMANCE OVERVIEW" in readout.rejects[0].detail


def test_trtllm_console_without_a_benchmark_stays_a_console_log():
    readout = read_file("server.txt", b"[TensorRT-LLM][INFO] Engine loaded\n[TensorRT-LLM][INFO] Serving\n")
    assert [r.reason_code for r in readout.rejects] == ["not_a_run_log:console_log"]


# ---------------------------------------------------------------- together runner


def test_together_runner_baseline_with_power(real_logs):
    path = real_logs / "power/ix_together_baseline_b200_sglang_dsr1-fp4_1k1k_tuned_conc16.json"
    fmt, run = _only_run(path)
    v = run.values
    assert fmt == "inferencex_together"
    assert v["completed"] == 160 and v.get("num_prompts") is None and v.get("failed") is None
    assert v["total_tput_tok_s"] == 2287.867137633622 and v["output_tput_tok_s"] == 1121.5270840361031
    assert v["input_tput_tok_s"] == pytest.approx(1166.34)  # 2287.867 - 1121.527
    assert v["median_tpot_s"] == pytest.approx(0.012939227812)  # 12.939227812 ms
    assert v["p99_e2el_s"] == pytest.approx(13.747231411556711)  # 13747.23 ms
    assert v.get("mean_tpot_s") is None and v.get("duration_s") is None
    # measured power: 8 GPUs sampled = tp 8; tokens_per_kw 326.3 = 1121.527 / (3437.5 W / 1000)
    assert v["reported_avg_power_w_per_gpu"] == 429.7
    assert v.get("reported_energy_j") is None
    assert 1121.5270840361031 / 3.4375 == pytest.approx(326.3, abs=0.05)
    assert run.in_file_meta["model"] == "dsr1"  # profile dsr1-fp4 without -fp4
    assert (run.in_file_meta["hw"], run.in_file_meta["conc"], run.in_file_meta["tp"]) == ("b200", 16, 8)
    assert run.in_file_meta["run_date"] == "2026-06-12T00:51:16+00:00"


def test_together_power_over_idle_gpus_is_not_used(real_logs):
    _, run = _only_run(real_logs / "power/ix_together_baseline_b200_vllm_gptoss-fp4_1k1k_untuned_conc128.json")
    # gpu.n_gpus 8, run tp 4: 334.5 W is a mean over 4 idle GPUs too, not the run's W per GPU
    assert run.values.get("reported_avg_power_w_per_gpu") is None
    assert any("n_gpus=8" in d for d in run.derivations)
    assert run.in_file_meta["model"] == "gptoss"


# ---------------------------------------------------------------- AgentX agentic rows


def _agentic_rows(real_logs):
    """Every AgentX row of the real logs, counted with the standard library: rows that carry a scenario_type."""
    rows = []
    for path in sorted((real_logs / "inferencex").glob("*.json")):
        doc = json.loads(path.read_text())
        for i, row in enumerate(doc if isinstance(doc, list) else [doc]):
            if isinstance(row, dict) and str(row.get("scenario_type", "")).startswith("agentic"):
                rows.append((path, i, row))
    return rows


def test_every_agentic_real_row_parses(real_logs):
    rows = _agentic_rows(real_logs)
    assert len(rows) == 90  # 20 + 1 + 2 + 14 + 12 + 23 + 16 + 1 + 1 over nine files
    parsed = {}
    for path in {p for p, _, _ in rows}:
        readout = read_path(path)
        assert not readout.rejects, path
        parsed.update({(path, row): (fmt, run) for row, fmt, run in readout.runs})
    assert len(parsed) == 90
    assert {fmt for fmt, _ in parsed.values()} == {"inferencex_agentx"}
    assert {run.values["benchmark_type"] for _, run in parsed.values()} == {"agentic_traces"}
    assert all("isl" not in run.in_file_meta and "osl" not in run.in_file_meta for _, run in parsed.values())


def test_agentic_flat_row_numbers(real_logs):
    path = real_logs / "inferencex/ajith_0601_agentx_minimaxm2.5_mi355x_agg_bmk_emptyframework.json"
    _, run = _only_run(path)
    v = run.values
    # latencies already in seconds; the flat layout has no median and no p99
    assert v["mean_tpot_s"] == 0.09142650835204363 and v["p90_e2el_s"] == 130.5110716902
    assert v.get("median_tpot_s") is None and v.get("p99_e2el_s") is None
    # the stand-in from the row's aggregates, under its own name: mean output 543.3467 tokens / p90 E2EL 130.5111 s
    # = 4.1632 tok/s/user; the row has no 1 / p90(E2EL / OSL), so e2e_norm_intvty_p90 stays empty (docs/metrics.md 4a)
    assert v["mean_osl_over_p90_e2el"] == pytest.approx(4.16322, rel=1e-5)
    assert v.get("e2e_norm_intvty_p90") is None and v.get("e2e_norm_intvty_source") is None
    assert (v["total_tput_tok_s"], v["reported_tput_per_gpu"]) == (16865.48518091639, 16865.48518091639)  # tp 1
    assert (v["completed"], v["num_prompts"], v.get("failed")) == (300, 300, None)
    assert v["duration_s"] == 1827.784179899
    # framework and precision are empty strings: not stated; the precision is in the checkpoint name (MXFP4)
    assert "framework" not in run.in_file_meta and "precision" not in run.in_file_meta
    assert run.fallback_meta == {"model": "minimaxm2.5", "precision": "fp4"}
    assert run.in_file_meta["kv_offload"] == "lmcache"


def test_agentic_nested_row_numbers(real_logs):
    _, run = _only_run(real_logs / "inferencex/ix_agentx_kimik2.7_tp4_conc1_kvnone_mi355x.json")
    v = run.values
    assert v["median_tpot_s"] == 0.01304 and v["median_ttft_s"] == 2.14804  # p50 of the nested layout
    # the stand-in: mean output 1092.39487 tokens / p90 E2EL 77.60141 s = 14.0770 tok/s/user; the definition over
    # this run's profile_export.jsonl is 8.388 (tests/test_agentic_axis.py), so it is not stored as one
    assert v["mean_osl_over_p90_e2el"] == pytest.approx(14.07703, rel=1e-5)
    assert v.get("e2e_norm_intvty_p90") is None
    # 196 records, 1 warmup dropped, 0 errors: 195 issued, 195 completed
    assert (v["num_prompts"], v["completed"], v["failed"]) == (195, 195, 0)
    assert v["total_tput_tok_s"] == 5400.83902 and v["reported_tput_per_gpu"] == 1350.20976  # 5400.83902 / 4
    assert run.in_file_meta["model"] == "kimik2.7" and run.in_file_meta["hw"] == "cluster:mi355x-amds"
    assert run.in_file_meta["kv_offload"] == "none" and run.in_file_meta["pcp"] == 1


def test_dashboard_value_is_used_and_ours_checked_against_it():
    row = {"hw": "b200", "scenario_type": "agentic-coding", "conc": 4, "tp": 8, "framework": "vllm",
           "precision": "fp4", "infmax_model_prefix": "m", "num_requests_total": 10, "num_requests_successful": 10,
           "p90_e2el": 50.0, "mean_output_tokens_actual": 600.0, "p90_e2e_norm_intvty": 9.0,
           "total_tput_tps": 1000.0, "output_tput_tps": 50.0}
    (_, fmt, run), = read_file("a.json", json.dumps(row).encode()).runs
    assert run.values["e2e_norm_intvty_p90"] == 9.0
    assert run.values["e2e_norm_intvty_source"] == "dashboard:p90_e2e_norm_intvty"
    # the stand-in: 600 tokens / 50 s = 12 tok/s/user, in its own column; ratio 12 / 9 = 1.333
    assert run.values["mean_osl_over_p90_e2el"] == 12.0
    assert "gives 12 (ratio 1.333)" in run.derivations[0]


def test_keys_normalize_runner_suffix_and_model_paths():
    assert normalize_hw("b200-dgxc") == "b200"
    assert normalize_hw("cluster:mi355x-amds") == "mi355x"
    assert model_key("/lustre/fsw/models/Kimi-K2.5-NVFP4") == "kimik2.5"
    assert model_key("amd/Kimi-K2.5-MXFP4") == "kimik2.5"
    assert model_key("Qwen/Qwen3.5-397B-A17B-FP8") == "qwen3.5"
    assert model_key("zai-org/GLM-5-FP8") == "glm5" and model_key("amd/GLM-5.1-MXFP4") == "glm5.1"
    assert model_key("meta-llama/Llama-3.1-70B") == "llama-3.1-70b"  # no known family: the name
    assert precision_from_model_id("/lustre/fsw/models/Kimi-K2.5-NVFP4") == "fp4"
    assert precision_from_model_id("openai/gpt-oss-120b") is None  # not in the name: not guessed


# ---------------------------------------------------------------- rules and sides


def _agentic_run(**change):
    run = {"source_file": "a.json", "source_format": "inferencex_agentx", "source_row": 0, "benchmark_type":
           "agentic_traces", "model": "kimik2.5", "hw": "b200", "framework": "vllm", "precision": "fp4",
           "spec_decoding": "none", "conc": 8, "tp": 4, "isl": None, "osl": None, "completed": 10, "failed": 0,
           "num_prompts": 10, "total_tput_tok_s": 1000.0, "median_tpot_s": None, "latency_unit_in_file": "s",
           "e2e_norm_intvty_p90": 12.0, "metadata_conflicts": None, "reported_tput_per_gpu": 250.0,
           "content_sha256": "a" * 64, "kv_offload": "none"}
    run.update(change)
    return run


def test_agentic_rows_need_their_x_axis_not_isl_osl_or_tpot():
    rule_list = rules(KNOWN_HW)
    assert check_run(_agentic_run(), rule_list) is None
    assert check_run(_agentic_run(e2e_norm_intvty_p90=None), rule_list)[0] == "missing_field:p90_e2e_norm_intvty"
    # without the definition, the row's stand-in places the run (its x_intvty_stat says so, sql/run_metrics.sql)
    assert check_run(_agentic_run(e2e_norm_intvty_p90=None, mean_osl_over_p90_e2el=4.2), rule_list) is None
    assert check_run(_agentic_run(e2e_norm_intvty_p90=None, mean_osl_over_p90_e2el=0.0),
                     rule_list)[0] == "non_positive:p90_e2e_norm_intvty"
    # a fixed-sequence run still needs both
    fixed = _agentic_run(benchmark_type="fixed_seq", median_tpot_s=0.02)
    assert check_run(fixed, rule_list)[0] == "missing_metadata:isl"
    assert check_run(dict(fixed, isl=1024, osl=1024, median_tpot_s=None, e2e_norm_intvty_p90=None),
                     rule_list)[0] == "missing_field:median_tpot_ms"


def test_kv_offload_variants_are_not_duplicates():
    runs = [_agentic_run(), _agentic_run(source_row=1, content_sha256="b" * 64, kv_offload="lmcache")]
    assert find_duplicates(runs) == {}


def test_agentic_and_fixed_sequence_sides_never_meet():
    keys = {"hw": "b200", "precision": "fp4", "spec_decoding": "none", "framework": "vllm"}
    runs = [{"model": "kimik2.5", "isl": None, "osl": None, "benchmark_type": "agentic_traces", **keys},
            {"model": "kimik2.5", "isl": None, "osl": None, "benchmark_type": "agentic_traces",
             **dict(keys, hw="mi355x")},
            {"model": "kimik2.5", "isl": 1024, "osl": 1024, "benchmark_type": "fixed_seq", **dict(keys, hw="h200")}]
    comparisons = enumerate_comparisons(runs)
    # b200 vs mi355x among the agentic sides; the fixed-sequence h200 side has no partner
    assert [c.comparison_id for c in comparisons] == [
        "hardware:kimik2.5|agentic_traces|b200|fp4|spec=all|framework=all"
        "~kimik2.5|agentic_traces|mi355x|fp4|spec=all|framework=all"]
    side = comparisons[0].a
    assert side.matches(runs[0]) and not side.matches(dict(runs[2], hw="b200"))
    assert Side("kimik2.5", 1024, 1024, "b200", "fp4").side_id == "kimik2.5|1024/1024|b200|fp4|spec=all|framework=all"
