"""GuideLLM ``guidellm benchmark … --output-path benchmarks.json`` report (vllm-project/guidellm).

One file holds one report; each entry of ``benchmarks[]`` is one run (one strategy: synchronous, one concurrency,
one rate …). Two shapes are read:
- v1 (guidellm 0.2–0.3, guidellm/benchmark/benchmark.py): each benchmark has ``args`` (``strategy``, …),
  ``worker.backend_model``, ``request_loader.data``, ``request_totals`` and ``metrics``;
- v2 (guidellm 0.4 and later, guidellm/benchmark/schemas/): the report has top-level ``args`` (``model``,
  ``data``) and ``metadata``; each benchmark has ``config`` (``strategy``, ``backend.model``) and ``metrics``
  with ``request_totals`` inside.

Every metric is a distribution split by request status, ``{"successful": {mean, median, std_dev, percentiles:
{p90, p95, p99, …}, total_sum, …}, "errored": …, "incomplete": …, "total": …}``. Only ``successful`` is read;
errored and incomplete requests are counted as failures (``failed`` = errored + incomplete), so a run that lost
requests is quarantined as ``failed_requests``.

Latencies: ``time_to_first_token_ms`` → TTFT, ``request_latency`` (seconds) → E2EL, ``inter_token_latency_ms`` →
TPOT. GuideLLM computes ``inter_token_latency_ms`` per request as (last token − first token) / (output tokens − 1),
the TPOT definition, and weights its distribution by each request's output tokens − 1. Its
``time_per_output_token_ms`` includes the TTFT and is not used. GuideLLM keeps no per-chunk gaps, so ITL is null.
Throughputs are the means of GuideLLM's ``output_tokens_per_second`` and ``tokens_per_second`` distributions.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Mapping

from pipeline.ingest.keys import model_key, to_int
from pipeline.ingest.parsers.base import (
    FieldError,
    ParsedRun,
    RowRejected,
    input_throughput,
    integer,
    interactivity,
    number,
    section,
)
from pipeline.ingest.schema import INTVTY_STATS

FORMAT = "guidellm"
REPORT_KEY = "guidellm_report"
BENCHMARK_KEY = "benchmark"

_STATS = (("mean", "mean"), ("median", "median"), ("std", "std_dev"))
_PERCENTILES = ("p90", "p95", "p99")


def is_report(doc: Mapping[str, Any]) -> bool:
    """True when ``doc`` is a GuideLLM report: a ``benchmarks`` list whose first entry is a generative benchmark
    (``type_`` = ``generative_benchmark``, or ``metrics`` with ``args`` or ``config``)."""
    benchmarks = doc.get("benchmarks")
    if not isinstance(benchmarks, list):
        return False
    if not benchmarks:
        return "args" in doc or "metadata" in doc
    first = benchmarks[0]
    return isinstance(first, dict) and (first.get("type_") == "generative_benchmark"
                                        or ("metrics" in first and ("args" in first or "config" in first)))


def expand(doc: Any) -> list[dict[str, Any]] | None:
    """One object per run for the registry: ``{"guidellm_report": <report without benchmarks>, "benchmark": b}``
    for each entry ``b`` of a GuideLLM report's ``benchmarks``; None when ``doc`` is not a report with at least
    one benchmark (an empty report is then rejected by :func:`parse`)."""
    if not isinstance(doc, dict) or not is_report(doc) or not doc["benchmarks"]:
        return None
    context = {k: v for k, v in doc.items() if k != "benchmarks"}
    return [{REPORT_KEY: context, BENCHMARK_KEY: bench} for bench in doc["benchmarks"]]


def detect(doc: Mapping[str, Any]) -> str | None:
    """``guidellm`` for one expanded benchmark (see :func:`expand`) or for a report with no benchmark, else None."""
    if REPORT_KEY in doc and BENCHMARK_KEY in doc:
        return FORMAT
    if is_report(doc):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one GuideLLM benchmark (an object made by :func:`expand`).

    Returns:
        ParsedRun with latencies in s, throughputs in tok/s, ``completed`` = successful, ``failed`` = errored +
        incomplete, ``num_prompts`` = total; ``conc`` from a concurrent strategy's streams (1 for synchronous,
        none for rate-based strategies), nominal ``isl``/``osl`` from a synthetic data spec
        ``prompt_tokens=N,output_tokens=M``, ``run_date`` as the UTC day of ``start_time``.

    Raises:
        RowRejected: ``empty_document`` for a report with no benchmarks.
        FieldError: a section that is not an object (``not_an_object:<path>``), a missing ``request_totals``
            (``missing_field:metrics.request_totals``), or a value of the wrong type (``not_a_number:<path>``,
            ``not_an_integer:<path>``).
    """
    if BENCHMARK_KEY not in doc:
        raise RowRejected("empty_document", "GuideLLM report with an empty benchmarks list")
    report = doc[REPORT_KEY] if isinstance(doc[REPORT_KEY], dict) else {}
    bench = doc[BENCHMARK_KEY]
    if not isinstance(bench, dict):
        raise FieldError("not_an_object", "benchmarks[]", f"expected an object, got {type(bench).__name__}")
    metrics = section(bench, "metrics", "metrics")
    v2 = isinstance(bench.get("config"), dict)
    totals = section(metrics, "request_totals", "metrics.request_totals") if v2 else \
        section(bench, "request_totals", "request_totals")
    if not totals:
        totals = section(metrics, "request_totals", "metrics.request_totals")
    if not totals:
        raise FieldError("missing_field", "metrics.request_totals", "required and absent (or null)")

    run = ParsedRun()
    run.values["latency_unit_in_file"] = "ms"
    for metric, key, scale in (("ttft", "time_to_first_token_ms", 1e-3), ("tpot", "inter_token_latency_ms", 1e-3),
                               ("e2el", "request_latency", 1.0)):
        dist = _successful(metrics, key)
        percentiles = section(dist, "percentiles", f"metrics.{key}.successful.percentiles")
        for stat, gkey in _STATS:
            value = number(dist, gkey, label=f"metrics.{key}.successful.{gkey}")
            run.values[f"{stat}_{metric}_s"] = None if value is None else value * scale
            if metric == "tpot" and stat in INTVTY_STATS:  # 1000 / TPOT ms, from the file's own number
                run.values[f"{stat}_intvty"] = interactivity(value, "ms")
        for stat in _PERCENTILES:
            value = number(percentiles, stat, label=f"metrics.{key}.successful.percentiles.{stat}")
            run.values[f"{stat}_{metric}_s"] = None if value is None else value * scale
            if metric == "tpot" and stat in INTVTY_STATS:
                run.values[f"{stat}_intvty"] = interactivity(value, "ms")
    run.values.update({f"{stat}_itl_s": None for stat, _ in (*_STATS, *((p, p) for p in _PERCENTILES))})
    run.derivations.append("TPOT from GuideLLM inter_token_latency_ms = (last token - first token)/(output tokens - 1) "
                           "per request, distribution weighted by output tokens - 1")

    successful = integer(totals, "successful", label="metrics.request_totals.successful")
    errored = integer(totals, "errored", label="metrics.request_totals.errored")
    incomplete = integer(totals, "incomplete", label="metrics.request_totals.incomplete")
    failed = None if errored is None and incomplete is None else (errored or 0) + (incomplete or 0)
    output = _mean(metrics, "output_tokens_per_second")
    total = _mean(metrics, "tokens_per_second")
    start, end = number(bench, "start_time"), number(bench, "end_time")
    duration = number(bench, "duration")
    if duration is None and start is not None and end is not None:
        duration = end - start
        run.derivations.append("duration_s = end_time - start_time")
    run.values.update(
        num_prompts=integer(totals, "total", label="metrics.request_totals.total"),
        completed=successful,
        failed=failed,
        duration_s=duration,
        total_input_tokens=_sum(metrics, "prompt_token_count"),
        total_output_tokens=_sum(metrics, "output_token_count"),
        request_throughput_req_s=_mean(metrics, "requests_per_second"),
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_throughput(total, output),
        bench_start_unix=start,
        bench_end_unix=end,
    )
    args = section(report, "args", "args")
    if v2:
        config = bench["config"]
        strategy = section(config, "strategy", "config.strategy")
        backend = section(config, "backend", "config.backend")
        model_id = args.get("model") or backend.get("model")
        data = args.get("data")
    else:
        bench_args = section(bench, "args", "args")
        strategy = section(bench_args, "strategy", "args.strategy")
        model_id = section(bench, "worker", "worker").get("backend_model")
        data = section(bench, "request_loader", "request_loader").get("data")
    run.values["model_id"] = None if model_id is None else str(model_id)

    meta: dict[str, Any] = {}
    if start is not None:
        meta["run_date"] = datetime.fromtimestamp(start, tz=timezone.utc).date()
    conc = _concurrency(strategy)
    if conc is not None:
        meta["conc"] = conc
    meta.update(_nominal_lengths(data))
    run.in_file_meta = meta
    run.fallback_meta = {"model": model_key(model_id)}
    return run




