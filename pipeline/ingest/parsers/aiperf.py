"""NVIDIA AIPerf ``profile_export_aiperf.json`` and the legacy GenAI-Perf ``profile_export_genai_perf.json``.

Both write one JSON object per run: one block per metric, ``{"unit": "ms", "avg": …, "p1" … "p99": …,
"min": …, "max": …, "std": …}`` (AIPerf: aiperf/exporters/json_exporter.py, metrics in aiperf/metrics/types/;
GenAI-Perf: genai_perf/export_data/json_exporter.py in triton-inference-server/perf_analyzer), plus the run's
setup under ``input_config``. Percentiles are numpy's (linear interpolation), one value per request.

How the blocks map onto the run schema (both harnesses):
- ``time_to_first_token`` → TTFT; ``request_latency`` → E2EL.
- ``inter_token_latency`` → TPOT. Both harnesses compute it per request as
  (request latency − TTFT) / (output tokens − 1), the definition of TPOT, not a gap between chunks.
  GenAI-Perf releases before mid-2024 computed a per-chunk gap under the same name. A GenAI-Perf file is trusted
  for TPOT only when ``input_config`` names its ``subcommand``, which later releases write. Otherwise TPOT is
  left null and validation quarantines the run.
- ``inter_chunk_latency`` (AIPerf only) → ITL, the gaps between streamed chunks as vLLM defines ITL.
- ``output_token_throughput_per_user`` (AIPerf; 1 / TPOT per request) is kept as ``reported_median_intvty``
  (p50) so it can be checked against 1000 / median TPOT ms. Interactivity itself comes from TPOT, as for every
  other format.
- ``request_count`` → completed (AIPerf counts only successful requests there); ``error_request_count`` → failed,
  or the sum of ``error_summary[].count`` when the block is absent (AIPerf writes no block when nothing failed).
  GenAI-Perf files have neither, so completed and failed stay null.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from pipeline.ingest.keys import model_key, to_date, to_int
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

FORMAT = "aiperf"
GENAI_PERF_FORMAT = "genai_perf"

# our stat → the harness's key in a metric block
_STATS = (("mean", "avg"), ("median", "p50"), ("std", "std"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"))
_TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
_PROBES = ("request_latency", "time_to_first_token", "request_throughput", "output_token_throughput")


def detect(doc: Mapping[str, Any]) -> str | None:
    """``aiperf`` / ``genai_perf`` when ``doc`` is one of these exports, else None.

    Content rule: a metric block (an object with a ``unit``) under ``request_latency``, ``time_to_first_token``,
    ``request_throughput`` or ``output_token_throughput``; plus ``aiperf_version`` (AIPerf), or an
    ``input_config`` object without it (GenAI-Perf).
    """
    if not any(isinstance(doc.get(key), dict) and "unit" in doc[key] for key in _PROBES):
        return None
    if "aiperf_version" in doc:
        return FORMAT
    if isinstance(doc.get("input_config"), dict):
        return GENAI_PERF_FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one AIPerf or GenAI-Perf export.

    Returns:
        ParsedRun with latencies in s, throughputs in tok/s, ``conc`` from the configured concurrency, nominal
        ``isl``/``osl`` when the synthetic lengths had no spread, and ``run_date`` from AIPerf's ``start_time``.

    Raises:
        FieldError: a metric that is not an object (``not_an_object:<metric>``), a latency unit that is missing
            or unknown (``missing_field:<metric>.unit``, ``unknown_unit:<metric>.unit``), or a value of the
            wrong type (``not_a_number:<metric>.<stat>``, ``not_an_integer:request_count.avg``).
        RowRejected: ``cancelled_run`` when AIPerf says the benchmark was cancelled (``was_cancelled``).
    """
    fmt = detect(doc)
    aiperf = fmt == FORMAT
    if doc.get("was_cancelled") is True:
        raise RowRejected("cancelled_run", "was_cancelled is true: the benchmark stopped before it finished")
    config = section(doc, "input_config")
    run = ParsedRun()
    run.values["percentile_method"] = "linear_interpolation"
    units: set[str] = set()
    trust_tpot = aiperf or "subcommand" in config
    for metric, key in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency"),
                        ("itl", "inter_chunk_latency" if aiperf else None), ("e2el", "request_latency")):
        block = section(doc, key) if key else {}
        if metric == "tpot" and block and not trust_tpot:
            run.derivations.append("median_tpot_s null: this GenAI-Perf file has no input_config.subcommand, so it "
                                   "may predate inter_token_latency = (request latency - TTFT)/(OSL - 1)")
            block = {}
        scale = _time_scale(block, key) if block else None
        if block:
            units.add(str(block["unit"]))
        for stat, hkey in _STATS:
            value = number(block, hkey, label=f"{key}.{hkey}") if block else None
            run.values[f"{stat}_{metric}_s"] = None if value is None else value * scale
            if metric == "tpot" and stat in INTVTY_STATS and value is not None:  # from the file's own number
                ms = str(block["unit"]) == "ms"
                run.values[f"{stat}_intvty"] = interactivity(value if ms else value * scale, "ms" if ms else "s")
    run.values["latency_unit_in_file"] = units.pop() if len(units) == 1 else None
    if trust_tpot and section(doc, "inter_token_latency"):
        run.derivations.append("TPOT from inter_token_latency = (request latency - TTFT)/(output tokens - 1) per request")

    output = _avg(doc, "output_token_throughput")
    total = _avg(doc, "total_token_throughput")
    request_tput = _avg(doc, "request_throughput")
    duration = _avg(doc, "benchmark_duration")
    total_isl = _avg(doc, "total_isl")
    total_osl = _avg(doc, "total_osl")
    if total_osl is None:
        total_osl = _avg(doc, "total_output_tokens")
    if total is None and output is not None:
        if total_isl is not None and duration:
            total = output + total_isl / duration
            run.derivations.append("total_tput_tok_s = output_token_throughput + total_isl / benchmark_duration")
        elif _avg(doc, "input_sequence_length") is not None and request_tput is not None:
            total = output + _avg(doc, "input_sequence_length") * request_tput
            run.derivations.append(
                "total_tput_tok_s = output_token_throughput + input_sequence_length.avg * request_throughput")
    completed = _count(doc, "request_count")
    failed = _count(doc, "error_request_count")
    if failed is None and aiperf and isinstance(doc.get("error_summary"), list):
        failed = 0
        for index, entry in enumerate(doc["error_summary"]):
            count = integer(entry, "count", label=f"error_summary[{index}].count") if isinstance(entry, dict) else None
            failed += count or 0
        run.derivations.append("failed = sum of error_summary[].count (no error_request_count block)")
    run.values.update(
        num_prompts=integer(_profiling_phase(config), "requests", label="input_config.phases.profiling.requests"),
        completed=completed,
        failed=failed,
        duration_s=duration,
        total_input_tokens=_as_int(total_isl, "total_isl.avg"),
        total_output_tokens=_as_int(total_osl, "total_osl.avg"),
        request_throughput_req_s=request_tput,
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_throughput(total, output),
        reported_median_intvty=number(section(doc, "output_token_throughput_per_user"), "p50",
                                      label="output_token_throughput_per_user.p50"),
        model_id=_model_id(config, aiperf),
    )
    meta: dict[str, Any] = {}
    if aiperf and doc.get("end_time"):
        try:
            end = datetime.fromisoformat(str(doc["end_time"]))
            meta["run_date"] = to_date(doc.get("start_time") or doc["end_time"])
        except ValueError as exc:
            raise FieldError("invalid_date", "end_time", f"expected ISO 8601, got {doc['end_time']!r:.40}") from exc
        if end.tzinfo is None:  # local wall-clock time, as vLLM's ``date``
            run.values["bench_end_local"] = end
    conc = _concurrency(config, aiperf)
    if conc is not None:
        meta["conc"] = conc
    meta.update(_nominal_lengths(config, aiperf))
    run.in_file_meta = meta
    framework = None
    if not aiperf and str(config.get("service_kind", "")).lower() == "triton":
        # GenAI-Perf's --backend names the Triton backend; for OpenAI endpoints it is an unused default.
        framework = {"tensorrtllm": "trtllm", "vllm": "vllm"}.get(str(config.get("backend", "")).lower())
    run.fallback_meta = {"model": model_key(run.values["model_id"]), "framework": framework}
    return run




