"""What a number means, checked on real result files (issue "Real files, right numbers"): GPU counts the engine only
implies, speculative decoding the latencies show, the range-ratio length rule, lengths checked from latencies,
workflow re-run attempts, a night that accepts nothing, vLLM's ISO 8601 dates, LLMPerf's axis and which copy of a
duplicate is kept. Every expected number is computed here from the file's own values (json, by hand), never by
the pipeline's code. The files: ``../shared/real-logs`` (``real_logs``) and ``tests/fixtures`` (PROVENANCE.md).
"""

import copy
import json
import os
import shutil
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, unrestricted

from pipeline.frontiers.points import build_frontiers
from pipeline.frontiers.sides import Side
from pipeline.ingest.folder import ingest_folder
from pipeline.ingest.keys import gpu_keys, normalize_hw, normalize_precision, normalize_spec
from pipeline.validate.rules import validate_table

FIXTURES = Path(__file__).parent / "fixtures"
PD_1P8D = FIXTURES / "sglang_pd" / "pd_1p8d_n100_in512_out128_c64.jsonl"
EAGLE3 = "vllm/ix_local_minimaxm2.5_8k1k_conc64_eagle3_gmu090.json"
KIMI_FP4 = "vllm/ix_local_kimik2.5_fp4_fixed_ar_1k1k_conc64_retry.json"
NON_SPEC = "inferencex-decode-slo/qwen3.5"
KIMI_RAW = "vllm/ix_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355.json"
KIMI_AGG = "inferencex/ix_agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355.json"
EXPORT = "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
FAILED = "vllm/ix_local_minimaxm2.5_8k1k_conc64_eagle3_FAILED_zero.json"
# the Kimi raw file's metadata as its InferenceX agg twin states it (the raw file names only the engine and conc)
KIMI_META = {"model": "kimik2.5", "hw": "mi355x", "framework": "vllm", "precision": "int4", "spec_decoding": "mtp",
             "tp": 8, "ep": 1, "isl": 8192, "osl": 1024}


def _judge(raw: Path) -> tuple[dict, dict]:
    """Parse and validate a folder (no Dagster): {source_file: accepted run}, {source_file: quarantine row}."""
    result = ingest_folder(raw)
    accepted, rejected = validate_table(result.runs, gpu_keys())
    rejects = [*result.rejects.to_pylist(), *rejected.to_pylist()]
    return ({r["source_file"]: r for r in accepted.to_pylist()},
            {r["source_file"]: r for r in rejects})


def _seed(table) -> list[dict]:
    return [r for r in table.to_pylist() if r["price_book"] == "inferencex-seed"]


def _sglang(path: Path) -> dict:
    return json.loads(path.read_text().replace("Infinity", "1e999"))


# 1. A GPU count the engine only implies is never a denominator ----------------------------------------------------

def test_pd_split_listed_as_one_server_per_role_is_quarantined_not_counted_as_two(tmp_path):
    """TonyLi15's 1 prefill (GH200) + 8 decode (A100) run: server_info lists one server per role (tp_size 1 each),
    so the file implies 2 GPUs; a sidecar stating only the hardware and precision does not make it 9."""
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(PD_1P8D, raw / PD_1P8D.name)
    line = _sglang(PD_1P8D)
    assert [s["tp_size"] for s in line["server_info"]["prefill"] + line["server_info"]["decode"]] == [1, 1]
    # the test's own statement of the hardware (the GPU table has no A100): the count is what is tested
    (raw / f"{PD_1P8D.name}.meta.json").write_text(json.dumps({"hw": "h100", "precision": "bf16"}))
    runs, rejects = _judge(raw)
    assert runs == {}
    reject = rejects[PD_1P8D.name]
    assert reject["reason_code"] == "missing_metadata:num_decode_gpu"
    assert "num_decode_gpu=1, num_prefill_gpu=1 only implied by the engine output" in reject["detail"]
    assert "state num_decode_gpu and num_prefill_gpu" in reject["detail"]