def _successful(metrics: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return section(section(metrics, key, f"metrics.{key}"), "successful", f"metrics.{key}.successful")


def _mean(metrics: Mapping[str, Any], key: str) -> float | None:
    return number(_successful(metrics, key), "mean", label=f"metrics.{key}.successful.mean")


def _sum(metrics: Mapping[str, Any], key: str) -> int | None:
    value = number(_successful(metrics, key), "total_sum", label=f"metrics.{key}.successful.total_sum")
    return None if value is None else round(value)


def _concurrency(strategy: Mapping[str, Any]) -> int | None:
    """Configured concurrency: ``streams`` (or ``max_concurrency``) of a ``concurrent`` strategy, 1 for
    ``synchronous``; None for throughput, constant and poisson strategies (rate-based, no fixed concurrency)."""
    kind = strategy.get("type_")
    if kind == "synchronous":
        return 1
    if kind != "concurrent":
        return None
    value = strategy.get("streams", strategy.get("max_concurrency"))
    try:
        return to_int(value)
    except ValueError as exc:
        raise FieldError("not_an_integer", "strategy.streams", str(exc)) from exc


def _nominal_lengths(data: Any) -> dict[str, int]:
    """ISL/OSL of a synthetic data spec that fixes both lengths and nothing else: ``prompt_tokens=256,
    output_tokens=128`` or ``{"prompt_tokens": 256, "output_tokens": 128}`` (a one-element list of either is
    accepted). Any other spec (a dataset, a spread such as ``prompt_tokens_stdev``) gives nothing."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    spec: Any = None
    if isinstance(data, dict):
        spec = data
    elif isinstance(data, str):
        text = data.strip()
        try:
            spec = json.loads(text) if text.startswith("{") else dict(
                part.split("=", 1) for part in text.split(",") if "=" in part)
        except (ValueError, TypeError):
            spec = None
    if not isinstance(spec, dict) or set(spec) != {"prompt_tokens", "output_tokens"}:
        return {}
    try:
        isl, osl = to_int(spec["prompt_tokens"]), to_int(spec["output_tokens"])
    except ValueError:
        return {}
    return {k: v for k, v in (("isl", isl), ("osl", osl)) if v}
