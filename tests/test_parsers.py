"""Format detection and parsing, checked against each real file's own numbers (read independently with json)."""

import datetime as dt
import json

import pytest
from conftest import load_json

from pipeline.ingest.parsers import read_file


def _read(path):
    return read_file(path.name, path.read_bytes())


def _only_run(readout):
    assert len(readout.runs) == 1, readout.rejects
    return readout.runs[0]


def test_vllm_inferencex_client_ms_keys(real_logs):
    path = real_logs / "vllm/ix_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355.json"
    raw = load_json(path)
    _, fmt, run = _only_run(_read(path))
    assert fmt == "vllm_bench_serve"
    v = run.values
    assert v["median_tpot_s"] == pytest.approx(raw["median_tpot_ms"] / 1000)
    assert v["p99_e2el_s"] == pytest.approx(raw["p99_e2el_ms"] / 1000)
    assert v["total_tput_tok_s"] == raw["total_token_throughput"]
    assert v["input_tput_tok_s"] == pytest.approx(raw["total_token_throughput"] - raw["output_throughput"])
    assert (v["completed"], v["num_prompts"], v["failed"]) == (40, 40, None)
    assert run.in_file_meta["conc"] == raw["max_concurrency"] == 4
    assert run.in_file_meta["run_date"] == dt.date(2026, 5, 27)
    assert run.fallback_meta["framework"] == "vllm"


def test_vllm_decode_slo_variant_in_seconds(real_logs):
    path = real_logs / "inferencex-decode-slo/glm-5/glm5_fp8_vllm_tp8_isl1024_osl128_conc16.json"
    raw = load_json(path)
    _, fmt, run = _only_run(_read(path))
    assert fmt == "vllm_bench_serve"
    assert run.values["latency_unit_in_file"] == "s"
    assert run.values["median_tpot_s"] == raw["median_tpot"]
    assert run.values["total_tput_tok_s"] == pytest.approx(raw["input_throughput"] + raw["output_throughput"])
    assert any("input_throughput + output_throughput" in d for d in run.derivations)


def test_sglang_jsonl_with_bare_infinity(real_logs):
    path = real_logs / "sglang/tonyli_agg_n100_in128_out128_c32.jsonl"
    raw = json.loads(path.read_text().splitlines()[0])  # the stdlib accepts the bare Infinity token
    assert raw["request_rate"] == float("inf")
    _, fmt, run = _only_run(_read(path))
    assert fmt == "sglang_bench_serving"
    assert run.values["total_tput_tok_s"] == raw["total_throughput"]
    assert run.values["median_e2el_s"] == pytest.approx(raw["median_e2e_latency_ms"] / 1000)
    assert run.values["median_tpot_s"] == pytest.approx(raw["median_tpot_ms"] / 1000)
    assert run.in_file_meta["conc"] == 32 and run.in_file_meta["isl"] == 128
    assert run.values["model_id"] == raw["server_info"]["model_path"]


def test_sglang_prefill_decode_split_is_disaggregated(real_logs):
    _, _, run = _only_run(_read(real_logs / "sglang/tonyli_pd_local.jsonl"))
    assert run.in_file_meta["disagg"] is True
    assert run.values["model_id"]


def test_sglang_2024_format_every_line(real_logs):
    path = real_logs / "sglang/datacrunch_h200_llama3.3_70b_online_output.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    readout = _read(path)
    assert len(readout.runs) == len(lines) and not readout.rejects
    first = readout.runs[0][2].values
    assert first["median_tpot_s"] is None  # 2024 files have no TPOT: validation will quarantine them
    expected = (lines[0]["total_input_tokens"] + lines[0]["total_output_tokens"]) / lines[0]["duration"]
    assert first["total_tput_tok_s"] == pytest.approx(expected)


def test_trtllm_report_json(real_logs):
    path = real_logs / "trtllm/masahiro_trtllm_bench_report_rtx6000_qwen25_0p5b_in128_out40_bs1.json"
    raw = load_json(path)
    _, fmt, run = _only_run(_read(path))
    assert fmt == "trtllm_bench"
    v = run.values
    assert v["median_tpot_s"] == pytest.approx(raw["streaming_metrics"]["tpot_percentiles"]["p50"] / 1000)
    assert v["mean_ttft_s"] == pytest.approx(raw["streaming_metrics"]["ttft_percentiles"]["average"] / 1000)
    assert v["total_tput_tok_s"] == raw["performance"]["system_total_throughput_tok_s"]
    assert v["percentile_method"] == "nearest_rank"
    assert run.fallback_meta["hw"] == raw["machine"]["name"]  # a machine name implies hw, a sidecar may override
    assert (run.in_file_meta["tp"], run.in_file_meta["isl"], run.in_file_meta["osl"]) == (1, 128, 40)


