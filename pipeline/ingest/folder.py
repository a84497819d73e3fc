"""Ingest a raw folder, top to bottom: list it → look up the parse cache → parse what changed (in worker
processes when many files changed) → merge in scan order → save the cache.

Both entry points give the same tables for the same folder (tested by content hash): ``ingest_folder`` parses
every file; ``ingest_folder_cached`` parses only what changed since the cache was saved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline.ingest.parse import (
    FILE_SCHEMA,
    PARALLEL_MIN_FILES,
    IngestResult,
    ParsedBlocks,
    parse_blocks,
    parse_files,
    start_fork_server,
)
from pipeline.ingest.parse_cache import (
    RACY_WINDOW_NS,
    SCAN_COLUMNS,
    Cache,
    CacheChanges,
    CacheStats,
    Lookup,
    cache_changes,
    cache_generation,
    load_cache,
    load_changes,
    load_scan,
    look_up,
    merge_in_scan_order,
    save_cache,
    stream_cache,
)
from pipeline.ingest.scan import Folders, Listing, scan_folder, scan_tree, settled_date_folders
from pipeline.io.storage import release_freed_memory


def ingest_folder(raw_dir: Path, workers: int | None = None) -> IngestResult:
    """Parse every file under ``raw_dir`` into normalized runs, rejects and ledger rows (no cache).

    ``source_file`` is the POSIX path relative to ``raw_dir``; rows come in scan order (``scan_folder``).

    Args:
        raw_dir: the folder to scan.
        workers: processes to parse in (``parse_files``); the output does not depend on it.
    Raises:
        FileNotFoundError: ``raw_dir`` is missing.
        RuntimeError: the parse worker pool broke with no file in flight (``parse_files``).
    """
    raw_dir = Path(raw_dir)
    rels = scan_folder(raw_dir).rel
    return parse_files(raw_dir, rels, workers, listed=rels)


def ingest_folder_cached(raw_dir: Path, cache_dir: Path, workers: int | None = None, write: bool = True,
                         snapshot: str | None = None, quick_scan: bool = False,
                         rows: bool = True, dated_layout: bool = False) -> tuple[IngestResult | None, CacheStats]:
    """``ingest_folder``, parsing only the files whose content, sidecar or ``runs.csv`` changed since the cache
    under ``cache_dir`` was saved, then (``write``) saving the new state there.

    Args:
        raw_dir: the raw folder.
        cache_dir: the cache's folder (created when missing).
        workers: parse workers for the files that need parsing (``parse_files``).
        write: False to leave the cache as it is (a reader beside a running materialization).
        snapshot: a cache generation (``CacheStats.generation`` of an earlier call, e.g. the sensor's tick that
            started this run): when the cache still holds exactly that state, its rows are the result and the
            folder is not scanned again; otherwise the folder is scanned as usual.
        quick_scan: list again only the folders whose mtime moved since the cache's scan (``scan_tree`` with
            ``previous``; a file rewritten in place is not seen until a scan without it). When no folder moved,
            the cache is the result without looking anything up. For the sensor's tick; every run's ingest
            scans in full.
        rows: False, with ``quick_scan``: when no folder moved, the cache's rows are not read (a quiet tick
            need not load every run) and ``result`` is None; ``stats.generation`` names the state the folder is
            in, which the caller holds already or reads itself (``parse_cache.stream_cache``).
        dated_layout: with ``quick_scan``, the raw folder follows the date-folder layout (``scan.DATE_FOLDER``):
            the saved scan's date folders but the newest are taken unstatted (``scan.settled_date_folders``), so
            the scan's cost follows the night, not the history (the sensor's fast path).
    Returns:
        (result, stats): ``result`` has the tables and row order of ``ingest_folder(raw_dir)`` (of the folder
        as the snapshot saw it, when one is used), or is None as ``rows`` says; ``stats.changes`` says what
        changed since the cache's state when the folder was looked up against a cache, or what the snapshot's
        own save changed (None otherwise).
    Raises:
        FileNotFoundError: ``raw_dir`` is missing.
        RuntimeError: a parse worker failed.
    """
    raw_dir, cache_dir = Path(raw_dir), Path(cache_dir)
    scan_started_ns = time.time_ns()
    stamped = cache_generation(cache_dir, raw_dir) if quick_scan and not rows else None
    lazy = stamped is not None  # the rows wait until the quick scan has shown they are needed
    cache = None if lazy else load_cache(cache_dir, raw_dir)
    generation = stamped if lazy else cache.generation if cache is not None else None
    if snapshot and cache is not None and cache.generation == snapshot:
        return _cache_as_result(cache, load_changes(cache_dir, cache.generation))
    def state_files() -> pa.Table | None:  # the saved scan's listing is the state's file rows: their columns alone
        if cache is not None:
            return cache.files if cache.generation == generation else None
        stream = stream_cache(cache_dir, raw_dir, generation, SCAN_COLUMNS)
        return stream.files if stream is not None else None

    previous = load_scan(cache_dir, generation, state_files) if quick_scan and generation is not None else None
    # with no cache every file is parsed: once the scan has listed enough files for a parallel parse, the workers'
    # fork server is started, so its imports overlap the rest of the scan (a small folder never starts one)
    settled = settled_date_folders(previous) if dated_layout and previous is not None else frozenset()
    listing, folders = scan_tree(raw_dir, previous, scan_started_ns - RACY_WINDOW_NS,
                                 on_many=(PARALLEL_MIN_FILES, start_fork_server) if generation is None else None,
                                 settled=settled)
    if previous is not None and folders == previous[1] and None not in folders.mtime_ns:
        # every folder was trusted and unchanged, so every one was taken from the cache's scan: the cache is
        # this scan's result
        if cache is None:
            return None, CacheStats(len(listing), len(listing), 0, 0, 0, True, generation)
        return _cache_as_result(cache)
    if lazy:
        cache = load_cache(cache_dir, raw_dir)
        if cache is None or cache.generation != generation:  # saved by another process meanwhile: start over
            return ingest_folder_cached(raw_dir, cache_dir, workers, write, snapshot, quick_scan,
                                        dated_layout=dated_layout)
    lookup = look_up(cache, listing, raw_dir, quick=(*previous, folders) if previous is not None else None)
    changes = None
    # a quick scan's listing is mostly the saved Arrow table: its names are probed there, not made Python strings
    with parse_blocks(raw_dir, lookup.to_parse, workers,
                      listed=listing.table["rel"] if previous is not None else listing.rel) as blocks:
        if cache is None and write:
            result, generation = _first_save(cache_dir, raw_dir, scan_started_ns, blocks, listing, folders, lookup)
        else:
            result = merge_in_scan_order(lookup.kept, blocks.result(), listing, lookup.positions)
    if cache is not None:
        # a quick scan keeps its folders for the next one: none saved yet, or one trusted now and not then
        folders_moved = quick_scan and (previous is None or folders != previous[1])
        changes = cache_changes(cache, lookup, load_changes(cache_dir, cache.generation))
        if write and (lookup.to_parse or lookup.hashed or lookup.removed or folders_moved):
            generation = save_cache(cache_dir, raw_dir, scan_started_ns, result, listing, folders, lookup.listed,
                                    changes, lookup.kept_dependencies, lookup.to_parse, cache, lookup.stale)
    stats = CacheStats(len(listing), lookup.reused, len(lookup.to_parse), lookup.hashed, lookup.removed,
                       cache is not None, generation, changes)
    release_freed_memory()  # the parse's parts, the look-up's and the save's intermediates
    return result, stats


def _first_save(cache_dir: Path, raw_dir: Path, scan_started_ns: int, blocks: ParsedBlocks, listing: Listing,
                folders: Folders, lookup: Lookup) -> tuple[IngestResult, str]:
    """Save a parse with no cache to build on (the first, or after the parser changed) straight from its blocks.

    The saved cache's tables, memory-mapped, are the result, with the generation saved: a million runs' rows are
    never whole in memory (the parse's parts and the result held at once would be the peak of a first full
    refresh). When another process saved the cache meanwhile, the blocks are read whole instead."""
    listing.keep_table_only()  # the parse is done with the names as Python strings; the save reads the table
    generation = save_cache(cache_dir, raw_dir, scan_started_ns, blocks, listing, folders, lookup.listed)
    saved = load_cache(cache_dir, raw_dir)
    if saved is None or saved.generation != generation:
        return blocks.result(), generation
    return _cache_as_result(saved)[0], generation


def _cache_as_result(cache: Cache, changes: CacheChanges | None = None) -> tuple[IngestResult, CacheStats]:
    """The cache's rows as the result of a scan that found the folder as the cache saw it: nothing parsed.
    ``changes``: what the cache's own save changed (``load_changes``), when the caller has it."""
    files = cache.files.select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
    return (IngestResult(runs=cache.runs, rejects=cache.rejects, files=files),
            CacheStats(files.num_rows, files.num_rows, 0, 0, 0, True, cache.generation, changes))


