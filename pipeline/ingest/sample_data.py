"""Generate ``data/sample/``: a small, realistic set of raw logs in every supported format, from a fixed seed.

Run ``python -m pipeline sample`` to regenerate (the output is byte-for-byte stable). The numbers come from a
simple serving model, not from real hardware: per configuration, TPOT grows with concurrency as
``tpot1·(1 + (conc/c_half)^alpha)``, TTFT as ``ttft1·(1 + conc/c_ttft)``, each request runs
E2EL = TTFT + (OSL − 1)·TPOT, and throughput follows from concurrency / E2EL. Spec decoding (MTP) lowers TPOT at
low concurrency and saturates earlier; its streamed chunks carry several tokens, so ITL ≈ TPOT × acceptance length.

Coverage: two models (dsr1 1k/1k, qwen3.5-397b-a17b 8k/1k), four GPUs (h200, b200, gb200, mi355x), fp4 and
fp8, MTP and none, frameworks vLLM / SGLang / TRT-LLM / Dynamo, all five formats (vLLM JSON, SGLang JSONL,
TRT-LLM report JSON, InferenceX agg rows, InferenceX dashboard export), metadata from the file, sidecars and a
runs.csv, GPU power telemetry (nvidia-smi and amd-smi); plus one failed run and a README, which the pipeline
must quarantine.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from pipeline.io.paths import PROJECT_ROOT

SEED = 20260723
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
CONCURRENCIES = (4, 8, 16, 32, 64, 128)
MODEL_IDS = {"dsr1": "deepseek-ai/DeepSeek-R1-0528", "qwen3.5-397b-a17b": "Qwen/Qwen3.5-397B-A17B"}


@dataclass(frozen=True)
class Config:
    """One serving configuration swept over concurrency."""

    model: str
    isl: int
    osl: int
    hw: str
    precision: str
    framework: str
    spec: str
    tp: int
    tpot1_ms: float
    c_half: float
    alpha: float
    ttft1_ms: float
    c_ttft: float
    accept_length: float | None = None
    ep: int = 1
    dp_attention: bool = False
    run_date: str = "2026-07-14"


@dataclass
class Point:
    """One simulated run."""

    conc: int
    num_prompts: int
    duration_s: float
    in_tokens: int
    out_tokens: int
    ttft_ms: tuple[float, float, float, float, float]  # mean, median, std, p90, p99
    tpot_ms: tuple[float, float, float, float, float]
    itl_ms: tuple[float, float, float, float, float]
    e2el_ms: tuple[float, float, float, float, float]

    @property
    def output_tput(self) -> float:
        return self.out_tokens / self.duration_s

    @property
    def total_tput(self) -> float:
        return (self.in_tokens + self.out_tokens) / self.duration_s

    @property
    def input_tput(self) -> float:
        return self.in_tokens / self.duration_s


def simulate(cfg: Config, conc: int, rng: random.Random) -> Point:
    """One run of ``cfg`` at concurrency ``conc`` (10 requests per slot) with ±2 % noise."""
    noise = lambda: rng.uniform(0.98, 1.02)  # noqa: E731
    tpot = cfg.tpot1_ms * (1 + (conc / cfg.c_half) ** cfg.alpha) * noise()
    ttft = cfg.ttft1_ms * (1 + conc / cfg.c_ttft) * noise()
    e2el = ttft + (cfg.osl - 1) * tpot
    num_prompts = conc * 10
    in_tokens = int(num_prompts * cfg.isl * rng.uniform(0.97, 1.0))
    out_tokens = int(num_prompts * cfg.osl * rng.uniform(0.97, 1.0))
    duration = num_prompts / conc * e2el / 1000 * noise()
    itl = tpot * (cfg.accept_length or 1.0) * 0.97

    def stats(mean: float, spread: float) -> tuple[float, float, float, float, float]:
        return (mean, mean * (1 - spread / 4), mean * spread, mean * (1 + spread), mean * (1 + 2.2 * spread))

    return Point(conc, num_prompts, duration, in_tokens, out_tokens, stats(ttft, 0.35), stats(tpot, 0.06),
                 stats(itl, 0.4), stats(e2el, 0.08))


def configs() -> list[Config]:
    """The sample's configurations (see the module docstring for what they cover)."""
    d, q = ("dsr1", 1024, 1024), ("qwen3.5-397b-a17b", 8192, 1024)
    return [
        Config(*d, "mi355x", "fp4", "sglang", "none", 8, 11.0, 48, 0.9, 95, 40),
        Config(*d, "mi355x", "fp4", "sglang", "mtp", 8, 8.8, 36, 0.92, 100, 40, accept_length=2.6),
        Config(*d, "mi355x", "fp8", "sglang", "none", 8, 13.5, 44, 0.9, 120, 36),
        Config(*d, "b200", "fp4", "trtllm", "none", 8, 8.8, 64, 0.85, 70, 48),
        Config(*d, "b200", "fp4", "trtllm", "mtp", 8, 7.2, 50, 0.88, 75, 48, accept_length=2.8),
        Config(*d, "b200", "fp4", "sglang", "none", 8, 9.6, 58, 0.88, 80, 44),
        Config(*d, "b200", "fp8", "sglang", "none", 8, 11.8, 52, 0.9, 95, 40),
        Config(*d, "h200", "fp8", "vllm", "none", 8, 16.5, 40, 0.92, 140, 32),
        Config(*d, "gb200", "fp4", "dynamo-trt", "none", 8, 7.6, 96, 0.8, 60, 64),
        Config(*q, "h200", "fp8", "vllm", "none", 8, 19.0, 36, 0.95, 520, 16),
        Config(*q, "h200", "fp8", "vllm", "mtp", 8, 15.5, 28, 0.97, 540, 16, accept_length=2.4),
        Config(*q, "mi355x", "fp8", "vllm", "none", 8, 17.5, 40, 0.95, 470, 18),
        Config(*q, "b200", "fp8", "sglang", "none", 8, 13.0, 46, 0.92, 380, 20),
        Config(*q, "b200", "fp8", "sglang", "mtp", 8, 10.6, 36, 0.94, 400, 20, accept_length=2.5),
    ]


