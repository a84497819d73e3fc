"""vLLM ``vllm bench serve --save-result`` JSON (vllm/benchmarks/serve.py; legacy benchmarks/benchmark_serving.py).

One object per run. Latency keys ``{mean,median,std,p<P>}_{ttft,tpot,itl,e2el}_ms`` in ms. Variants handled:
- the legacy script and its forks (TRT-LLM's, InferenceX's): key ``"request_goodput:"``, no ``failed``;
- InferenceX's decode-SLO client (``benchmark_serving_random.py``): latencies in SECONDS under keys without
  ``_ms`` (``median_tpot``), and ``input_throughput`` + ``output_throughput`` instead of ``total_token_throughput``;
- TRT-LLM's ``tensorrt_llm/serve/scripts/benchmark_serving.py``: the same schema plus ``user_throughput`` and
  ``avg_decoded_tokens_per_iter`` (reported as format ``trtllm_serve``).
``--metadata k=v`` pairs appear as top-level string values; those named like docs/inputs.md keys are in-file metadata.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from pipeline.ingest.keys import model_key, to_int, vllm_timestamp
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

FORMAT = "vllm_bench_serve"
TRTLLM_SERVE_FORMAT = "trtllm_serve"

_MS_PROBES = ("median_tpot_ms", "mean_tpot_ms", "median_ttft_ms", "mean_ttft_ms")
_S_PROBES = ("median_tpot", "mean_tpot", "median_ttft", "mean_ttft")


def detect(doc: Mapping[str, Any]) -> str | None:
    """``vllm_bench_serve`` / ``trtllm_serve`` when ``doc`` looks like a vLLM serving result, else None.

    Content rule: a vLLM-style latency key (``*_ttft_ms`` / ``*_tpot_ms``, or the seconds variant) plus one of
    ``duration``, ``num_prompts``, ``model_id``; and none of SGLang's or InferenceX's distinguishing keys.
    """
    if "server_info" in doc or "hw" in doc or "hardware" in doc:
        return None
    has_latency = any(k in doc for k in _MS_PROBES) or any(k in doc for k in _S_PROBES)
    if not has_latency or not any(k in doc for k in ("duration", "num_prompts", "model_id")):
        return None
    if any(k.endswith("_e2e_latency_ms") for k in doc):
        return None
    if "user_throughput" in doc or "avg_decoded_tokens_per_iter" in doc:
        return TRTLLM_SERVE_FORMAT
    return FORMAT


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one vLLM result object.

    Returns:
        ParsedRun with latencies in s, system throughputs in tok/s, ``conc`` from ``max_concurrency`` and
        ``run_date`` from ``date`` (local time, taken after the run) as in-file metadata.

    Raises:
        FieldError: a present field of the wrong type (e.g. ``not_a_number:duration``).
    """
    run = ParsedRun()
    ms_keys = any(k in doc for k in _MS_PROBES)
    if ms_keys:
        run.values.update(latency_block(doc, "{stat}_{metric}_ms", 1e-3))
        run.values.update(interactivity_block(doc, "{stat}_tpot_ms", "ms"))
        run.values["latency_unit_in_file"] = "ms"
    else:
        run.values.update(latency_block(doc, "{stat}_{metric}", 1.0))
        run.values.update(interactivity_block(doc, "{stat}_tpot", "s"))
        run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"  # numpy.percentile in the client

    output = number(doc, "output_throughput")
    total = number(doc, "total_token_throughput")
    input_tput = number(doc, "input_throughput")
    if total is None and input_tput is not None and output is not None:
        total = input_tput + output
        run.derivations.append("total_tput_tok_s = input_throughput + output_throughput")
    if input_tput is None:
        input_tput = input_throughput(total, output)
    run.values.update(
        num_prompts=integer(doc, "num_prompts"),
        completed=integer(doc, "completed"),
        failed=integer(doc, "failed"),
        duration_s=number(doc, "duration"),
        total_input_tokens=integer(doc, "total_input_tokens"),
        total_output_tokens=integer(doc, "total_output_tokens"),
        request_throughput_req_s=number(doc, "request_throughput"),
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_tput,
        model_id=_text(doc.get("model_id")),
    )
    # InferenceX's client is the only one with an epoch window; vLLM's `date` is local time taken after the run.
    run.values["bench_start_unix"] = number(doc, "benchmark_start_time_unix")
    run.values["bench_end_unix"] = number(doc, "benchmark_end_time_unix")
    if doc.get("date"):
        end = _end_time(str(doc["date"]))
        if end.tzinfo is None:
            run.values["bench_end_local"] = end
        elif run.values["bench_end_unix"] is None:  # a zoned ISO 8601 date is an instant, not a local clock
            run.values["bench_end_unix"] = end.timestamp()
    _spec_metrics(doc, run)

    meta = metadata_keys_in(doc, METADATA_KEYS)
    if "conc" not in meta and doc.get("max_concurrency") is not None:
        try:
            meta["conc"] = to_int(doc["max_concurrency"])
        except ValueError as exc:
            raise FieldError("not_an_integer", "max_concurrency", str(exc)) from exc
    if "run_date" not in meta and doc.get("date"):
        meta["run_date"] = _end_time(str(doc["date"])).date()
    run.in_file_meta = meta

    fallback_framework = "trtllm" if detect(doc) == TRTLLM_SERVE_FORMAT else None
    if fallback_framework is None and str(doc.get("backend", "")).lower() in ("vllm", "sglang"):
        fallback_framework = str(doc["backend"]).lower()
    run.fallback_meta = {"model": model_key(doc.get("model_id")), "framework": fallback_framework}
    return run


def _spec_metrics(doc: Mapping[str, Any], run: ParsedRun) -> None:
    """Acceptance, by engine convention (both count the bonus token, i.e. tokens emitted per verification step):
    vLLM ``spec_decode_acceptance_length`` = 1 + accepted/drafts from the server's Prometheus counters, its
    ``spec_decode_acceptance_rate`` in PERCENT (stored as a fraction); TRT-LLM serve's
    ``avg_decoded_tokens_per_iter`` (nested under ``decoding`` in newer releases, or flattened)."""
    length = number(doc, "spec_decode_acceptance_length")
    rate = number(doc, "spec_decode_acceptance_rate")
    if length is not None or rate is not None:
        run.values["spec_accept_length"] = length
        run.values["spec_accept_rate"] = None if rate is None else rate / 100.0
        run.values["spec_metric_source"] = "vllm:spec_decode_counters"
        return
    nested = doc.get("decoding") if isinstance(doc.get("decoding"), dict) else {}
    per_iter = number(doc, "avg_decoded_tokens_per_iter")
    if per_iter is None:
        per_iter = number(nested, "avg_decoded_tokens_per_iter", label="decoding.avg_decoded_tokens_per_iter")
    if per_iter is not None:
        run.values["spec_accept_length"] = per_iter
        run.values["spec_metric_source"] = "trtllm_serve:avg_decoded_tokens_per_iter"


def _end_time(text: str) -> datetime:
    """vLLM's ``date``, taken after the run: ``YYYYMMDD-HHMMSS`` in local time (vllm/benchmarks/serve.py, the legacy
    script and its forks) as a naive datetime, or ISO 8601 as newer ``vllm-bench`` releases write it
    (``2026-09-04T20:37:02Z``: aware when it names a zone or ``Z``, naive local time when not).

    Raises:
        FieldError: ``invalid_date:date`` when the text is in neither form.
    """
    try:
        return vllm_timestamp(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise FieldError("invalid_date", "date",
                         f"expected YYYYMMDD-HHMMSS or ISO 8601, got {text!r}") from exc


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
