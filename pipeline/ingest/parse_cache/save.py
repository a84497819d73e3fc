"""Saving a scan's result as the next cache state: a new base, or a delta beside the current base holding only the
files parsed since it (``save_cache``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.parse import IngestResult, ParsedBlocks
from pipeline.ingest.parse_cache.listing import LISTING_FILE, LISTING_IN_FILES, as_listing, listing_table
from pipeline.ingest.parse_cache.lookup import file_dependencies
from pipeline.ingest.parse_cache.rows import MAX_SLICES, MAX_SPLICES, row_offsets, rows_of_files, true_runs
from pipeline.ingest.parse_cache.store import (
    CACHE_FILE_SCHEMA,
    DELTA_PREFIX,
    DELTA_TABLES,
    MAX_CACHE_CHUNKS,
    Cache,
    CacheChanges,
    parser_version,
    stamped_table,
    write_base,
    write_cache_file,
    write_cache_parts,
)
from pipeline.ingest.scan import Folders, Listing
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA


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
            write_cache_file(stamped_table(table, delta_stamp), cache_dir / f"{DELTA_PREFIX}{name}.arrow")
    else:
        parsed_files = result.read("files") if isinstance(result, ParsedBlocks) else result.files
        files = _files_to_save(parsed_files, listed, dependencies=_saved_dependencies(
            parsed_files.select(["source_file", "sha256"]), kept_dependencies, parsed))
        del parsed_files
        for name, schema in (("runs", RUN_SCHEMA), ("rejects", QUARANTINE_SCHEMA)):
            if isinstance(result, ParsedBlocks):
                write_cache_parts(stamped_table(schema.empty_table(), stamp).schema,
                                  result.groups(name, MAX_CACHE_CHUNKS), cache_dir / f"{name}.arrow")
            else:
                write_base(getattr(result, name), stamp, cache_dir / f"{name}.arrow")
        write_base(files, stamp, cache_dir / "files.arrow")
        # after the base: a reader between the two finds a delta on another base, and ignores it
        for name, _ in DELTA_TABLES:
            (cache_dir / f"{DELTA_PREFIX}{name}.arrow").unlink(missing_ok=True)
    if folders is not None:
        in_files = _listing_in_files(listed, *((result.files, plan) if delta is not None else (files, None)))
        if in_files:
            (cache_dir / "listing.arrow").unlink(missing_ok=True)
        else:
            write_cache_file(stamped_table(as_listing(listed), stamp), cache_dir / "listing.arrow")
        folder_rows = pa.table({"rel": pa.array(folders.rel, pa.string()),
                                "mtime_ns": pa.array(folders.mtime_ns, pa.int64()),
                                "first": pa.array(folders.first, pa.int64()),
                                "count": pa.array(folders.count, pa.int64())})
        listing_at = LISTING_IN_FILES if in_files else LISTING_FILE
        write_cache_file(stamped_table(folder_rows, {**stamp, "listing": listing_at}), cache_dir / "folders.arrow")
    else:
        for name in ("listing", "folders"):
            (cache_dir / f"{name}.arrow").unlink(missing_ok=True)
    if changes is not None:
        write_cache_file(stamped_table(pa.table({"source_file": changes.touched}),
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
    if len(np.unique(places)) > MAX_SPLICES or len(true_runs(base_keep)[0]) > MAX_SLICES:
        return None  # loading it back would splice at too many places, or copy the base instead of slicing it
    return _DeltaPlan(in_delta, base_keep, places, fresh, kept_mtime_ns)


def _delta_tables(plan: _DeltaPlan, result: IngestResult, files: pa.Table) -> dict[str, pa.Table] | None:
    """The delta's tables: ``files`` (the delta files' rows in ``CACHE_FILE_SCHEMA``, ``_files_to_save``) with
    ``base_place``, their ``runs`` and ``rejects`` rows, and ``keep``. None when a table's per-file row counts
    (ledger columns ``runs``, ``rejected``) do not add up to its rows."""
    tables = {"files": files.append_column("base_place", pa.array(plan.places, pa.int64())),
              "keep": pa.table({"keep": pa.array(plan.base_keep, pa.bool_())})}
    for name, count in (("runs", "runs"), ("rejects", "rejected")):
        table, offsets = getattr(result, name), row_offsets(result.files, count)
        if offsets[-1] != table.num_rows:
            return None
        tables[name] = rows_of_files(table, plan.in_delta, offsets)
    return tables


def _files_to_save(files: pa.Table, listed: pa.Table, mask: np.ndarray | None = None,
                   dependencies: pa.Table | None = None) -> pa.Table:
    """The rows of ``files`` (a result's, ``FILE_SCHEMA``; those where ``mask`` is True, or all) with the cache's
    columns (``CACHE_FILE_SCHEMA``): the scan's ``mtime_ns`` (from ``listed``, ``listing_table``) and the sidecar
    and manifest sha256 (``dependencies``, one row per chosen file, or looked up here for the chosen files)."""
    rows = files if mask is None else rows_of_files(files, mask, row_offsets(files, None))
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
