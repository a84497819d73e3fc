"""The "Serving Benchmark Result" text block that ``vllm bench serve`` (vllm/benchmarks/serve.py, and the legacy
benchmarks/benchmark_serving.py) and SGLang's ``python -m sglang.bench_serving`` print to the console.

One block per run, between the header ``===… Serving Benchmark Result …===`` and a closing line of ``=``; a log
holding several blocks (a concurrency sweep in one console) gives one run per block, in order. Lines are
``<label>: <value>``; times in ms (converted to s), throughputs in tok/s. The two engines differ only in labels:
SGLang opens the block with ``Backend:``, writes ``Max request concurrency``, ``Total throughput (tok/s)``,
``E2E Latency`` and ``Accept length``; vLLM writes ``Maximum request concurrency``, ``Total token throughput``,
``E2EL``, ``Failed requests`` and a ``Speculative Decoding`` section (``Acceptance rate (%)``, ``Acceptance
length``). Acceptance follows each engine's convention, as its JSON output (``vllm.py``, ``sglang.py``): vLLM's
length = 1 + accepted / drafts and its rate = accepted / draft tokens in PERCENT (stored as a fraction);
SGLang's accept length = tokens emitted per verification step.

Context printed before a block (the client's ``Namespace(...)`` arguments, ``Maximum request concurrency: N``)
gives the model id, the backend and the concurrency when the block does not; ISL/OSL only for
``dataset_name='random'`` (``random_input_len``/``random_output_len``), the one dataset with nominal lengths.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pipeline.ingest.keys import model_key
from pipeline.ingest.parsers.base import (
    ParsedRun,
    console_number,
    input_throughput,
    interactivity,
)
from pipeline.ingest.schema import INTVTY_STATS

VLLM_FORMAT = "vllm_bench_serve_console"
SGLANG_FORMAT = "sglang_bench_serving_console"
TRUNCATED = "truncated_console_log"

HEADER = "Serving Benchmark Result"
_HEADER_RE = re.compile(r"^=+\s*Serving Benchmark Result\s*=+\s*$")
_HEADER_LINE_RE = re.compile(r"^\s*=+\s*Serving Benchmark Result\s*=+\s*$", re.MULTILINE)
_CLOSING_RE = re.compile(r"^={10,}\s*$")
_LINE_RE = re.compile(r"^\s*([^:]+?)\s*:\s*(\S+)?\s*$")
_LATENCY_RE = re.compile(r"^(Mean|Median|Std|P\d+(?:\.\d+)?) (TTFT|TPOT|ITL|E2EL|E2E Latency) \(ms\)$")
_STATS = {"Mean": "mean", "Median": "median", "Std": "std", "P90": "p90", "P95": "p95", "P99": "p99"}
_METRICS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el", "E2E Latency": "e2el"}
# label -> (column, type); both engines' spellings
_FIELDS = {
    "Successful requests": ("completed", int),
    "Failed requests": ("failed", int),
    "Benchmark duration (s)": ("duration_s", float),
    "Total input tokens": ("total_input_tokens", int),
    "Total generated tokens": ("total_output_tokens", int),
    "Request throughput (req/s)": ("request_throughput_req_s", float),
    "Output token throughput (tok/s)": ("output_tput_tok_s", float),
    "Input token throughput (tok/s)": ("input_tput_tok_s", float),
    "Total token throughput (tok/s)": ("total_tput_tok_s", float),
    "Total Token throughput (tok/s)": ("total_tput_tok_s", float),
    "Total throughput (tok/s)": ("total_tput_tok_s", float),
}
_CONC_LABELS = ("Maximum request concurrency", "Max request concurrency")
# a complete block states these (every release of both clients prints them)
_REQUIRED = ("Successful requests", "Benchmark duration (s)", "Output token throughput (tok/s)")
_NAMESPACE_ARG = re.compile(r"\b(model|backend|dataset_name|random_input_len|random_output_len|max_concurrency)="
                            r"('([^']*)'|[^,)\s]+)")


def has_block(text: str) -> bool:
    """Whether ``text`` has a "Serving Benchmark Result" header line (``===… Serving Benchmark Result …===`` on a
    line of its own, as the clients print it; the words quoted in notes or a table do not count)."""
    return HEADER in text and _HEADER_LINE_RE.search(text) is not None


def parse_text(text: str) -> tuple[str, list[ParsedRun], str | None]:
    """Every block of a console log.

    Returns:
        (format, runs, truncation): ``vllm_bench_serve_console`` or ``sglang_bench_serving_console``; one
        ParsedRun per complete block (latencies in s, throughputs in tok/s, ``content_sha256`` of the block's
        text); ``truncation`` names what is missing when the last block is cut off or lacks a required line
        (the registry reports it as ``truncated_console_log``), else None.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    runs: list[ParsedRun] = []
    context: dict[str, str] = {}
    fmt = VLLM_FORMAT
    truncation = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _HEADER_RE.match(line.strip()):
            _read_context(line, context)
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if _CLOSING_RE.match(lines[j].strip())), None)
        block = lines[i + 1:end] if end is not None else lines[i + 1:]
        labels = _labels(block)
        if "Backend" in labels:
            fmt = SGLANG_FORMAT
        missing = [label for label in _REQUIRED if label not in labels]
        if end is None or missing:
            where = f"block {len(runs) + 1} (line {i + 1})"
            truncation = (f"{where}: the log ends inside the block, before its closing line"
                          if end is None else f"{where}: no {', '.join(repr(m) for m in missing)} line")
            if end is None:
                break
        else:
            runs.append(_run(labels, context, "\n".join(lines[i:end + 1])))
        context = {}
        i = (end if end is not None else len(lines)) + 1
    return fmt, runs, truncation