@dataclass(frozen=True)
class FolderRows:
    """A folder's rows for a run's ingest (``folder_rows``): ``runs`` (``RUN_SCHEMA``; a table, or record batches
    read once), ``num_runs``, ``rejects`` (``QUARANTINE_SCHEMA``), ``files`` (``FILE_SCHEMA``), and the scan's
    ``stats``."""

    runs: pa.Table | pa.RecordBatchReader
    num_runs: int
    rejects: pa.Table
    files: pa.Table
    stats: CacheStats


def folder_rows(raw_dir: Path, cache_dir: Path, snapshot: str | None = None,
                dates: list[str] | None = None) -> FolderRows:
    """``ingest_folder_cached(raw_dir, cache_dir, snapshot=snapshot)``'s tables for a run's ingest.

    When the cache still holds the state ``snapshot`` (the sensor's tick or the partition discovery that started
    the run), its runs are streamed from the cache's files a record batch at a time (``parse_cache.stream_cache``:
    the cache's runs are never loaded whole), its files and rejects read whole; otherwise the folder is scanned
    and the rows are in memory. Either way, the rows of ``ingest_folder(raw_dir)`` as that state saw it.
    ``dates``: the run dates the caller keeps (it filters the runs itself): a stream then skips the cache's
    record batches that hold none of them (``stream_cache``'s ``dates``; ``num_runs`` still counts every run).

    Raises:
        FileNotFoundError: ``raw_dir`` is missing (when scanned).
        RuntimeError: a parse worker failed.
    """
    raw_dir, cache_dir = Path(raw_dir), Path(cache_dir)
    stream = stream_cache(cache_dir, raw_dir, snapshot, tuple(FILE_SCHEMA.names), rejects=True,
                          dates=dates) if snapshot else None
    if stream is not None:
        files = stream.files.cast(FILE_SCHEMA)
        stats = CacheStats(files.num_rows, files.num_rows, 0, 0, 0, True, snapshot, load_changes(cache_dir, snapshot))
        return FolderRows(stream.runs, stream.num_runs, stream.rejects, files, stats)
    result, stats = ingest_folder_cached(raw_dir, cache_dir, snapshot=snapshot)
    return FolderRows(result.runs, result.runs.num_rows, result.rejects, result.files, stats)
