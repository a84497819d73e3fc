"""Run metadata: the sources of docs/inputs.md, their precedence, and normalization of values to keys.

Precedence, first match wins per key: fields inside the file itself → sidecar ``<log file name>.meta.json`` →
``runs.csv`` manifest in the same folder (matched on its ``file`` column) → values implied by the engine output
(framework of the client, model key from the model path, precision from the quantization flag) → defaults
(``spec_decoding`` none, ``dp_attention``/``disagg`` false). When the file and a sidecar/manifest both give a key
and disagree, the run keeps the file's value and records the conflict (``metadata_conflicts``); validation
quarantines it as ``metadata_conflict:<key>``.
"""

from __future__ import annotations

import csv
import functools
import io
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import orjson

from pipeline.ingest.keys import (
    KEY_FIELDS,
    key_problem,
    normalize_framework,
    normalize_hw,
    normalize_kv_offload,
    normalize_model,
    normalize_precision,
    normalize_spec,
    to_bool,
    to_date,
    to_int,
)
from pipeline.ingest.parsers.json_shape import MAX_DEPTH, depth_and_keys, duplicate_keys
from pipeline.ingest.schema import METADATA_KEYS
from pipeline.io.opener import RefusedFile, read_whole

# Integer keys are int32 columns of RUN_SCHEMA: a value outside that range cannot be stored.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_INT_KEYS = ("tp", "pp", "pcp", "ep", "num_prefill_gpu", "num_decode_gpu", "isl", "osl", "conc",
             "prefill_tp", "prefill_ep", "prefill_num_workers", "decode_num_workers")


def _text(value: Any) -> str | None:
    """A stripped string; empty is None."""
    return None if value is None or str(value).strip() == "" else str(value).strip()


def _range_ratio(value: Any) -> float | None:
    """``random_range_ratio``: a number in [0, 1] (lengths drawn uniformly in [r·n, n]); empty is None.

    Raises:
        ValueError: not a number, or outside [0, 1] (vLLM ≥ 0.10's symmetric ``--random-range-ratio`` has mean n
            whatever its value and is not stated here).
    """
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    if isinstance(value, bool):
        raise ValueError("a ratio, not a boolean")
    ratio = float(value)
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"{ratio} is outside [0, 1]: lengths are drawn in [ratio·n, n]")
    return ratio


_NORMALIZERS: dict[str, Callable[[Any], Any]] = {
    "model": normalize_model,
    "hw": normalize_hw,
    "framework": normalize_framework,
    "precision": normalize_precision,
    "spec_decoding": normalize_spec,
    "dp_attention": to_bool,
    "disagg": to_bool,
    "prefill_dp_attention": to_bool,
    "is_multinode": to_bool,
    "run_date": to_date,
    "kv_offload": normalize_kv_offload,
    "run_url": _text,
    "sweep_id": _text,
    "image": lambda v: None if v is None or str(v).strip() == "" else str(v).strip(),
    "power_log": lambda v: None if v is None or str(v).strip() == "" else str(v).strip(),
    "start_time_unix": lambda v: None if v is None or str(v).strip() == "" else float(v),
    "random_range_ratio": _range_ratio,
    **{key: to_int for key in _INT_KEYS},
}
DEFAULTS: dict[str, Any] = {"spec_decoding": "none", "dp_attention": False, "disagg": False}
# Text values are bounded in length and free of control characters; keys (keys.KEY_FIELDS: folder names, page
# names, ids and chart labels) also pass keys.key_problem; else the run is quarantined as invalid_metadata:<key>.
MAX_TEXT_CHARS = 120
_KEY_ORDER = {key: at for at, key in enumerate(METADATA_KEYS)}
_CONTROL = frozenset(chr(c) for c in (*range(32), 127))
# Keys whose in-file value may legitimately differ from a manifest (vLLM's `date` is local time after the run).
_NO_CONFLICT_KEYS = ("run_date",)


class MetadataError(ValueError):
    """A metadata value that cannot be normalized; ``reason_code`` is ``<reason>:<key>``, ``invalid_metadata:<key>``
    unless ``reason`` names another (``int_out_of_range``, ``duplicate_key``)."""

    def __init__(self, key: str, value: Any, source: str, why: str, reason: str = "invalid_metadata"):
        super().__init__(f"{key}={value!r} from {source}: {why}")
        self.reason_code = f"{reason}:{key}"
        self.detail = f"metadata {key}={value!r} from {source}: {why}"


