"""The parse cache, so a run parses only the files that changed since the last scan (``load_cache`` →
``look_up`` → ``merge_in_scan_order`` → ``save_cache``, in that order in ``pipeline.ingest.folder``).

What a file gives (its runs, rejects and ledger row) depends on its own bytes, its sidecar ``<name>.meta.json``,
its folder's ``runs.csv`` and the parser code, nothing else (power logs are read later, by ``run_power``). The
cache records, per file (key: path relative to the raw folder), those rows with the sha256 of the file, of its
sidecar and of its manifest as they were when parsed. A file is reused when all three are unchanged and
``parser_version()`` (a hash of the parsing code and the GPU tables) is the same; anything else is parsed again.

A file's sha256 is taken from the cache without reading the file when its size and ``st_mtime_ns`` are the cached
ones and its mtime is older than the cached scan by more than ``RACY_WINDOW_NS`` (git's "racy clean" rule: a file
written in the same instant as the scan could change again without its mtime moving); otherwise it is hashed.
A touched but unchanged file is therefore hashed, never re-parsed.

The cache is a base of three Arrow IPC files (``files``, ``runs``, ``rejects``) under ``cache_dir``, each written
atomically, uncompressed and stamped with one generation id (read memory-mapped: loading it copies nothing), and a delta beside it (``delta.*``: the rows of the files parsed
since the base and which base files they replace), so a night's save writes the night's rows, not the
history's (``save_cache``). Beside them, the scan they were saved from (``listing`` and ``folders``, for the
sensor's quick scan). A reader that finds a base of mixed generations (two writers at once, a writer killed
between files), another raw folder or another parser version ignores the cache and parses everything; a torn
delta is ignored and the base alone read (an older state: what changed since is parsed again). So the cache can
only cost time, never change a result: ``ingest_folder_cached`` returns exactly what ``ingest_folder`` does
(tested by content hash).
"""

from __future__ import annotations

import functools
import hashlib
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.keys import GPU_ALIASES_CSV_NAME
from pipeline.ingest.parse import FILE_SCHEMA, IngestResult, ParsedBlocks, in_scan_order
from pipeline.ingest.parsers import SIDECAR_SUFFIX
from pipeline.ingest.scan import MANIFEST_NAME, Folders, Listing
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.io.opener import RefusedFile, open_regular
from pipeline.io.paths import reference_dir, sql_text
from pipeline.io.storage import map_arrow, write_arrow_parts_atomic

CACHE_FILE_SCHEMA = pa.schema([
    *FILE_SCHEMA,
    ("mtime_ns", pa.int64()),
    ("sidecar_sha256", pa.string()),
    ("manifest_sha256", pa.string()),
])
# the base's files and the delta's (``save_cache``), with their schemas
_CACHE_TABLES = (("files", CACHE_FILE_SCHEMA), ("runs", RUN_SCHEMA), ("rejects", QUARANTINE_SCHEMA))
_DELTA_TABLES = (("files", CACHE_FILE_SCHEMA.append(pa.field("base_place", pa.int64()))), ("runs", RUN_SCHEMA),
                 ("rejects", QUARANTINE_SCHEMA), ("keep", pa.schema([("keep", pa.bool_())])))
DELTA_PREFIX = "delta."
RACY_WINDOW_NS = 2_000_000_000
_METADATA_KEY = b"inference_frontier.parse_cache"
_CHANGED = "<changed>"  # a dependency whose content is not known yet: never equal to a recorded sha256


def parser_version() -> str:
    """sha256 of the code and data that turn bytes into rows (parsers, metadata, keys, schema, parse, the scan's
    listed names, this module, the GPU alias and reference tables of ``reference_dir()``), computed once per
    reference folder."""
    return _parser_version(reference_dir())


@functools.cache
def _parser_version(folder: Path) -> str:
    package = Path(__file__).resolve().parent
    sources = sorted((package / "parsers").glob("*.py")) + [
        package / name for name in ("metadata.py", "keys.py", "schema.py", "parse.py", "scan.py", "parse_cache.py")]
    digest = hashlib.sha256()
    # the GPU alias and reference tables map names while parsing, so a changed table must re-parse too
    for source in [*sources, folder / GPU_ALIASES_CSV_NAME, folder / "gpu_reference.csv"]:
        digest.update(source.name.encode() + b"\0" + (source.read_bytes() if source.is_file() else b""))
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


@dataclass(frozen=True)
class Lookup:
    """What the cache answers for one listing: ``to_parse`` (the files to parse, in scan order), ``kept`` (the
    cached rows of every other file, still in scan order; ``files`` in ``FILE_SCHEMA``) and the counts that
    ``CacheStats`` reports."""

    to_parse: list[str]
    kept: IngestResult
    reused: int
    hashed: int
    removed: int
    listed: pa.Table | None = None  # the listing as a table (``listing_table``), when it was built
    stale: pa.Array | None = None  # cached files not reused (changed or gone), when there was a cache
    positions: list[int] | None = None  # where each of ``to_parse`` is in the listing
    # the kept files' recorded dependencies (``source_file``, ``sidecar_sha256``, ``manifest_sha256``; in
    # ``kept.files``' order): a file is reused only when its dependencies are what they were, so the save need
    # not look them up again
    kept_dependencies: pa.Table | None = None


def look_up(cache: Cache | None, listing: Listing, raw_dir: Path,
            quick: tuple[Listing, Folders, Folders] | None = None) -> Lookup:
    """Decide, per listed file, whether the cached rows can be reused: the file, its sidecar and its folder's
    ``runs.csv`` must have the content they had when it was parsed.

    The bookkeeping is column work in DuckDB (``sql/parse_cache_stat.sql``, ``…_dependencies.sql``,
    ``…_reuse.sql``); Python reads only files whose stat moved since the cached scan (to hash them).

    Args:
        cache: ``load_cache``'s answer (None: parse everything).
        listing: this scan (``scan_folder``).
        raw_dir: the folder ``listing`` is relative to.
        quick: for a quick scan (``scan_tree`` with the scan saved with ``cache``): (that saved listing, its
            folders, this scan's folders). Only the files of folders listed again are looked up
            (``moved_entries``): a folder taken from the saved scan holds the files, stats, sidecars and
            ``runs.csv`` the cache was saved with, all trusted then, so its files are reused as they are. The
            answer is the one a look-up of every file gives (tested).
    """
    if cache is None:  # nothing to reuse: parse every file
        empty = IngestResult(runs=RUN_SCHEMA.empty_table(), rejects=QUARANTINE_SCHEMA.empty_table(),
                             files=FILE_SCHEMA.empty_table())
        return Lookup(to_parse=list(listing.rel), kept=empty, reused=0, hashed=0, removed=0)
    listed_table = listing_table(listing)
    if quick is None:
        looked_at, cached_files, gone = listed_table, cache.files, None
    else:
        positions, before = moved_entries(listing, *quick)
        looked_at = listed_table.take(pa.array(positions, pa.int64()))
        candidates = pa.array(before, pa.string())
        cached_files = cache.files.filter(pc.is_in(cache.files["source_file"], value_set=candidates))
        gone = pc.invert(pc.is_in(candidates, value_set=looked_at["source_file"]))
    racy_before = cache.scan_started_ns - RACY_WINDOW_NS
    racy = _unchanged_since_cached(listed_table, cache.files, racy_before) if quick is None else None
    if racy is not None and _same_content(raw_dir, cache.files, racy):
        stale = pa.array([], pa.string())
        kept, kept_dependencies = _kept(cache, stale)
        return Lookup(to_parse=[], kept=kept, reused=len(listing), hashed=len(racy), removed=0, listed=listed_table,
                      stale=stale, positions=[], kept_dependencies=kept_dependencies)
    with duckdb.connect() as conn:
        conn.register("listing", looked_at)
        conn.register("cached_files", cached_files)
        known = conn.sql(sql_text("parse_cache_stat"), params={"racy_before": racy_before}).to_arrow_table()
        # content now: from the cache when the stat is clean, by hashing when a cached file's stat moved
        to_hash = pc.and_(pc.and_(known["cached"], known["regular_file"]), pc.invert(known["stat_clean"]))
        rehash = pc.indices_nonzero(to_hash).to_pylist()
        sha_now = known["cached_sha256"].combine_chunks()
        if rehash:
            paths = known["source_file"].take(pa.array(rehash, pa.int64())).to_pylist()
            sha_now = pc.replace_with_mask(sha_now, to_hash.combine_chunks(), pa.array(
                [_sha256_file(raw_dir, rel) for rel in paths], pa.string()))
        unknown = pc.invert(pc.or_(known["stat_clean"], to_hash)).combine_chunks()
        sha_now = pc.if_else(pc.or_(unknown, pc.is_null(sha_now)), _CHANGED, sha_now)
        conn.register("current_dependencies", file_dependencies(
            pa.table({"source_file": known["source_file"], "sha256": sha_now})))
        reused = conn.sql(sql_text("parse_cache_reuse")).to_arrow_table().column("source_file").combine_chunks()
    # cached files not reused (changed or gone): usually few, so their rows are dropped by a small lookup
    stale = cached_files["source_file"].filter(
        pc.invert(pc.is_in(cached_files["source_file"], value_set=reused))).combine_chunks()
    looked = known["source_file"]
    in_cache = int(pc.sum(known["cached"]).as_py() or 0)
    removed = cached_files.num_rows - in_cache if gone is None else int(pc.sum(gone).as_py() or 0)
    parse = pc.invert(pc.is_in(looked, value_set=reused))
    to_parse = looked.filter(parse).to_pylist()
    kept, kept_dependencies = _kept(cache, stale)
    return Lookup(to_parse=to_parse, kept=kept, reused=len(listing) - len(to_parse), hashed=len(rehash),
                  removed=removed, listed=listed_table, stale=stale,
                  positions=known["position"].filter(parse).to_pylist(), kept_dependencies=kept_dependencies)


