"""InferenceX aggregated rows: ``utils/process_result.py`` output (``agg_<name>.json``, one object; a list when
``collect_results.py`` gathered them).

Rows carry their own metadata and per-GPU throughputs (``tput_per_gpu``, ``output_tput_per_gpu``,
``input_tput_per_gpu``); latencies are already in SECONDS (``median_tpot``; ``*_intvty`` precomputed and not
read: the metric SQL recomputes interactivity from TPOT). The model key is ``infmax_model_prefix`` (``model`` is
the Hugging Face id). AgentX (agentic) rows carry ``scenario_type`` and no ISL/OSL: a different benchmark,
rejected by name. The dashboard's export is ``pipeline.ingest.parsers.inferencex_api``.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.parsers.base import (
    ParsedRun,
    RowRejected,
    interactivity_block,
    latency_block,
    metadata_keys_in,
    number,
)
from pipeline.ingest.schema import METADATA_KEYS

FORMAT = "inferencex_agg"


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inferencex_agg`` for process_result rows: ``hw`` plus one of ``tput_per_gpu``, ``infmax_model_prefix``,
    ``median_tpot`` or (AgentX) ``scenario_type``; else None."""
    markers = ("tput_per_gpu", "scenario_type", "infmax_model_prefix", "median_tpot")
    if "hw" in doc and any(k in doc for k in markers):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one InferenceX agg row.

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
    run = per_gpu_metrics(doc)
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


def per_gpu_metrics(m: Mapping[str, Any]) -> ParsedRun:
    """Latencies (seconds keys ``{stat}_{metric}``) and reported per-GPU throughputs of an InferenceX row."""
    run = ParsedRun()
    run.values.update(latency_block(m, "{stat}_{metric}", 1.0))
    # the row gives TPOT in seconds only, so 1 / tpot_s (its own *_intvty were computed from ms we do not have)
    run.values.update(interactivity_block(m, "{stat}_tpot", "s"))
    run.values["latency_unit_in_file"] = "s"
    run.values["percentile_method"] = "linear_interpolation"
    run.values.update(
        reported_tput_per_gpu=number(m, "tput_per_gpu"),
        reported_output_tput_per_gpu=number(m, "output_tput_per_gpu"),
        reported_input_tput_per_gpu=number(m, "input_tput_per_gpu"),
        reported_median_intvty=number(m, "median_intvty"),  # only checked against 1000/TPOT, never used
    )
    # process_result's optional power block (utils/aggregate_power.py), used only when it says it is valid
    valid = m.get("power_valid")
    if valid is None or valid is True or str(valid).lower() == "true":
        run.values["reported_avg_power_w_per_gpu"] = number(m, "avg_power_w")
        run.values["reported_energy_j"] = number(m, "total_gpu_energy_j")
    return run
