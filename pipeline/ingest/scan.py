"""List a raw folder: every entry that is not a real folder, with its stat, in one fixed scan order.

Symlinked folders are recorded, never entered (no loops, no double counting); symlinked files are listed and read
later like any file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Listing:
    """The files under a raw folder in scan order: ``rel`` POSIX paths relative to it, and per file ``size`` and
    ``mtime_ns`` from ``stat`` (symlinks followed), both None for entries that are not regular files (symlinked
    folders, broken symlinks, special files, and sub-folders that could not be listed: those are entries of their
    own, so their loss is a ledger row, never a silent gap)."""

    rel: list[str]
    size: list[int | None]
    mtime_ns: list[int | None]


def scan_folder(raw_dir: Path) -> Listing:
    """Every entry under ``raw_dir`` that is not a real folder, with its stat, in scan order: per folder its files
    and symlinks sorted by name, then its sub-folders in name order (the order of ``os.walk`` top-down with sorted
    names). Symlinked folders are recorded, never entered, so a symlink loop cannot hang the scan.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
        PermissionError: ``raw_dir`` itself cannot be listed (one line naming it and the cause).
    """
    if not Path(raw_dir).is_dir():
        raise FileNotFoundError(f"raw folder {raw_dir} does not exist (set PIPELINE_RAW_DIR)")
    try:
        entries = _sorted_entries(os.fspath(raw_dir))
    except OSError as exc:
        raise PermissionError(f"raw folder {raw_dir} cannot be listed: {exc.strerror or exc}") from exc
    listing = Listing([], [], [])
    _scan_into(entries, "", listing)
    return listing


def _sorted_entries(folder: str) -> list[os.DirEntry]:
    with os.scandir(folder) as scan:
        return sorted(scan, key=lambda e: e.name)


def _scan_into(entries: list[os.DirEntry], prefix: str, listing: Listing) -> None:
    subfolders = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir and not entry.is_symlink():
            subfolders.append(entry)
            continue
        try:
            st = entry.stat()
            regular = not is_dir and stat.S_ISREG(st.st_mode)
        except OSError:
            regular = False
        listing.rel.append(prefix + entry.name)
        listing.size.append(st.st_size if regular else None)
        listing.mtime_ns.append(st.st_mtime_ns if regular else None)
    for entry in subfolders:
        try:
            children = _sorted_entries(entry.path)
        except OSError:  # an unreadable sub-folder is listed itself: ingest records it with a reason
            listing.rel.append(prefix + entry.name)
            listing.size.append(None)
            listing.mtime_ns.append(None)
            continue
        _scan_into(children, f"{prefix}{entry.name}/", listing)


def list_files(raw_dir: Path) -> list[Path]:
    """``scan_folder`` as paths: regular files, symlinks to files, broken symlinks and symlinks to folders.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    return [Path(raw_dir) / rel for rel in scan_folder(raw_dir).rel]
