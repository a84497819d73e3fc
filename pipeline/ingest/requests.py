"""Per-request records of a run, read from the raw files that hold them, streamed (never a whole large file).

Which harnesses save them, and where (docs/inputs.md, "Per-request data"):

- vLLM ``bench serve --save-detailed`` (and TRT-LLM serve): parallel arrays in the result object, in seconds:
  ``ttfts``, ``itls`` (one list of gaps per request), ``input_lens``, ``output_lens``, ``errors`` ("" = success),
  optionally ``e2els`` (vllm/benchmarks/serve.py, ``result`` dict of ``benchmark``).
- SGLang ``bench_serving --output-details``: the same array names in each JSON Lines record
  (python/sglang/bench_serving.py, ``output_details``).
- AIPerf: ``profile_export.jsonl`` beside ``profile_export_aiperf.json``, one record per request
  (``{"metadata": …, "metrics": {"ttft": {"value", "unit"}, …}, "error": …}``; aiperf/common/models/record_models.py
  ``MetricRecordInfo``). Records of the warmup phase are skipped.
- InferenceX AgentX: its runs are AIPerf runs, and the artifact folder of one run holds the aggregate row (a file of
  ONE JSON object, ``inferencex_agentx``) and AIPerf's ``profile_export.jsonl``: a ``profile_export.jsonl`` in the
  folder of a single-object AgentX file is that run's records, read as AIPerf's (warmup skipped, the count checked).
  An ``agg_bmk.json`` array (many runs) cannot be matched to one records file: none for its rows; nor for a single
  row whose folder holds another single-object AgentX file (``ambiguous:per_request``).
- GuideLLM: ``benchmarks[i].requests.successful / errored / incomplete`` (``GenerativeRequestStats``, latencies in
  ms under ``*_ms`` keys, ``request_latency`` in s).

The size rule: a run file up to ``LARGE_FILE_BYTES`` (the parse cap, 32 MiB) is decoded whole, as the run parser
decodes it; a larger one is streamed with ijson, one iterator per array (each its own file handle, zipped), so
memory holds one request at a time. JSON Lines files are read one line at a time. GuideLLM reports over the cap
give no runs at all (their ``benchmarks`` array is skipped by the run parser), hence no requests.

Per request (``REQUEST_SCHEMA``, every latency in seconds):
- ``e2el_s``: the file's own per-request latency (``e2els``, AIPerf ``request_latency``, GuideLLM
  ``request_latency``), else ``ttft + sum(itl)`` (vLLM and SGLang clients take the end time at the last token);
- ``tpot_s``: (e2el − ttft) / (output tokens − 1), vLLM's and SGLang's per-request TPOT; AIPerf
  ``inter_token_latency`` and GuideLLM ``time_per_output_token_ms`` as the harness computed them; null with one
  output token or fewer;
- ``itl_p50_s``, ``itl_p99_s``: percentiles (numpy linear interpolation, as the clients) of the request's gaps;
  null without gaps;
- ``error``: the harness's error text, null on success. An errored request's latencies are null.

A run whose records cannot be read gets no request rows and a reason (``REQUEST_REASONS``) in its
``RequestSource``; the run itself is untouched (its summary numbers stand).
"""

from __future__ import annotations

import functools
import json
import math
import os
import posixpath
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Mapping

import ijson
import numpy as np
import orjson
import pyarrow as pa

# LARGE_FILE_BYTES: the run parser's cap, decoded whole below it
from pipeline.ingest.parsers import LARGE_FILE_BYTES, REQUEST_ARRAYS_KEY
from pipeline.ingest.parsers.inferencex_agentx import FORMAT as AGENTX_FORMAT
from pipeline.ingest.parsers.inferencex_agentx import detect as agentx_detect
from pipeline.io.opener import OUTSIDE_ROOT, RefusedFile, open_regular, os_error_words, read_whole

AIPERF_RECORDS_NAME = "profile_export.jsonl"
ERROR_TEXT_MAX = 300

