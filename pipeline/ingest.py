"""Scan a raw folder, parse every file, attach run metadata: the pure work behind the ``raw/benchmark_runs`` asset.

Every file under the folder ends in exactly one place per row read: a run row (``RUN_SCHEMA``) or a reject row
(``QUARANTINE_SCHEMA``, stage ``ingest``). Symlinked folders are not followed (no loops); symlinked files are read.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.metadata import MetadataError, load_manifest, load_sidecar, resolve
from pipeline.parsers import SIDECAR_SUFFIX, FileReadout, Reject, read_path
from pipeline.schema import QUARANTINE_SCHEMA, RUN_COLUMNS, RUN_SCHEMA, partition_key

FILE_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("kind", pa.string()),
        ("source_format", pa.string()),
        ("size_bytes", pa.int64()),
        ("sha256", pa.string()),
        ("rows_read", pa.int32()),
        ("runs", pa.int32()),
        ("rejected", pa.int32()),
    ]
)


@dataclass
class IngestResult:
    """Arrow tables of one scan: ``runs`` (RUN_SCHEMA), ``rejects`` (QUARANTINE_SCHEMA) and ``files`` (FILE_SCHEMA,
    one row per file found: its kind, size, content hash and how many rows it gave)."""

    runs: pa.Table
    rejects: pa.Table
    files: pa.Table


def list_files(raw_dir: Path) -> list[Path]:
    """Every entry under ``raw_dir`` that is not a real folder, sorted: regular files, symlinks to files, broken
    symlinks and symlinks to folders (recorded, never followed, so a symlink loop cannot hang the scan).

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw folder {raw_dir} does not exist (set PIPELINE_RAW_DIR)")
    found: list[Path] = []
    for folder, dirs, files in os.walk(raw_dir, followlinks=False):
        dirs.sort()
        linked_dirs = [name for name in dirs if (Path(folder) / name).is_symlink()]
        found.extend(Path(folder) / name for name in sorted(files + linked_dirs))
    return found


# Above this many files the folder is parsed by one worker process per core (spawned, so no forked DuckDB or gRPC
# threads); chunks are contiguous in sorted order, so the result is identical to the serial path.
PARALLEL_MIN_FILES = 4000


def ingest_folder(raw_dir: Path, workers: int | None = None) -> IngestResult:
    """Parse every file under ``raw_dir`` into normalized runs and rejects.

    ``source_file`` is the POSIX path relative to ``raw_dir``. Metadata follows ``pipeline.metadata.resolve``.

    Args:
        raw_dir: the folder to scan.
        workers: worker processes; default one per core when the folder has ``PARALLEL_MIN_FILES`` files or more,
            else 1. The output does not depend on it.
    Raises:
        FileNotFoundError: ``raw_dir`` is missing.
    """
    raw_dir = Path(raw_dir)
    paths = list_files(raw_dir)
    if workers is None:
        workers = (os.cpu_count() or 1) if len(paths) >= PARALLEL_MIN_FILES else 1
    if workers <= 1 or len(paths) < 2 or not _spawn_can_import_main():
        return _ingest_files(raw_dir, paths)
    size = -(-len(paths) // workers)
    chunks = [paths[i:i + size] for i in range(0, len(paths), size)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parts = list(pool.map(_ingest_files, [raw_dir] * len(chunks), chunks))
    return IngestResult(
        runs=pa.concat_tables([p.runs for p in parts]),
        rejects=pa.concat_tables([p.rejects for p in parts]),
        files=pa.concat_tables([p.files for p in parts]),
    )


def _spawn_can_import_main() -> bool:
    """Spawned workers re-import ``__main__``; a program read from stdin or ``-c`` has no file to import."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is not None and Path(main_file).is_file()


def _ingest_files(raw_dir: Path, paths: list[Path]) -> IngestResult:
    runs: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    manifests: dict[Path, dict[str, dict[str, str]]] = {}
    for path in paths:
        rel = path.relative_to(raw_dir).as_posix()
        readout = _read(path)
        for reject in readout.rejects:
            rejects.append(_reject_row(rel, reject.source_format or readout.source_format, reject.row,
                                       reject.reason_code, reject.detail))
        n_runs = 0
        if readout.runs:
            if path.parent not in manifests:
                manifests[path.parent] = load_manifest(path.parent)
            for row, fmt, parsed in readout.runs:
                try:
                    sidecar = load_sidecar(path.with_name(path.name + SIDECAR_SUFFIX))
                    meta, sources, conflicts = resolve(
                        parsed.in_file_meta, sidecar, manifests[path.parent].get(path.name), parsed.fallback_meta
                    )
                except MetadataError as exc:
                    rejects.append(_reject_row(rel, fmt, row, exc.reason_code, exc.detail))
                    continue
                if sources.get("spec_decoding") == "default" and parsed.values.get("spec_accept_length") is not None:
                    # the engine measured draft acceptance: "none" would be a guess, and a wrong one
                    meta["spec_decoding"], sources["spec_decoding"] = None, "unknown"
                runs.append(_run_row(rel, fmt, row, parsed, meta, sources, conflicts))
                n_runs += 1
        files.append(_file_row(rel, readout, n_runs, len(readout.rejects) + len(readout.runs) - n_runs))
    return IngestResult(
        runs=pa.Table.from_pylist(runs, schema=RUN_SCHEMA),
        rejects=pa.Table.from_pylist(rejects, schema=QUARANTINE_SCHEMA),
        files=pa.Table.from_pylist(files, schema=FILE_SCHEMA),
    )


def _read(path: Path) -> FileReadout:
    """``read_path`` plus the cases that are not content: symlinked folders and files that cannot be opened."""
    if path.is_symlink() and path.is_dir():
        target = os.readlink(path)
        return FileReadout("symlinked_folder", rejects=[Reject(
            None, "symlink_not_followed", f"symlink to folder {target!r} not followed (loops and double counting)")])
    try:
        return read_path(path)
    except OSError as exc:
        return FileReadout("unreadable", rejects=[Reject(None, "unreadable_file", f"{type(exc).__name__}: {exc}")])


def _run_row(rel: str, fmt: str, row: int, parsed: Any, meta: dict, sources: dict, conflicts: list) -> dict:
    record = dict.fromkeys(RUN_COLUMNS)
    record.update(parsed.values)
    record.update(meta)
    record.update(
        source_file=rel,
        source_format=fmt,
        source_row=row,
        run_id=hashlib.sha1(f"{rel}#{row}".encode()).hexdigest()[:16],
        run_date_partition=partition_key(meta.get("run_date")),
        metadata_sources=";".join(f"{k}={v}" for k, v in sorted(sources.items())),
        metadata_conflicts="; ".join(conflicts) or None,
        derivations="; ".join(parsed.derivations) or None,
    )
    return record


def _reject_row(rel: str, fmt: str | None, row: int | None, code: str, detail: str) -> dict:
    return {"source_file": rel, "source_format": fmt, "source_row": row, "reason_code": code,
            "detail": f"{rel}: {detail}", "stage": "ingest"}


def _file_row(rel: str, readout: FileReadout, n_runs: int, n_rejected: int) -> dict:
    return {
        "source_file": rel,
        "kind": readout.kind,
        "source_format": readout.source_format,
        "size_bytes": readout.size_bytes,
        "sha256": readout.sha256,
        "rows_read": n_runs + n_rejected,
        "runs": n_runs,
        "rejected": n_rejected,
    }
