"""Client-harness exports (AIPerf, GenAI-Perf, GuideLLM, LLMPerf, inference-perf): each real public result file in
``tests/fixtures/`` (provenance in ``tests/fixtures/PROVENANCE.md``) parses to values checked by hand against the
file, a truncated and a mangled copy get named reasons, and a folder of the files with sidecars goes through the
whole pipeline. Expected numbers are the file's own values; the arithmetic behind every derived one is in the
comment next to it."""

import copy
import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from pipeline.ingest.parsers import read_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
AIPERF = FIXTURES / "aiperf" / "profile_export_aiperf.json"
GENAI_PERF = FIXTURES / "genai_perf" / "profile_export_genai_perf.json"
GUIDELLM = FIXTURES / "guidellm" / "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"
LLMPERF = FIXTURES / "llmperf" / "together_7b.json"
INFERENCE_PERF = FIXTURES / "inference_perf" / "stage_0_lifecycle_metrics.json"
INFERENCE_PERF_SUMMARY = FIXTURES / "inference_perf" / "summary_lifecycle_metrics.json"


def _only_run(path: Path, data: bytes | None = None):
    readout = read_file(path.name, path.read_bytes() if data is None else data)
    assert len(readout.runs) == 1 and not readout.rejects, readout.rejects
    return readout.runs[0]


def _reasons(path: Path, data: bytes) -> list[str]:
    readout = read_file(path.name, data)
    assert not readout.runs
    return [r.reason_code for r in readout.rejects]


def _mangled(path: Path, edit) -> bytes:
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    return json.dumps(doc).encode()


# --- AIPerf ------------------------------------------------------------------------------------------------------

def test_aiperf_profile_export():
    row, fmt, run = _only_run(AIPERF)
    v = run.values
    assert (row, fmt) == (0, "aiperf")
    # time_to_first_token.p50 = 120.50948349999999 ms; inter_token_latency.p50 = 13.248111012987014 ms (TPOT)
    assert v["median_ttft_s"] == pytest.approx(0.1205094835, rel=1e-12)
    assert v["median_tpot_s"] == pytest.approx(0.013248111012987014, rel=1e-12)
    assert v["p99_tpot_s"] == pytest.approx(0.030299305585142843, rel=1e-12)
    # inter_chunk_latency.p50 = 8.765324452833257 ms is ITL (chunk gaps), not TPOT
    assert v["median_itl_s"] == pytest.approx(0.008765324452833257, rel=1e-12)
    assert v["median_e2el_s"] == pytest.approx(2.1897230649999997, rel=1e-12)
    # request_count.avg = 96.0; no error_request_count block and error_summary = [] -> 0 failed; the profiling
    # phase asked for 96 requests
    assert (v["completed"], v["failed"], v["num_prompts"]) == (96, 0, 96)
    assert v["total_tput_tok_s"] == 2961.781439682358 and v["output_tput_tok_s"] == 1040.1442436393677
    # input = 2961.781439682358 - 1040.1442436393677 = 1921.6371960429901 (= total_isl 35259 / 18.34841669 s)
    assert v["input_tput_tok_s"] == pytest.approx(1921.6371960429901, rel=1e-12)
    assert (v["duration_s"], v["total_input_tokens"], v["total_output_tokens"]) == (18.34841669, 35259, 19085)
    assert v["model_id"] == "qwen3.6-nvfp4"
    # the profiling phase ran at concurrency 16; start_time 2026-07-03T04:23:09
    assert run.in_file_meta == {"conc": 16, "run_date": dt.date(2026, 7, 3)}
    assert v["bench_end_local"] == dt.datetime(2026, 7, 3, 4, 23, 27, 915816)


def test_aiperf_own_interactivity_matches_tpot():
    """AIPerf reports output_token_throughput_per_user itself; the pipeline keeps interactivity from TPOT, and the
    harness's p50 agrees with it: 1000 / 13.248111012987014 ms = 75.48245927436056 tok/s/user."""
    _, _, run = _only_run(AIPERF)
    assert run.values["reported_median_intvty"] == 75.48245927436056
    assert 1.0 / run.values["median_tpot_s"] == pytest.approx(75.48245927436056, rel=1e-12)