REQUEST_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("request_index", pa.int32()),
    ("ttft_s", pa.float64()),
    ("tpot_s", pa.float64()),
    ("e2el_s", pa.float64()),
    ("itl_p50_s", pa.float64()),
    ("itl_p99_s", pa.float64()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("error", pa.string()),
    ("run_date_partition", pa.string()),
])

SOURCE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("requests_file", pa.string()),
    ("requests_read", pa.int32()),
    ("requests_reason", pa.string()),
    ("requests_detail", pa.string()),
    ("run_date_partition", pa.string()),
])

# reason codes of a run whose per-request records were not used (requests_reason); null = read, or none saved
REQUEST_REASONS = (
    "invalid_json:per_request",       # the records file or line is not JSON
    "length_mismatch:per_request",    # the parallel arrays differ in length
    "inconsistent:per_request_count",  # records ≠ completed + failed of the run's summary
    "not_a_number:per_request",       # a latency or token count that is not a number
    "unknown_unit:per_request",       # an AIPerf metric unit other than ns/us/ms/s
    "records_outside_raw_dir",        # profile_export.jsonl resolves outside the raw folder (a symlink out of it)
    "refused:per_request",            # the records or run file is a FIFO, device or socket, or over its size cap
    "ambiguous:per_request",          # an AgentX records file beside more than one single-run AgentX file
)

_ARRAYS = (REQUEST_ARRAYS_KEY, "itls", "input_lens", "output_lens", "errors", "e2els")
# the formats whose per-request records are parallel arrays (``_ARRAYS``) inside the run's own result file
ARRAY_FORMATS = ("vllm_bench_serve", "trtllm_serve", "sglang_bench_serving")
_UNIT_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


