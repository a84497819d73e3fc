"""Recognition of files that are not run logs, so they are recorded as what they are instead of crashing a parser.

Kinds: ``metadata_sidecar`` (``*.meta.json``), ``metadata_manifest`` (a CSV with a ``file`` column, e.g.
``runs.csv``), ``power_telemetry`` (nvidia-smi / amd-smi / rocm-smi / DCGM / pynvml CSV or dmon text),
``console_log`` (engine stdout: vLLM's "Serving Benchmark Result", trtllm-bench's "PERFORMANCE OVERVIEW"),
``documentation`` (Markdown, reStructuredText, plain text), ``table`` (any other CSV/TSV).
"""

from __future__ import annotations

import csv
import io
import re

_POWER_HEADER = re.compile(
    r"power\.draw|socket_power|graphics package power|dcgm_fi_dev_power|power_w\b|(^|,)\s*gpu\d+\s*(,|$)|\bpwr\b", re.IGNORECASE
)
_CONSOLE_MARKERS = (
    "Serving Benchmark Result",
    "PERFORMANCE OVERVIEW",
    "[TRT-LLM]",
    "[TensorRT-LLM]",
    "Preparing to run throughput benchmark",
    "Benchmark duration (s):",
)
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".markdown")


def classify_text(name: str, text: str) -> tuple[str, str]:
    """Kind and a one-line description of a non-JSON text file named ``name``.

    Returns:
        (kind, description): kind is one of the module's kinds, or ``unrecognized``.
    """
    head = text[:4096]
    first_line = head.splitlines()[0] if head.strip() else ""
    lower_name = name.lower()
    if lower_name.endswith((".csv", ".tsv")) or ("," in first_line and "\n" in head):
        header = _csv_header(first_line)
        if "file" in header:
            return "metadata_manifest", f"run metadata manifest with columns {', '.join(header[:8])}"
        if _POWER_HEADER.search(first_line) or (first_line.startswith("#") and "pwr" in head.lower()):
            return "power_telemetry", f"GPU power telemetry, header {first_line[:80]!r}"
        if lower_name.endswith((".csv", ".tsv")):
            return "table", f"CSV table with columns {', '.join(header[:8])}"
    if head.lstrip().startswith("#") and "pwr" in head.lower():
        return "power_telemetry", "nvidia-smi dmon power text"
    if any(marker in text for marker in _CONSOLE_MARKERS):
        return "console_log", "engine console output (parse the JSON result file instead)"
    if lower_name.endswith(_DOC_SUFFIXES) or lower_name in ("readme", "license", "provenance"):
        return "documentation", "documentation / notes"
    return "unrecognized", f"text starting {first_line[:60]!r}"


def _csv_header(first_line: str) -> list[str]:
    row = next(csv.reader(io.StringIO(first_line)), [])
    return [cell.strip().lower() for cell in row]