def _r(value: float) -> float:
    """Round to 6 significant digits so files stay readable and stable across platforms."""
    return float(f"{value:.6g}")


def _dump(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _timestamp(cfg: Config, conc: int) -> str:
    return cfg.run_date.replace("-", "") + f"-{(conc % 24):02d}{(conc * 7) % 60:02d}00"


def vllm_doc(cfg: Config, p: Point) -> dict:
    """A ``vllm bench serve --save-result`` object (vllm/benchmarks/serve.py key order)."""
    doc = {"date": _timestamp(cfg, p.conc), "endpoint_type": "openai", "backend": "vllm", "label": None,
           "model_id": MODEL_IDS[cfg.model], "tokenizer_id": MODEL_IDS[cfg.model], "num_prompts": p.num_prompts,
           "request_rate": "inf", "burstiness": 1.0, "max_concurrency": p.conc, "duration": _r(p.duration_s),
           "completed": p.num_prompts, "failed": 0, "total_input_tokens": p.in_tokens,
           "total_output_tokens": p.out_tokens, "request_throughput": _r(p.num_prompts / p.duration_s),
           "request_goodput": None, "output_throughput": _r(p.output_tput),
           "total_token_throughput": _r(p.total_tput), "max_output_tokens_per_s": _r(p.output_tput * 1.3),
           "max_concurrent_requests": p.conc}
    for name, values in (("ttft", p.ttft_ms), ("tpot", p.tpot_ms), ("itl", p.itl_ms), ("e2el", p.e2el_ms)):
        for stat, value in zip(("mean", "median", "std", "p90", "p99"), values):
            doc[f"{stat}_{name}_ms"] = _r(value)
    if cfg.accept_length:
        doc["spec_decode_acceptance_length"] = cfg.accept_length
        doc["spec_decode_acceptance_rate"] = _r((cfg.accept_length - 1) / 3 * 100)
    return doc


def sglang_doc(cfg: Config, p: Point) -> dict:
    """One SGLang ``bench_serving`` JSONL line (python/sglang/bench_serving.py keys)."""
    doc = {"tag": None, "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
           "max_concurrency": p.conc, "sharegpt_output_len": None, "random_input_len": cfg.isl,
           "random_output_len": cfg.osl, "random_range_ratio": 0.97,
           "server_info": {"model_path": MODEL_IDS[cfg.model], "tp_size": cfg.tp, "ep_size": cfg.ep,
                           "enable_dp_attention": cfg.dp_attention,
                           "quantization": {"fp4": "modelopt_fp4", "fp8": "fp8"}[cfg.precision],
                           "speculative_algorithm": "EAGLE" if cfg.spec == "mtp" else None, "version": "0.5.9"},
           "duration": _r(p.duration_s), "completed": p.num_prompts, "total_input_tokens": p.in_tokens,
           "total_output_tokens": p.out_tokens, "total_output_tokens_retokenized": p.out_tokens - 3,
           "request_throughput": _r(p.num_prompts / p.duration_s), "input_throughput": _r(p.input_tput),
           "output_throughput": _r(p.output_tput), "total_throughput": _r(p.total_tput)}
    for name, values in (("e2e_latency", p.e2el_ms), ("ttft", p.ttft_ms), ("tpot", p.tpot_ms), ("itl", p.itl_ms)):
        for stat, value in zip(("mean", "median", "std", "p90", "p99"), values):
            doc[f"{stat}_{name}_ms"] = _r(value)
    doc["concurrency"] = _r(p.conc * 0.96)
    doc["accept_length"] = cfg.accept_length
    return doc


def trtllm_doc(cfg: Config, p: Point) -> dict:
    """A ``trtllm-bench --report_json`` document (tensorrt_llm/bench/dataclasses/reporting.py sections)."""
    def pct(values: tuple[float, ...]) -> dict:
        mean, median, std, p90, p99 = values
        return {"p50": _r(median), "p90": _r(p90), "p95": _r((p90 + p99) / 2), "p99": _r(p99),
                "minimum": _r(median * 0.8), "maximum": _r(p99 * 1.1), "average": _r(mean)}

    doc = {
        "engine": {"model": MODEL_IDS[cfg.model], "model_path": None, "version": "1.2.0", "backend": "Pytorch",
                   "dtype": "bfloat16", "kv_cache_dtype": "FP8", "quantization": cfg.precision.upper().replace(
                       "FP4", "NVFP4")},
        "machine": {"name": {"b200": "NVIDIA B200", "h200": "NVIDIA H200"}.get(cfg.hw, cfg.hw.upper())},
        "world_info": {"tp_size": cfg.tp, "pp_size": 1, "ep_size": cfg.ep, "world_size": cfg.tp,
                       "max_batch_size": p.conc, "max_num_tokens": 8192},
        "request_info": {"num_requests": p.num_prompts, "avg_num_concurrent_requests": _r(p.conc * 0.97),
                         "avg_input_length": _r(p.in_tokens / p.num_prompts),
                         "avg_output_length": _r(p.out_tokens / p.num_prompts)},
        "performance": {"total_latency_ms": _r(p.duration_s * 1000),
                        "avg_request_latency_ms": _r(p.e2el_ms[0]),
                        "request_throughput_req_s": _r(p.num_prompts / p.duration_s),
                        "system_output_throughput_tok_s": _r(p.output_tput),
                        "system_total_throughput_tok_s": _r(p.total_tput),
                        "output_throughput_per_user_tok_s": _r(cfg.osl / p.e2el_ms[0] * 1000),
                        "output_throughput_per_gpu_tok_s": _r(p.output_tput / cfg.tp),
                        "request_latency_percentiles_ms": pct(p.e2el_ms)},
        "streaming_metrics": {"token_output_speed_tok_s": _r(1000 / p.tpot_ms[0]), "avg_ttft_ms": _r(p.ttft_ms[0]),
                              "avg_tpot_ms": _r(p.tpot_ms[0]), "ttft_percentiles": pct(p.ttft_ms),
                              "tpot_percentiles": pct(p.tpot_ms)},
        "dataset": {"isl_stats": {"minimum": cfg.isl, "maximum": cfg.isl, "average": cfg.isl},
                    "osl_stats": {"minimum": cfg.osl, "maximum": cfg.osl, "average": cfg.osl},
                    "num_requests": p.num_prompts},
    }
    if cfg.accept_length:
        doc["decoding_stats"] = {"mode": "MTP", "acceptance_length_percentiles": {"average": cfg.accept_length}}
    return doc


def inferencex_agg_doc(cfg: Config, p: Point) -> dict:
    """An InferenceX ``process_result.py`` row: own metadata, per-GPU throughput, latencies in seconds."""
    gpus = cfg.tp
    doc = {"hw": f"{cfg.hw}-amds_0", "conc": p.conc, "image": "lmsysorg/sglang:v0.5.9-rocm700-mi35x",
           "model": MODEL_IDS[cfg.model], "infmax_model_prefix": cfg.model, "framework": cfg.framework,
           "precision": {"fp4": "mxfp4"}.get(cfg.precision, cfg.precision), "spec_decoding": cfg.spec,
           "disagg": False, "isl": cfg.isl, "osl": cfg.osl, "is_multinode": False, "tp": cfg.tp, "ep": cfg.ep,
           "dp_attention": str(cfg.dp_attention).lower(), "tput_per_gpu": _r(p.total_tput / gpus),
           "output_tput_per_gpu": _r(p.output_tput / gpus), "input_tput_per_gpu": _r(p.input_tput / gpus)}
    for name, values in (("ttft", p.ttft_ms), ("tpot", p.tpot_ms), ("itl", p.itl_ms), ("e2el", p.e2el_ms)):
        for stat, value in zip(("mean", "median", "std", "p90", "p99"), values):
            doc[f"{stat}_{name}"] = _r(value / 1000)
            if name == "tpot":
                doc[f"{stat}_intvty"] = _r(1000 / value)
    return doc


def inferencex_api_row(cfg: Config, p: Point, prefill_gpus: int, decode_gpus: int) -> dict:
    """A row of the InferenceX dashboard export (``/api/v1/benchmarks``): disaggregated topology, nested metrics."""
    metrics = {"tput_per_gpu": _r(p.total_tput / (prefill_gpus + decode_gpus)),
               "output_tput_per_gpu": _r(p.output_tput / decode_gpus),
               "input_tput_per_gpu": _r(p.input_tput / prefill_gpus)}
    for name, values in (("ttft", p.ttft_ms), ("tpot", p.tpot_ms), ("itl", p.itl_ms), ("e2el", p.e2el_ms)):
        for stat, value in zip(("mean", "median", "std", "p99"), (values[0], values[1], values[2], values[4])):
            metrics[f"{stat}_{name}"] = _r(value / 1000)
    metrics["median_intvty"] = _r(1000 / p.tpot_ms[1])
    return {"hardware": cfg.hw, "framework": cfg.framework, "model": cfg.model, "precision": cfg.precision,
            "spec_method": cfg.spec, "disagg": True, "is_multinode": True, "prefill_tp": 4, "prefill_ep": 4,
            "prefill_dp_attention": True, "prefill_num_workers": prefill_gpus // 4, "decode_tp": decode_gpus,
            "decode_ep": decode_gpus, "decode_dp_attention": True, "decode_num_workers": 1,
            "num_prefill_gpu": prefill_gpus, "num_decode_gpu": decode_gpus, "isl": cfg.isl, "osl": cfg.osl,
            "conc": p.conc, "image": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1", "metrics": metrics,
            "date": cfg.run_date, "run_url": None}


_TDP_W = {"h200": 700.0, "mi355x": 1400.0}


def _gpu_watts(cfg: Config, p: Point, rng: random.Random) -> float:
    """Board power of one busy GPU: idle 12 % of TDP plus a load share growing with concurrency, ±3 %."""
    tdp = _TDP_W[cfg.hw]
    load = min(1.0, 0.45 + 0.09 * math.log2(p.conc))
    return tdp * (0.12 + 0.78 * load) * rng.uniform(0.97, 1.03)


def nvidia_smi_csv(cfg: Config, p: Point, end_date: str, rng: random.Random) -> str:
    """``nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv -l 1`` around the run: local time, 1 s,
    idle before and after the benchmark window [end − duration, end] (end = vLLM's ``date``)."""
    end = datetime.strptime(end_date, "%Y%m%d-%H%M%S")
    start = end - timedelta(seconds=p.duration_s)
    lines = ["timestamp, index, power.draw [W]"]
    t = start - timedelta(seconds=8.6)
    while t <= end + timedelta(seconds=8):
        busy = start <= t <= end
        for gpu in range(cfg.tp):
            watts = _gpu_watts(cfg, p, rng) if busy else _TDP_W[cfg.hw] * 0.11 * rng.uniform(0.98, 1.02)
            lines.append(f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}, {gpu}, {watts:.2f} W")
        t += timedelta(seconds=1)
    return "\n".join(lines) + "\n"


def amd_smi_csv(cfg: Config, p: Point, start: float, rng: random.Random, gap: bool) -> str:
    """``amd-smi metric -p --csv -w 1``: integer epoch timestamps, one row per GPU, the header repeated per sample."""
    header = "timestamp,gpu,socket_power,gfx_voltage,soc_voltage,mem_voltage,power_management,throttle_status"
    lines = []
    end = start + p.duration_s
    for second in range(int(start) - 5, int(end) + 6):
        if gap and start + 40 < second < start + 46:
            continue
        lines.append(header)
        busy = start <= second <= end
        for gpu in range(cfg.tp):
            watts = _gpu_watts(cfg, p, rng) if busy else _TDP_W[cfg.hw] * 0.11 * rng.uniform(0.98, 1.02)
            lines.append(f"{second},{gpu},{watts:.0f},N/A,N/A,N/A,ENABLED,UNTHROTTLED")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _slug(cfg: Config) -> str:
    return f"{cfg.model}_{cfg.isl // 1024}k{cfg.osl // 1024}k_{cfg.hw}_{cfg.precision}_{cfg.framework}_{cfg.spec}"


def _meta(cfg: Config, conc: int | None = None) -> dict:
    meta = {"model": cfg.model, "hw": cfg.hw, "framework": cfg.framework, "precision": cfg.precision,
            "spec_decoding": cfg.spec, "tp": cfg.tp, "ep": cfg.ep, "dp_attention": cfg.dp_attention,
            "disagg": False, "isl": cfg.isl, "osl": cfg.osl, "run_date": cfg.run_date}
    if conc is not None:
        meta["conc"] = conc
    return meta


def generate(out: Path = SAMPLE_DIR) -> list[Path]:
    """Write the sample into ``out`` (replacing it) and return the files written."""
    if out.exists():
        shutil.rmtree(out)
    rng = random.Random(SEED)
    manifest_rows: list[dict] = []
    api_rows: list[dict] = []
    for cfg in configs():
        points = [simulate(cfg, conc, rng) for conc in CONCURRENCIES]
        slug = _slug(cfg)
        if cfg.hw == "gb200":
            api_rows += [inferencex_api_row(cfg, p, prefill_gpus=8, decode_gpus=8) for p in points]
        elif cfg.hw == "mi355x" and cfg.framework == "sglang" and cfg.precision == "fp8":
            # collect_results.py output: one list of agg rows
            _dump(out / "inferencex" / f"results_{slug}.json", [inferencex_agg_doc(cfg, p) for p in points])
        elif cfg.hw == "mi355x" and cfg.framework == "sglang":
            for p in points:
                _dump(out / "inferencex" / f"agg_{slug}_conc{p.conc}.json", inferencex_agg_doc(cfg, p))
        elif cfg.framework == "trtllm":
            for p in points:
                path = out / "trtllm" / f"{slug}_conc{p.conc}.report.json"
                _dump(path, trtllm_doc(cfg, p))
                _dump(path.with_name(path.name + ".meta.json"), {"conc": p.conc, "precision": cfg.precision,
                                                                  "spec_decoding": cfg.spec, "model": cfg.model,
                                                                  "run_date": cfg.run_date})
        elif cfg.framework == "sglang":
            path = out / "sglang" / f"{slug}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [json.dumps(sglang_doc(cfg, p)) for p in points]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")  # json.dumps writes bare Infinity, as SGLang
            meta = _meta(cfg)
            for key in ("isl", "osl", "tp", "ep", "dp_attention"):
                meta.pop(key)  # stated in the file itself
            _dump(path.with_name(path.name + ".meta.json"), meta)
        elif cfg.hw == "h200":
            for p in points:
                name = f"{slug}_conc{p.conc}.json"
                doc = vllm_doc(cfg, p)
                _dump(out / "vllm" / "h200" / name, doc)
                power_log = ""
                if cfg.model == "dsr1":  # nvidia-smi telemetry beside these runs (local-time clock, as vLLM's date)
                    power_log = f"power/{slug}_conc{p.conc}.nvidia-smi.csv"
                    _write(out / "vllm" / "h200" / power_log, nvidia_smi_csv(cfg, p, doc["date"], rng))
                manifest_rows.append({"file": name, **_meta(cfg, p.conc), "power_log": power_log})
        else:
            for p in points:
                path = out / "vllm" / cfg.hw / f"{slug}_conc{p.conc}.json"
                _dump(path, vllm_doc(cfg, p))
                meta = _meta(cfg, p.conc)
                if cfg.hw == "mi355x":  # amd-smi watch-mode telemetry on the epoch clock, window from the sidecar
                    start = 1784020000.0 + p.conc * 1000.0
                    meta.update(power_log=f"power/{slug}_conc{p.conc}.amd-smi.csv", start_time_unix=start)
                    # conc128's logger stalled for 5 s mid-run: the pipeline must say gap_too_long, not guess
                    _write(path.parent / meta["power_log"], amd_smi_csv(cfg, p, start, rng, gap=p.conc == 128))
                _dump(path.with_name(path.name + ".meta.json"), meta)
    _dump(out / "inferencex" / "api_benchmarks_dsr1_gb200.json", api_rows)

    # A run whose requests all failed still writes a file; the pipeline must quarantine it, not plot it.
    failed_cfg = configs()[9]
    failed = vllm_doc(failed_cfg, simulate(failed_cfg, 256, rng))
    failed.update({"completed": 0, "failed": 2560, "duration": 0.71, "total_input_tokens": 0,
                   "total_output_tokens": 0, "request_throughput": 0.0, "output_throughput": 0.0,
                   "total_token_throughput": 0.0})
    for key in [k for k in failed if k.endswith("_ms")]:
        failed[key] = 0.0
    failed_name = f"{_slug(failed_cfg)}_conc256_FAILED.json"
    _dump(out / "vllm" / "h200" / failed_name, failed)
    manifest_rows.append({"file": failed_name, **_meta(failed_cfg, 256)})

    buffer = io.StringIO()
    manifest_rows = [{**row, "power_log": row.get("power_log", "")} for row in manifest_rows]
    writer = csv.DictWriter(buffer, fieldnames=list(manifest_rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(manifest_rows)
    (out / "vllm" / "h200" / "runs.csv").write_text(buffer.getvalue(), encoding="utf-8")
    (out / "README.md").write_text(_README, encoding="utf-8")
    return sorted(p for p in out.rglob("*") if p.is_file())


_README = """# Sample raw logs (synthetic)

Written by `python -m pipeline sample` (pipeline/ingest/sample_data.py, fixed seed) for demos and tests: the numbers
come from a simple serving model, not from hardware. Layout, as benchmark fleets drop files:

- `inferencex/`  InferenceX `agg_*.json` rows (MI355X, SGLang) and a dashboard export (GB200 Dynamo, disaggregated)
- `sglang/`      SGLang `bench_serving` JSONL, one line per concurrency, metadata in `*.meta.json` sidecars
- `trtllm/`      `trtllm-bench --report_json` files with sidecars
- `vllm/h200/`   `vllm bench serve` results described by a `runs.csv` manifest (one run failed on purpose);
                 `power/` holds nvidia-smi telemetry of the DeepSeek-R1 runs (linked by the `power_log` column)
- `vllm/mi355x/` `vllm bench serve` results with sidecars; `power/` holds amd-smi watch-mode telemetry, placed by
                 the sidecars' `start_time_unix` (the conc128 log has a 5 s dropout on purpose: `gap_too_long`)

This README itself is recorded by the pipeline as `not_a_run_log:documentation`.
"""


def main() -> None:
    files = generate()
    print(f"wrote {len(files)} files under {SAMPLE_DIR}")


if __name__ == "__main__":
    main()