def _read_context(line: str, context: dict[str, str]) -> None:
    """Arguments printed before a block: the Namespace line and the concurrency line."""
    if "Namespace(" in line:
        for key, raw, quoted in _NAMESPACE_ARG.findall(line):
            context[key] = quoted if raw.startswith("'") else raw
    match = _LINE_RE.match(line)
    if match and match.group(1) in _CONC_LABELS and match.group(2):
        context["max_concurrency"] = match.group(2)


def _labels(block: list[str]) -> dict[str, str | None]:
    """label → raw value of every ``label: value`` line of a block (section rules skipped)."""
    out: dict[str, str | None] = {}
    for line in block:
        if line.strip().startswith("-") or line.strip().startswith("="):
            continue
        match = _LINE_RE.match(line)
        if match:
            out[match.group(1)] = match.group(2)
    return out


def _run(labels: dict[str, str | None], context: dict[str, str], block_text: str) -> ParsedRun:
    run = ParsedRun()
    for label, raw in labels.items():
        latency = _LATENCY_RE.match(label)
        if latency and latency.group(1) in _STATS:
            value = console_number(raw)
            stat, metric = _STATS[latency.group(1)], _METRICS[latency.group(2)]
            run.values[f"{stat}_{metric}_s"] = None if value is None else value * 1e-3
            if metric == "tpot" and stat in INTVTY_STATS:  # 1000 / TPOT ms, from the printed ms value
                run.values[f"{stat}_intvty"] = interactivity(value, "ms")
        elif label in _FIELDS:
            column, kind = _FIELDS[label]
            value = console_number(raw)
            run.values[column] = None if value is None else (int(value) if kind is int else value)
    run.values["latency_unit_in_file"] = "ms"
    run.values["percentile_method"] = "linear_interpolation"  # numpy.percentile in both clients
    total, output = run.values.get("total_tput_tok_s"), run.values.get("output_tput_tok_s")
    if run.values.get("input_tput_tok_s") is None:
        run.values["input_tput_tok_s"] = input_throughput(total, output)
    if run.values.get("completed") is not None:
        # every request the block counts either completed or failed (vLLM prints both; SGLang only successes)
        run.values["num_prompts"] = run.values["completed"] + (run.values.get("failed") or 0)
    _acceptance(labels, run)
    run.values["content_sha256"] = hashlib.sha256(block_text.encode()).hexdigest()
    run.values["model_id"] = context.get("model")

    meta: dict[str, Any] = {}
    conc = next((labels[label] for label in _CONC_LABELS if labels.get(label)), None) or context.get("max_concurrency")
    if conc is not None and conc.replace(".", "", 1).isdigit():  # SGLang prints "not set" without a limit
        meta["conc"] = conc
    if context.get("dataset_name") == "random":
        for src, dst in (("random_input_len", "isl"), ("random_output_len", "osl")):
            if context.get(src):
                meta[dst] = context[src]
    run.in_file_meta = meta
    backend = (labels.get("Backend") or context.get("backend") or "").lower()
    run.fallback_meta = {"model": model_key(context.get("model")),
                         "framework": backend if backend in ("vllm", "sglang") else None}
    return run


def _acceptance(labels: dict[str, str | None], run: ParsedRun) -> None:
    length, rate = console_number(labels.get("Acceptance length")), console_number(labels.get("Acceptance rate (%)"))
    if length is not None or rate is not None:
        run.values["spec_accept_length"] = length
        run.values["spec_accept_rate"] = None if rate is None else rate / 100.0
        run.values["spec_metric_source"] = "vllm:spec_decode_counters"
        return
    accept = console_number(labels.get("Accept length"))
    if accept is not None:
        run.values["spec_accept_length"] = accept
        run.values["spec_metric_source"] = "sglang:avg_spec_accept_length"
