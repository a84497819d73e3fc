"""Loading the current cache state: the base and, when one was saved on it, its delta applied (``load_cache``), the
changes the last save recorded (``load_changes``) and the state's generation without reading its rows
(``cache_generation``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.ingest.parse_cache.rows import row_offsets, rows_of_files, splice_rows
from pipeline.ingest.parse_cache.store import (
    CACHE_TABLES,
    DELTA_PREFIX,
    DELTA_TABLES,
    Cache,
    CacheChanges,
    footer_stamps,
    mapped_of,
    read_stamped,
    stamps_usable,
)


def load_changes(cache_dir: Path, generation: str) -> CacheChanges | None:
    """The changes saved with cache ``generation`` (``save_cache``'s ``changes``; only ``touched`` is kept), or
    None when there are none, they are unreadable or of another generation."""
    table, stamp = mapped_of(cache_dir / "changes.arrow", generation)
    if table is None or not stamp.get("base_generation"):
        return None
    return CacheChanges(stamp["base_generation"], table["source_file"].combine_chunks(), None, None,
                        tuple(stamp.get("same_content_as", ())))


def load_cache(cache_dir: Path, raw_dir: Path) -> Cache | None:
    """The cache: its base, with the delta saved on it applied (``save_cache``). None when the base is missing,
    torn (mixed generations), for another folder or parser version. A delta that is torn, saved on another
    base or does not fit it is ignored: the base alone is an older state of the folder, and the files changed
    since are parsed again."""
    loaded = read_stamped(cache_dir, CACHE_TABLES)
    if loaded is None or not stamps_usable(loaded[1], raw_dir):
        return None
    tables, stamps = loaded
    files, generation = tables["files"], str(stamps[0]["generation"])
    base = Cache(files, tables["runs"], tables["rejects"], int(stamps[0]["scan_started_ns"]), generation,
                 base_generation=generation, base_sources=files["source_file"],
                 base_keep=np.ones(files.num_rows, dtype=bool), in_delta=np.zeros(files.num_rows, dtype=bool))
    return _with_delta(base, cache_dir, raw_dir) or base


def _with_delta(base: Cache, cache_dir: Path, raw_dir: Path) -> Cache | None:
    """``base`` with its delta applied: the kept base files' rows as slices, the delta's rows spliced in at their
    places (``splice_rows``). None when there is no usable delta for this base."""
    loaded = read_delta(cache_dir, raw_dir, base.generation)
    if loaded is None:
        return None
    delta, stamp = loaded
    keep = delta["keep"]["keep"].to_numpy(zero_copy_only=False)
    if len(keep) != base.files.num_rows or delta["keep"]["keep"].null_count:
        return None
    places = delta["files"]["base_place"].to_numpy(zero_copy_only=False)
    delta_files = delta["files"].drop_columns(["base_place"])
    kept_files = rows_of_files(base.files, keep, row_offsets(base.files, None))
    merged = {}
    for name, count in (("files", None), ("runs", "runs"), ("rejects", "rejected")):
        offsets = row_offsets(base.files, count)
        if offsets[-1] != getattr(base, name).num_rows:
            return None
        new = delta_files if name == "files" else delta[name]
        merged[name] = splice_rows(rows_of_files(getattr(base, name), keep, offsets), new, places.tolist(),
                                   kept_files, delta_files, count)
        if merged[name] is None:
            return None
    in_delta = np.insert(np.zeros(kept_files.num_rows, dtype=bool), places, True)
    return Cache(merged["files"], merged["runs"], merged["rejects"], int(stamp["scan_started_ns"]),
                 str(stamp["generation"]), base.generation, base.base_sources, keep, in_delta)


def read_delta(cache_dir: Path, raw_dir: Path, base_generation: str) -> tuple[dict[str, pa.Table], dict] | None:
    """The delta's tables and its stamp, when a whole delta (one generation) of this parser and folder was saved
    on the base ``base_generation``; None otherwise."""
    loaded = read_stamped(cache_dir, DELTA_TABLES, DELTA_PREFIX)
    if loaded is None or not stamps_usable(loaded[1], raw_dir):
        return None
    if loaded[1][0].get("base_generation") != base_generation:
        return None
    return loaded[0], loaded[1][0]


def delta_stamp(cache_dir: Path, raw_dir: Path, base_generation: str) -> dict | None:
    """``read_delta``'s stamp, read from the delta files' footers without their rows."""
    stamps = footer_stamps(cache_dir, DELTA_TABLES, DELTA_PREFIX)
    if stamps is None or not stamps_usable(stamps, raw_dir) or stamps[0].get("base_generation") != base_generation:
        return None
    return stamps[0]


def cache_generation(cache_dir: Path, raw_dir: Path) -> str | None:
    """The generation ``load_cache`` would return, read from the files' footers without their rows (a
    loaded cache holds every run as Arrow; its stamps are a few bytes), or None when
    ``load_cache`` would return None for a reason its stamps show (missing, torn, another folder or parser
    version; a file damaged past its footer is not found by either: the files are only ever replaced whole)."""
    stamps = footer_stamps(cache_dir, CACHE_TABLES)
    if stamps is None or not stamps_usable(stamps, raw_dir):
        return None
    delta = delta_stamp(cache_dir, raw_dir, str(stamps[0]["generation"]))
    return str((delta or stamps[0])["generation"])
