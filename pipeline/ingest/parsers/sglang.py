"""SGLang ``python -m sglang.bench_serving --output-file F`` JSON Lines (python/sglang/bench_serving.py).

One run per line, appended. Keys: ``total_throughput`` (not ``total_token_throughput``), latencies
``{mean,median,std,p90,p95,p99}_{e2e_latency,ttft,tpot,itl}_ms`` in ms (2024 files: medians only, no TPOT),
``max_concurrency`` (configured) beside ``concurrency`` (measured mean in flight), ``random_input_len`` /
``random_output_len`` (nominal ISL/OSL for the random dataset) and ``random_range_ratio`` (its lengths are uniform
in [ratio·n, n]: ``sample_random_requests``), ``server_info`` (the server's ``/server_info``;
prefill/decode-split runs nest ``{internal_states, prefill, decode}``, one server-args object per role
the router listed, which need not be every server), ``accept_length`` (server-side average
accepted length incl. the bonus token, null without spec decoding). No ``model_id``, ``date`` or ``failed``.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.gpus import gpu_count
from pipeline.ingest.keys import model_key, to_int
from pipeline.ingest.parsers.base import (
    FieldError,
    ParsedRun,
    input_throughput,
    integer,
    interactivity_block,
    latency_block,
    metadata_keys_in,
    number,
)
from pipeline.ingest.schema import METADATA_KEYS

FORMAT = "sglang_bench_serving"


def detect(doc: Mapping[str, Any]) -> str | None:
    """``sglang_bench_serving`` when ``doc`` has SGLang's own keys (``*_e2e_latency_ms``, ``total_throughput``
    or ``server_info``) and the serving totals (``duration`` or ``completed``), else None."""
    sglang_keys = "server_info" in doc or "total_throughput" in doc or any(k.endswith("_e2e_latency_ms") for k in doc)
    if sglang_keys and ("duration" in doc or "completed" in doc) and "hw" not in doc:
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one SGLang result line.

    ``total_tput_tok_s`` is ``total_throughput``, else ``input_throughput + output_throughput``, else
    ``(total_input_tokens + total_output_tokens) / duration`` (2024 files); each derivation is recorded.

    Raises:
        FieldError: a present field of the wrong type.
    """
    run = ParsedRun()
    run.values.update(latency_block(doc, "{stat}_{metric}_ms", 1e-3, renames=(("e2el", "e2e_latency"),)))
    run.values.update(interactivity_block(doc, "{stat}_tpot_ms", "ms"))
    run.values["latency_unit_in_file"] = "ms"
    run.values["percentile_method"] = "linear_interpolation"

    duration = number(doc, "duration")
    in_tokens = integer(doc, "total_input_tokens")
    out_tokens = integer(doc, "total_output_tokens")
    output = number(doc, "output_throughput")
    input_tput = number(doc, "input_throughput")
    total = number(doc, "total_throughput")
    if total is None and input_tput is not None and output is not None:
        total = input_tput + output
        run.derivations.append("total_tput_tok_s = input_throughput + output_throughput")
    if total is None and in_tokens is not None and out_tokens is not None and duration:
        total = (in_tokens + out_tokens) / duration
        run.derivations.append("total_tput_tok_s = (total_input_tokens + total_output_tokens) / duration")
    if input_tput is None:
        input_tput = input_throughput(total, output)

    server = doc.get("server_info") if isinstance(doc.get("server_info"), dict) else {}
    prefill, decode = _servers(server.get("prefill")), _servers(server.get("decode"))
    split = bool(prefill and decode)
    args = decode[0] if split else server
    model_path = args.get("model_path") if isinstance(args, dict) else None

    run.values.update(
        completed=integer(doc, "completed"),
        duration_s=duration,
        total_input_tokens=in_tokens,
        total_output_tokens=out_tokens,
        request_throughput_req_s=number(doc, "request_throughput"),
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_tput,
        model_id=None if model_path is None else str(model_path),
        spec_accept_length=number(doc, "accept_length"),
    )

    meta = metadata_keys_in(doc, METADATA_KEYS)
    if doc.get("dataset_name") != "random":  # the ratio shapes the random dataset's lengths only
        meta.pop("random_range_ratio", None)
    try:
        if "conc" not in meta and doc.get("max_concurrency") is not None:
            meta["conc"] = to_int(doc["max_concurrency"])
        if doc.get("dataset_name") == "random":
            if "isl" not in meta and doc.get("random_input_len") is not None:
                meta["isl"] = to_int(doc["random_input_len"])
            if "osl" not in meta and doc.get("random_output_len") is not None:
                meta["osl"] = to_int(doc["random_output_len"])
    except ValueError as exc:
        raise FieldError("not_an_integer", "max_concurrency/random_*_len", str(exc)) from exc
    implied: dict[str, Any] = {}
    if split:
        meta.setdefault("disagg", True)
        # server_info lists the servers the client's router reported, often one per role however many run (a
        # 1 prefill + 8 decode deployment shows one decode server): the counts are only inferred, so a sidecar or
        # runs.csv that states them wins, without a conflict.
        implied = {"num_prefill_gpu": _gpus(prefill), "num_decode_gpu": _gpus(decode)}
    elif isinstance(args, dict) and args.get("tp_size") is not None:
        meta.setdefault("tp", args.get("tp_size"))
        if args.get("ep_size") is not None:
            meta.setdefault("ep", args.get("ep_size"))
        if args.get("enable_dp_attention") is not None:
            meta.setdefault("dp_attention", args.get("enable_dp_attention"))
    run.in_file_meta = {k: v for k, v in meta.items() if v is not None}
    quant = args.get("quantization") if isinstance(args, dict) else None
    run.fallback_meta = {"model": model_key(model_path), "framework": "sglang", "precision": quant, **implied}
    if run.values.get("spec_accept_length") is not None:
        # SGLang's server-side average accepted length per verify step, bonus token included.
        run.values["spec_metric_source"] = "sglang:avg_spec_accept_length"
        steps, topk = args.get("speculative_num_steps"), args.get("speculative_eagle_topk")
        if isinstance(steps, (int, float)) and steps > 0 and topk in (None, 1):
            run.values["spec_accept_rate"] = (run.values["spec_accept_length"] - 1) / steps
    return run


def _servers(value: Any) -> list[Mapping[str, Any]]:
    """The server-args objects of one role: SGLang writes one object, or a list with one object per server."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _gpus(servers: list[Mapping[str, Any]]) -> int | None:
    """GPUs of one role: Σ ``gpu_count(tp_size, pp_size)`` over its servers (DP-attention ranks live inside the TP
    group); None when a server has no ``tp_size``.

    Raises:
        ValueError, TypeError: a ``tp_size``/``pp_size`` that is not a number.
    """
    if any(s.get("tp_size") is None for s in servers):
        return None
    return sum(gpu_count(int(s["tp_size"]), None if s.get("pp_size") is None else int(s["pp_size"]))
               for s in servers)
