"""What the cache answers for one scan: which files to parse and the cached rows of every other file (``look_up``),
what that changes relative to the cached state (``cache_changes``), and the kept and fresh rows merged back into
scan order (``merge_in_scan_order``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.parse import FILE_SCHEMA, IngestResult, in_scan_order
from pipeline.ingest.parse_cache.listing import SCAN_COLUMNS, listing_table, moved_entries
from pipeline.ingest.parse_cache.rows import MAX_SPLICES, rows_kept, splice_rows
from pipeline.ingest.parse_cache.store import (
    CHANGED,
    MAX_SAME_CONTENT,
    RACY_WINDOW_NS,
    Cache,
    CacheChanges,
    sha256_file,
)
from pipeline.ingest.parsers import SIDECAR_SUFFIX
from pipeline.ingest.scan import MANIFEST_NAME, Folders, Listing
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.io.paths import sql_text


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
                [sha256_file(raw_dir, rel) for rel in paths], pa.string()))
        unknown = pc.invert(pc.or_(known["stat_clean"], to_hash)).combine_chunks()
        sha_now = pc.if_else(pc.or_(unknown, pc.is_null(sha_now)), CHANGED, sha_now)
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
    kept_files = rows_kept(cache.files, stale)
    kept = IngestResult(runs=rows_kept(cache.runs, stale), rejects=rows_kept(cache.rejects, stale),
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
    return all(sha256_file(raw_dir, rel) == sha
               for rel, sha in zip(chosen["source_file"].to_pylist(), chosen["sha256"].to_pylist()))


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
        spliced = None if places is None else splice_rows(cached, new, places, kept.files, fresh.files, count)
        if spliced is not None:
            return spliced
        return in_scan_order(pa.concat_tables([cached, new]), listing.table["rel"].combine_chunks())

    return IngestResult(runs=merged(kept.runs, fresh.runs, "runs"),
                        rejects=merged(kept.rejects, fresh.rejects, "rejected"),
                        files=merged(kept.files, fresh.files, None))


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