def _time_scale(block: Mapping[str, Any], key: str) -> float:
    """Seconds per unit of a latency block's ``unit``."""
    unit = block.get("unit")
    if unit is None:
        raise FieldError("missing_field", f"{key}.unit", "a latency block without a unit cannot be read")
    scale = _TIME_SCALE.get(str(unit).strip().lower())
    if scale is None:
        raise FieldError("unknown_unit", f"{key}.unit", f"expected one of {', '.join(_TIME_SCALE)}, got {unit!r:.20}")
    return scale


def _avg(doc: Mapping[str, Any], key: str) -> float | None:
    return number(section(doc, key), "avg", label=f"{key}.avg")


def _count(doc: Mapping[str, Any], key: str) -> int | None:
    return integer(section(doc, key), "avg", label=f"{key}.avg")


def _as_int(value: float | None, label: str) -> int | None:
    if value is None:
        return None
    return integer({"v": value}, "v", label=label)


def _model_id(config: Mapping[str, Any], aiperf: bool) -> str | None:
    """The one model benchmarked, or None when the export names none or several."""
    if aiperf:
        models = config.get("models")
        names = [m.get("name") for m in models.get("items", [])] if isinstance(models, dict) else []
        if not names and isinstance(config.get("endpoint"), dict):  # releases before 0.10
            names = config["endpoint"].get("model_names") or []
    else:
        names = config.get("model") or []
    names = [n for n in names if isinstance(n, str) and n] if isinstance(names, list) else []
    return names[0] if len(names) == 1 else None