def _kept(cache: Cache, stale: pa.Array) -> tuple[IngestResult, pa.Table]:
    """``Lookup``'s ``kept`` (the cache's rows of every file not in ``stale``, ``files`` in ``FILE_SCHEMA``) and
    ``kept_dependencies`` (those files' recorded sidecar and runs.csv sha256)."""
    kept_files = _rows_kept(cache.files, stale)
    kept = IngestResult(runs=_rows_kept(cache.runs, stale), rejects=_rows_kept(cache.rejects, stale),
                        files=kept_files.select(FILE_SCHEMA.names).cast(FILE_SCHEMA))
    return kept, kept_files.select(["source_file", "sidecar_sha256", "manifest_sha256"])


# at most this many files within the racy window are hashed to answer a folder as unchanged (a night's drop just
# before the cache's scan); more, and the look-up's queries decide
MAX_RACY_HASHED = 20_000


def _unchanged_since_cached(listed: pa.Table, cached_files: pa.Table, racy_before: int) -> list[int] | None:
    """The positions of the files to hash when a full scan (``listed``, ``listing_table``) found the folder as
    the cache holds it: the same files in the same order, each a regular file with its cached size and mtime and
    a cached sha256. Every file whose mtime is older than ``racy_before`` (ns) is then stat-clean; the others
    (at most ``MAX_RACY_HASHED``: files written just before the cache's scan, such as a night's drop the
    sensor's tick read) are the returned positions, whose content must be hashed and found cached
    (``_same_content``). Then every file's content, its sidecar's and its runs.csv's are the cached ones; and a
    saved cache records for each file the dependencies its own files' sha256 give (``save_cache`` saves a
    parsed file's, and keeps a reused file's only when they were those), so every cached row is reused:
    ``look_up``'s answer without its three queries. None when the folder is not so.

    Every run's partition discovery after the first (the CLI's, the nightly schedule's) finds the folder so,
    and skips the queries and the columns of every file they build. So does a discovery right after a sensor's
    tick read a night's files (their mtimes within the racy window of its scan): those few files are hashed
    here instead of sending the whole folder down the queries' path."""
    rows = listed.num_rows
    if rows == 0 or rows != cached_files.num_rows or listed["mtime_ns"].null_count or cached_files["sha256"].null_count:
        return None
    if not all(listed[name].equals(cached_files[name]) for name in SCAN_COLUMNS):
        return None
    racy = pc.indices_nonzero(pc.greater_equal(listed["mtime_ns"], racy_before))
    return racy.to_pylist() if len(racy) <= MAX_RACY_HASHED else None


def _same_content(raw_dir: Path, cached_files: pa.Table, positions: list[int]) -> bool:
    """Whether each cached file at ``positions`` (of ``cached_files``, ``CACHE_FILE_SCHEMA``) still has its
    cached sha256 on disk under ``raw_dir``."""
    if not positions:
        return True
    chosen = cached_files.select(["source_file", "sha256"]).take(pa.array(positions, pa.int64()))
    return all(_sha256_file(raw_dir, rel) == sha
               for rel, sha in zip(chosen["source_file"].to_pylist(), chosen["sha256"].to_pylist()))


def moved_entries(listing: Listing, saved: Listing, saved_folders: Folders,
                  folders: Folders) -> tuple[list[int], list[str]]:
    """What a quick scan has to look up: the positions in ``listing`` of the entries of folders it listed again
    (new folders, folders whose mtime moved or was not trusted), and the saved scan's entries of folders that
    were not taken from it (listed again, or gone), which may have changed or left.

    A folder was taken from the saved scan exactly when the saved scan recorded it with a trusted mtime and this
    scan recorded the same one (``scan_tree``: a folder listed again records its own mtime only when the saved
    one differed or was untrusted)."""
    saved_mtime = {rel: mtime for rel, mtime in zip(saved_folders.rel, saved_folders.mtime_ns) if mtime is not None}
    taken = set()
    positions: list[int] = []
    for rel, mtime, first, count in zip(folders.rel, folders.mtime_ns, folders.first, folders.count):
        if mtime is not None and saved_mtime.get(rel) == mtime:
            taken.add(rel)
        else:
            positions.extend(range(first, first + count))
    before = saved.rels_at([at for folder, first, count in zip(saved_folders.rel, saved_folders.first,
                                                              saved_folders.count)
                            if folder not in taken for at in range(first, first + count)])
    return positions, before


def cache_changes(cache: Cache, lookup: Lookup, base_changes: CacheChanges | None = None) -> CacheChanges:
    """``CacheChanges`` of a look-up against ``cache``: the files it sends to parsing and the stale cached
    ones, with their cached rows' shas and run dates. ``base_changes``: what the save of ``cache`` itself
    changed (``load_changes``); when it touched no file, the generations it started from have ``cache``'s rows
    and go into ``same_content_as`` (at most ``MAX_SAME_CONTENT``, the most recent)."""
    stale = lookup.stale if lookup.stale is not None else pa.array([], pa.string())
    touched = pc.unique(pa.concat_arrays([pa.array(lookup.to_parse, pa.string()), stale]))
    same: tuple[str, ...] = ()
    if base_changes is not None and len(base_changes.touched) == 0:
        same = (base_changes.base_generation, *base_changes.same_content_as)[:MAX_SAME_CONTENT]
    old_files = cache.files.select(["source_file", "sha256"])
    if len(stale) == 0:  # the usual night: only new files
        return CacheChanges(cache.generation, touched, old_files.slice(0, 0), frozenset(), same)
    old_runs = cache.runs.filter(pc.is_in(cache.runs["source_file"], value_set=stale))
    return CacheChanges(cache.generation, touched,
                        old_files.filter(pc.is_in(old_files["source_file"], value_set=stale)),
                        frozenset(pc.unique(old_runs["run_date_partition"]).to_pylist()), same)


