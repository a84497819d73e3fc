"""InferenceX AgentX (agentic-coding) aggregate rows: ``utils/agentic/process_agentic_result.py`` output, one object
per run (``agg_bmk.json`` collects them into a JSON array).

A different benchmark from the fixed-sequence rows of ``inferencex.py``: recorded coding-agent sessions are
replayed with their own prompt and output lengths, so there is no ISL/OSL; the run is ``benchmark_type =
agentic_traces`` and its frontier x-axis is E2E-normalized interactivity (docs/metrics.md). Two layouts:

- flat (mid-2026): ``{mean,p75,p90,p95,std}_{ttft,e2el,itl,tpot}`` in SECONDS (no median, no p99),
  ``{mean,p75,p90,p95,std}_output_tokens_actual`` (tokens per request), system ``total_tput_tps`` /
  ``output_tput_tps`` / ``input_tput_tps`` and per-GPU ``tput_per_gpu`` …, ``duration_seconds``,
  ``num_requests_total`` / ``num_requests_successful``, ``offloading`` (KV offload: none, lmcache, hicache);
- nested (later): the same numbers under ``request_metrics.latency.<metric>.{mean,p50,p75,p90,p95,std}`` (p50 is
  the median), ``request_metrics.tokens.output_actual``, ``request_metrics.throughput.{total,output,input}
  .tokens_per_second`` and ``.per_gpu``, ``request_accounting`` (warmup and error records), ``kv_offloading``.

The row's ``*_intvty`` values are 1 / ITL statistics and are not read. The dashboard's own E2E-normalized
interactivity (``p90_e2e_norm_intvty``, or ``request_metrics.latency.e2e_norm_intvty.p90``, tok/s/user, computed
by InferenceX from per-request records) is ``e2e_norm_intvty_p90`` when the row carries it; otherwise that column
stays null here (the metrics stage computes it from the run's ``profile_export.jsonl`` when one was read,
``pipeline.ingest.requests``), and the row's aggregates give only the stand-in ``mean_osl_over_p90_e2el`` (mean
output tokens / p90 E2EL), a different statistic under its own name (``_e2e_norm_intvty``). Empty strings
(``framework``, ``precision``, ``infmax_model_prefix`` in some rows) are absent values; the model key and
precision then come from the checkpoint name (``model``, a Hugging Face id or a cluster path) as engine-implied
metadata.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.keys import model_key, precision_from_model_id
from pipeline.ingest.parsers.base import (
    ParsedRun,
    integer,
    metadata_keys_in,
    number,
    section,
)
from pipeline.ingest.schema import AGENTIC_TRACES, LATENCY_METRICS, METADATA_KEYS

FORMAT = "inferencex_agentx"
DASHBOARD_SOURCE = "dashboard:p90_e2e_norm_intvty"
# our stat name -> the nested layout's name (the flat layout uses ours, without median)
_NESTED_STATS = {"mean": "mean", "median": "p50", "std": "std", "p90": "p90", "p95": "p95", "p99": "p99"}


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inferencex_agentx`` for an AgentX row: ``hw`` plus a ``scenario_type`` starting with ``agentic``; else None
    (a row of another scenario type stays with ``inferencex.py``, which names it ``unsupported_scenario``)."""
    if "hw" in doc and str(doc.get("scenario_type") or "").startswith("agentic"):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one AgentX row.

    Returns:
        ParsedRun with ``benchmark_type = agentic_traces``; latencies in s; system throughputs in tok/s and the
        reported per-GPU ones; ``completed`` = successful requests, ``num_prompts`` = requests issued (warmup
        records excluded), ``failed`` = error records (nested layout only, else null); ``e2e_norm_intvty_p90`` in
        tok/s/user with ``e2e_norm_intvty_source`` (the dashboard's value only, else null) and the stand-in
        ``mean_osl_over_p90_e2el`` (tok/s/user). ISL and OSL are not set (there is none).
        Metadata in the file: ``hw``, ``conc``, ``tp``, ``ep``, ``pcp`` (``pcp_size``), ``dp_attention``,
        ``disagg``, ``spec_decoding``, ``framework``, ``precision``, ``image``, ``model`` (from
        ``infmax_model_prefix``), ``kv_offload`` (``offloading`` or ``kv_offloading``); engine-implied: ``model``
        (``keys.model_key``) and ``precision`` (``keys.precision_from_model_id``) from ``model``.

    Raises:
        FieldError: a present numeric field that is not a number (``not_a_number:<key>``), or a section of the
            nested layout that is not an object (``not_an_object:<section>``).
    """
    run = ParsedRun()
    metrics = section(doc, "request_metrics")
    nested = bool(metrics)
    latency = section(metrics, "latency", "request_metrics.latency")
    for metric in LATENCY_METRICS:
        block = section(latency, metric, f"request_metrics.latency.{metric}")
        for stat, nested_stat in _NESTED_STATS.items():
            if nested:
                value = number(block, nested_stat, label=f"request_metrics.latency.{metric}.{nested_stat}")
            else:
                value = None if stat in ("median", "p99") else number(doc, f"{stat}_{metric}")
            run.values[f"{stat}_{metric}_s"] = value
    run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"  # aggregation_common.percentile

    throughput = section(metrics, "throughput", "request_metrics.throughput")
    per_gpu = section(throughput, "per_gpu", "request_metrics.throughput.per_gpu")
    if nested:
        total = _tps(throughput, "total")
        output = _tps(throughput, "output")
        input_tput = _tps(throughput, "input")
        duration = number(throughput, "duration_seconds", label="request_metrics.throughput.duration_seconds")
        reported = {name: number(per_gpu, name, label=f"request_metrics.throughput.per_gpu.{name}")
                    for name in ("total_tput_tps", "output_tput_tps", "input_tput_tps")}
        reported_total, reported_output, reported_input = (reported["total_tput_tps"], reported["output_tput_tps"],
                                                           reported["input_tput_tps"])
        tokens = section(section(metrics, "tokens", "request_metrics.tokens"), "output_actual",
                         "request_metrics.tokens.output_actual")
        mean_output = number(tokens, "mean", label="request_metrics.tokens.output_actual.mean")
    else:
        total, output, input_tput = (number(doc, "total_tput_tps"), number(doc, "output_tput_tps"),
                                     number(doc, "input_tput_tps"))
        duration = number(doc, "duration_seconds")
        reported_total, reported_output, reported_input = (number(doc, "tput_per_gpu"),
                                                           number(doc, "output_tput_per_gpu"),
                                                           number(doc, "input_tput_per_gpu"))
        mean_output = number(doc, "mean_output_tokens_actual")

    accounting = section(doc, "request_accounting")
    issued = integer(doc, "num_requests_total")
    warmup = integer(accounting, "records_warmup_dropped", label="request_accounting.records_warmup_dropped")
    run.values.update(
        benchmark_type=AGENTIC_TRACES,
        num_prompts=None if issued is None else issued - (warmup or 0),
        completed=integer(doc, "num_requests_successful"),
        failed=integer(accounting, "records_error_dropped", label="request_accounting.records_error_dropped"),
        duration_s=duration,
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_tput,
        reported_tput_per_gpu=reported_total,
        reported_output_tput_per_gpu=reported_output,
        reported_input_tput_per_gpu=reported_input,
        model_id=None if doc.get("model") in (None, "") else str(doc["model"]),
    )
    _e2e_norm_intvty(doc, latency, run, mean_output)

    meta = metadata_keys_in(doc, METADATA_KEYS)
    meta.pop("model", None)  # the checkpoint id or path; the key is infmax_model_prefix
    if doc.get("infmax_model_prefix"):
        meta["model"] = doc["infmax_model_prefix"]
    if doc.get("pcp_size") is not None:
        meta.setdefault("pcp", doc["pcp_size"])
    offload = doc.get("offloading") if doc.get("offloading") not in (None, "") else doc.get("kv_offloading")
    if offload not in (None, ""):
        meta["kv_offload"] = offload
    run.in_file_meta = meta
    run.fallback_meta = {"model": model_key(doc.get("model")),
                         "precision": precision_from_model_id(doc.get("model"))}
    return run


def _e2e_norm_intvty(doc: Mapping[str, Any], latency: Mapping[str, Any], run: ParsedRun,
                     mean_output: float | None) -> None:
    """The agentic x-axis inputs, each under its own name (docs/metrics.md section 4a).

    - ``e2e_norm_intvty_p90`` (tok/s/user): only the dashboard's own 1 / p90 over requests of (E2EL_i / OSL_i),
      when the row carries it (``request_metrics.latency.e2e_norm_intvty.p90`` or ``p90_e2e_norm_intvty``, computed
      by InferenceX from the run's records), with ``e2e_norm_intvty_source`` = ``dashboard:p90_e2e_norm_intvty``.
      Without it the column stays null here: the metrics stage computes the statistic from the run's per-request
      records when they were read (``sql/run_request_stats.sql``).
    - ``mean_osl_over_p90_e2el`` (tok/s/user): mean output tokens per request / p90 E2EL (s), from the row's
      aggregates: another statistic, which pairs the p90 E2EL with the mean output length (14.08 against the
      definition's 8.39 on a real Kimi-K2.7 run). It stands in on the x-axis only for runs without the
      definition, under its own name and label, never as ``e2e_norm_intvty_p90``.

    When the row carries both the dashboard's value and the stand-in's inputs, the two are compared in
    ``derivations``.
    """
    p90_e2el = run.values.get("p90_e2el_s")
    standin = mean_output / p90_e2el if mean_output and p90_e2el and p90_e2el > 0 else None
    run.values["mean_osl_over_p90_e2el"] = standin
    nested = section(latency, "e2e_norm_intvty", "request_metrics.latency.e2e_norm_intvty")
    theirs = number(nested, "p90", label="request_metrics.latency.e2e_norm_intvty.p90")
    if theirs is None:
        theirs = number(doc, "p90_e2e_norm_intvty")
    if theirs is not None:
        run.values["e2e_norm_intvty_p90"], run.values["e2e_norm_intvty_source"] = theirs, DASHBOARD_SOURCE
        if standin is not None and theirs:
            run.derivations.append(f"e2e_norm_intvty_p90 from the row ({theirs:.4g} tok/s/user); the stand-in mean "
                                   f"output tokens / p90 E2EL gives {standin:.4g} (ratio {standin / theirs:.3f})")
    elif standin is not None:
        run.derivations.append("mean_osl_over_p90_e2el = mean output tokens per request / p90 E2EL (a stand-in: the "
                               "row has no 1 / p90(E2EL / OSL); the metrics stage computes it from per-request "
                               "records when they were read)")


def _tps(throughput: Mapping[str, Any], direction: str) -> float | None:
    block = section(throughput, direction, f"request_metrics.throughput.{direction}")
    return number(block, "tokens_per_second", label=f"request_metrics.throughput.{direction}.tokens_per_second")
