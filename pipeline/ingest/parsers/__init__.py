"""The parser registry: detect a file's format from its content (never its name) and parse every run in it.

A file decodes to one JSON object, a JSON array of objects (InferenceX ``collect_results``, the dashboard export,
``vllm bench sweep`` summaries) or JSON Lines (SGLang, ``--append-result``). Each object is matched against the
format detectors in ``DETECTORS`` (first match wins); text files that are not run logs are classified by
``non_run.classify_text``. Nothing raises: every problem becomes a :class:`Reject` with a reason code.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import ijson
import orjson

from pipeline.ingest.parsers import (  # harness exports, detected last
    aiperf,
    guidellm,
    inference_perf,
    inferencex,
    inferencex_agentx,
    inferencex_api,
    inferencex_together,
    llmperf,
    serving_console,
    sglang,
    trtllm,
    trtllm_console,
    vllm,
)
from pipeline.ingest.parsers.base import FieldError, ParsedRun, RowRejected
from pipeline.ingest.parsers.json_shape import MAX_DEPTH, depth_and_keys, duplicate_keys
from pipeline.ingest.parsers.non_run import classify_text
from pipeline.io.opener import open_regular, read_whole

# (detector, parser) pairs; InferenceX first because its rows also contain vLLM-like latency keys.
DETECTORS: tuple[tuple[Callable[[Mapping[str, Any]], str | None], Callable[[Mapping[str, Any]], ParsedRun]], ...] = (
    (inferencex_api.detect, inferencex_api.parse),
    (inferencex_agentx.detect, inferencex_agentx.parse),
    (inferencex_together.detect, inferencex_together.parse),
    (inferencex.detect, inferencex.parse),
    (trtllm.detect, trtllm.parse),
    (sglang.detect, sglang.parse),
    (vllm.detect, vllm.parse),
    (aiperf.detect, aiperf.parse),
    (guidellm.detect, guidellm.parse),
    (llmperf.detect, llmperf.parse),
    (inference_perf.detect, inference_perf.parse),
)

SIDECAR_SUFFIX = ".meta.json"
# Above this size a file is streamed (ijson) and its per-request arrays skipped, so memory stays bounded: a vLLM
# `--save-detailed` result with 100k requests is hundreds of MB, almost all of it `itls`/`generated_texts`.
LARGE_FILE_BYTES = 32 * 1024 * 1024
# The first of the per-request parallel arrays of a serve result (vLLM / TRT-LLM ``--save-detailed``, SGLang
# ``--output-details``): a run object without it has no per-request records (``pipeline.ingest.requests``).
REQUEST_ARRAYS_KEY = "ttfts"


@dataclass
class Reject:
    """A row (``row`` ≥ 0) or a whole file (``row`` = None) that produced no run, with its stable reason code."""

    row: int | None
    reason_code: str
    detail: str
    source_format: str | None = None


@dataclass
class FileReadout:
    """Everything read from one file.

    Attributes:
        kind: ``run_log`` or a non-run kind of ``non_run`` (``metadata_sidecar``, ``power_telemetry`` …),
            ``unrecognized`` or ``unreadable``.
        source_format: the run format when all rows agree (``vllm_bench_serve`` …), else ``mixed``/None.
        runs: (row index, source format, ParsedRun) for every run object that parsed.
        rejects: rows or the file that did not; ``len(runs) + len(rejects)`` = rows read (a non-run file is 1 row).
        request_arrays: for a JSON file read whole, whether any of its objects holds ``REQUEST_ARRAYS_KEY`` (per-
            request records, ``pipeline.ingest.requests``); None for every other file (not JSON, or streamed).
    """

    kind: str
    source_format: str | None = None
    runs: list[tuple[int, str, ParsedRun]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    sha256: str | None = None
    size_bytes: int = 0
    request_arrays: bool | None = None


def read_path(path: str | os.PathLike, root: str | os.PathLike | None = None) -> FileReadout:
    """Classify and parse the file at ``path`` (content hash and size included).

    Opened by ``pipeline.io.opener`` (a regular file, under the run-log cap, inside ``root`` when given). Small
    files are read whole; files over ``LARGE_FILE_BYTES`` are hashed in chunks and, when they are a JSON
    object, streamed keeping only top-level scalars and objects (arrays such as per-request ``itls`` skipped).

    Raises:
        RefusedFile: not a regular file, or over the run-log cap (``pipeline.io.opener``; the caller records it).
        OSError: the file cannot be opened (the caller records ``unreadable_file``).
    """
    path = os.fspath(path)
    size, data = read_whole(path, "run_log", root, stream_over=LARGE_FILE_BYTES)
    if size <= LARGE_FILE_BYTES:
        readout = read_file(os.path.basename(path), data)
        readout.sha256, readout.size_bytes = hashlib.sha256(data).hexdigest(), len(data)
        return readout
    path = Path(path)
    digest = hashlib.sha256()
    with open_regular(path, "run_log") as handle:
        head = handle.read(4096)
        handle.seek(0)
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    first = head.lstrip()[:1]
    if first == b"{":
        readout = _read_large_object(path)
    elif first == b"[":
        readout = _read_large_array(path)
    else:  # large text (console logs, telemetry): classified from its start
        readout = read_file(path.name, head)
    readout.sha256, readout.size_bytes = digest.hexdigest(), size
    return readout


def _read_large_object(path: Path) -> FileReadout:
    """Stream a large JSON object, or JSON Lines of objects: keep top-level scalars and objects of each, skip
    top-level arrays (per-request ``itls``, ``generated_texts`` …). Memory stays bounded by the summaries."""
    objects: list[tuple[int, Any]] = []
    skipped: set[str] = set()
    summary: dict[str, Any] = {}
    builder: Any = None
    key, skip_depth = None, 0
    try:
        with open_regular(path, "run_log") as handle:
            for prefix, event, value in ijson.parse(handle, use_float=True, multiple_values=True):
                if skip_depth:
                    skip_depth += {"start_array": 1, "end_array": -1, "start_map": 1, "end_map": -1}.get(event, 0)
                    continue
                if prefix == "":
                    if event == "start_map":
                        summary = {}
                    elif event == "end_map":
                        objects.append((len(objects), summary))
                    elif event == "map_key":
                        key = value
                    else:  # a top-level scalar or array between objects
                        objects.append((len(objects), value))
                    continue
                if builder is None and prefix == key and event == "start_array":
                    skipped.add(key)
                    skip_depth = 1
                    continue
                if builder is None and prefix == key and event == "start_map":
                    builder = ijson.ObjectBuilder()
                if builder is not None:
                    builder.event(event, value)
                    if prefix == key and event == "end_map":
                        summary[key], builder = builder.value, None
                    continue
                summary[key] = value
    except (ijson.JSONError, ijson.IncompleteJSONError, ValueError) as exc:
        return FileReadout("unreadable", rejects=[Reject(None, "invalid_json", _short(exc))])
    readout = _parse_objects(objects, [])
    if skipped:
        note = f"large file streamed; per-request arrays not read: {', '.join(sorted(skipped))}"
        for _, _, parsed in readout.runs:
            parsed.derivations.append(note)
    return readout


def _read_large_array(path: Path) -> FileReadout:
    """Stream a large JSON array of run objects (e.g. a big dashboard export), one element at a time."""
    try:
        with open_regular(path, "run_log") as handle:
            objects = list(enumerate(ijson.items(handle, "item", use_float=True)))
    except (ijson.JSONError, ijson.IncompleteJSONError, ValueError) as exc:
        return FileReadout("unreadable", rejects=[Reject(None, "invalid_json", _short(exc))])
    return _parse_objects(objects, [])


def read_file(name: str, data: bytes) -> FileReadout:
    """Classify and parse one file's bytes. ``name`` is used only for messages and for ``*.meta.json`` sidecars.

    Returns:
        FileReadout; never raises for bad content.
    """
    if not data.strip():
        return FileReadout("unreadable", rejects=[Reject(None, "empty_file", "file is empty or only whitespace")])
    if name.endswith(SIDECAR_SUFFIX):
        return FileReadout("metadata_sidecar", rejects=[_non_run("metadata_sidecar", "run metadata sidecar")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileReadout(
            "unreadable",
            rejects=[Reject(None, "invalid_encoding", f"not UTF-8: byte {data[exc.start]:#04x} at offset {exc.start}")],
        )
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        try:
            scalar = _loads(stripped)
        except ValueError:
            pass
        else:  # valid JSON, but a number or a string where a run object belongs
            return FileReadout("unreadable", rejects=[Reject(
                None, "wrong_top_level_type", f"expected a JSON object or array, got {type(scalar).__name__}")])
        console = _read_console(text)
        if console is not None:
            return console
        kind, description = classify_text(name, text)
        if kind == "unrecognized":
            return FileReadout(kind, rejects=[Reject(None, "unrecognized_format", description)])
        return FileReadout(kind, rejects=[_non_run(kind, description)])
    readout = _read_json(text)
    if readout.kind == "unreadable":
        # Console logs often start with "[" (e.g. "[TensorRT-LLM][INFO]"); recognize them before calling it bad JSON.
        console = _read_console(text)
        if console is not None:
            return console
        kind, description = classify_text(name, text)
        if kind not in ("unrecognized", "documentation"):
            return FileReadout(kind, rejects=[_non_run(kind, description)])
    return readout


# Console text with a result report: (detector, parser returning (format, runs, truncation)), first match wins.
TEXT_PARSERS = ((serving_console.has_block, serving_console.parse_text),
                (trtllm_console.has_report, trtllm_console.parse_text))


def _read_console(text: str) -> FileReadout | None:
    """The runs of a console log's result blocks (one per block), plus ``truncated_console_log`` when a block or
    report is cut off or the benchmark started and printed none; None when no console parser recognizes it."""
    for detector, parse_text in TEXT_PARSERS:
        if detector(text):
            fmt, runs, truncation = parse_text(text)
            readout = FileReadout("run_log", fmt, runs=[(row, fmt, run) for row, run in enumerate(runs)])
            if truncation:
                readout.rejects.append(Reject(len(runs) if runs else None, "truncated_console_log", truncation, fmt))
            return readout
    return None


def _non_run(kind: str, description: str) -> Reject:
    return Reject(None, f"not_a_run_log:{kind}", description)


def _read_json(text: str) -> FileReadout:
    """A JSON document, array or JSON Lines text as its run objects and rejects. A document nested deeper than
    ``MAX_DEPTH`` is refused whole (``too_deep``), and so is one that gives a key twice in an object
    (``duplicate_key:<key>``); in JSON Lines each line is judged on its own and the others are kept."""
    objects: list[tuple[int, Any]] = []
    line_errors: list[Reject] = []
    try:
        doc = _loads(text)
    except _TooDeep as exc:
        return FileReadout("unreadable", rejects=[Reject(None, "too_deep", str(exc))])
    except ValueError as whole_error:
        # JSON Lines (one run per line) when at least one line is a JSON object on its own; otherwise the file
        # is one broken document (e.g. truncated pretty-printed JSON) and is rejected whole.
        parsed: list[tuple[int, int, Any]] = []
        for index, (lineno, line) in enumerate((i, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()):
            try:
                obj = _loads(line)
                problem = _shape_problem(line, obj)
                parsed.append((index, lineno, problem if problem is not None else obj))
            except ValueError as exc:
                parsed.append((index, lineno, exc))
        if not any(isinstance(obj, dict) for _, _, obj in parsed):
            if any(isinstance(obj, Reject) for _, _, obj in parsed):
                first = next(obj for _, _, obj in parsed if isinstance(obj, Reject))
                return FileReadout("unreadable", rejects=[Reject(None, first.reason_code, first.detail)])
            return FileReadout("unreadable", rejects=[Reject(None, "invalid_json", _short(whole_error))])
        for index, lineno, obj in parsed:
            if isinstance(obj, Reject):
                line_errors.append(Reject(index, obj.reason_code, f"line {lineno + 1}: {obj.detail}"))
            elif isinstance(obj, _TooDeep):
                line_errors.append(Reject(index, "too_deep", f"line {lineno + 1}: {obj}"))
            elif isinstance(obj, Exception):
                line_errors.append(Reject(index, "invalid_json", f"line {lineno + 1}: {_short(obj)}"))
            else:
                objects.append((index, obj))
    else:
        problem = _shape_problem(text, doc)
        if problem is not None:
            return FileReadout("unreadable", rejects=[problem])
        objects = list(enumerate(doc)) if isinstance(doc, list) else [(0, doc)]
    if not objects:
        return FileReadout("unrecognized", rejects=[Reject(None, "empty_document", "JSON array with no elements")])
    readout = _parse_objects(objects, line_errors)
    # what ingest/parsed_requests would look for, noted now that the objects are read: it then opens only files
    # that hold per-request arrays, not every result file again
    readout.request_arrays = any(isinstance(obj, dict) and obj.get(REQUEST_ARRAYS_KEY) is not None
                                 for _, obj in objects)
    return readout


def _shape_problem(text: str, doc: Any) -> Reject | None:
    """``too_deep`` or ``duplicate_key:<key>`` for a decoded document (file-level Reject), or None."""
    depth, keys = depth_and_keys(doc)
    if depth > MAX_DEPTH:
        return Reject(None, "too_deep", f"JSON nested {depth} levels deep, more than the {MAX_DEPTH} accepted")
    repeated = duplicate_keys(text, doc, keys)
    if repeated:
        return Reject(None, f"duplicate_key:{repeated[0]}",
                      f"key {', '.join(map(repr, repeated[:5]))} given twice in one JSON object: every reader "
                      "silently keeps the last value, so the file is not trusted")
    return None


def _parse_objects(objects: list[tuple[int, Any]], line_errors: list[Reject]) -> FileReadout:
    readout = FileReadout("run_log", rejects=line_errors)
    objects = _expand_reports(objects)
    for row, obj in objects:
        if not isinstance(obj, dict):
            readout.rejects.append(
                Reject(row, "wrong_top_level_type", f"expected a JSON object per run, got {type(obj).__name__}")
            )
            continue
        fmt, parser = _detect(obj)
        if parser is None:
            keys = ", ".join(list(obj)[:8])
            readout.rejects.append(Reject(row, "unrecognized_format", f"no run format matches keys: {keys}"))
            continue
        try:
            parsed = parser(obj)
            parsed.values["content_sha256"] = _object_hash(obj)
            readout.runs.append((row, fmt, parsed))
        except (FieldError, RowRejected) as exc:
            readout.rejects.append(Reject(row, exc.reason_code, exc.detail, fmt))
        except OverflowError as exc:  # arithmetic on an infinite or huge number inside a parser
            readout.rejects.append(Reject(row, "number_out_of_range", f"a value too large to use: {_short(exc)}", fmt))
    formats = {fmt for _, fmt, _ in readout.runs} | {r.source_format for r in readout.rejects if r.source_format}
    readout.source_format = formats.pop() if len(formats) == 1 else ("mixed" if formats else None)
    if not readout.runs and objects and all(_is_request_record(obj) for _, obj in objects):
        # AIPerf's profile_export.jsonl: one record per request, read with its run (pipeline/ingest/requests.py)
        return FileReadout("per_request_records", rejects=[_non_run(
            "per_request_records", f"{len(objects)} per-request records (AIPerf profile_export.jsonl), read with "
            "the run of profile_export_aiperf.json in the same folder")])
    if not readout.runs and all(r.reason_code == "unrecognized_format" for r in readout.rejects) and len(objects) > 0:
        # A JSON file with no run object at all is one unrecognized file, not N unrecognized rows.
        return FileReadout(
            "unrecognized", rejects=[Reject(None, "unrecognized_format", readout.rejects[0].detail)]
        )
    return readout


def _is_request_record(obj: Any) -> bool:
    """An AIPerf per-request record: ``metadata`` and ``metrics`` objects, no run-level keys."""
    return isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and isinstance(obj.get("metrics"), dict) \
        and _detect(obj)[1] is None


def _expand_reports(objects: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """Objects that hold several runs (a GuideLLM report: one run per ``benchmarks[]`` entry) become one object
    per run, numbered in order; other files keep their row numbers."""
    parts = [(row, obj, guidellm.expand(obj)) for row, obj in objects]
    if all(runs is None for _, _, runs in parts):
        return objects
    flat = [run for _, obj, runs in parts for run in (runs if runs is not None else [obj])]
    return list(enumerate(flat))


def _detect(obj: Mapping[str, Any]) -> tuple[str | None, Callable[[Mapping[str, Any]], ParsedRun] | None]:
    for detector, parser in DETECTORS:
        fmt = detector(obj)
        if fmt:
            return fmt, parser
    return None, None


def _object_hash(obj: Mapping[str, Any]) -> str:
    """sha256 of a run object, independent of key order and whitespace (finds the same run saved twice)."""
    try:
        canonical = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        canonical = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(canonical).hexdigest()


class _TooDeep(ValueError):
    """JSON nested beyond what the decoders recurse through (orjson stops at 1024 levels, the standard library at
    the interpreter's recursion limit)."""


def _loads(text: str) -> Any:
    """orjson first; the standard library as fallback for the bare ``Infinity``/``NaN`` tokens SGLang writes.

    Raises:
        _TooDeep: nesting the standard library cannot decode (``RecursionError``).
        ValueError: text that is not JSON.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text)
        except RecursionError:
            raise _TooDeep(f"JSON nested deeper than the {MAX_DEPTH} levels accepted (too deep to decode)") from None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]
