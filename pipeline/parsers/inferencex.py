"""InferenceX aggregated rows: ``utils/process_result.py`` output (``agg_<name>.json``, one object; a list when
``collect_results.py`` gathered them) and the dashboard's data export (``/api/v1/benchmarks``, a list of rows).

Both carry their own metadata and per-GPU throughputs (``tput_per_gpu``, ``output_tput_per_gpu``,
``input_tput_per_gpu``); latencies are already in SECONDS (``median_tpot``; ``*_intvty`` precomputed and not
read: the metric SQL recomputes interactivity from TPOT). Differences of the export: ``hardware``,
``spec_method``, ``prefill_*``/``decode_*`` topology, numbers nested under ``metrics``, ``date``.
AgentX (agentic) rows carry ``scenario_type`` and no ISL/OSL: a different benchmark, rejected by name.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.parsers.base import ParsedRun, RowRejected, latency_block, metadata_keys_in, number
from pipeline.schema import METADATA_KEYS

AGG_FORMAT = "inferencex_agg"
API_FORMAT = "inferencex_api"


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inferencex_api`` for export rows (``hardware`` + ``metrics`` object), ``inferencex_agg`` for
    process_result rows (``hw`` + ``tput_per_gpu``, or an AgentX row with ``scenario_type``), else None."""
    if "hardware" in doc and isinstance(doc.get("metrics"), Mapping):
        return API_FORMAT
    if "hw" in doc and ("tput_per_gpu" in doc or "scenario_type" in doc):
        return AGG_FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one InferenceX row (either flavour).

    Raises:
        RowRejected: ``unsupported_scenario:<type>`` for AgentX/agentic rows (no fixed ISL/OSL, other metrics).
        FieldError: a present field of the wrong type.
    """
    scenario = doc.get("scenario_type")
    if scenario:
        raise RowRejected(
            f"unsupported_scenario:{scenario}",
            f"scenario_type {scenario!r} is an agentic (AgentX) benchmark without fixed ISL/OSL; "
            "only fixed-length serving runs are compared",
        )
    if detect(doc) == API_FORMAT:
        return _parse_api(doc)
    return _parse_agg(doc)


def _parse_agg(doc: Mapping[str, Any]) -> ParsedRun:
    run = _metrics(doc)
    meta = metadata_keys_in(doc, METADATA_KEYS)
    meta.pop("model", None)  # process_result's `model` is the HF id; the key is infmax_model_prefix
    if doc.get("infmax_model_prefix"):
        meta["model"] = doc["infmax_model_prefix"]
    for src, dst in (("pcp_size", "pcp"),):
        if doc.get(src) is not None:
            meta.setdefault(dst, doc[src])
    run.in_file_meta = meta
    run.values["model_id"] = None if doc.get("model") is None else str(doc["model"])
    return run


def _parse_api(doc: Mapping[str, Any]) -> ParsedRun:
    metrics = doc["metrics"]
    run = _metrics(metrics)
    meta = metadata_keys_in(doc, METADATA_KEYS)
    meta.pop("hw", None)
    if doc.get("hardware"):
        meta["hw"] = doc["hardware"]
    if doc.get("spec_method") is not None:
        meta["spec_decoding"] = doc["spec_method"]
    if doc.get("date"):
        meta["run_date"] = doc["date"]
    # Single-node rows repeat one topology as prefill_* = decode_*; decode_* is the serving engine's.
    for key in ("tp", "ep", "dp_attention"):
        if doc.get(f"decode_{key}") is not None:
            meta.setdefault(key, doc[f"decode_{key}"])
    run.in_file_meta = meta
    run.values["model_id"] = None
    return run


def _metrics(m: Mapping[str, Any]) -> ParsedRun:
    run = ParsedRun()
    run.values.update(latency_block(m, lambda stat, metric: f"{stat}_{metric}", 1.0))
    run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"
    run.values.update(
        reported_tput_per_gpu=number(m, "tput_per_gpu"),
        reported_output_tput_per_gpu=number(m, "output_tput_per_gpu"),
        reported_input_tput_per_gpu=number(m, "input_tput_per_gpu"),
    )
    return run