# a file's scan as the cache's file rows hold it, and the names a ``Listing``'s table gives the same columns
SCAN_COLUMNS = ("source_file", "size_bytes", "mtime_ns")
_LISTING_NAMES = ["rel", "size", "mtime_ns"]


def _as_listing(files: pa.Table) -> pa.Table:
    """The ``SCAN_COLUMNS`` of cache file rows (or of a ``listing_table``) under a ``Listing``'s names, in order."""
    return files.select(list(SCAN_COLUMNS)).rename_columns(_LISTING_NAMES)


def listing_table(listing: Listing) -> pa.Table:
    """A scan as a table: ``source_file`` (string), ``position`` (int64, scan order), ``size_bytes`` and
    ``mtime_ns`` (int64, null for entries that are not regular files)."""
    table = listing.table
    return pa.table({
        "source_file": table["rel"],
        "position": pa.array(np.arange(table.num_rows, dtype=np.int64)),
        "size_bytes": table["size"],
        "mtime_ns": table["mtime_ns"],
    })


def file_dependencies(file_shas: pa.Table, only: pa.Array | None = None) -> pa.Table:
    """What each file's parse depends on besides itself (``pipeline.ingest.metadata``): its sidecar
    ``<name>.meta.json`` and its folder's ``runs.csv``, looked up among the same files (a folder is listed whole).

    Args:
        file_shas: ``source_file`` and ``sha256`` (strings), one row per listed file. A file of unknown content
            carries the caller's ``<changed>`` marker, which never equals a recorded sha256.
        only: a boolean mask over ``file_shas``: answer for those rows alone (their dependencies are still
            looked up among every file). A few rows asked build the dependency names of those rows only
            (``_dependencies_of``), not of every file.
    Returns:
        ``file_shas``' rows in its order (those of ``only``), plus ``sidecar_sha256`` and ``manifest_sha256``
        (strings; null when the file has no such dependency). Column work in Arrow, not a SQL self-join of
        the listing, which would build a joined copy of every file's columns for the same answer.
    """
    if only is not None:
        asked = pc.indices_nonzero(only)
        if len(asked) * 8 < file_shas.num_rows:  # past that, answering every file and keeping some is faster
            return _dependencies_of(file_shas, asked)
        return file_dependencies(file_shas).take(asked)
    # every file's columns are read chunk by chunk, never copied whole (a combined copy of the names and of the
    # sha256 would add to the first save's peak); only the few dependencies' names are combined
    names, shas = file_shas["source_file"], file_shas["sha256"]

    def sha_of(dependency_rows: pa.Array, owners: pa.ChunkedArray, keys: pa.ChunkedArray) -> pa.ChunkedArray:
        # the few dependencies are hashed and every file's key probed against them, not every file's key hashed
        return shas.take(pc.take(dependency_rows, pc.index_in(keys, value_set=owners.combine_chunks())))  # null: none

    sidecars = pc.indices_nonzero(pc.ends_with(names, SIDECAR_SUFFIX))
    sidecar_owners = pc.utf8_slice_codeunits(names.take(sidecars), 0, -len(SIDECAR_SUFFIX))
    manifests = pc.indices_nonzero(pc.or_(pc.ends_with(names, "/" + MANIFEST_NAME), pc.equal(names, MANIFEST_NAME)))
    manifest_folders = pc.utf8_slice_codeunits(names.take(manifests), 0, -len(MANIFEST_NAME))
    with_sidecars = file_shas.append_column("sidecar_sha256", sha_of(sidecars, sidecar_owners, names))
    folders = pc.replace_substring_regex(names, pattern="[^/]*$", replacement="")
    return with_sidecars.append_column("manifest_sha256", sha_of(manifests, manifest_folders, folders))


def _dependencies_of(file_shas: pa.Table, asked: pa.Array) -> pa.Table:
    """``file_dependencies`` for the rows ``asked`` (indices) of ``file_shas``: the dependency names those rows
    can have (``<file>.meta.json``, ``<folder>/runs.csv``) are built and every listed name is probed against
    them, so no column of every file is copied: for a night's few files, allocating such copies would be most of
    the work."""
    answered = file_shas.take(asked)
    probes = answered["source_file"].combine_chunks()
    sidecar_names = pc.binary_join_element_wise(probes, SIDECAR_SUFFIX, "")
    manifest_names = pc.binary_join_element_wise(
        pc.replace_substring_regex(probes, pattern="[^/]*$", replacement=""), MANIFEST_NAME, "")
    wanted = pc.unique(pa.concat_arrays([sidecar_names, manifest_names]))
    found = file_shas.take(pc.indices_nonzero(pc.is_in(file_shas["source_file"], value_set=wanted)))
    found_names, found_shas = found["source_file"].combine_chunks(), found["sha256"].combine_chunks()
    return answered.append_column("sidecar_sha256", found_shas.take(pc.index_in(sidecar_names, value_set=found_names))) \
        .append_column("manifest_sha256", found_shas.take(pc.index_in(manifest_names, value_set=found_names)))


def _saved_dependencies(files: pa.Table, kept: pa.Table | None, parsed: list[str] | None) -> pa.Table:
    """``file_dependencies(files)`` for a merged result's ``files`` (``source_file``, ``sha256``), taking the
    kept files' recorded answer (``kept``: ``Lookup.kept_dependencies``) and looking up only the ``parsed``
    files' (``Lookup.to_parse``). The same table: a file is kept only when its sidecar and its ``runs.csv`` have
    the sha256 recorded with it (``sql/parse_cache_reuse.sql``). Every file is looked up when either is
    unknown, or when the kept files are not ``files``' other rows in the same order (the merge keeps both)."""
    if kept is None or parsed is None or kept.num_rows + len(parsed) != files.num_rows:
        return file_dependencies(files)
    fresh = pc.is_in(files["source_file"], value_set=pa.array(parsed, pa.string()))
    if not files["source_file"].filter(pc.invert(fresh)).equals(kept["source_file"]):
        return file_dependencies(files)
    looked_up = file_dependencies(files, only=fresh)
    both = pa.concat_tables([kept.select(_DEPENDENCIES), looked_up.select(_DEPENDENCIES)])
    is_fresh = fresh.to_numpy(zero_copy_only=False)
    # row i of files: the next fresh row after the kept ones, or the next kept row
    order = np.where(is_fresh, kept.num_rows + np.cumsum(is_fresh) - 1, np.cumsum(~is_fresh) - 1)
    found = both.take(pa.array(order, pa.int64()))
    return files.append_column(_DEPENDENCIES[0], found[_DEPENDENCIES[0]]) \
        .append_column(_DEPENDENCIES[1], found[_DEPENDENCIES[1]])


_DEPENDENCIES = ["sidecar_sha256", "manifest_sha256"]


def _sha256_file(raw_dir: Path, rel: str) -> str | None:
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


def _rows_kept(table: pa.Table, stale: pa.Array) -> pa.Table:
    """The rows of ``table`` whose file is not in ``stale``."""
    if len(stale) == 0:
        return table
    return table.filter(pc.invert(pc.is_in(table["source_file"], value_set=stale)))


