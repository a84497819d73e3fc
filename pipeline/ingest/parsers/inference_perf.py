"""kubernetes-sigs/inference-perf request-lifecycle report ``stage_<N>_lifecycle_metrics.json``
(``summarize_requests`` in inference_perf/reportgen/base.py).

One object per load stage, times in SECONDS: ``load_summary`` {count, send_duration, requested_rate,
achieved_rate, concurrency (concurrency stages only)}, ``successes`` {count, latency {request_latency,
time_to_first_token, time_per_output_token, normalized_time_per_output_token, inter_token_latency}, throughput
{input_tokens_per_sec, output_tokens_per_sec, total_tokens_per_sec, requests_per_sec}, prompt_len, output_len},
``failures`` {count, …}. Each latency is ``{mean, min, p0.1 … p99.9, median, max}`` (numpy percentiles; no
standard deviation).

Mapping: ``time_per_output_token`` → TPOT (inference-perf: (last token − first token)/(output tokens − 1) per
request); ``inter_token_latency`` → ITL (every gap between streamed tokens, pooled over requests, as vLLM's ITL);
``normalized_time_per_output_token`` (latency / output tokens) is not used.

``summary_lifecycle_metrics.json`` has the same shape but pools every stage of a sweep, so it is not one
operating point: it is rejected as ``unsupported_scenario:all_stages_summary`` (its ``load_summary`` has no
``requested_rate``, which every stage report has).
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.keys import to_int
from pipeline.ingest.parsers.base import (
    FieldError,
    ParsedRun,
    RowRejected,
    integer,
    number,
    section,
)

FORMAT = "inference_perf"

_STATS = (("mean", "mean"), ("median", "median"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"))


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inference_perf`` when ``doc`` has ``successes`` with a ``latency`` object, and ``failures``; else None."""
    successes = doc.get("successes")
    if isinstance(successes, dict) and isinstance(successes.get("latency"), dict) and "failures" in doc:
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one inference-perf stage report.

    Derived (and recorded in ``derivations``): ``duration_s`` = successes.count / throughput.requests_per_sec,
    ``total_input_tokens``/``total_output_tokens`` = prompt_len.mean / output_len.mean × successes.count.

    Returns:
        ParsedRun with latencies in s (std null), throughputs in tok/s, ``completed`` = successes.count,
        ``failed`` = failures.count, ``num_prompts`` = load_summary.count, ``conc`` from
        ``load_summary.concurrency`` when the stage set one. No model id: the report does not name the model.

    Raises:
        RowRejected: ``unsupported_scenario:all_stages_summary`` for a report pooling every stage.
        FieldError: a section that is not an object (``not_an_object:<path>``) or a value of the wrong type
            (``not_a_number:<path>``, ``not_an_integer:<path>``).
    """
    load = section(doc, "load_summary", "load_summary")
    if load and "requested_rate" not in load:
        raise RowRejected("unsupported_scenario:all_stages_summary",
                          "load_summary has no requested_rate: a summary pooling every stage, not one run")
    successes = section(doc, "successes", "successes")
    failures = section(doc, "failures", "failures")
    latency = section(successes, "latency", "successes.latency")
    throughput = section(successes, "throughput", "successes.throughput")

    run = ParsedRun()
    run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"
    for metric, key in (("ttft", "time_to_first_token"), ("tpot", "time_per_output_token"),
                        ("itl", "inter_token_latency"), ("e2el", "request_latency")):
        block = section(latency, key, f"successes.latency.{key}")
        for stat, ikey in _STATS:
            run.values[f"{stat}_{metric}_s"] = number(block, ikey, label=f"successes.latency.{key}.{ikey}")
        run.values[f"std_{metric}_s"] = None

    completed = integer(successes, "count", label="successes.count")
    req_s = number(throughput, "requests_per_sec", label="successes.throughput.requests_per_sec")
    duration = None
    if completed is not None and req_s:
        duration = completed / req_s
        run.derivations.append("duration_s = successes.count / successes.throughput.requests_per_sec")
    totals = {}
    for column, key in (("total_input_tokens", "prompt_len"), ("total_output_tokens", "output_len")):
        mean = number(section(successes, key, f"successes.{key}"), "mean", label=f"successes.{key}.mean")
        totals[column] = None if mean is None or completed is None else round(mean * completed)
        if totals[column] is not None:
            run.derivations.append(f"{column} = successes.{key}.mean * successes.count")
    run.values.update(
        num_prompts=integer(load, "count", label="load_summary.count"),
        completed=completed,
        failed=integer(failures, "count", label="failures.count"),
        duration_s=duration,
        request_throughput_req_s=req_s,
        total_tput_tok_s=number(throughput, "total_tokens_per_sec", label="successes.throughput.total_tokens_per_sec"),
        output_tput_tok_s=number(throughput, "output_tokens_per_sec", label="successes.throughput.output_tokens_per_sec"),
        input_tput_tok_s=number(throughput, "input_tokens_per_sec", label="successes.throughput.input_tokens_per_sec"),
        model_id=None,  # the report does not name the model
        **totals,
    )
    meta: dict[str, Any] = {}
    if load.get("concurrency") is not None:
        try:
            meta["conc"] = to_int(load["concurrency"])
        except ValueError as exc:
            raise FieldError("not_an_integer", "load_summary.concurrency", str(exc)) from exc
    run.in_file_meta = meta
    return run