def test_aiperf_truncated_and_mangled():
    data = AIPERF.read_bytes()
    assert _reasons(AIPERF, data[: len(data) // 2]) == ["invalid_json"]

    def tpot_as_text(doc):
        doc["inter_token_latency"]["p50"] = "13.2 ms"
    assert _reasons(AIPERF, _mangled(AIPERF, tpot_as_text)) == ["not_a_number:inter_token_latency.p50"]

    def count_as_text(doc):
        doc["request_count"]["avg"] = "96"
    assert _reasons(AIPERF, _mangled(AIPERF, count_as_text)) == ["not_an_integer:request_count.avg"]

    def no_unit(doc):
        del doc["time_to_first_token"]["unit"]
    assert _reasons(AIPERF, _mangled(AIPERF, no_unit)) == ["missing_field:time_to_first_token.unit"]

    def cancelled(doc):
        doc["was_cancelled"] = True
    assert _reasons(AIPERF, _mangled(AIPERF, cancelled)) == ["cancelled_run"]


def test_aiperf_error_request_count_is_failed():
    """When requests errored, AIPerf writes an error_request_count block; it is the failed count."""
    def errored(doc):
        doc["error_request_count"] = {"unit": "requests", "avg": 4.0}
        doc["error_summary"] = [{"error_details": {"code": 500}, "count": 4}]
    _, _, run = _only_run(AIPERF, _mangled(AIPERF, errored))
    assert (run.values["completed"], run.values["failed"]) == (96, 4)


# --- GenAI-Perf --------------------------------------------------------------------------------------------------

def test_genai_perf_profile_export():
    _, fmt, run = _only_run(GENAI_PERF)
    v = run.values
    assert fmt == "genai_perf"
    # time_to_first_token.p50 = 172.8093975 ms; inter_token_latency.p50 = 2.1787205 ms
    assert v["median_ttft_s"] == pytest.approx(0.1728093975, rel=1e-12)
    assert v["median_tpot_s"] == pytest.approx(0.0021787205, rel=1e-12)
    assert v["median_itl_s"] is None  # GenAI-Perf's JSON has no chunk-gap distribution
    assert v["output_tput_tok_s"] == 44190.56002502682
    # total = output + mean ISL * request rate = 44190.56002502682 + 200.85 * 17.222547659562533
    #       = 44190.56002502682 + 3459.1486974231348 = 47649.708722449956
    assert v["total_tput_tok_s"] == pytest.approx(47649.708722449956, rel=1e-12)
    assert (v["completed"], v["failed"], v["num_prompts"]) == (None, None, None)  # no request or error count
    # concurrency 100; output_tokens_mean 500 with stddev 0 is a nominal OSL; the input had stddev 20
    assert run.in_file_meta == {"conc": 100, "osl": 500}
    assert run.fallback_meta == {"model": "ensemble", "framework": "trtllm"}  # Triton service, tensorrtllm backend


def test_genai_perf_without_subcommand_gives_no_tpot():
    """Old GenAI-Perf releases used the name inter_token_latency for chunk gaps; without input_config.subcommand
    the file cannot say which, so TPOT stays null (validation quarantines the run)."""
    _, _, run = _only_run(GENAI_PERF, _mangled(GENAI_PERF, lambda doc: doc["input_config"].pop("subcommand")))
    assert run.values["median_tpot_s"] is None and run.values["median_ttft_s"] == pytest.approx(0.1728093975)


def test_genai_perf_truncated_and_mangled():
    data = GENAI_PERF.read_bytes()
    assert _reasons(GENAI_PERF, data[: len(data) // 2]) == ["invalid_json"]

    def tpot_as_list(doc):
        doc["inter_token_latency"]["p50"] = [2.17]
    assert _reasons(GENAI_PERF, _mangled(GENAI_PERF, tpot_as_list)) == ["not_a_number:inter_token_latency.p50"]

    def block_as_number(doc):
        doc["request_latency"] = 5767.4
    assert _reasons(GENAI_PERF, _mangled(GENAI_PERF, block_as_number)) == ["not_an_object:request_latency"]


# --- GuideLLM ----------------------------------------------------------------------------------------------------

def test_guidellm_v2_report():
    row, fmt, run = _only_run(GUIDELLM)
    v = run.values
    assert (row, fmt) == (0, "guidellm")
    # request_totals: successful 4, errored 0, incomplete 0, total 4
    assert (v["completed"], v["failed"], v["num_prompts"]) == (4, 0, 4)
    # time_to_first_token_ms.successful.median = 171.52166366577148 ms
    assert v["median_ttft_s"] == pytest.approx(0.17152166366577148, rel=1e-12)
    # inter_token_latency_ms.successful.median = 24.178653868062757 ms; by hand from the other medians:
    # (E2EL 24.90842366218567 s - TTFT 0.17152166366577148 s) / (1024 - 1) = 0.0241807 s, within 0.01 %
    assert v["median_tpot_s"] == pytest.approx(0.024178653868062757, rel=1e-12)
    assert v["median_tpot_s"] == pytest.approx((24.90842366218567 - 0.17152166366577148) / 1023, rel=1e-3)
    assert v["median_itl_s"] is None
    assert v["median_e2el_s"] == 24.90842366218567
    assert v["output_tput_tok_s"] == 165.59511945248636 and v["total_tput_tok_s"] == 181.60480385267783
    assert (v["total_input_tokens"], v["total_output_tokens"]) == (396, 4096)
    assert v["duration_s"] == 24.909644603729248
    assert v["model_id"] == "Qwen/Qwen3-4B-Thinking-2507"
    # concurrent strategy with 4 streams; start_time 1772470696.68 = 2026-03-02 16:58 UTC; data is a dataset file
    assert run.in_file_meta == {"conc": 4, "run_date": dt.date(2026, 3, 2)}


# A v1 report (guidellm 0.2/0.3 shape: per-benchmark `args`, `worker`, `request_loader`, `request_totals`),
# SYNTHETIC: written here from guidellm/benchmark/benchmark.py because no public v1 file was found.
V1_DIST = {"mean": 10.0, "median": 9.0, "std_dev": 1.0, "total_sum": 0.0,
           "percentiles": {"p90": 11.0, "p95": 12.0, "p99": 13.0}}


def _v1_benchmark(strategy: dict, totals: dict) -> dict:
    def dist(scale: float, total_sum: float = 0.0) -> dict:
        out = {k: (v * scale if isinstance(v, float) else v) for k, v in V1_DIST.items()}
        out["percentiles"] = {k: p * scale for k, p in V1_DIST["percentiles"].items()}
        out["total_sum"] = total_sum
        return {"successful": out, "errored": copy.deepcopy(out), "incomplete": copy.deepcopy(out), "total": out}
    return {
        "type_": "generative_benchmark", "run_id": "synthetic", "duration": 20.0, "start_time": 1.7e9,
        "end_time": 1.7e9 + 20.0,
        "args": {"strategy": strategy, "strategy_index": 0, "max_number": None},
        "worker": {"type_": "generative_requests_worker", "backend_model": "meta-llama/Llama-3.1-8B-Instruct"},
        "request_loader": {"type_": "generative_request_loader", "data": "prompt_tokens=256,output_tokens=128"},
        "request_totals": totals,
        "metrics": {
            "time_to_first_token_ms": dist(10.0), "inter_token_latency_ms": dist(1.0), "request_latency": dist(0.1),
            "output_tokens_per_second": dist(100.0), "tokens_per_second": dist(300.0),
            "requests_per_second": dist(0.1), "prompt_token_count": dist(1.0, 2560.0),
            "output_token_count": dist(1.0, 1280.0),
        },
    }


def test_guidellm_v1_report_synthetic():
    report = {"benchmarks": [
        _v1_benchmark({"type_": "synchronous"}, {"successful": 10, "errored": 0, "incomplete": 0, "total": 10}),
        _v1_benchmark({"type_": "concurrent", "streams": 8},
                      {"successful": 10, "errored": 2, "incomplete": 1, "total": 13}),
        _v1_benchmark({"type_": "constant", "rate": 5.0},
                      {"successful": 10, "errored": 0, "incomplete": 0, "total": 10}),
    ]}
    readout = read_file("benchmarks.json", json.dumps(report).encode())
    assert not readout.rejects and [(row, fmt) for row, fmt, _ in readout.runs] == [
        (0, "guidellm"), (1, "guidellm"), (2, "guidellm")]
    sync, conc, rate = (run for _, _, run in readout.runs)
    # errored 2 + incomplete 1 = 3 failures; successful 10 completed, total 13
    assert (conc.values["completed"], conc.values["failed"], conc.values["num_prompts"]) == (10, 3, 13)
    assert sync.in_file_meta["conc"] == 1 and conc.in_file_meta["conc"] == 8 and "conc" not in rate.in_file_meta
    assert sync.in_file_meta["isl"] == 256 and sync.in_file_meta["osl"] == 128
    # TTFT median 9.0 * 10 = 90 ms; ITL median 9.0 ms -> TPOT 0.009 s; request latency median 0.9 s
    assert sync.values["median_ttft_s"] == pytest.approx(0.09) and sync.values["median_tpot_s"] == pytest.approx(0.009)
    assert sync.values["median_e2el_s"] == pytest.approx(0.9)
    assert sync.values["total_tput_tok_s"] == pytest.approx(3000.0)  # tokens_per_second mean 10.0 * 300
    assert sync.values["model_id"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_guidellm_truncated_mangled_and_empty():
    data = GUIDELLM.read_bytes()
    assert _reasons(GUIDELLM, data[: len(data) // 2]) == ["invalid_json"]

    def totals_as_text(doc):
        doc["benchmarks"][0]["metrics"]["request_totals"]["successful"] = "4"
    assert _reasons(GUIDELLM, _mangled(GUIDELLM, totals_as_text)) == [
        "not_an_integer:metrics.request_totals.successful"]

    def no_totals(doc):
        del doc["benchmarks"][0]["metrics"]["request_totals"]
    assert _reasons(GUIDELLM, _mangled(GUIDELLM, no_totals)) == ["missing_field:metrics.request_totals"]

    def no_benchmarks(doc):
        doc["benchmarks"] = []
    assert _reasons(GUIDELLM, _mangled(GUIDELLM, no_benchmarks)) == ["empty_document"]


# --- LLMPerf -----------------------------------------------------------------------------------------------------

def test_llmperf_summary():
    _, fmt, run = _only_run(LLMPERF)
    v = run.values
    assert fmt == "llmperf"
    assert v["median_ttft_s"] == 0.5188384269999915 and v["p99_ttft_s"] == 0.9361088764299665
    assert v["median_e2el_s"] == 2.29238539749997
    assert v["median_tpot_s"] is None and v["median_itl_s"] is None  # see the module docstring
    assert (v["completed"], v["failed"], v["num_prompts"]) == (150, 0, 150)
    assert v["output_tput_tok_s"] == 255.82978116075432
    # duration = 150 completed / 89.0358867148797 per min * 60 = 101.08283673100004 s
    assert v["duration_s"] == pytest.approx(101.08283673100004, rel=1e-12)
    # input tokens = 550.0 * 150 = 82500; output tokens = 172.4 * 150 = 25860
    assert (v["total_input_tokens"], v["total_output_tokens"]) == (82500, 25860)
    # total = 255.82978116075432 + 82500 / 101.08283673100004 = 1071.9920760471514
    assert v["total_tput_tok_s"] == pytest.approx(1071.9920760471514, rel=1e-12)
    # --metadata framework=together; 5 concurrent requests; 550/150 tokens with stddev 0; timestamp 1702985601
    assert run.in_file_meta == {"framework": "together", "conc": 5, "isl": 550, "osl": 150,
                                "run_date": dt.date(2023, 12, 19)}
    assert run.fallback_meta == {"model": "llama-2-7b-chat"}


def test_llmperf_truncated_and_mangled():
    data = LLMPERF.read_bytes()
    assert _reasons(LLMPERF, data[: len(data) // 2]) == ["invalid_json"]

    def ttft_as_text(doc):
        doc["results_ttft_s_quantiles_p50"] = "0.52s"
    assert _reasons(LLMPERF, _mangled(LLMPERF, ttft_as_text)) == ["not_a_number:results_ttft_s_quantiles_p50"]

    def completed_as_float(doc):
        doc["results_num_completed_requests"] = 150.5
    assert _reasons(LLMPERF, _mangled(LLMPERF, completed_as_float)) == [
        "not_an_integer:results_num_completed_requests"]


# --- inference-perf ----------------------------------------------------------------------------------------------

def test_inference_perf_stage_report():
    _, fmt, run = _only_run(INFERENCE_PERF)
    v = run.values
    assert fmt == "inference_perf"
    assert v["median_tpot_s"] == 0.0034682437246881946 and v["median_ttft_s"] == 0.032918093027547
    # the pooled token gaps: median 3.39e-05 s, far from TPOT (tokens arrive in bursts); kept as ITL only
    assert v["median_itl_s"] == 3.392953658476472e-05
    assert v["median_e2el_s"] == 0.4824237964930944 and v["std_e2el_s"] is None
    assert (v["completed"], v["failed"], v["num_prompts"]) == (60, 0, 60)
    assert v["total_tput_tok_s"] == 262.204954787065 and v["output_tput_tok_s"] == 62.15363932698074
    # duration = 60 / 0.996850670841712 req/s = 60.18955672602169 s
    assert v["duration_s"] == pytest.approx(60.18955672602169, rel=1e-12)
    # tokens = 200.68333333333334 * 60 = 12041; 62.35 * 60 = 3741
    assert (v["total_input_tokens"], v["total_output_tokens"]) == (12041, 3741)
    assert run.in_file_meta == {} and v["model_id"] is None  # a rate stage (1 req/s): no concurrency, no model


def test_inference_perf_summary_is_not_a_run():
    assert _reasons(INFERENCE_PERF_SUMMARY, INFERENCE_PERF_SUMMARY.read_bytes()) == [
        "unsupported_scenario:all_stages_summary"]


def test_inference_perf_truncated_and_mangled():
    data = INFERENCE_PERF.read_bytes()
    assert _reasons(INFERENCE_PERF, data[: len(data) // 2]) == ["invalid_json"]

    def count_as_text(doc):
        doc["successes"]["count"] = "60"
    assert _reasons(INFERENCE_PERF, _mangled(INFERENCE_PERF, count_as_text)) == ["not_an_integer:successes.count"]

    def tpot_as_text(doc):
        doc["successes"]["latency"]["time_per_output_token"]["median"] = "3.5ms"
    assert _reasons(INFERENCE_PERF, _mangled(INFERENCE_PERF, tpot_as_text)) == [
        "not_a_number:successes.latency.time_per_output_token.median"]


# --- the whole pipeline ------------------------------------------------------------------------------------------

# Sidecars as a user would write them. They are TEST INPUTS, not facts about the fixtures, except where noted:
# the GPU reference has no RTX 5090 (AIPerf file), Intel XPU (GuideLLM file) or API provider (LLMPerf file), so
# those runs get `h100` only to exercise the accepted path. The inference-perf demo did run on one H100 80GB with
# vLLM v0.11 serving meta-llama/Llama-3.1-8B-Instruct, ISL 128 + 64 and OSL 64 (its manifests.yaml and config.yaml);
# its conc is a test input (the stage is rate-based, 1 request/s).
SIDECARS = {
    AIPERF: {"model": "qwen3.6-35b-a3b", "hw": "h100", "framework": "vllm", "precision": "fp4", "tp": 1,
             "isl": 367, "osl": 199},
    GENAI_PERF: {"model": "llama-3.1-8b", "hw": "h100", "precision": "bf16", "tp": 1, "isl": 200},
    GUIDELLM: {"hw": "h100", "framework": "vllm", "precision": "fp8", "tp": 4, "isl": 99, "osl": 1024},
    LLMPERF: {"hw": "h100", "precision": "bf16", "tp": 1},
    INFERENCE_PERF: {"model": "llama-3.1-8b-instruct", "hw": "h100", "framework": "vllm", "precision": "bf16",
                     "tp": 1, "isl": 192, "osl": 64, "conc": 1},
}


def test_harness_files_end_to_end(run_pipeline, tmp_path):
    raw = tmp_path / "raw"
    for path, sidecar in SIDECARS.items():
        folder = raw / path.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / path.name)
        (folder / f"{path.name}.meta.json").write_text(json.dumps(sidecar))
    result = run_pipeline(raw)
    assert result.result.success
    checks = result.check_results()
    # every check passes, the warning reported_intvty_matches_tpot included: AIPerf's own p50 interactivity
    # times the median TPOT is 75.48245927436056 * 0.013248111012987014 = 1.0
    assert checks and all(checks.values()), checks

    runs = {r["source_format"]: r for r in result.mart("runs").to_pylist() if r["price_book"] == "inferencex-seed"}
    quarantine = {r["source_file"]: r for r in result.mart("quarantine").to_pylist()
                  if not r["reason_code"].startswith("not_a_run_log:")}
    assert set(runs) == {"aiperf", "genai_perf", "guidellm", "inference_perf", "llmperf"}
    # 2961.781439682358 tok/s on 1 GPU; interactivity 1 / 0.013248111012987014 s = 75.48245927436056 tok/s/user
    assert runs["aiperf"]["tput_per_gpu"] == pytest.approx(2961.781439682358, rel=1e-12)
    assert runs["aiperf"]["median_intvty"] == pytest.approx(75.48245927436056, rel=1e-12)
    assert runs["genai_perf"]["tput_per_gpu"] == pytest.approx(47649.708722449956, rel=1e-12)
    assert runs["genai_perf"]["framework"] == "trtllm" and runs["genai_perf"]["conc"] == 100
    # 181.60480385267783 tok/s / 4 GPUs = 45.40120096316946; 1 / 0.024178653868062757 s = 41.35879546714079
    assert runs["guidellm"]["tput_per_gpu"] == pytest.approx(45.40120096316946, rel=1e-12)
    assert runs["guidellm"]["median_intvty"] == pytest.approx(41.35879546714079, rel=1e-12)
    assert runs["guidellm"]["model"] == "qwen3-4b-thinking-2507" and runs["guidellm"]["conc"] == 4
    # 262.204954787065 tok/s on 1 H100; 1 / 0.0034682437246881946 s = 288.3303710410095 tok/s/user
    assert runs["inference_perf"]["tput_per_gpu"] == pytest.approx(262.204954787065, rel=1e-12)
    assert runs["inference_perf"]["median_intvty"] == pytest.approx(288.3303710410095, rel=1e-12)
    # LLMPerf has no TPOT: its run is placed by 1 / p90 of inter_token_latency_s (E2EL / OSL per request),
    # 1 / 0.014966241846958366 s = 66.81709... tok/s/user, named as that statistic
    assert runs["llmperf"]["median_intvty"] is None
    assert runs["llmperf"]["x_intvty"] == 1 / 0.014966241846958366
    assert runs["llmperf"]["x_intvty_stat"] == "e2e_norm_intvty_p90"
    assert quarantine == {}