class RequestDataError(ValueError):
    """Per-request records that cannot be used; ``reason_code`` is one of ``REQUEST_REASONS``."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


@dataclass
class RequestSource:
    """What was found for one run: the records file (relative to the raw folder), rows read, or why none."""

    requests_file: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    detail: str | None = None


def read_run_requests(raw_dir: Path, run: Mapping[str, Any]) -> RequestSource:
    """The per-request records of one run.

    Args:
        raw_dir: the raw folder (``PIPELINE_RAW_DIR``).
        run: a ``raw_runs`` row: ``source_file`` (relative), ``source_format``, ``source_row``, ``completed`` and
            ``failed`` (to check the record count against).
    Returns:
        RequestSource with rows of ``REQUEST_SCHEMA`` minus ``run_id``/``run_date_partition`` (no rows when the
        harness saved none); never raises for bad content: a ``RequestDataError`` becomes ``reason``/``detail``.
    Raises:
        OSError: the run's own file vanished between ingest and this read.
    """
    fmt, rel, row = run["source_format"], run["source_file"], run["source_row"] or 0
    try:
        if fmt in ARRAY_FORMATS:
            source = RequestSource(rel, list(_array_requests(raw_dir / rel, row, raw_dir)))
        elif fmt == "aiperf":
            source = _aiperf_source(raw_dir, rel)
        elif fmt == AGENTX_FORMAT:
            if row != 0 or not _single_object(raw_dir / rel, raw_dir):
                return RequestSource()  # an agg_bmk.json array: no records file is one row's
            source = _aiperf_source(raw_dir, rel, _agentx_siblings)
        elif fmt == "guidellm":
            source = RequestSource(rel, list(_guidellm_requests(raw_dir / rel, row, raw_dir)))
        else:
            return RequestSource()
    except RefusedFile as exc:  # refused by the opener before a byte was read
        exc = RequestDataError("records_outside_raw_dir" if exc.reason_code == OUTSIDE_ROOT else "refused:per_request",
                               exc.detail)
        return RequestSource(_records_rel(rel) if fmt in ("aiperf", AGENTX_FORMAT) else rel, [], exc.reason_code,
                             exc.detail)
    except RequestDataError as exc:
        return RequestSource(_records_rel(rel) if fmt in ("aiperf", AGENTX_FORMAT) else rel, [], exc.reason_code,
                             exc.detail)
    if not source.rows:
        return RequestSource()
    expected = None if run.get("completed") is None else run["completed"] + (run.get("failed") or 0)
    if expected is not None and len(source.rows) != expected:
        return RequestSource(source.requests_file, [], "inconsistent:per_request_count",
                             f"{len(source.rows)} per-request records, the summary counts {expected} requests")
    return source


def requests_tables(raw_dir: Path, runs: Iterable[Mapping[str, Any]]) -> tuple[pa.Table, pa.Table]:
    """``read_run_requests`` over ``runs`` (rows with ``run_id`` and ``run_date_partition`` too).

    Returns:
        (requests, sources): ``REQUEST_SCHEMA`` rows (one per request, ``request_index`` 0… in the file's order)
        and ``SOURCE_SCHEMA`` rows (one per run that has a records file or a reason).
    """
    requests: dict[str, list] = {name: [] for name in REQUEST_SCHEMA.names}
    sources: list[dict[str, Any]] = []
    for run in runs:
        try:
            source = read_run_requests(raw_dir, run)
        except OSError as exc:
            source = RequestSource(run["source_file"], [], "invalid_json:per_request", os_error_words(exc))
        if source.requests_file is None:
            continue
        sources.append({"run_id": run["run_id"], "requests_file": source.requests_file,
                        "requests_read": len(source.rows), "requests_reason": source.reason,
                        "requests_detail": source.detail, "run_date_partition": run["run_date_partition"]})
        for index, record in enumerate(source.rows):
            requests["run_id"].append(run["run_id"])
            requests["request_index"].append(index)
            requests["run_date_partition"].append(run["run_date_partition"])
            for name in REQUEST_SCHEMA.names[2:-1]:
                requests[name].append(record[name])
    return (pa.Table.from_pydict(requests, schema=REQUEST_SCHEMA),
            pa.Table.from_pylist(sources, schema=SOURCE_SCHEMA))


# ---- vLLM / SGLang / TRT-LLM serve: parallel arrays ------------------------------------------------------------

def _array_requests(path: Path, row: int, root: Path) -> Iterator[dict[str, Any]]:
    """Requests from the parallel arrays of run object ``row`` of ``path`` (a JSON object, or JSON Lines), read
    through the opener inside ``root``."""
    if path.stat().st_size <= LARGE_FILE_BYTES:
        obj = _object_at(path, row, root)
        columns = [obj.get(name) if isinstance(obj, dict) else None for name in _ARRAYS]
        if columns[0] is None:
            return
        for index, column in enumerate(columns):
            if column is not None and not isinstance(column, list):
                raise RequestDataError("not_a_number:per_request", f"{_ARRAYS[index]} is not an array")
        present = [(name, len(c)) for name, c in zip(_ARRAYS, columns) if c is not None]
        if len({n for _, n in present}) > 1:
            raise RequestDataError("length_mismatch:per_request",
                                   "array lengths differ: " + ", ".join(f"{k}={n}" for k, n in present))
        yield from (_array_request(*values) for values in zip_longest(*(c or () for c in columns)))
        return
    # over the cap: one streaming iterator per array, each on its own file handle, zipped request by request;
    # an array that gave items and runs out before ttfts (or goes on after it) is a length mismatch, one that
    # gives none is absent (e2els, errors are optional)
    streams = [_stream_array(path, row, name, root) for name in _ARRAYS]
    sentinel = object()
    started = [False] * len(_ARRAYS)
    for values in zip_longest(*streams, fillvalue=sentinel):
        ended = [v is sentinel for v in values]
        if ended[0] and not all(ended):
            raise RequestDataError("length_mismatch:per_request", "an array is longer than ttfts")
        if any(e and s for e, s in zip(ended, started)):
            raise RequestDataError("length_mismatch:per_request", "an array is shorter than ttfts")
        started = [s or not e for s, e in zip(started, ended)]
        yield _array_request(*(None if v is sentinel else v for v in values))


def _array_request(ttft: Any, itl: Any, input_len: Any, output_len: Any, error: Any, e2el: Any) -> dict[str, Any]:
    text = None if error in (None, "") else str(error)[:ERROR_TEXT_MAX]
    out = {"input_tokens": _int(input_len, "input_lens"), "output_tokens": _int(output_len, "output_lens"),
           "error": text, "ttft_s": None, "tpot_s": None, "e2el_s": None, "itl_p50_s": None, "itl_p99_s": None}
    if text is not None:
        return out
    gaps = [_num(g, "itls") for g in itl] if isinstance(itl, list) else []
    if itl is not None and not isinstance(itl, list):
        raise RequestDataError("not_a_number:per_request", "an itls entry is not a list")
    ttft_s = _num(ttft, "ttfts")
    e2el_s = _num(e2el, "e2els") if e2el is not None else (None if ttft_s is None else ttft_s + math.fsum(gaps))
    out.update(ttft_s=ttft_s, e2el_s=e2el_s, **_gap_percentiles(gaps))
    n = out["output_tokens"]
    if e2el_s is not None and ttft_s is not None and n is not None and n > 1:
        out["tpot_s"] = (e2el_s - ttft_s) / (n - 1)
    return out


def _stream_array(path: Path, row: int, name: str, root: Path) -> Iterator[Any]:
    """The items of array ``name`` of top-level value ``row`` of a large JSON (Lines) file, one at a time (an item
    that is itself a list, as in ``itls``, is built whole: one request's gaps)."""
    item = f"{name}.item"
    with open_regular(path, "run_log", root) as handle:
        index, builder = 0, None
        try:
            for prefix, event, value in ijson.parse(handle, use_float=True, multiple_values=True):
                if prefix == "":
                    if event in ("end_map", "end_array"):
                        index += 1
                        if index > row:
                            return
                    continue
                if index != row:
                    continue
                if builder is not None:
                    builder.event(event, value)
                    if prefix == item and event in ("end_array", "end_map"):
                        yield builder.value
                        builder = None
                elif prefix == item:
                    if event in ("start_array", "start_map"):
                        builder = ijson.ObjectBuilder()
                        builder.event(event, value)
                    else:
                        yield value
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise RequestDataError("invalid_json:per_request", f"{name}: {str(exc)[:200]}") from None


def _object_at(path: Path, row: int, root: Path) -> Any:
    """Run object ``row`` of a file under the cap: the document, its element ``row``, or its ``row``-th non-empty
    line (JSON Lines), numbered as the run parser numbers them; None when the file holds no ``ttfts`` at all."""
    stat_ = path.stat()
    objects = _objects(str(path), str(root), stat_.st_size, stat_.st_mtime_ns)
    return objects[row] if row < len(objects) else None


@functools.lru_cache(maxsize=1)
def _objects(path: str, root: str, size: int, mtime_ns: int) -> list[Any]:
    """Every run object of one file under the cap, decoded once for all its runs (``requests_tables`` reads runs in
    file order; ``size``/``mtime_ns`` key the cache to the file's current content). A file without the bytes
    ``"ttfts"`` has no per-request arrays and is not decoded."""
    data = read_whole(path, "run_log", root)[1]
    if b'"ttfts"' not in data:
        return []
    try:
        doc = _loads(data)
    except (ValueError, RecursionError):
        # JSON Lines: one object per non-empty line, numbered as the run parser numbers them (a line it could not
        # decode gave no run, so its None here is never asked for)
        objects = []
        for line in (line for line in data.splitlines() if line.strip()):
            try:
                objects.append(_loads(line) if b'"ttfts"' in line else None)
            except (ValueError, RecursionError):
                objects.append(None)
        return objects
    return doc if isinstance(doc, list) else [doc]


def _loads(data: bytes) -> Any:
    """orjson, else the standard library for the bare ``NaN``/``Infinity`` tokens SGLang writes (as the run parser
    reads them; a non-finite latency is then ``not_a_number:per_request``)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


# ---- AIPerf: profile_export.jsonl -----------------------------------------------------------------------------

def _records_rel(rel: str) -> str:
    return posixpath.join(posixpath.dirname(rel), AIPERF_RECORDS_NAME)


def _aiperf_source(raw_dir: Path, rel: str, check: Any = None) -> RequestSource:
    """``profile_export.jsonl`` in the folder of the run's file (``profile_export_aiperf.json``, or a single-run
    AgentX row), when it is a regular file inside the raw folder (a symlink out of it is refused, as for run
    files). ``check(raw_dir, rel)``, when given, runs once the records file is known to exist (it raises
    ``RequestDataError`` when the file cannot be the run's)."""
    records_rel = _records_rel(rel)
    path = raw_dir / records_rel
    if not os.path.lexists(path):
        return RequestSource()
    with open_regular(path, "per_request", raw_dir) as handle:  # refused before the check reads any sibling
        if check is not None:
            check(raw_dir, rel)
        return RequestSource(records_rel, list(_aiperf_records(handle)))


# ---- InferenceX AgentX: one aggregate row and AIPerf's records in one artifact folder ------------------------

def _single_object(path: Path, root: Path) -> bool:
    """The file holds one JSON object (its first byte after a byte-order mark and blanks, however many, is ``{``),
    not an array of rows."""
    with open_regular(path, "run_log", root) as handle:
        while chunk := handle.read(4096):  # a block at a time: blanks are stripped as bytes, not looped over
            rest = chunk.lstrip(b"\xef\xbb\xbf \t\r\n")
            if rest:
                return rest[:1] == b"{"
    return False


def _agentx_siblings(raw_dir: Path, rel: str) -> None:
    """Refuse the records file when the run's folder holds another single-object AgentX row (``*.json`` under the
    parse cap whose object ``inferencex_agentx.detect`` names): the records could be either run's.

    Raises:
        RequestDataError: ``ambiguous:per_request``, naming the other file.
    """
    own = raw_dir / rel
    for sibling in sorted(own.parent.glob("*.json")):
        # links are never followed (their targets are not the raw folder's files), nor are special files read
        if sibling.name == own.name or sibling.is_symlink() or not sibling.is_file() \
                or sibling.stat().st_size > LARGE_FILE_BYTES:
            continue
        try:
            doc = orjson.loads(read_whole(sibling, "run_log", raw_dir)[1])
        except (orjson.JSONDecodeError, OSError, RefusedFile):
            continue
        if isinstance(doc, dict) and agentx_detect(doc):
            raise RequestDataError(
                "ambiguous:per_request", f"{_records_rel(rel)} sits beside two single-run AgentX files "
                f"({own.name}, {sibling.name}): not known whose records they are, not read")


def _aiperf_records(handle: BinaryIO) -> Iterator[dict[str, Any]]:
    """AIPerf's per-request records of an open ``profile_export.jsonl``, warm-up requests left out.

    Raises:
        RequestDataError: a line that is not a JSON object, or a metric in a unit other than ns/us/ms/s.
    """
    for lineno, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise RequestDataError("invalid_json:per_request", f"line {lineno}: {exc}") from None
        if not isinstance(record, dict):
            raise RequestDataError("invalid_json:per_request", f"line {lineno}: not an object")
        meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        if (meta.get("benchmark_phase") or meta.get("credit_phase")) == "warmup":
            continue
        yield _aiperf_request(record, lineno)


def _aiperf_request(record: Mapping[str, Any], lineno: int) -> dict[str, Any]:
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    error = record.get("error")
    text = None
    if error:
        text = (f"{error.get('code', '')} {error.get('type', '')}: {error.get('message', '')}".strip()
                if isinstance(error, dict) else str(error))[:ERROR_TEXT_MAX]

    def tokens(key: str) -> int | None:
        block = metrics.get(key)
        return _int(block.get("value"), f"line {lineno} {key}") if isinstance(block, dict) else None

    def value(key: str) -> Any:
        """The metric in seconds (a list of them when its value is a list, as ``inter_chunk_latency``'s), None
        when absent."""
        block = metrics.get(key)
        if not isinstance(block, dict):
            return None
        raw = block.get("value")
        unit = str(block.get("unit", "")).lower()
        if unit not in _UNIT_SCALE:
            raise RequestDataError("unknown_unit:per_request", f"line {lineno}: {key}.unit = {unit!r}")
        if isinstance(raw, list):
            return [_num(v, f"line {lineno} {key}") * _UNIT_SCALE[unit] for v in raw]
        number = _num(raw, f"line {lineno} {key}")
        return None if number is None else number * _UNIT_SCALE[unit]

    out = {"input_tokens": tokens("input_sequence_length"), "output_tokens": tokens("output_sequence_length"),
           "error": text,
           "ttft_s": None, "tpot_s": None, "e2el_s": None, "itl_p50_s": None, "itl_p99_s": None}
    if text is None:
        gaps = value("inter_chunk_latency")
        out.update(ttft_s=value("ttft") if "ttft" in metrics else value("time_to_first_token"),
                   e2el_s=value("request_latency"), tpot_s=value("inter_token_latency"),
                   **_gap_percentiles(gaps if isinstance(gaps, list) else []))
    return out


# ---- GuideLLM: requests inside each benchmark ------------------------------------------------------------------

def _guidellm_requests(path: Path, row: int, root: Path) -> Iterator[dict[str, Any]]:
    """Requests of benchmark ``row`` (the run parser's numbering: one run per ``benchmarks[]`` entry)."""
    size, data = read_whole(path, "run_log", root, stream_over=LARGE_FILE_BYTES)
    if size > LARGE_FILE_BYTES:
        return
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RequestDataError("invalid_json:per_request", str(exc)) from None
    benchmarks = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benchmarks, list) or row >= len(benchmarks) or not isinstance(benchmarks[row], dict):
        return
    groups = benchmarks[row].get("requests")
    if not isinstance(groups, dict):
        return
    for status in ("successful", "errored", "incomplete"):
        for request in groups.get(status) or ():
            if not isinstance(request, dict):
                raise RequestDataError("not_a_number:per_request", f"requests.{status}: an entry is not an object")
            yield _guidellm_request(request, status)


def _guidellm_request(request: Mapping[str, Any], status: str) -> dict[str, Any]:
    error = None
    if status != "successful":
        info = request.get("info") if isinstance(request.get("info"), dict) else {}
        error = str(request.get("error") or info.get("error") or status)[:ERROR_TEXT_MAX]
    out = {"input_tokens": _int(request.get("prompt_tokens"), "prompt_tokens"),
           "output_tokens": _int(request.get("output_tokens"), "output_tokens"), "error": error,
           "ttft_s": None, "tpot_s": None, "e2el_s": None, "itl_p50_s": None, "itl_p99_s": None}
    if error is None:
        ttft = _num(request.get("time_to_first_token_ms"), "time_to_first_token_ms")
        tpot = _num(request.get("time_per_output_token_ms"), "time_per_output_token_ms")
        out.update(ttft_s=None if ttft is None else ttft / 1000, tpot_s=None if tpot is None else tpot / 1000,
                   e2el_s=_num(request.get("request_latency"), "request_latency"))
    return out


# ---- shared ----------------------------------------------------------------------------------------------------

def _gap_percentiles(gaps: list[float]) -> dict[str, float | None]:
    if not gaps:
        return {"itl_p50_s": None, "itl_p99_s": None}
    p50, p99 = np.percentile(gaps, [50, 99])  # every gap is a float already (``_num``)
    return {"itl_p50_s": float(p50), "itl_p99_s": float(p99)}


def _num(value: Any, label: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestDataError("not_a_number:per_request", f"{label}: {value!r:.40}")
    number = float(value)
    if not math.isfinite(number):
        raise RequestDataError("not_a_number:per_request", f"{label}: {value!r}")
    return number


def _int(value: Any, label: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise RequestDataError("not_a_number:per_request", f"{label}: {value!r:.40}")
    return value