def merge_in_scan_order(kept: IngestResult, fresh: IngestResult, listing: Listing,
                        fresh_positions: list[int] | None = None) -> IngestResult:
    """Cached and freshly parsed rows together, in the order a full parse gives (``listing``'s). The cache is
    saved in scan order, so cached rows alone need no sort; each file's rows come wholly from one side.

    The fresh rows are spliced in between slices of the cached ones (no copy of the cached rows: a night's few
    thousand files onto a million cached runs): every listed file is either kept or fresh, so a fresh file's
    place among the kept ones follows from its position in the listing, and the ledger's per-file counts
    (``runs``, ``rejected``) give where its rows go. More than ``MAX_SPLICES`` places, or counts that do not add
    up to the tables, and the rows are sorted by position instead (one copy). ``fresh_positions``: where the
    fresh files are in ``listing`` (``Lookup.positions``), to spare a walk of the whole listing.
    """
    found: list[list[int] | None] = []  # the places, found on first need: a first parse keeps nothing to splice

    def merged(cached: pa.Table, new: pa.Table, count: str | None) -> pa.Table:
        if new.num_rows == 0:
            return cached.cast(new.schema)
        if cached.num_rows == 0:  # parse_files keeps scan order
            return new
        cached = cached.cast(new.schema)
        if not found:
            found.append(_fresh_places(kept, fresh, listing, fresh_positions))
        places = found[0]
        spliced = None if places is None else _splice(cached, new, places, kept.files, fresh.files, count)
        if spliced is not None:
            return spliced
        return in_scan_order(pa.concat_tables([cached, new]), listing.table["rel"].combine_chunks())

    return IngestResult(runs=merged(kept.runs, fresh.runs, "runs"),
                        rejects=merged(kept.rejects, fresh.rejects, "rejected"),
                        files=merged(kept.files, fresh.files, None))


MAX_SPLICES = 64
MAX_CACHE_CHUNKS = 32  # record batches a cache table may be saved in before it is rewritten as one


def _fresh_places(kept: IngestResult, fresh: IngestResult, listing: Listing,
                  positions: list[int] | None = None) -> list[int] | None:
    """For each fresh file (in scan order), how many kept files come before it; None when the files do not
    partition the listing as expected or there are too many places to splice at. ``positions``: the fresh
    files' places in the listing when the caller knows them (checked, not trusted; found by a walk of the
    listing otherwise)."""
    fresh_files = fresh.files["source_file"].to_pylist()
    if kept.files.num_rows + len(fresh_files) != len(listing):
        return None
    if positions is None or len(positions) != len(fresh_files):
        wanted = set(fresh_files)
        positions = [at for at, rel in enumerate(listing.rel) if rel in wanted]
    if len(positions) != len(fresh_files) or listing.rels_at(positions) != fresh_files:
        return None
    places = [position - j for j, position in enumerate(positions)]  # j fresh files precede the j-th
    return places if len(set(places)) <= MAX_SPLICES else None


def _splice(cached: pa.Table, new: pa.Table, places: list[int], kept_files: pa.Table, fresh_files: pa.Table,
            count: str | None) -> pa.Table | None:
    """``cached`` with ``new``'s rows of each fresh file inserted after the rows of the kept files before it
    (``places``); ``count`` names the ledger column holding each file's rows in this table (None: one row per
    file). None when those counts do not add up to the tables."""
    kept_at, fresh_at = _row_offsets(kept_files, count), _row_offsets(fresh_files, count)
    if kept_at[-1] != cached.num_rows or fresh_at[-1] != new.num_rows:
        return None
    pieces, taken, j = [], 0, 0
    while j < len(places):
        end = j
        while end + 1 < len(places) and places[end + 1] == places[j]:
            end += 1
        upto = kept_at[places[j]]
        pieces += [cached.slice(taken, upto - taken), new.slice(fresh_at[j], fresh_at[end + 1] - fresh_at[j])]
        taken, j = upto, end + 1
    pieces.append(cached.slice(taken))
    return pa.concat_tables(pieces)


def _row_offsets(files: pa.Table, count: str | None) -> np.ndarray:
    """Where each file's rows start in a table whose per-file row counts are ``files``' column ``count`` (None:
    one row per file), and where the last one ends: int64, one more than ``files`` has rows."""
    if count is None:
        return np.arange(files.num_rows + 1, dtype=np.int64)
    rows = pc.fill_null(files[count], 0).to_numpy(zero_copy_only=False)
    return np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])


MAX_SLICES = 256  # runs of files taken as slices of a table before one filtered copy is cheaper


def _true_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of consecutive True values of ``mask`` starts, and where it ends (exclusive)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return edges[::2], edges[1::2]


def _rows_of_files(table: pa.Table, mask: np.ndarray, offsets: np.ndarray) -> pa.Table:
    """The rows of ``table`` that belong to the files where ``mask`` (numpy bool, one per file, in the table's
    order) is True; ``offsets``: ``_row_offsets`` of those files. Slices of ``table`` (no copy) when the chosen
    files form few runs, as a night's changes leave them; one filtered copy otherwise."""
    starts, ends = _true_runs(mask)
    if len(starts) > MAX_SLICES:
        return table.filter(pa.array(np.repeat(mask, np.diff(offsets))))
    pieces = [table.slice(offsets[s], offsets[e] - offsets[s]) for s, e in zip(starts, ends)]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _write(table: pa.Table, path: Path) -> Path:
    """Write one cache file from ``table`` (``_write_parts``)."""
    return _write_parts(table.schema, [table], path)


def _write_parts(schema: pa.Schema, parts: Iterable[pa.Table], path: Path) -> Path:
    """Write one cache file, ``parts`` one after another, uncompressed: every reader memory-maps it
    (``map_arrow``), so a load costs no copy and a tick that uses a few columns of a million runs brings in only
    their pages (the price: the files take several times the disk space LZ4-compressed ones would)."""
    return write_arrow_parts_atomic(schema, parts, path, compression=None)


def _write_base(table: pa.Table, stamp: dict, path: Path) -> None:
    """Write one table of a new base, compacted into one record batch when it has more than
    ``MAX_CACHE_CHUNKS`` (nights of splices)."""
    if table.num_columns and table.column(0).num_chunks > MAX_CACHE_CHUNKS:
        table = table.combine_chunks()
    _write(_stamp(table, stamp), path)


def _stamp(table: pa.Table, stamp: dict) -> pa.Table:
    return table.replace_schema_metadata({_METADATA_KEY: orjson.dumps(stamp)})


