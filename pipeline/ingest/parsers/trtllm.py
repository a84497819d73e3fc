"""TensorRT-LLM ``trtllm-bench throughput|latency --report_json F`` (tensorrt_llm/bench/dataclasses/reporting.py).

Nested JSON, times in ms: ``engine``, ``machine``, ``world_info`` {tp_size, pp_size, ep_size, world_size},
``request_info``, ``performance`` {total_latency_ms, system_total_throughput_tok_s, system_output_throughput_tok_s,
request_latency_percentiles_ms}, ``streaming_metrics`` {avg_ttft_ms, avg_tpot_ms, ttft_percentiles,
tpot_percentiles} (each percentile object {p50, p90, p95, p99, minimum, maximum, average}; NEAREST-RANK
percentiles), ``decoding_stats`` (spec decoding) and ``dataset`` {isl_stats, osl_stats}. No ITL.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.keys import model_key
from pipeline.ingest.parsers.base import (
    ParsedRun,
    input_throughput,
    integer,
    interactivity,
    number,
    section,
)
from pipeline.ingest.schema import INTVTY_STATS

FORMAT = "trtllm_bench"

_STAT_OF = {"mean": "average", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}


def detect(doc: Mapping[str, Any]) -> str | None:
    """``trtllm_bench`` when ``doc`` has a ``performance`` object and ``engine`` or ``world_info``, else None."""
    if isinstance(doc.get("performance"), dict) and ("engine" in doc or "world_info" in doc):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one ``--report_json`` document.

    ``completed`` is ``request_info.num_requests`` (trtllm-bench has no failed-request count). ``hw`` is implied
    by ``machine.name`` (a GPU marketing name; engine-implied metadata, so a sidecar or runs.csv wins),
    ``tp``/``pp``/``ep`` from ``world_info``, nominal ISL/OSL from ``dataset`` when every request had the same
    length.

    Raises:
        FieldError: a present field of the wrong type, or a section that is not an object.
    """
    perf = section(doc, "performance")
    streaming = section(doc, "streaming_metrics")
    world = section(doc, "world_info")
    request_info = section(doc, "request_info")
    engine = section(doc, "engine")
    machine = section(doc, "machine")
    dataset = section(doc, "dataset")
    decoding = section(doc, "decoding_stats")

    run = ParsedRun()
    run.values["latency_unit_in_file"] = "ms"
    run.values["percentile_method"] = "nearest_rank"
    for metric, avg_key, pct_key, source in (
        ("ttft", "avg_ttft_ms", "ttft_percentiles", streaming),
        ("tpot", "avg_tpot_ms", "tpot_percentiles", streaming),
        ("e2el", "avg_request_latency_ms", "request_latency_percentiles_ms", perf),
    ):
        pct = section(source, pct_key)
        for stat, pkey in _STAT_OF.items():
            value = number(pct, pkey, label=f"{pct_key}.{pkey}")
            if stat == "mean" and value is None:
                value = number(source, avg_key)
            run.values[f"{stat}_{metric}_s"] = None if value is None else value * 1e-3
            if metric == "tpot" and stat in INTVTY_STATS:
                run.values[f"{stat}_intvty"] = interactivity(value, "ms")

    num_requests = integer(request_info, "num_requests", label="request_info.num_requests")
    avg_in = number(request_info, "avg_input_length", label="request_info.avg_input_length")
    avg_out = number(request_info, "avg_output_length", label="request_info.avg_output_length")
    total = number(perf, "system_total_throughput_tok_s", label="performance.system_total_throughput_tok_s")
    output = number(perf, "system_output_throughput_tok_s", label="performance.system_output_throughput_tok_s")
    total_ms = number(perf, "total_latency_ms", label="performance.total_latency_ms")
    run.values.update(
        num_prompts=num_requests,
        completed=num_requests,
        duration_s=None if total_ms is None else total_ms * 1e-3,
        total_input_tokens=None if avg_in is None or num_requests is None else round(avg_in * num_requests),
        total_output_tokens=None if avg_out is None or num_requests is None else round(avg_out * num_requests),
        request_throughput_req_s=number(perf, "request_throughput_req_s", label="performance.request_throughput_req_s"),
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_throughput(total, output),
        model_id=None if engine.get("model") is None else str(engine.get("model")),
    )
    # trtllm-bench: acceptance length = tokens per iteration (bonus included); draft acceptance rate a FRACTION.
    accept = section(decoding, "acceptance_length_percentiles")
    rate = section(decoding, "draft_acceptance_rate_percentiles")
    run.values["spec_accept_length"] = number(accept, "average", label="decoding_stats.acceptance_length_percentiles")
    run.values["spec_accept_rate"] = number(rate, "average", label="decoding_stats.draft_acceptance_rate_percentiles")
    if decoding:
        run.values["spec_metric_source"] = "trtllm:decoding_stats"

    meta: dict[str, Any] = {}
    for key, wkey in (("tp", "tp_size"), ("pp", "pp_size"), ("ep", "ep_size")):
        if world.get(wkey) is not None:
            meta[key] = world[wkey]
    for key, stats_key in (("isl", "isl_stats"), ("osl", "osl_stats")):
        stats = section(dataset, stats_key)
        if stats.get("minimum") is not None and stats.get("minimum") == stats.get("maximum"):
            meta[key] = stats["minimum"]
    run.in_file_meta = meta
    run.fallback_meta = {
        "model": model_key(engine.get("model")),
        "framework": "trtllm",
        # no quantization means the checkpoint's dtype (e.g. bfloat16) is the serving precision
        "precision": engine.get("quantization") or engine.get("dtype") or None,
        "spec_decoding": decoding.get("mode") if decoding else None,
        # the GPU's marketing name as the driver reports it (mapped by data/reference/gpu_aliases.csv): a machine
        # name implies the GPU key rather than stating it, so a sidecar or runs.csv that names hw wins
        "hw": machine.get("name") or None,
    }
    return run