def test_inferencex_agg_row(real_logs):
    path = real_logs / "inferencex/ix_agg_kimik2.5_1k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc4_MI355.json"
    raw = load_json(path)
    _, fmt, run = _only_run(_read(path))
    assert fmt == "inferencex_agg"
    assert run.values["reported_tput_per_gpu"] == raw["tput_per_gpu"]
    assert run.values["median_tpot_s"] == raw["median_tpot"]
    assert run.in_file_meta["model"] == "kimik2.5"
    assert run.in_file_meta["spec_decoding"] == "mtp"
    assert run.values["model_id"] == "moonshotai/Kimi-K2.5"


def test_inferencex_dashboard_export(real_logs):
    path = real_logs / "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
    raw = load_json(path)
    readout = _read(path)
    assert len(readout.runs) == len(raw) and not readout.rejects
    row, fmt, run = readout.runs[0]
    assert fmt == "inferencex_api" and row == 0
    assert run.values["reported_tput_per_gpu"] == raw[0]["metrics"]["tput_per_gpu"]
    assert run.values["median_tpot_s"] == raw[0]["metrics"]["median_tpot"]
    assert run.in_file_meta["hw"] == raw[0]["hardware"]
    assert run.in_file_meta["spec_decoding"] == raw[0]["spec_method"]
    assert run.in_file_meta["run_date"] == raw[0]["date"]


def test_non_agentic_scenario_is_rejected_by_name():
    row = {"hw": "mi355x", "scenario_type": "chat-replay", "tput_per_gpu": 10.0, "median_tpot": 0.02}
    readout = read_file("row.json", json.dumps(row).encode())
    assert not readout.runs
    assert [r.reason_code for r in readout.rejects] == ["unsupported_scenario:chat-replay"]


@pytest.mark.parametrize(
    "relpath, kind",
    [
        ("power/powertrace_a100_smoke_1784415083_nvidia_smi_power.csv", "power_telemetry"),
        ("power/seongjunpark_pynvml_power_log_wide.csv", "power_telemetry"),
        ("inferencex-decode-slo/glm-5/runs.csv", "metadata_manifest"),
        ("PROVENANCE.md", "documentation"),
    ],
)
def test_non_run_files_are_recognized(real_logs, relpath, kind):
    readout = _read(real_logs / relpath)
    assert readout.kind == kind
    assert [r.reason_code for r in readout.rejects] == [f"not_a_run_log:{kind}"]


GOOD_VLLM = {"date": "20260101-000000", "model_id": "m", "num_prompts": 4, "duration": 2.0, "completed": 4,
             "total_token_throughput": 100.0, "output_throughput": 50.0, "median_tpot_ms": 10.0}


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("empty.json", b"", "empty_file"),
        ("blank.json", b"  \n\t\n", "empty_file"),
        ("bad.json", b'{"duration": 1.0, ', "invalid_json"),
        ("truncated.json", json.dumps(GOOD_VLLM, indent=2).encode()[:-30], "invalid_json"),
        ("latin1.json", b'{"model_id": "caf\xe9"}', "invalid_encoding"),
        ("number.json", b"42", "wrong_top_level_type"),
        ("strings.json", json.dumps({**GOOD_VLLM, "duration": "fast"}).encode(), "not_a_number:duration"),
        ("unknown.json", b'{"hello": "world"}', "unrecognized_format"),
    ],
)
def test_bad_files_get_a_reason(name, data, reason):
    readout = read_file(name, data)
    assert not readout.runs
    assert [r.reason_code for r in readout.rejects] == [reason]


def test_jsonl_bad_line_among_good_ones():
    good = json.dumps(GOOD_VLLM)
    readout = read_file("runs.jsonl", f"{good}\n{{not json\n{good}\n".encode())
    assert [row for row, _, _ in readout.runs] == [0, 2]
    assert [(r.row, r.reason_code) for r in readout.rejects] == [(1, "invalid_json")]
    assert "line 2" in readout.rejects[0].detail


def test_sidecar_is_recorded_not_parsed():
    readout = read_file("run.json.meta.json", b'{"hw": "h200"}')
    assert [r.reason_code for r in readout.rejects] == ["not_a_run_log:metadata_sidecar"]