def save_cache(cache_dir: Path, raw_dir: Path, scan_started_ns: int, result: IngestResult | ParsedBlocks,
               listing: Listing,
               folders: Folders | None = None, listed: pa.Table | None = None,
               changes: CacheChanges | None = None, kept_dependencies: pa.Table | None = None,
               parsed: list[str] | None = None, previous: Cache | None = None,
               stale: pa.Array | None = None) -> str:
    """Write the cache, one generation: ``result``'s rows, and per file the scan's ``mtime_ns``
    (taken before parsing: a file changed meanwhile is caught by the next scan) and the sidecar and manifest
    sha256 it was parsed with; with ``folders``, also the scan itself (``folders.arrow``, same generation, and the
    listing: the state's own file rows when they are it, ``_listing_in_files``, else ``listing.arrow``), which
    ``load_scan`` gives a later quick scan (``scan_tree``'s ``previous``).

    Args:
        cache_dir: the cache's folder (created when missing).
        raw_dir: the folder scanned (recorded: a cache of another folder is never used).
        scan_started_ns: when the scan of ``listing`` started.
        result: the merged result of that scan (``merge_in_scan_order``), or, with no ``previous``, a whole
            parse's blocks (``parse_blocks``), written a group of blocks at a time (a first parse of a million runs
            is never whole in memory).
        listing: that scan.
        folders: the folders that scan entered (``scan_tree``).
        listed: ``listing_table(listing)`` when the caller has it (built otherwise).
        changes: what changed since the state this one was built from: its touched files are saved
            (``changes.arrow``, same generation) for a reader of this generation (``load_changes``).
        kept_dependencies, parsed: the look-up's ``kept_dependencies`` and ``to_parse``, when ``result`` merges
            kept and parsed files: the kept files' dependencies are then taken as recorded, not looked up again.
        previous, stale: the cache ``result`` was looked up against (``load_cache``) and the look-up's ``stale``
            files: ``result`` is then saved as a delta on ``previous``' base when it can be (``_delta_plan``).
    Returns:
        The generation id stamped on the files.
    Raises:
        ValueError: ``result`` is a parse's blocks and ``previous`` is given (blocks make a new base only).

    Base and delta: the base is three Arrow IPC files (``files``, ``runs``, ``rejects``); a save onto a loaded
    cache writes only a delta beside it (``delta.files``, ``delta.runs``, ``delta.rejects``: the rows of every
    file parsed since the base, each with its place among the base's files; ``delta.keep``: which base files
    still hold their file's rows), so a night's save writes the night's rows, not the history's. The base is
    written again, and the delta removed, when there is no cache to build on, or the delta's files and the base
    files it drops would outnumber ``DELTA_MAX_SHARE`` of the base's files, or its files would sit at more than
    ``MAX_SPLICES`` places, or the kept base files would form more than ``MAX_SLICES`` runs.
    """
    listed = listed if listed is not None else listing_table(listing)
    stamp = {"generation": uuid.uuid4().hex, "parser_version": parser_version(),
             "raw_dir": str(raw_dir.resolve()), "scan_started_ns": scan_started_ns}
    if isinstance(result, ParsedBlocks) and previous is not None:
        raise ValueError("save_cache: a parse's blocks are saved as a new base, not onto a previous cache")
    plan = _delta_plan(previous, result, parsed, stale) if previous is not None and parsed is not None else None
    delta = (_delta_tables(plan, result, _files_to_save(result.files, listed, plan.in_delta))
             if plan is not None else None)
    if delta is not None:
        delta_stamp = {**stamp, "base_generation": previous.base_generation}
        for name, table in delta.items():
            _write(_stamp(table, delta_stamp), cache_dir / f"{DELTA_PREFIX}{name}.arrow")
    else:
        parsed_files = result.read("files") if isinstance(result, ParsedBlocks) else result.files
        files = _files_to_save(parsed_files, listed, dependencies=_saved_dependencies(
            parsed_files.select(["source_file", "sha256"]), kept_dependencies, parsed))
        del parsed_files
        for name, schema in (("runs", RUN_SCHEMA), ("rejects", QUARANTINE_SCHEMA)):
            if isinstance(result, ParsedBlocks):
                _write_parts(_stamp(schema.empty_table(), stamp).schema, result.groups(name, MAX_CACHE_CHUNKS),
                             cache_dir / f"{name}.arrow")
            else:
                _write_base(getattr(result, name), stamp, cache_dir / f"{name}.arrow")
        _write_base(files, stamp, cache_dir / "files.arrow")
        # after the base: a reader between the two finds a delta on another base, and ignores it
        for name, _ in _DELTA_TABLES:
            (cache_dir / f"{DELTA_PREFIX}{name}.arrow").unlink(missing_ok=True)
    if folders is not None:
        in_files = _listing_in_files(listed, *((result.files, plan) if delta is not None else (files, None)))
        if in_files:
            (cache_dir / "listing.arrow").unlink(missing_ok=True)
        else:
            _write(_stamp(_as_listing(listed), stamp), cache_dir / "listing.arrow")
        _write(_stamp(pa.table({"rel": pa.array(folders.rel, pa.string()),
                                "mtime_ns": pa.array(folders.mtime_ns, pa.int64()),
                                "first": pa.array(folders.first, pa.int64()),
                                "count": pa.array(folders.count, pa.int64())}),
                      {**stamp, "listing": LISTING_IN_FILES if in_files else LISTING_FILE}),
               cache_dir / "folders.arrow")
    else:
        for name in ("listing", "folders"):
            (cache_dir / f"{name}.arrow").unlink(missing_ok=True)
    if changes is not None:
        _write(_stamp(pa.table({"source_file": changes.touched}),
                                  {**stamp, "base_generation": changes.base_generation,
                                   "same_content_as": list(changes.same_content_as)}), cache_dir / "changes.arrow")
    else:
        (cache_dir / "changes.arrow").unlink(missing_ok=True)
    for name in ("runs", "rejects", "files"):  # the Parquet cache of earlier versions
        (cache_dir / f"{name}.parquet").unlink(missing_ok=True)
    return stamp["generation"]


# a delta whose files and dropped base files outnumber this share of the base's files is folded into a new base
DELTA_MAX_SHARE = 1 / 8


@dataclass(frozen=True)
class _DeltaPlan:
    """Which of a merged result's files a delta holds (``in_delta``, one bool per file of the result), which base
    files it keeps (``base_keep``, one per base file) and how many kept base files precede each delta file
    (``places``, int64); ``fresh`` (one bool per file of the result) marks the files parsed for it, and
    ``kept_mtime_ns`` holds the recorded ``mtime_ns`` of the others, in order (the saved state keeps them)."""

    in_delta: np.ndarray
    base_keep: np.ndarray
    places: np.ndarray
    fresh: np.ndarray
    kept_mtime_ns: pa.ChunkedArray


def _delta_plan(previous: Cache, result: IngestResult, parsed: list[str], stale: pa.Array | None) -> _DeltaPlan | None:
    """How ``save_cache`` can store ``result`` as a delta on ``previous``' base, so that ``load_cache`` rebuilds
    it; None when the base cannot carry it: ``result`` is not ``previous`` less ``stale`` plus the ``parsed``
    files, or the delta would be too large (its files and the base files it drops: ``DELTA_MAX_SHARE``; its
    places: ``MAX_SPLICES``). The caller then writes a new base.

    Args:
        previous: the cache the look-up used (``load_cache``: its ``base_keep`` and ``in_delta``).
        result: the merged result (``merge_in_scan_order``), in scan order.
        parsed: the files parsed for ``result`` (``Lookup.to_parse``).
        stale: the cached files not reused (``Lookup.stale``).
    """
    if previous.base_sources is None or previous.base_keep is None or previous.in_delta is None:
        return None
    base_keep, in_delta_before = previous.base_keep, previous.in_delta
    kept_mtime_ns = previous.files["mtime_ns"]
    if stale is not None and len(stale):
        base_keep = base_keep & ~pc.is_in(previous.base_sources, value_set=stale).to_numpy(zero_copy_only=False)
        still_cached = ~pc.is_in(previous.files["source_file"], value_set=stale).to_numpy(zero_copy_only=False)
        in_delta_before = in_delta_before[still_cached]
        kept_mtime_ns = kept_mtime_ns.filter(pa.array(still_cached))
    fresh = pc.is_in(result.files["source_file"], value_set=pa.array(parsed, pa.string())) \
        .to_numpy(zero_copy_only=False)
    if int((~fresh).sum()) != len(in_delta_before):
        return None
    in_delta = fresh.copy()
    in_delta[~fresh] = in_delta_before
    in_base = ~in_delta
    if int(in_base.sum()) != int(base_keep.sum()):
        return None
    if int(in_delta.sum()) + int((~base_keep).sum()) > DELTA_MAX_SHARE * len(base_keep):
        return None  # the base is mostly rows no longer read, or the delta is no longer small
    places = np.cumsum(in_base)[in_delta]  # base files before each delta file (its own term is 0)
    if len(np.unique(places)) > MAX_SPLICES or len(_true_runs(base_keep)[0]) > MAX_SLICES:
        return None  # loading it back would splice at too many places, or copy the base instead of slicing it
    return _DeltaPlan(in_delta, base_keep, places, fresh, kept_mtime_ns)


