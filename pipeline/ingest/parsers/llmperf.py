"""Ray LLMPerf ``token_benchmark_ray.py --results-dir D`` summary, ``D/<model>_<in>_<out>_summary.json``
(ray-project/llmperf, ``metrics_summary`` in token_benchmark_ray.py).

One flat object per run, latencies in seconds: ``results_<metric>_{mean,stddev,min,max,quantiles_p25…p99}`` for
``ttft_s``, ``end_to_end_latency_s``, ``inter_token_latency_s``, ``request_output_throughput_token_per_s``,
``number_input_tokens`` and ``number_output_tokens`` over the requests without an error; the run's
``num_concurrent_requests``, ``mean_input_tokens``/``stddev_input_tokens``, ``mean_output_tokens``/
``stddev_output_tokens``, ``results_num_requests_started``, ``results_num_completed_requests``,
``results_number_errors``, ``results_num_completed_requests_per_min``, ``results_mean_output_throughput_token_per_s``,
``timestamp`` (epoch s), plus the ``--metadata`` pairs at the top level. Quantiles are pandas' (linear).

No TPOT: LLMPerf's ``inter_token_latency_s`` is, per request, the sum of every gap between streamed chunks
INCLUDING the TTFT (so the time of the last chunk, the request's E2E latency) divided by the request's output
tokens (``get_token_length`` of the generated text; ``token_benchmark_ray.py``). It is neither TPOT nor vLLM's ITL,
and the summary has no per-request joint values from which (E2EL − TTFT)/(OSL − 1) could be derived, so TPOT and
ITL are left null. But E2EL / OSL per request is exactly what the E2E-normalized interactivity is built from:
1 / its p90 (``results_inter_token_latency_s_quantiles_p90``) is ``e2e_norm_intvty_p90`` (tok/s/user), the run's
x-axis (docs/metrics.md section 4a). Token counts are LLMPerf's own (it re-tokenizes with a Llama tokenizer).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from pipeline.ingest.keys import model_key, to_int
from pipeline.ingest.parsers.base import (
    FieldError,
    ParsedRun,
    input_throughput,
    integer,
    metadata_keys_in,
    number,
)
from pipeline.ingest.schema import METADATA_KEYS

FORMAT = "llmperf"
# e2e_norm_intvty_source of an LLMPerf run: 1 / p90 over requests of inter_token_latency_s (= E2EL / OSL).
E2E_NORM_SOURCE = "llmperf:1/p90(inter_token_latency_s)"
# ``model`` is LLMPerf's model id (``--model``), not a model key, so it is not read as metadata.
_META_KEYS = tuple(key for key in METADATA_KEYS if key != "model")

_STATS = (("mean", "mean"), ("median", "quantiles_p50"), ("std", "stddev"), ("p90", "quantiles_p90"),
          ("p95", "quantiles_p95"), ("p99", "quantiles_p99"))


def detect(doc: Mapping[str, Any]) -> str | None:
    """``llmperf`` when ``doc`` has ``results_ttft_s_mean`` or ``results_end_to_end_latency_s_mean`` and
    ``results_num_completed_requests``, else None."""
    if ("results_ttft_s_mean" in doc or "results_end_to_end_latency_s_mean" in doc) \
            and "results_num_completed_requests" in doc:
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one LLMPerf summary.

    Derived (and recorded in ``derivations``): ``duration_s`` = completed / completed-per-minute × 60,
    ``total_input_tokens``/``total_output_tokens`` = mean tokens per request × completed, and
    ``total_tput_tok_s`` = output throughput + total input tokens / duration.

    Returns:
        ParsedRun with TTFT and E2EL in s, TPOT and ITL null, ``e2e_norm_intvty_p90`` = 1 / p90 of
        ``inter_token_latency_s`` (tok/s/user), ``conc`` = ``num_concurrent_requests``, nominal
        ``isl``/``osl`` = ``mean_input_tokens``/``mean_output_tokens`` when their stddev is 0, ``run_date`` the
        UTC day of ``timestamp``, and ``--metadata`` keys named like docs/inputs.md keys as in-file metadata.

    Raises:
        FieldError: a value of the wrong type (``not_a_number:<key>``, ``not_an_integer:<key>``).
    """
    run = ParsedRun()
    run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"
    for metric, key in (("ttft", "ttft_s"), ("tpot", None), ("itl", None), ("e2el", "end_to_end_latency_s")):
        for stat, suffix in _STATS:
            run.values[f"{stat}_{metric}_s"] = number(doc, f"results_{key}_{suffix}") if key else None
    run.derivations.append("TPOT null: LLMPerf's inter_token_latency_s is E2E latency / output tokens per request")
    e2e_per_token_p90 = number(doc, "results_inter_token_latency_s_quantiles_p90")
    if e2e_per_token_p90 is not None and e2e_per_token_p90 > 0:
        run.values["e2e_norm_intvty_p90"] = 1.0 / e2e_per_token_p90
        run.values["e2e_norm_intvty_source"] = E2E_NORM_SOURCE

    completed = integer(doc, "results_num_completed_requests")
    per_min = number(doc, "results_num_completed_requests_per_min")
    output = number(doc, "results_mean_output_throughput_token_per_s")
    mean_in = number(doc, "results_number_input_tokens_mean")
    mean_out = number(doc, "results_number_output_tokens_mean")
    duration = total = total_in = total_out = None
    if completed is not None and per_min:
        duration = completed / per_min * 60.0
        run.derivations.append("duration_s = results_num_completed_requests / results_num_completed_requests_per_min * 60")
    if completed is not None and mean_in is not None:
        total_in = round(mean_in * completed)
        run.derivations.append("total_input_tokens = results_number_input_tokens_mean * results_num_completed_requests")
    if completed is not None and mean_out is not None:
        total_out = round(mean_out * completed)
        run.derivations.append("total_output_tokens = results_number_output_tokens_mean * results_num_completed_requests")
    if output is not None and total_in is not None and duration:
        total = output + total_in / duration
        run.derivations.append("total_tput_tok_s = results_mean_output_throughput_token_per_s + total_input_tokens / duration_s")
    run.values.update(
        num_prompts=integer(doc, "results_num_requests_started"),
        completed=completed,
        failed=integer(doc, "results_number_errors"),
        duration_s=duration,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput_req_s=None if per_min is None else per_min / 60.0,
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_throughput(total, output),
        model_id=None if doc.get("model") is None else str(doc["model"]),
    )

    meta = metadata_keys_in(doc, _META_KEYS)
    try:
        if "conc" not in meta and doc.get("num_concurrent_requests") is not None:
            meta["conc"] = to_int(doc["num_concurrent_requests"])
    except ValueError as exc:
        raise FieldError("not_an_integer", "num_concurrent_requests", str(exc)) from exc
    for key, mean_key, std_key in (("isl", "mean_input_tokens", "stddev_input_tokens"),
                                   ("osl", "mean_output_tokens", "stddev_output_tokens")):
        mean, std = number(doc, mean_key), number(doc, std_key)
        if key not in meta and mean is not None and mean > 0 and std == 0:
            meta[key] = round(mean)
    timestamp = number(doc, "timestamp")
    if "run_date" not in meta and timestamp is not None:
        meta["run_date"] = datetime.fromtimestamp(timestamp, tz=timezone.utc).date()
    run.in_file_meta = meta
    run.fallback_meta = {"model": model_key(doc.get("model"))}
    return run
