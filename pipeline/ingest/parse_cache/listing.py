"""The scan a cache state was saved from (``listing`` and ``folders``), read back for the sensor's quick scan
(``load_scan``), and what a quick scan must look up again (``moved_entries``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.ingest.parse_cache.store import mapped_of
from pipeline.ingest.scan import Folders, Listing


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


# a file's scan as the cache's file rows hold it, and the names a ``Listing``'s table gives the same columns
SCAN_COLUMNS = ("source_file", "size_bytes", "mtime_ns")


_LISTING_NAMES = ["rel", "size", "mtime_ns"]


def as_listing(files: pa.Table) -> pa.Table:
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


# where a saved scan's listing is (``folders.arrow``'s stamp, key "listing"): the state's own file rows, or a file
LISTING_IN_FILES, LISTING_FILE = "files", "listing.arrow"


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
    folders, stamp = mapped_of(cache_dir / "folders.arrow", generation)
    if folders is None:
        return None
    if stamp.get("listing") == LISTING_IN_FILES:
        files = state_files()
        listing = None if files is None else as_listing(files)
    else:
        listing = mapped_of(cache_dir / "listing.arrow", generation)[0]
    if listing is None:
        return None
    # the listing stays Arrow: a quick scan takes most of it as slices (scan_tree), never as Python lists
    return (Listing(table=listing.select(_LISTING_NAMES).replace_schema_metadata(None)),
            Folders(*(folders[name].to_pylist() for name in ("rel", "mtime_ns", "first", "count"))))
