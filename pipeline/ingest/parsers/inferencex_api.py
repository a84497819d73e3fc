"""The InferenceX dashboard's data export (``/api/v1/benchmarks``): a JSON array of rows.

Against process_result rows it renames ``hw`` → ``hardware`` and ``spec_decoding`` → ``spec_method``, splits the
topology into ``prefill_*``/``decode_*`` (``num_prefill_gpu``, ``num_decode_gpu``), nests every number under
``metrics`` (latencies in SECONDS, per-GPU throughputs) and adds ``date`` and ``run_url``. The model is already a
key (``dsr1``). Real example: ``real-logs/inferencex/*api_benchmarks*.json``.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.parsers.base import ParsedRun, metadata_keys_in
from pipeline.ingest.parsers.inferencex import per_gpu_metrics
from pipeline.ingest.schema import METADATA_KEYS

FORMAT = "inferencex_api"


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inferencex_api`` for export rows (``hardware`` plus a ``metrics`` object), else None."""
    if "hardware" in doc and isinstance(doc.get("metrics"), dict):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one export row; single-node rows take ``tp``/``ep``/``dp_attention`` from ``decode_*``.

    Raises:
        FieldError: a present metric of the wrong type.
    """
    metrics = doc["metrics"]
    run = per_gpu_metrics(metrics)
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
