"""How the parse cache is stored: the schemas of its Arrow IPC files, the stamp every file carries (generation,
raw folder, parser version), the version of the parsing code a cache is valid for, and the atomic writes and
memory-mapped reads of stamped files. ``Cache``, ``CacheStats`` and ``CacheChanges`` are the shapes the other
modules of the package pass around.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from pipeline.ingest.keys import GPU_ALIASES_CSV_NAME
from pipeline.ingest.parse import FILE_SCHEMA
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.io.opener import RefusedFile, open_regular
from pipeline.io.paths import reference_dir
from pipeline.io.storage import map_arrow, write_arrow_parts_atomic

CACHE_FILE_SCHEMA = pa.schema([
    *FILE_SCHEMA,
    ("mtime_ns", pa.int64()),
    ("sidecar_sha256", pa.string()),
    ("manifest_sha256", pa.string()),
])


# the base's files and the delta's (``save_cache``), with their schemas
CACHE_TABLES = (("files", CACHE_FILE_SCHEMA), ("runs", RUN_SCHEMA), ("rejects", QUARANTINE_SCHEMA))


DELTA_TABLES = (("files", CACHE_FILE_SCHEMA.append(pa.field("base_place", pa.int64()))), ("runs", RUN_SCHEMA),
                 ("rejects", QUARANTINE_SCHEMA), ("keep", pa.schema([("keep", pa.bool_())])))


DELTA_PREFIX = "delta."


RACY_WINDOW_NS = 2_000_000_000


METADATA_KEY = b"inference_frontier.parse_cache"


CHANGED = "<changed>"  # a dependency whose content is not known yet: never equal to a recorded sha256


def parser_version() -> str:
    """sha256 of the code and data that turn bytes into rows (parsers, metadata, keys, schema, parse, the scan's
    listed names, this package, the GPU alias and reference tables of ``reference_dir()``), computed once per
    reference folder."""
    return _parser_version(reference_dir())


@functools.cache
def _parser_version(folder: Path) -> str:
    ingest = Path(__file__).resolve().parents[1]
    sources = [*sorted((ingest / "parsers").glob("*.py")), *sorted((ingest / "parse_cache").glob("*.py")),
               *(ingest / name for name in ("metadata.py", "keys.py", "schema.py", "parse.py", "scan.py"))]
    digest = hashlib.sha256()
    # the GPU alias and reference tables map names while parsing, so a changed table must re-parse too
    for source in [*sources, folder / GPU_ALIASES_CSV_NAME, folder / "gpu_reference.csv"]:
        label = source.relative_to(ingest) if source.is_relative_to(ingest) else source.name
        digest.update(str(label).encode() + b"\0" + (source.read_bytes() if source.is_file() else b""))
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class CacheStats:
    """What one cached scan did. ``files`` = ``reused`` + ``parsed``; ``hashed`` files had a new size or mtime
    (or a racy one) and were read to compare content; ``removed`` cached files are gone from disk; ``cache_used``
    is False when there was no valid cache (first run, other folder, other parser version, torn write);
    ``generation`` names the cache state the result equals (``None`` when it was not saved)."""

    files: int
    reused: int
    parsed: int
    hashed: int
    removed: int
    cache_used: bool
    generation: str | None = None
    changes: CacheChanges | None = None


@dataclass(frozen=True)
class CacheChanges:
    """What a cached scan changed relative to the cache state it started from (generation ``base_generation``),
    so a reader that knew that state can update what it derived from it instead of recomputing it.

    ``touched``: every file parsed again, new or gone (string, relative paths); ``old_files``: the cached
    ``source_file``/``sha256`` rows of the touched files that were cached; ``old_partitions``: the
    ``run_date_partition`` values of their cached runs. A file not touched has the same rows as in that state.
    Read back from the cache's folder (``load_changes``), only ``touched`` is known: ``old_*`` are None.
    ``same_content_as``: earlier generations with exactly the rows of ``base_generation`` (the saves since them
    touched no file: a quick scan that saved only because a folder's mtime moved, say), so a reader still at one
    of them can apply ``touched`` too (``starts_from``)."""

    base_generation: str
    touched: pa.Array
    old_files: pa.Table | None
    old_partitions: frozenset[str] | None
    same_content_as: tuple[str, ...] = ()  # most recent first

    def starts_from(self, generation: str | None) -> bool:
        """Whether a reader that holds generation ``generation``'s rows can apply these changes to reach the
        new generation's: it is ``base_generation`` or has the same rows."""
        return generation is not None and (generation == self.base_generation or generation in self.same_content_as)


MAX_SAME_CONTENT = 32  # generations CacheChanges.same_content_as carries (a quiet tick that saved adds one)


@dataclass
class Cache:
    """A loaded parse cache: the rows of every cached file (``files`` in ``CACHE_FILE_SCHEMA``, ``runs``,
    ``rejects``), in the scan order they were saved in, when that scan started (ns since the epoch) and the id
    of that saved state (``generation``).

    How it is stored (``save_cache``): ``base_generation`` names the base files; ``base_sources`` is their
    ``source_file`` column (base order), ``base_keep`` (numpy bool, one per base file) says which of them still
    hold their file's current rows, and ``in_delta`` (numpy bool, one per row of ``files``) which files' rows
    come from the delta instead. Without a delta: ``base_generation == generation``, every base file kept,
    nothing in the delta."""

    files: pa.Table
    runs: pa.Table
    rejects: pa.Table
    scan_started_ns: int
    generation: str = ""
    base_generation: str = ""
    base_sources: pa.ChunkedArray | None = None
    base_keep: np.ndarray | None = None
    in_delta: np.ndarray | None = None


def sha256_file(raw_dir: Path, rel: str) -> str | None:
    """The sha256 of the listed file ``rel``, read through the opener inside ``raw_dir``; None when it cannot be
    read or is refused (a link out of the folder, a file swapped for a FIFO or device since its stat): the file
    then counts as changed, and its parse records why."""
    digest = hashlib.sha256()
    try:
        with open_regular(raw_dir / rel, "run_log", raw_dir) as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except (OSError, RefusedFile):
        return None
    return digest.hexdigest()


MAX_CACHE_CHUNKS = 32  # record batches a cache table may be saved in before it is rewritten as one


def write_cache_file(table: pa.Table, path: Path) -> Path:
    """Write one cache file from ``table`` (``write_cache_parts``)."""
    return write_cache_parts(table.schema, [table], path)


def write_cache_parts(schema: pa.Schema, parts: Iterable[pa.Table], path: Path) -> Path:
    """Write one cache file, ``parts`` one after another, uncompressed: every reader memory-maps it
    (``map_arrow``), so a load costs no copy and a tick that uses a few columns of a million runs brings in only
    their pages (the price: the files take several times the disk space LZ4-compressed ones would)."""
    return write_arrow_parts_atomic(schema, parts, path, compression=None)


def write_base(table: pa.Table, stamp: dict, path: Path) -> None:
    """Write one table of a new base, compacted into one record batch when it has more than
    ``MAX_CACHE_CHUNKS`` (nights of splices)."""
    if table.num_columns and table.column(0).num_chunks > MAX_CACHE_CHUNKS:
        table = table.combine_chunks()
    write_cache_file(stamped_table(table, stamp), path)


def stamped_table(table: pa.Table, stamp: dict) -> pa.Table:
    return table.replace_schema_metadata({METADATA_KEY: orjson.dumps(stamp)})


def mapped_of(path: Path, generation: str) -> tuple[pa.Table | None, dict]:
    """A cache file memory-mapped and its stamp, when it is stamped ``generation``; (None, {}) otherwise."""
    try:
        table = map_arrow(path)
        stamp = orjson.loads((table.schema.metadata or {})[METADATA_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
        return None, {}
    return (table, stamp) if stamp.get("generation") == generation else (None, {})


def read_stamped(cache_dir: Path, names: tuple[tuple[str, pa.Schema], ...],
                 prefix: str = "") -> tuple[dict[str, pa.Table], list[dict]] | None:
    """The tables ``<prefix><name>.arrow`` cast to their schemas, and their stamps; None when one is missing,
    unreadable or unstamped."""
    tables, stamps = {}, []
    for name, schema in names:
        try:
            table = map_arrow(cache_dir / f"{prefix}{name}.arrow")
            stamps.append(orjson.loads((table.schema.metadata or {})[METADATA_KEY]))
            tables[name] = table.replace_schema_metadata(None).cast(schema)
        except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
            return None
    return tables, stamps


def footer_stamps(cache_dir: Path, names: tuple[tuple[str, pa.Schema], ...], prefix: str = "") -> list[dict] | None:
    """The stamps of the files ``<prefix><name>.arrow``, from their footers; None when one is missing or
    unreadable."""
    stamps = []
    for name, _ in names:
        try:
            with pa.OSFile(os.fspath(cache_dir / f"{prefix}{name}.arrow")) as source:
                metadata = pa.ipc.open_file(source).schema.metadata or {}
            stamps.append(orjson.loads(metadata[METADATA_KEY]))
        except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
            return None
    return stamps


def stamps_usable(stamps: list[dict], raw_dir: Path) -> bool:
    """Whether the cache files' stamps are of one generation, this parser version and the folder ``raw_dir``."""
    first = stamps[0]
    return all(s.get("generation") == first.get("generation") for s in stamps) \
        and first.get("parser_version") == parser_version() and first.get("raw_dir") == str(raw_dir.resolve())