def _concurrency(config: Mapping[str, Any], aiperf: bool) -> int | None:
    """AIPerf: the ``profiling`` phase's concurrency (``loadgen.concurrency`` before 0.10); GenAI-Perf:
    ``input_config.concurrency``. None for request-rate runs."""
    value = None
    if aiperf:
        value = _profiling_phase(config).get("concurrency")
        if value is None and isinstance(config.get("loadgen"), dict):
            value = config["loadgen"].get("concurrency")
    else:
        value = config.get("concurrency")
    try:
        return to_int(value)
    except ValueError as exc:
        raise FieldError("not_an_integer", "input_config.concurrency", str(exc)) from exc


def _profiling_phase(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """AIPerf 0.10+: the ``input_config.phases`` entry named ``profiling`` (its ``requests`` and ``concurrency``)."""
    phases = config.get("phases")
    for phase in phases if isinstance(phases, list) else []:
        if isinstance(phase, dict) and phase.get("name") == "profiling":
            return phase
    return {}


def _nominal_lengths(config: Mapping[str, Any], aiperf: bool) -> dict[str, int]:
    """Nominal ISL/OSL of synthetic prompts whose length has no spread (stddev 0)."""
    if aiperf:  # releases before 0.10: input.prompt.{input_tokens,output_tokens}.{mean,stddev}
        prompt = (config.get("input") or {}).get("prompt") if isinstance(config.get("input"), dict) else None
        pairs = {}
        if isinstance(prompt, dict):
            for key, name in (("isl", "input_tokens"), ("osl", "output_tokens")):
                spec = prompt.get(name)
                if isinstance(spec, dict):
                    pairs[key] = (spec.get("mean"), spec.get("stddev"))
    else:
        pairs = {"osl": (config.get("output_tokens_mean"), config.get("output_tokens_stddev"))}
        if config.get("prompt_source") == "synthetic":
            pairs["isl"] = (config.get("synthetic_input_tokens_mean"), config.get("synthetic_input_tokens_stddev"))
    out: dict[str, int] = {}
    for key, (mean, stddev) in pairs.items():
        if isinstance(mean, (int, float)) and not isinstance(mean, bool) and mean > 0 and stddev in (0, 0.0):
            out[key] = int(mean)
    return out