def test_pd_split_with_stated_counts_divides_by_nine(tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(PD_1P8D, raw / PD_1P8D.name)
    (raw / f"{PD_1P8D.name}.meta.json").write_text(json.dumps(
        {"hw": "h100", "precision": "bf16", "num_prefill_gpu": 1, "num_decode_gpu": 8, "run_date": "2025-12-10"}))
    line = _sglang(PD_1P8D)
    result = run_pipeline(raw)
    assert result.result.success
    (run,) = _seed(result.mart("runs"))
    assert (run["num_prefill_gpu"], run["num_decode_gpu"], run["num_gpus"]) == (1, 8, 9)
    assert run["tput_per_gpu"] == pytest.approx(line["total_throughput"] / 9)          # 388.1 tok/s/GPU
    assert run["output_tput_per_gpu"] == pytest.approx(line["output_throughput"] / 8)  # over the decode GPUs
    assert run["input_tput_per_gpu"] == pytest.approx(line["input_throughput"] / 1)    # over the prefill GPU
    assert "num_decode_gpu=sidecar" in run["metadata_sources"]


# 2. Speculative decoding the latencies show, and the dashboard's model keys ---------------------------------------

@pytest.mark.parametrize("sidecar, said", [
    ({}, "only the default"),
    ({"spec_decoding": "none"}, "spec_decoding none comes from sidecar"),
])
def test_eagle3_run_labelled_none_is_a_conflict(real_logs, tmp_path, sidecar, said):
    src = real_logs / EAGLE3
    doc = json.loads(src.read_text())
    ratio = doc["mean_itl_ms"] / doc["mean_tpot_ms"]
    assert 2.0 < ratio < 2.3  # EAGLE3: several accepted tokens per streamed chunk
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(src, raw / src.name)
    meta = {"hw": "mi355x", "precision": "fp8", "tp": 8, "isl": 8192, "osl": 1024, **sidecar}
    (raw / f"{src.name}.meta.json").write_text(json.dumps(meta))
    runs, rejects = _judge(raw)
    assert runs == {}
    reject = rejects[src.name]
    assert reject["reason_code"] == "metadata_conflict:spec_decoding"
    assert f"mean ITL / mean TPOT = {ratio:.2f}" in reject["detail"] and said in reject["detail"]
    # naming the method resolves it; the model key is the dashboard's, from the engine's model id
    (raw / f"{src.name}.meta.json").write_text(json.dumps({**meta, "spec_decoding": "eagle3"}))
    runs, rejects = _judge(raw)
    assert runs[src.name]["spec_decoding"] == "eagle3"
    assert doc["model_id"] == "MiniMaxAI/MiniMax-M2.5" and runs[src.name]["model"] == "minimaxm2.5"


def test_non_spec_runs_pass_and_model_ids_map_to_dashboard_keys(real_logs, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    files = sorted((real_logs / "vllm").glob("ix_multinode_gptoss120b_conc*_gpus16_ctx8_gen8.json"))
    meta = {"hw": "b200", "framework": "dynamo-vllm", "precision": "fp4", "disagg": True, "num_prefill_gpu": 8,
            "num_decode_gpu": 8, "isl": 1024, "osl": 1024}
    for path in files:
        doc = json.loads(path.read_text())
        assert 0.95 < doc["mean_itl_ms"] / doc["mean_tpot_ms"] < 1.05  # one token per chunk
        shutil.copy(path, raw / path.name)
        (raw / f"{path.name}.meta.json").write_text(json.dumps(meta))
    runs, rejects = _judge(raw)
    assert set(runs) == {p.name for p in files}
    # a Hugging Face cache path of openai/gpt-oss-120b: the dashboard's key
    assert "models--openai--gpt-oss-120b" in doc["model_id"] and {r["model"] for r in runs.values()} == {"gptoss"}
    kimi = tmp_path / "kimi"
    kimi.mkdir()
    shutil.copy(real_logs / KIMI_FP4, kimi / "run.json")
    (kimi / "run.json.meta.json").write_text(json.dumps({"hw": "mi355x", "precision": "fp4", "tp": 8, "isl": 1024,
                                                         "osl": 1024, "spec_decoding": "mtp"}))
    runs, _ = _judge(kimi)
    assert json.loads((real_logs / KIMI_FP4).read_text())["model_id"] == "amd/Kimi-K2.5-MXFP4"
    assert runs["run.json"]["model"] == "kimik2.5"  # not kimi-k2.5-mxfp4


# 6 and 10. The range-ratio length rule, and which copy of a duplicate is kept -------------------------------------

def _kimi_pair(real_logs: Path, raw: Path, **meta) -> dict:
    (raw / "vllm").mkdir(parents=True)
    (raw / "inferencex").mkdir()
    shutil.copy(real_logs / KIMI_RAW, raw / KIMI_RAW)
    shutil.copy(real_logs / KIMI_AGG, raw / KIMI_AGG)
    (raw / (KIMI_RAW + ".meta.json")).write_text(json.dumps({**KIMI_META, **meta}))
    return json.loads((real_logs / KIMI_RAW).read_text())


def test_kimi_without_a_range_ratio_keeps_the_twin_that_stays_on_the_frontier(real_logs, tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    doc = _kimi_pair(real_logs, raw)
    isl_measured = doc["total_input_tokens"] / doc["completed"]  # 7350.2 tokens
    assert (isl_measured - 8192) / 8192 == pytest.approx(-0.1028, abs=1e-4)  # 10.3 % under the nominal 8192
    result = run_pipeline(raw)
    assert result.result.success
    runs = {r["source_file"]: r for r in _seed(result.mart("runs"))}
    # the raw copy is more than 10 % off a ratio of 1.0; its agg twin (no token totals) checks out on its latencies:
    # (median E2EL − median TTFT) / median TPOT + 1 within 25 % of 1024
    agg = json.loads((real_logs / KIMI_AGG).read_text())
    implied = (agg["median_e2el"] - agg["median_ttft"]) / agg["median_tpot"] + 1
    assert abs(implied - 1024) / 1024 < 0.25
    assert set(runs) == {KIMI_AGG}
    assert runs[KIMI_AGG]["length_check"] == "latencies"
    assert runs[KIMI_AGG]["latency_output_len"] == pytest.approx(implied)
    (dup,) = [q for q in result.mart("quarantine").to_pylist() if q["reason_code"] == "duplicate_run"]
    assert dup["source_file"] == KIMI_RAW and dup["duplicate_of"] == runs[KIMI_AGG]["run_id"]
    # the measurement stays on its side's frontier (one side here, so no comparison mart: built directly)
    side = Side("kimik2.5", 8192, 1024, "mi355x", "int4", spec_decoding="mtp")
    frontier = build_frontiers(result.mart("runs"), [side]).to_pylist()
    assert {p["source_file"] for p in frontier if p["price_book"] == "inferencex-seed"} == {KIMI_AGG}


def test_kimi_with_inferencex_range_ratio_keeps_the_raw_file(real_logs, tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    doc = _kimi_pair(real_logs, raw, random_range_ratio=0.8)
    result = run_pipeline(raw)
    assert result.result.success
    runs = {r["source_file"]: r for r in _seed(result.mart("runs"))}
    assert set(runs) == {KIMI_RAW}  # on nominal now, and it has the request counts the agg row lacks
    run = runs[KIMI_RAW]
    # lengths uniform in [0.8 n, n]: mean 0.9 n
    assert (run["expected_input_len"], run["expected_output_len"]) == (pytest.approx(8192 * 0.9), pytest.approx(1024 * 0.9))
    assert run["mean_input_len"] == pytest.approx(doc["total_input_tokens"] / doc["completed"])
    assert abs(run["mean_input_len"] / (8192 * 0.9) - 1) < 0.01 and abs(run["mean_output_len"] / (1024 * 0.9) - 1) < 0.01
    assert (run["random_range_ratio"], run["length_check"], run["length_off_nominal"]) == (0.8, "totals", False)
    (dup,) = [q for q in result.mart("quarantine").to_pylist() if q["reason_code"] == "duplicate_run"]
    assert dup["source_file"] == KIMI_AGG and dup["duplicate_of"] == run["run_id"]


def test_sglang_range_ratio_from_the_file_sets_the_expected_lengths(real_logs, tmp_path):
    """SGLang writes random_range_ratio 0.0: lengths uniform in [1, n], mean ~n/2, which the measured lengths show."""
    src = real_logs / "sglang" / "tonyli_agg_n100_in512_out64_c8.jsonl"
    line = _sglang(src)
    assert (line["random_range_ratio"], line["random_input_len"], line["random_output_len"]) == (0.0, 512, 64)
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(src, raw / src.name)
    (raw / f"{src.name}.meta.json").write_text(json.dumps({"hw": "h100", "precision": "bf16"}))
    runs, _ = _judge(raw)
    assert runs[src.name]["random_range_ratio"] == 0.0
    from pipeline.validate.lengths import lengths_off_nominal
    import pyarrow as pa
    from pipeline.ingest.schema import RUN_SCHEMA
    table = pa.Table.from_pylist(list(runs.values()), schema=RUN_SCHEMA)
    measured_in = line["total_input_tokens"] / line["completed"]  # 265.0 against an expected 256
    assert abs(measured_in / 256 - 1) < 0.10 and abs(measured_in / 512 - 1) > 0.10
    assert lengths_off_nominal(table) == [False]
    assert lengths_off_nominal(table.set_column(table.schema.get_field_index("random_range_ratio"),
                                                "random_range_ratio", pa.array([None], pa.float64()))) == [True]


# 7. Lengths checked from the latencies when the file has no token totals ------------------------------------------

def test_together_baselines_imply_short_outputs_and_leave_the_frontier(real_logs, tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    raw.mkdir()
    files = sorted((real_logs / "power").glob("ix_together_baseline_*.json"))
    for path in files:
        shutil.copy(path, raw / path.name)
    result = run_pipeline(raw)
    assert result.result.success
    runs = {r["source_file"]: r for r in _seed(result.mart("runs"))}
    assert set(runs) == {p.name for p in files}
    for path in files:
        m = json.loads(path.read_text())["metrics"]
        implied = (m["median_e2el_ms"] - m["median_ttft_ms"]) / m["median_tpot_ms"] + 1  # 3-52 % of 1024
        assert implied < 0.75 * 1024
        run = runs[path.name]
        assert run["latency_output_len"] == pytest.approx(implied)
        assert (run["length_check"], run["length_off_nominal"]) == ("latencies", True)
    frontier = unrestricted(result.mart("frontiers")).to_pylist()
    assert not {p["source_file"] for p in frontier} & set(runs)
    ledger = {r["source_file"]: r for r in result.mart("ingest_ledger").to_pylist()}
    assert all(ledger[p.name]["length_off_nominal_rows"] == 1 for p in files)


# 8. A workflow re-run replaces the earlier attempt ----------------------------------------------------------------

def _attempt(row: dict, attempt: int, factor: float) -> dict:
    new = copy.deepcopy(row)
    new["run_url"] = new["run_url"].rsplit("/attempts/", 1)[0] + f"/attempts/{attempt}"
    for key in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
        new["metrics"][key] *= factor
    return new


def test_rerun_attempt_replaces_the_earlier_one_on_every_line(real_logs, tmp_path, run_pipeline):
    export = json.loads((real_logs / EXPORT).read_text())
    by_run: dict[str, list[dict]] = {}
    for row in export:
        by_run.setdefault(row["run_url"], []).append(row)
    # a workflow run (attempt 1) with two single-node lines, each measured at two or more concurrencies
    def lines_of(rows):
        out = {}
        for r in rows:
            if not r["disagg"]:
                out.setdefault((r["hardware"], r["framework"], r["precision"], r["spec_method"], r["decode_tp"],
                                r["decode_ep"], r["decode_dp_attention"], r["isl"], r["osl"]), []).append(r)
        return {k: v for k, v in out.items() if len(v) >= 2}
    url, lines = next((u, lines_of(rows)) for u, rows in sorted(by_run.items())
                      if u.endswith("/attempts/1") and len(lines_of(rows)) >= 2)
    (first_key, first_rows), (second_key, second_rows) = sorted(lines.items(), key=lambda kv: str(kv[0]))[:2]
    # attempt 2 re-ran the first line only, at its two lowest concurrencies, 10 % faster
    rerun = [_attempt(r, 2, 1.1) for r in sorted(first_rows, key=lambda r: r["conc"])[:2]]
    raw = tmp_path / "raw" / "inferencex"
    raw.mkdir(parents=True)
    (raw / "export.json").write_text(json.dumps(first_rows + second_rows + rerun))
    result = run_pipeline(raw.parent)
    assert result.result.success
    runs = _seed(result.mart("runs"))
    workflow = url.split("/actions/runs/")[1].split("/")[0]
    attempt2 = [r for r in runs if r["sweep_id"] == f"gha:{workflow}/attempt/2"]
    attempt1 = [r for r in runs if r["sweep_id"] == f"gha:{workflow}"]
    assert len(attempt2) == 2 and len(attempt1) == len(first_rows) + len(second_rows)
    # InferenceX-app reads only the highest attempt of a workflow run: attempt 1 is gone on both lines,
    # never averaged with attempt 2 nor stitched in
    assert {r["superseded_by"] for r in attempt1} == {f"gha:{workflow}/attempt/2"}
    assert all(r["superseded_by"] is None and r["repeat_n"] == 1 for r in attempt2)
    head = rerun[0]
    side = Side(head["model"], head["isl"], head["osl"], normalize_hw(head["hardware"]),
                normalize_precision(head["precision"]), spec_decoding=normalize_spec(head["spec_method"]))
    frontier = [p for p in build_frontiers(result.mart("runs"), [side]).to_pylist()
                if p["price_book"] == "inferencex-seed"]
    assert {p["run_id"] for p in frontier} <= {r["run_id"] for r in attempt2}
    # its points carry attempt 2's own numbers: the export's tok/s/GPU × 1.1, not a mean with attempt 1's
    rerun_tput = {r["metrics"]["tput_per_gpu"] for r in rerun}
    assert frontier and all(any(p["tput_per_gpu"] == pytest.approx(t) for t in rerun_tput) for p in frontier)


# 9. A night that accepts nothing publishes nothing -----------------------------------------------------------------

@pytest.mark.long
def test_a_folder_with_no_accepted_run_publishes_nothing(real_logs, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(real_logs / FAILED, raw / "failed.json")
    assert json.loads((raw / "failed.json").read_text())["completed"] == 0
    env = {**os.environ, "PIPELINE_RAW_DIR": str(raw), "PIPELINE_OUT_DIR": str(tmp_path / "marts"),
           "PIPELINE_DB_PATH": str(tmp_path / "w.duckdb"), "DAGSTER_HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    done = subprocess.run([sys.executable, "-m", "pipeline", "run"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "no run accepted (no_completed_requests 1): nothing published" in done.stderr, done.stderr[-3000:]
    assert not (tmp_path / "marts" / "current").exists()


# 10. vLLM's ISO 8601 date ------------------------------------------------------------------------------------------

def test_vllm_bench_iso_date_is_read_not_quarantined(real_logs, tmp_path):
    """vllm-bench (vLLM's Rust client, which `vllm bench serve` runs when bundled) writes ``date`` as
    ``%Y-%m-%dT%H:%M:%SZ`` in UTC; the rest of the result is vLLM's schema. A real vLLM result with its date
    written that way."""
    doc = json.loads((real_logs / KIMI_FP4).read_text())
    assert doc["date"] == "20260601-080053"
    doc["date"] = "2026-06-01T08:00:53Z"
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "run.json").write_text(json.dumps(doc))
    (raw / "run.json.meta.json").write_text(json.dumps({"hw": "mi355x", "precision": "fp4", "tp": 8, "isl": 1024,
                                                        "osl": 1024, "spec_decoding": "mtp"}))
    runs, rejects = _judge(raw)
    assert rejects == {} or not [r for r in rejects.values() if r["reason_code"].startswith("invalid_date")]
    run = runs["run.json"]
    assert run["run_date"] == date(2026, 6, 1)
    end = datetime(2026, 6, 1, 8, 0, 53, tzinfo=timezone.utc).timestamp()
    assert run["bench_end_unix"] == end and run["bench_end_local"] is None
    from pipeline.metrics.power import run_window
    assert run_window(run)[:2] == (pytest.approx(end - doc["duration"]), end)


def test_llmperf_run_is_accepted_on_its_e2e_normalized_axis(tmp_path, run_pipeline):
    """LLMPerf's inter_token_latency_s is E2E latency / output tokens per request, so 1 / its p90 is the
    E2E-normalized interactivity; the run has no TPOT and is accepted on that axis."""
    src = FIXTURES / "llmperf" / "together_7b.json"
    doc = json.loads(src.read_text())
    individual = json.loads((FIXTURES / "llmperf" / "together_7b_individual.json").read_text())
    ok = [r for r in individual if not r.get("error_code")]
    # per request, ITL × tokens is the time of the last chunk: at most the E2E latency (closed after the stream)
    assert all(r["inter_token_latency_s"] * r["number_output_tokens"] <= r["end_to_end_latency_s"] + 1e-9 for r in ok)
    assert np.mean([r["inter_token_latency_s"] for r in ok]) == pytest.approx(doc["results_inter_token_latency_s_mean"])
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(src, raw / src.name)
    # the summary names no GPU (Together's API): the sidecar is the test's own statement of it
    (raw / f"{src.name}.meta.json").write_text(json.dumps({"hw": "h100", "framework": "together", "precision": "fp16",
                                                           "tp": 1}))
    runs, rejects = _judge(raw)
    run = runs[src.name]
    assert run["source_format"] == "llmperf" and run["median_tpot_s"] is None
    assert run["e2e_norm_intvty_p90"] == 1 / doc["results_inter_token_latency_s_quantiles_p90"]  # 66.8 tok/s/user
    assert run["e2e_norm_intvty_source"] == "llmperf:1/p90(inter_token_latency_s)"
    # through the metrics: its x-axis is that statistic, named, never median interactivity
    (metrics,) = _seed(run_pipeline(raw).mart("runs"))
    assert metrics["x_intvty"] == run["e2e_norm_intvty_p90"] and metrics["median_intvty"] is None
    assert metrics["x_intvty_stat"] == "e2e_norm_intvty_p90"
