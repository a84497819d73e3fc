"""The text report ``trtllm-bench throughput`` prints at the end of its console output (as TensorRT-LLM 0.16 prints
it), after thousands of MPI and INFO lines.

Sections ``= ENGINE DETAILS`` (``Model``, ``Dtype``, ``KV Cache Dtype``, ``Quantization``), ``= WORLD + RUNTIME
INFORMATION`` (``TP Size``, ``PP Size``, ``Max Runtime Batch Size`` …) and ``= PERFORMANCE OVERVIEW``
(``Number of requests``, ``Average Input Length (tokens)``, ``Average Output Length (tokens)``, ``Token Throughput
(tokens/sec)``, ``Request Throughput (req/sec)``, ``Total Latency (ms)``); ``label:<tabs>value`` lines.
``Token Throughput`` counts OUTPUT tokens: requests × average output length / total latency (e.g. 200 × 16384 /
836.1305 s = 3919.0 in a 1024/16384 run). This release prints no TTFT, TPOT or ITL, so the run has no
interactivity and validation names it ``missing_field:median_tpot_ms``. A log that announced the benchmark
(``Preparing to run throughput benchmark``) but ends without the report is an aborted run, reported by the
registry as ``truncated_console_log``.
"""

from __future__ import annotations

import hashlib
import re

from pipeline.ingest.keys import model_key
from pipeline.ingest.parsers.base import ParsedRun, console_number, input_throughput

FORMAT = "trtllm_bench_console"
REPORT = "PERFORMANCE OVERVIEW"
STARTED = "Preparing to run throughput benchmark"
_LINE_RE = re.compile(r"^([A-Za-z][^:]*?):\s+(\S.*?)\s*$")
# the report's section line and the benchmark's own start line, as trtllm-bench prints them
_REPORT_LINE_RE = re.compile(r"^=\s*PERFORMANCE OVERVIEW\s*$", re.MULTILINE)
_STARTED_LINE_RE = re.compile(r"^\[[^\]]*\] \[TRT-LLM\] \[I\] Preparing to run throughput benchmark", re.MULTILINE)
_REQUIRED = ("Number of requests", "Average Input Length (tokens)", "Average Output Length (tokens)",
             "Token Throughput (tokens/sec)", "Total Latency (ms)")


def has_report(text: str) -> bool:
    """Whether ``text`` is trtllm-bench console output with a report (a ``= PERFORMANCE OVERVIEW`` line), or one
    whose benchmark started (``[<time>] [TRT-LLM] [I] Preparing to run throughput benchmark...``)."""
    return (REPORT in text and _REPORT_LINE_RE.search(text) is not None) or (
        STARTED in text and _STARTED_LINE_RE.search(text) is not None)


def parse_text(text: str) -> tuple[str, list[ParsedRun], str | None]:
    """The report of a trtllm-bench console log.

    Returns:
        (``trtllm_bench_console``, runs, truncation): one ParsedRun (latency ``duration_s`` in s, throughputs in
        tok/s: output = ``Token Throughput``, total = output × (avg input + avg output) / avg output, input =
        total − output; ``completed`` = ``num_prompts`` = ``Number of requests``, since the report has no failed
        count; ``total_input_tokens``/``total_output_tokens`` = requests × average length), or no run and a
        ``truncation`` naming what is missing when the benchmark started but the report is absent or cut off.
    """
    found = list(_REPORT_LINE_RE.finditer(text))
    report_at = found[-1].start() if found else -1
    if report_at < 0:
        return FORMAT, [], "the benchmark started ('Preparing to run throughput benchmark') but the log ends " \
                           "without its PERFORMANCE OVERVIEW report"
    labels: dict[str, str] = {}
    for line in text.replace("\r", "\n").split("\n"):
        match = _LINE_RE.match(line.strip())
        if match and match.group(1) not in labels:
            labels[match.group(1)] = match.group(2)
    missing = [label for label in _REQUIRED if console_number(labels.get(label)) is None]
    if missing:
        return FORMAT, [], f"PERFORMANCE OVERVIEW lacks {', '.join(repr(m) for m in missing)}"
    requests = int(console_number(labels["Number of requests"]))
    avg_in = console_number(labels["Average Input Length (tokens)"])
    avg_out = console_number(labels["Average Output Length (tokens)"])
    output = console_number(labels["Token Throughput (tokens/sec)"])
    run = ParsedRun()
    run.values.update(
        num_prompts=requests,
        completed=requests,
        duration_s=console_number(labels["Total Latency (ms)"]) * 1e-3,
        request_throughput_req_s=console_number(labels.get("Request Throughput (req/sec)")),
        output_tput_tok_s=output,
        total_input_tokens=round(requests * avg_in),
        total_output_tokens=round(requests * avg_out),
        model_id=labels.get("Model"),
        latency_unit_in_file="ms",
        content_sha256=hashlib.sha256(text[text.rfind("ENGINE DETAILS", 0, report_at):].encode()).hexdigest(),
    )
    if avg_out:
        run.values["total_tput_tok_s"] = output * (avg_in + avg_out) / avg_out
        run.values["input_tput_tok_s"] = input_throughput(run.values["total_tput_tok_s"], output)
        run.derivations.append("total_tput_tok_s = Token Throughput (output tok/s) × (avg input + avg output) / "
                               "avg output; input = total − output")
    meta = {}
    for label, key in (("TP Size", "tp"), ("PP Size", "pp")):
        if labels.get(label):
            meta[key] = labels[label]
    run.in_file_meta = meta
    quant = labels.get("Quantization")
    run.fallback_meta = {
        "model": model_key(labels.get("Model")),
        "framework": "trtllm",
        # no quantization means the checkpoint's dtype is the serving precision (as trtllm.py)
        "precision": quant if quant and quant.lower() != "none" else labels.get("Dtype"),
    }
    return FORMAT, [run], None
