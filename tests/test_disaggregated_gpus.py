"""Per-role GPU accounting of disaggregated runs and stated vs inferred metadata (docs/metrics.md sections 2-3,
docs/inputs.md section 5): a count the parser only infers never overrides a sidecar, and is never a conflict."""

import json

import pytest

from pipeline.ingest.keys import normalize_hw
from pipeline.ingest.metadata import resolve
from pipeline.ingest.parsers import read_file

START = 1_700_000_000.0


def _sglang_pd_line() -> dict:
    """One SGLang bench_serving line of a prefill/decode split whose server_info lists one server per role
    (tp_size 1 each), as the router reports it; 100 requests of 900 + 900 tokens in 20 s."""
    server = {"model_path": "Qwen/Qwen2.5-3B-Instruct", "tp_size": 1, "pp_size": 1}
    return {
        "backend": "sglang", "dataset_name": "random", "random_input_len": 900, "random_output_len": 900,
        "random_range_ratio": 1.0, "max_concurrency": 64, "duration": 20.0, "completed": 100,
        "total_input_tokens": 90000, "total_output_tokens": 90000, "request_throughput": 5.0,
        "input_throughput": 4500.0, "output_throughput": 4500.0, "total_throughput": 9000.0,
        "median_e2e_latency_ms": 9000.0, "median_ttft_ms": 300.0, "median_tpot_ms": 10.0, "mean_tpot_ms": 10.0,
        "p99_tpot_ms": 12.0, "median_itl_ms": 10.0, "accept_length": None,
        "server_info": {"internal_states": [server], "prefill": [{**server, "disaggregation_mode": "prefill"}],
                        "decode": [{**server, "disaggregation_mode": "decode"}]},
    }


def _parse(doc: dict, name: str = "pd.jsonl"):
    readout = read_file(name, json.dumps(doc).encode())
    assert len(readout.runs) == 1, readout.rejects
    return readout.runs[0][2]


def test_split_counts_from_server_info_are_inferred_not_stated():
    run = _parse(_sglang_pd_line())
    assert run.in_file_meta["disagg"] is True  # the split itself is stated by the file
    assert "num_prefill_gpu" not in run.in_file_meta and "num_decode_gpu" not in run.in_file_meta
    assert (run.fallback_meta["num_prefill_gpu"], run.fallback_meta["num_decode_gpu"]) == (1, 1)


def test_sidecar_decode_count_is_accepted_not_a_conflict():
    run = _parse(_sglang_pd_line())
    meta, sources, conflicts = resolve(run.in_file_meta, {"num_decode_gpu": 8}, None, run.fallback_meta)
    assert conflicts == []
    assert (meta["num_prefill_gpu"], meta["num_decode_gpu"]) == (1, 8)
    assert (sources["num_prefill_gpu"], sources["num_decode_gpu"], sources["disagg"]) == ("engine", "sidecar", "file")


def test_a_conflict_is_only_between_two_stated_values():
    run = _parse({**_sglang_pd_line(), "num_decode_gpu": 4})  # now the file states it (a --metadata style key)
    _, _, conflicts = resolve(run.in_file_meta, {"num_decode_gpu": 8}, None, run.fallback_meta)
    assert conflicts == ["num_decode_gpu: file=4 sidecar=8"]


def test_disaggregated_1p8d_per_role_throughput_and_power(tmp_path, run_pipeline):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "pd.jsonl").write_text(json.dumps(_sglang_pd_line()) + "\n")
    (raw / "pd.jsonl.meta.json").write_text(json.dumps({
        "model": "qwen2.5-3b-instruct", "hw": "h200", "precision": "bf16", "num_prefill_gpu": 1, "num_decode_gpu": 8,
        "run_date": "2026-07-14",
        "power_log": "power.csv", "start_time_unix": START}))
    # DCGM-style samples, one per second from 2 s before to 2 s after the 20 s window, 9 GPUs at 600 W each
    (raw / "power.csv").write_text("timestamp_unix,hostname,gpu_index,power_w\n" + "".join(
        f"{START + t},node{g // 8},{g % 8 if g < 8 else g},600\n" for t in range(-2, 23) for g in range(9)))
    result = run_pipeline(raw)
    assert result.result.success
    (run,) = [r for r in result.mart("runs").to_pylist() if r["price_book"] == "inferencex-seed"]
    assert run["metadata_conflicts"] in (None, "")
    assert (run["disagg"], run["num_prefill_gpu"], run["num_decode_gpu"], run["num_gpus"]) == (True, 1, 8, 9)
    # total over all 9 GPUs, input over the 1 prefill GPU, output over the 8 decode GPUs (the dashboard's rule)
    assert run["tput_per_gpu"] == pytest.approx(9000 / 9)        # 1000
    assert run["input_tput_per_gpu"] == pytest.approx(4500 / 1)  # 4500
    assert run["output_tput_per_gpu"] == pytest.approx(4500 / 8)  # 562.5
    # H200 at $1.41/GPU-h and 1.73 kW all-in
    assert run["cost_per_mtok_hyperscaler"] == pytest.approx(1.41 / (1000 * 3600 / 1e6))
    assert run["output_cost_per_mtok_hyperscaler"] == pytest.approx(1.41 / (562.5 * 3600 / 1e6))
    assert run["tok_s_per_mw"] == pytest.approx(1000 * 1000 / 1.73)
    # measured: 9 GPUs at 600 W for 20 s
    assert run["power_valid"] is True
    assert run["avg_power_w_per_gpu"] == pytest.approx(600.0)
    assert run["energy_j"] == pytest.approx(600.0 * 9 * 20)
    assert run["measured_tok_s_per_mw"] == pytest.approx(1000 * 1e6 / 600)
    assert run["measured_j_per_output_token"] == pytest.approx(600 * 9 / 4500)  # all power over output tok/s


def _trtllm_report(machine_name: str) -> dict:
    return {"engine": {"model": "Qwen/Qwen2.5-0.5B-Instruct", "dtype": "bfloat16"},
            "machine": {"name": machine_name}, "world_info": {"tp_size": 1, "pp_size": 1},
            "request_info": {"num_requests": 10, "avg_input_length": 128, "avg_output_length": 40},
            "performance": {"system_total_throughput_tok_s": 1000.0, "system_output_throughput_tok_s": 250.0,
                            "total_latency_ms": 5000.0},
            "streaming_metrics": {"avg_ttft_ms": 20.0, "avg_tpot_ms": 5.0,
                                  "tpot_percentiles": {"p50": 5.0, "average": 5.0}}}


def test_machine_name_maps_through_the_alias_table_and_yields_to_a_sidecar():
    run = _parse(_trtllm_report("NVIDIA H200"), "report.json")
    assert "hw" not in run.in_file_meta
    meta, sources, conflicts = resolve(run.in_file_meta, None, None, run.fallback_meta)
    assert (meta["hw"], sources["hw"]) == ("h200", "engine")
    meta, sources, conflicts = resolve(run.in_file_meta, {"hw": "b200"}, None, run.fallback_meta)
    assert (meta["hw"], sources["hw"], conflicts) == ("b200", "sidecar", [])


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H200", "h200"),
    ("nvidia  h200  141gb hbm3e", "h200"),
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("AMD Instinct MI355X", "mi355x"),
    ("NVIDIA H200 NVL", "nvidia h200 nvl"),  # another SKU (other power and prices): left unknown
    ("NVIDIA GeForce RTX 4070 Ti", "nvidia geforce rtx 4070 ti"),
])
def test_marketing_names(name, key):
    assert normalize_hw(name) == key