def _delta_tables(plan: _DeltaPlan, result: IngestResult, files: pa.Table) -> dict[str, pa.Table] | None:
    """The delta's tables: ``files`` (the delta files' rows in ``CACHE_FILE_SCHEMA``, ``_files_to_save``) with
    ``base_place``, their ``runs`` and ``rejects`` rows, and ``keep``. None when a table's per-file row counts
    (ledger columns ``runs``, ``rejected``) do not add up to its rows."""
    tables = {"files": files.append_column("base_place", pa.array(plan.places, pa.int64())),
              "keep": pa.table({"keep": pa.array(plan.base_keep, pa.bool_())})}
    for name, count in (("runs", "runs"), ("rejects", "rejected")):
        table, offsets = getattr(result, name), _row_offsets(result.files, count)
        if offsets[-1] != table.num_rows:
            return None
        tables[name] = _rows_of_files(table, plan.in_delta, offsets)
    return tables


def _files_to_save(files: pa.Table, listed: pa.Table, mask: np.ndarray | None = None,
                   dependencies: pa.Table | None = None) -> pa.Table:
    """The rows of ``files`` (a result's, ``FILE_SCHEMA``; those where ``mask`` is True, or all) with the cache's
    columns (``CACHE_FILE_SCHEMA``): the scan's ``mtime_ns`` (from ``listed``, ``listing_table``) and the sidecar
    and manifest sha256 (``dependencies``, one row per chosen file, or looked up here for the chosen files)."""
    rows = files if mask is None else _rows_of_files(files, mask, _row_offsets(files, None))
    if dependencies is None:
        shas = files.select(["source_file", "sha256"])
        dependencies = file_dependencies(shas) if mask is None else file_dependencies(shas, only=pa.array(mask))
    mtime_ns = listed["mtime_ns"]
    if not files["source_file"].equals(listed["source_file"]):  # merge_in_scan_order keeps scan order
        mtime_ns = mtime_ns.take(pc.index_in(files["source_file"], value_set=listed["source_file"].combine_chunks()))
    if mask is not None:
        mtime_ns = mtime_ns.filter(pa.array(mask))
    columns = {"mtime_ns": mtime_ns, "sidecar_sha256": dependencies["sidecar_sha256"],
               "manifest_sha256": dependencies["manifest_sha256"]}
    for name, column in columns.items():
        rows = rows.append_column(name, column)
    return rows.cast(CACHE_FILE_SCHEMA)


# where a saved scan's listing is (``folders.arrow``'s stamp, key "listing"): the state's own file rows, or a file
LISTING_IN_FILES, LISTING_FILE = "files", "listing.arrow"


def _listing_in_files(listed: pa.Table, files: pa.Table, plan: _DeltaPlan | None = None) -> bool:
    """Whether the saved state's file rows are the scan's listing (``listed``, ``listing_table``).

    The same ``source_file``, ``size_bytes`` and ``mtime_ns``, in order: then the listing is not written a second
    time (a row per file, which every night's tick would otherwise write again). It is, unless a file changed
    size between the scan's stat and its read, or a kept file's content was confirmed by hash under a new mtime
    (the state keeps the recorded one).

    Args:
        listed: the scan.
        files: the state's files: the base's rows (``CACHE_FILE_SCHEMA``), or with ``plan`` the merged result's
            (``FILE_SCHEMA``: their mtimes are the delta's, from ``listed``, and ``plan.kept_mtime_ns``).
    """
    if not (files["source_file"].equals(listed["source_file"]) and files["size_bytes"].equals(listed["size_bytes"])):
        return False
    if plan is None:
        return files["mtime_ns"].equals(listed["mtime_ns"])
    return listed["mtime_ns"].filter(pa.array(~plan.fresh)).equals(plan.kept_mtime_ns)


def load_scan(cache_dir: Path, generation: str,
              state_files: Callable[[], pa.Table | None]) -> tuple[Listing, Folders] | None:
    """The scan saved with cache ``generation`` (``save_cache`` with ``folders``), or None when it is missing,
    unreadable or of another generation.

    Args:
        cache_dir: the cache's folder.
        generation: the cache state whose scan is wanted.
        state_files: gives that state's file rows (``Cache.files``), or None when the cache holds another state
            now; called only when the listing was saved as those rows (``_listing_in_files``).
    """
    folders, stamp = _mapped_of(cache_dir / "folders.arrow", generation)
    if folders is None:
        return None
    if stamp.get("listing") == LISTING_IN_FILES:
        files = state_files()
        listing = None if files is None else _as_listing(files)
    else:
        listing = _mapped_of(cache_dir / "listing.arrow", generation)[0]
    if listing is None:
        return None
    # the listing stays Arrow: a quick scan takes most of it as slices (scan_tree), never as Python lists
    return (Listing(table=listing.select(_LISTING_NAMES).replace_schema_metadata(None)),
            Folders(*(folders[name].to_pylist() for name in ("rel", "mtime_ns", "first", "count"))))