class ManifestError(MetadataError):
    """A ``runs.csv`` that cannot be read. Every run of its folder is rejected as ``invalid_metadata:runs.csv``
    (its rows could hold any of their metadata); ``file_reason`` is the code of the manifest's own ledger row:
    ``invalid_encoding``, ``cell_too_long`` or ``invalid_csv``."""

    def __init__(self, file_reason: str, why: str):
        super().__init__("runs.csv", "runs.csv", "runs.csv", why)
        self.detail = f"the folder's runs.csv cannot be read, so no run of this folder is resolved: {why}"
        self.file_reason = file_reason
        self.why = why


def normalize(raw: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Normalize the metadata keys of ``raw`` (other keys ignored); values that normalize to None are dropped.

    Raises:
        MetadataError: a value of the wrong type (e.g. ``tp="eight"``), a text value longer than
            ``MAX_TEXT_CHARS`` or holding control characters, or a key that ``keys.key_problem`` refuses (a model
            ``..`` or ``a/b``, a ``|`` in any key) (``invalid_metadata:<key>``); an integer key
            outside the int32 range (``int_out_of_range:<key>``, e.g. ``max_concurrency`` 3e9); naming the key
            and the source.
    """
    out: dict[str, Any] = {}
    # the keys ``raw`` has, in METADATA_KEYS order (a source gives a handful of the 29 keys)
    present = [key for key in raw if key in _KEY_ORDER]
    if len(present) > 1:
        present.sort(key=_KEY_ORDER.__getitem__)
    for key in present:
        given = raw[key]
        try:
            value = _normalize_text(key, given) if type(given) is str else _NORMALIZERS[key](given)
        except (TypeError, ValueError) as exc:
            raise MetadataError(key, _shortened(raw[key]), source, str(exc)) from exc
        if type(value) is int and not INT32_MIN <= value <= INT32_MAX:
            raise MetadataError(key, value, source, "outside the int32 range a count is stored in",
                                reason="int_out_of_range")
        if type(value) is str:
            if len(value) > MAX_TEXT_CHARS:
                raise MetadataError(key, _shortened(value), source,
                                    f"{len(value)} characters, more than the {MAX_TEXT_CHARS} a key may have")
            if not _CONTROL.isdisjoint(value):
                raise MetadataError(key, _shortened(value), source, "contains control characters")
            if key in KEY_FIELDS and (problem := key_problem(key, value)) is not None:
                raise MetadataError(key, _shortened(value), source, problem)
        if value is not None:
            out[key] = value
    return out


def _shortened(value: Any) -> Any:
    """A value as an error quotes it: long strings cut to 60 characters plus an ellipsis."""
    return value[:60] + "…" if type(value) is str and len(value) > 60 else value


@functools.lru_cache(maxsize=1 << 16)
def _normalize_text(key: str, text: str) -> Any:
    """``_NORMALIZERS[key](text)``, remembered: a fleet's logs repeat the same few hundred strings (GPU names,
    model paths, dates) across 100,000 runs. Errors are not cached; the results are immutable."""
    return _NORMALIZERS[key](text)


def load_sidecar(path: Path | str, root: Path | str | None = None) -> dict[str, Any] | None:
    """The JSON object of a ``*.meta.json`` sidecar, or None when there is none. Read through
    ``pipeline.io.opener`` like every raw file: inside ``root`` (the raw folder), a regular file, at most
    ``SIZE_CAPS["sidecar"]`` bytes.

    Raises:
        MetadataError: ``invalid_metadata:sidecar`` when the sidecar is refused unread (outside the raw folder, a
            FIFO or device, too large), is not a JSON object, or nests deeper than ``MAX_DEPTH``;
            ``duplicate_key:<key>`` when it gives a key twice (the last would win unseen).
    """
    try:  # one open instead of a stat then an open: most runs have no sidecar
        data = read_whole(path, "sidecar", root)[1]
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except RefusedFile as exc:
        raise MetadataError("sidecar", os.path.basename(path), "sidecar",
                            f"refused ({exc.reason_code}): {exc.detail}") from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MetadataError("sidecar", os.path.basename(path), "sidecar", f"invalid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise MetadataError("sidecar", os.path.basename(path), "sidecar", "sidecar is not a JSON object")
    if depth_and_keys(doc)[0] > MAX_DEPTH:
        raise MetadataError("sidecar", os.path.basename(path), "sidecar", f"nested deeper than {MAX_DEPTH} levels")
    repeated = duplicate_keys(data.decode("utf-8", "replace"), doc)
    if repeated:
        raise MetadataError(repeated[0], os.path.basename(path), "the sidecar",
                            f"key {', '.join(map(repr, repeated[:5]))} given twice: the last would win unseen",
                            reason="duplicate_key")
    return doc


# A runs.csv cell longer than this is refused (the csv module's own default limit): metadata values are at most
# MAX_TEXT_CHARS, so a longer cell is a broken file (an unclosed quote swallowing the rest) or a hostile one.
MAX_CELL_CHARS = 131072


def load_manifest(folder: Path, root: Path | str | None = None) -> dict[str, dict[str, str]]:
    """``runs.csv`` of ``folder`` as {file name: row}; empty when the folder has none. Cells that are empty are
    dropped so they do not mask other sources. Read through ``pipeline.io.opener`` like every raw file: inside
    ``root`` (the raw folder), a regular file, at most ``SIZE_CAPS["manifest"]`` bytes.

    Raises:
        ManifestError: the file is refused unread (``outside_raw_dir``, ``not_a_regular_file``, ``too_large``),
            is not UTF-8 (``invalid_encoding``), has a cell over ``MAX_CELL_CHARS`` characters
            (``cell_too_long``) or is not CSV the reader accepts (``invalid_csv``); the message names the byte
            offset or line.
    """
    try:  # one open instead of a stat then an open: the parse asks for every folder's
        data = read_whole(folder / "runs.csv", "manifest", root)[1]
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return {}
    except RefusedFile as exc:
        raise ManifestError(exc.reason_code, f"runs.csv refused: {exc.detail}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError("invalid_encoding", f"runs.csv is not UTF-8: byte {data[exc.start]:#04x} at offset "
                                                f"{exc.start}") from None
    rows: dict[str, dict[str, str]] = {}
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        for cells in reader:  # csv.DictReader's rows, without its per-row Python: blank lines skipped, cells
            if not cells:     # beyond the header and header names without a cell dropped, the last of a repeated
                continue      # header name kept
            row = dict(zip(header, cells))
            name = (row.get("file") or "").strip()
            if name:
                rows[name] = {k.strip(): v.strip() for k, v in row.items() if k and v.strip() != ""}
    except csv.Error as exc:
        line = reader.line_num
        if "field larger than field limit" in str(exc):
            raise ManifestError("cell_too_long", f"runs.csv line {line}: a cell longer than {MAX_CELL_CHARS} "
                                                 "characters") from None
        raise ManifestError("invalid_csv", f"runs.csv line {line}: {exc}") from None
    return rows


def resolve(
    in_file: Mapping[str, Any],
    sidecar: Mapping[str, Any] | None,
    manifest_row: Mapping[str, Any] | None,
    fallback: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Merge the sources by precedence.

    Returns:
        (metadata, source per key, conflicts): metadata normalized per docs/inputs.md; sources are ``file``,
        ``sidecar``, ``runs.csv``, ``engine`` or ``default``; conflicts read ``"conc: file=16 sidecar=32"``.

    Raises:
        MetadataError: a value in any source that cannot be normalized.
    """
    layers = [
        ("file", normalize(in_file, "the file")),
        ("sidecar", normalize(sidecar or {}, "the sidecar")),
        ("runs.csv", normalize(manifest_row or {}, "runs.csv")),
        ("engine", normalize({k: v for k, v in fallback.items() if v is not None}, "the engine output")),
        ("default", dict(DEFAULTS)),
    ]
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    conflicts: list[str] = []
    for name, layer in layers:
        for key, value in layer.items():
            if key not in merged:
                merged[key] = value
                sources[key] = name
            elif (
                sources[key] == "file"
                and name in ("sidecar", "runs.csv")
                and value != merged[key]
                and key not in _NO_CONFLICT_KEYS
            ):
                conflicts.append(f"{key}: file={merged[key]} {name}={value}")
    return merged, sources, conflicts