def _mapped_of(path: Path, generation: str) -> tuple[pa.Table | None, dict]:
    """A cache file memory-mapped and its stamp, when it is stamped ``generation``; (None, {}) otherwise."""
    try:
        table = map_arrow(path)
        stamp = orjson.loads((table.schema.metadata or {})[_METADATA_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
        return None, {}
    return (table, stamp) if stamp.get("generation") == generation else (None, {})


def load_changes(cache_dir: Path, generation: str) -> CacheChanges | None:
    """The changes saved with cache ``generation`` (``save_cache``'s ``changes``; only ``touched`` is kept), or
    None when there are none, they are unreadable or of another generation."""
    table, stamp = _mapped_of(cache_dir / "changes.arrow", generation)
    if table is None or not stamp.get("base_generation"):
        return None
    return CacheChanges(stamp["base_generation"], table["source_file"].combine_chunks(), None, None,
                        tuple(stamp.get("same_content_as", ())))


def load_cache(cache_dir: Path, raw_dir: Path) -> Cache | None:
    """The cache: its base, with the delta saved on it applied (``save_cache``). None when the base is missing,
    torn (mixed generations), for another folder or parser version. A delta that is torn, saved on another
    base or does not fit it is ignored: the base alone is an older state of the folder, and the files changed
    since are parsed again."""
    loaded = _read_stamped(cache_dir, _CACHE_TABLES)
    if loaded is None or not _usable(loaded[1], raw_dir):
        return None
    tables, stamps = loaded
    files, generation = tables["files"], str(stamps[0]["generation"])
    base = Cache(files, tables["runs"], tables["rejects"], int(stamps[0]["scan_started_ns"]), generation,
                 base_generation=generation, base_sources=files["source_file"],
                 base_keep=np.ones(files.num_rows, dtype=bool), in_delta=np.zeros(files.num_rows, dtype=bool))
    return _with_delta(base, cache_dir, raw_dir) or base


def _with_delta(base: Cache, cache_dir: Path, raw_dir: Path) -> Cache | None:
    """``base`` with its delta applied: the kept base files' rows as slices, the delta's rows spliced in at their
    places (``_splice``). None when there is no usable delta for this base."""
    loaded = _read_delta(cache_dir, raw_dir, base.generation)
    if loaded is None:
        return None
    delta, stamp = loaded
    keep = delta["keep"]["keep"].to_numpy(zero_copy_only=False)
    if len(keep) != base.files.num_rows or delta["keep"]["keep"].null_count:
        return None
    places = delta["files"]["base_place"].to_numpy(zero_copy_only=False)
    delta_files = delta["files"].drop_columns(["base_place"])
    kept_files = _rows_of_files(base.files, keep, _row_offsets(base.files, None))
    merged = {}
    for name, count in (("files", None), ("runs", "runs"), ("rejects", "rejected")):
        offsets = _row_offsets(base.files, count)
        if offsets[-1] != getattr(base, name).num_rows:
            return None
        new = delta_files if name == "files" else delta[name]
        merged[name] = _splice(_rows_of_files(getattr(base, name), keep, offsets), new, places.tolist(),
                               kept_files, delta_files, count)
        if merged[name] is None:
            return None
    in_delta = np.insert(np.zeros(kept_files.num_rows, dtype=bool), places, True)
    return Cache(merged["files"], merged["runs"], merged["rejects"], int(stamp["scan_started_ns"]),
                 str(stamp["generation"]), base.generation, base.base_sources, keep, in_delta)


def _read_delta(cache_dir: Path, raw_dir: Path, base_generation: str) -> tuple[dict[str, pa.Table], dict] | None:
    """The delta's tables and its stamp, when a whole delta (one generation) of this parser and folder was saved
    on the base ``base_generation``; None otherwise."""
    loaded = _read_stamped(cache_dir, _DELTA_TABLES, DELTA_PREFIX)
    if loaded is None or not _usable(loaded[1], raw_dir) or loaded[1][0].get("base_generation") != base_generation:
        return None
    return loaded[0], loaded[1][0]


def _delta_stamp(cache_dir: Path, raw_dir: Path, base_generation: str) -> dict | None:
    """``_read_delta``'s stamp, read from the delta files' footers without their rows."""
    stamps = _footer_stamps(cache_dir, _DELTA_TABLES, DELTA_PREFIX)
    if stamps is None or not _usable(stamps, raw_dir) or stamps[0].get("base_generation") != base_generation:
        return None
    return stamps[0]


def _read_stamped(cache_dir: Path, names: tuple[tuple[str, pa.Schema], ...],
                  prefix: str = "") -> tuple[dict[str, pa.Table], list[dict]] | None:
    """The tables ``<prefix><name>.arrow`` cast to their schemas, and their stamps; None when one is missing,
    unreadable or unstamped."""
    tables, stamps = {}, []
    for name, schema in names:
        try:
            table = map_arrow(cache_dir / f"{prefix}{name}.arrow")
            stamps.append(orjson.loads((table.schema.metadata or {})[_METADATA_KEY]))
            tables[name] = table.replace_schema_metadata(None).cast(schema)
        except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
            return None
    return tables, stamps


@dataclass
class CacheStream:
    """One cache state read for one pass over its runs, without holding them (``stream_cache``): ``files`` (the
    chosen columns of every file's cached row, in ``load_cache``'s order), ``runs`` (``RUN_SCHEMA`` record
    batches in ``load_cache``'s order, read from the base one record batch at a time; a reader is consumed once),
    ``num_runs`` and, when asked for, ``rejects`` (``QUARANTINE_SCHEMA``, whole: a tenth of the runs' size)."""

    files: pa.Table
    runs: pa.RecordBatchReader
    num_runs: int
    rejects: pa.Table | None = None


def stream_cache(cache_dir: Path, raw_dir: Path, generation: str,
                 file_columns: tuple[str, ...] = ("source_file", "sha256"), rejects: bool = False,
                 dates: Sequence[str] | None = None) -> CacheStream | None:
    """Cache state ``generation``, when it is the cache's (``load_cache``'s generation), with its runs streamed.

    At most one of the base's record batches (~1/16 of it) and the delta's rows are in memory at once, instead of
    the whole cache. For a reader that needs every run once: a digest, an insert.

    Args:
        cache_dir, raw_dir: the cache's folder and the raw folder it is of.
        generation: the state wanted (``CacheStats.generation``, ``cache_generation``).
        file_columns: the columns of ``CACHE_FILE_SCHEMA`` wanted in ``files``.
        rejects: read the state's rejects too (``CacheStream.rejects``).
        dates: the run dates (``run_date_partition`` values) the reader keeps, when it keeps only some: the
            base's record batches holding none of them are not read (their ``run_date_partition`` column is
            read to know), so a night's ingest onto a million runs reads the delta's rows, not the base's. The
            stream still has every row of the batches it reads (the reader filters); ``num_runs`` counts them all.
    Returns:
        The stream, or None when the cache does not hold ``generation`` any more (a later save, a torn or
        unreadable file): the caller then reads the folder as usual.
    """
    try:
        # the base's runs file is opened first and kept open: a save that replaces it meanwhile (a new file,
        # renamed over this one) leaves this reader on the file whose stamp it checked
        source = pa.OSFile(os.fspath(cache_dir / "runs.arrow"))
    except OSError:
        return None
    try:
        stream = _stream_of(source, cache_dir, raw_dir, generation, file_columns, rejects, dates)
    except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
        stream = None
    if stream is None:
        source.close()
    return stream


def _stream_of(source: pa.NativeFile, cache_dir: Path, raw_dir: Path, generation: str,
               file_columns: tuple[str, ...], with_rejects: bool, dates: Sequence[str] | None) -> CacheStream | None:
    """``stream_cache`` once the base's runs file is open (``source``); raises on an unreadable file."""
    runs_file = pa.ipc.open_file(source)
    wanted = list(dict.fromkeys(["runs", "rejected", *file_columns]))
    # files and rejects are read whole, so mapped (no copy into the heap); every field, then the wanted ones
    # selected: Arrow copies a mapped file's batches when told which fields to read
    with pa.memory_map(os.fspath(cache_dir / "files.arrow")) as files_source, \
            pa.memory_map(os.fspath(cache_dir / "rejects.arrow")) as rejects_source:
        files_file = pa.ipc.open_file(files_source)
        rejects_file = pa.ipc.open_file(rejects_source)  # a base is whole only with its three files
        stamps = [orjson.loads((f.schema.metadata or {})[_METADATA_KEY]) for f in (files_file, runs_file, rejects_file)]
        base_files = files_file.read_all().replace_schema_metadata(None).select(wanted).cast(
            pa.schema([CACHE_FILE_SCHEMA.field(name) for name in wanted]))
        base_rejects = rejects_file.read_all().replace_schema_metadata(None).cast(QUARANTINE_SCHEMA) \
            if with_rejects else None
    if not _usable(stamps, raw_dir):
        return None
    base_generation = str(stamps[0]["generation"])
    delta = None
    if generation == base_generation:
        if _delta_stamp(cache_dir, raw_dir, base_generation) is not None:
            return None  # a later state, saved as a delta on this base, is the cache's now
    else:
        loaded = _read_delta(cache_dir, raw_dir, base_generation)
        if loaded is None or loaded[1].get("generation") != generation:
            return None
        delta = loaded[0]
    keep = np.ones(base_files.num_rows, dtype=bool) if delta is None \
        else delta["keep"]["keep"].to_numpy(zero_copy_only=False)
    offsets = _row_offsets(base_files, "runs")
    # each batch's rows from its run_date_partition column alone (count_rows() would read whole batches)
    batch_rows, needed = _batches_holding(cache_dir / "runs.arrow", runs_file.schema.metadata,
                                          runs_file.num_record_batches, dates)
    if len(keep) != base_files.num_rows or offsets[-1] != batch_rows.sum():
        return None
    kept_files = _rows_of_files(base_files, keep, _row_offsets(base_files, None))
    places = np.zeros(0, dtype=np.int64)
    delta_files, delta_runs, delta_offsets = kept_files.slice(0, 0), RUN_SCHEMA.empty_table(), np.zeros(1, np.int64)
    if delta is not None:
        places = delta["files"]["base_place"].to_numpy(zero_copy_only=False)
        delta_files, delta_runs = delta["files"].select(wanted), delta["runs"]
        delta_offsets = _row_offsets(delta_files, "runs")
        if delta_offsets[-1] != delta_runs.num_rows:
            return None
    files = _splice(kept_files, delta_files, places.tolist(), kept_files, delta_files, None)
    rejects = None
    if base_rejects is not None:
        rejected_at = _row_offsets(base_files, "rejected")
        delta_rejects = delta["rejects"] if delta is not None else QUARANTINE_SCHEMA.empty_table()
        if rejected_at[-1] != base_rejects.num_rows:
            return None
        rejects = _splice(_rows_of_files(base_rejects, keep, rejected_at), delta_rejects, places.tolist(),
                          kept_files, delta_files, "rejected")
        if rejects is None:
            return None
    pieces = _merged_pieces(np.flatnonzero(keep), offsets, places, delta_offsets)
    reader = pa.RecordBatchReader.from_batches(RUN_SCHEMA, _runs_in_order(
        source, runs_file.get_batch, delta_runs, pieces, batch_rows, needed))
    return CacheStream(files.select(list(file_columns)), reader,
                       int(offsets[-1] - np.diff(offsets)[~keep].sum() + delta_runs.num_rows), rejects)


def _merged_pieces(kept: np.ndarray, offsets: np.ndarray, places: np.ndarray,
                   delta_offsets: np.ndarray) -> list[tuple[bool, int, int]]:
    """The runs of a base with a delta, in merged order, as row ranges (from the delta?, start, stop): the rows
    of the kept base files (``kept``: their indices; ``offsets``: ``_row_offsets`` of every base file), with the
    rows of each delta file (``delta_offsets``) after the ``places[i]`` first kept files."""
    pieces: list[tuple[bool, int, int]] = []

    def base_rows(first: int, last: int) -> None:  # the kept files first..last-1, by runs of adjacent files
        chosen = kept[first:last]
        if len(chosen) == 0:
            return
        breaks = np.flatnonzero(np.diff(chosen) != 1) + 1
        for run in np.split(chosen, breaks):
            if offsets[run[-1] + 1] > offsets[run[0]]:
                pieces.append((False, int(offsets[run[0]]), int(offsets[run[-1] + 1])))

    done = 0
    for place in np.unique(places):
        base_rows(done, int(place))
        files = np.flatnonzero(places == place)
        if delta_offsets[files[-1] + 1] > delta_offsets[files[0]]:
            pieces.append((True, int(delta_offsets[files[0]]), int(delta_offsets[files[-1] + 1])))
        done = int(place)
    base_rows(done, len(kept))
    return pieces


def _batches_holding(path: Path, stamp: dict | None, count: int,
                     dates: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows of each of the base runs file's ``count`` record batches and, when ``dates`` is given, whether
    each holds a run of one of them.

    Only the ``run_date_partition`` column's pages are touched: the file is memory-mapped and its batches taken
    whole, zero-copy, because Arrow's reader copies a batch's body when told to read one field (and an ordinary
    file's reader reads every column into the heap).

    Args:
        path: the base's ``runs.arrow``.
        stamp: its schema metadata as the caller's open reader saw it: the mapped file must carry the same,
            so a save that replaced the file meanwhile is noticed.
    Raises:
        ValueError: the file at ``path`` is not the one the caller opened (``stream_cache`` then answers None).
        OSError, pa.ArrowInvalid: the file cannot be mapped or read.
    """
    with pa.memory_map(os.fspath(path)) as mapped:
        runs_file = pa.ipc.open_file(mapped)
        if runs_file.schema.metadata != stamp or runs_file.num_record_batches != count:
            raise ValueError(f"{path} was replaced while it was read")
        dates_column = runs_file.schema.get_field_index("run_date_partition")
        batches = [runs_file.get_batch(i) for i in range(count)]
        rows = np.array([batch.num_rows for batch in batches], dtype=np.int64)
        if dates is None:
            return rows, None
        value_set = pa.array(list(dates), pa.string())
        return rows, np.array([bool(pc.any(pc.is_in(batch.column(dates_column), value_set=value_set)).as_py())
                               for batch in batches])


def _runs_in_order(source: pa.NativeFile, read_batch: Callable[[int], pa.RecordBatch], delta_runs: pa.Table,
                   pieces: list[tuple[bool, int, int]], batch_rows: np.ndarray,
                   needed: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """The record batches of ``pieces`` (``_merged_pieces``): delta rows as slices of ``delta_runs``, base rows
    from the base's record batch ``i`` (``read_batch(i)``, ``batch_rows[i]`` rows), each read once, when the
    first piece in it is reached, and not at all where ``needed[i]`` is False (it holds no run the reader
    keeps); closes ``source`` at the end. Read, not mapped: a mapping would keep every page this pass touched
    resident until it ends, the whole cache by then."""
    first_row = np.concatenate([[0], np.cumsum(batch_rows)])
    try:
        index, batch = -1, None  # the base batch in hand
        for from_delta, start, stop in pieces:
            if from_delta:
                yield from delta_runs.slice(start, stop - start).to_batches()
                continue
            i = int(np.searchsorted(first_row, start, side="right")) - 1
            while start < stop:
                end = min(stop, int(first_row[i + 1]))
                if needed is None or needed[i]:
                    if index != i:
                        index, batch = i, read_batch(i).replace_schema_metadata(None)
                    yield batch.slice(start - int(first_row[i]), end - start).cast(RUN_SCHEMA)
                start, i = end, i + 1
    finally:
        source.close()


def cache_generation(cache_dir: Path, raw_dir: Path) -> str | None:
    """The generation ``load_cache`` would return, read from the files' footers without their rows (a
    loaded cache holds every run as Arrow; its stamps are a few bytes), or None when
    ``load_cache`` would return None for a reason its stamps show (missing, torn, another folder or parser
    version; a file damaged past its footer is not found by either: the files are only ever replaced whole)."""
    stamps = _footer_stamps(cache_dir, _CACHE_TABLES)
    if stamps is None or not _usable(stamps, raw_dir):
        return None
    delta = _delta_stamp(cache_dir, raw_dir, str(stamps[0]["generation"]))
    return str((delta or stamps[0])["generation"])


def _footer_stamps(cache_dir: Path, names: tuple[tuple[str, pa.Schema], ...], prefix: str = "") -> list[dict] | None:
    """The stamps of the files ``<prefix><name>.arrow``, from their footers; None when one is missing or
    unreadable."""
    stamps = []
    for name, _ in names:
        try:
            with pa.OSFile(os.fspath(cache_dir / f"{prefix}{name}.arrow")) as source:
                metadata = pa.ipc.open_file(source).schema.metadata or {}
            stamps.append(orjson.loads(metadata[_METADATA_KEY]))
        except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
            return None
    return stamps


def _usable(stamps: list[dict], raw_dir: Path) -> bool:
    """Whether the cache files' stamps are of one generation, this parser version and the folder ``raw_dir``."""
    first = stamps[0]
    return all(s.get("generation") == first.get("generation") for s in stamps) \
        and first.get("parser_version") == parser_version() and first.get("raw_dir") == str(raw_dir.resolve())
