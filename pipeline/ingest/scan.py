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
    folders, broken symlinks)."""

    rel: list[str]
    size: list[int | None]
    mtime_ns: list[int | None]


def scan_folder(raw_dir: Path) -> Listing:
    """Every entry under ``raw_dir`` that is not a real folder, with its stat, in scan order: per folder its files
    and symlinks sorted by name, then its sub-folders in name order (the order of ``os.walk`` top-down with sorted
    names). Symlinked folders are recorded, never entered, so a symlink loop cannot hang the scan.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    if not Path(raw_dir).is_dir():
        raise FileNotFoundError(f"raw folder {raw_dir} does not exist (set PIPELINE_RAW_DIR)")
    listing = Listing([], [], [])
    _scan_into(os.fspath(raw_dir), "", listing)
    return listing


def _scan_into(folder: str, prefix: str, listing: Listing) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:  # an unreadable sub-folder: nothing to list (os.walk's default)
        return
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
        _scan_into(entry.path, f"{prefix}{entry.name}/", listing)


def list_files(raw_dir: Path) -> list[Path]:
    """``scan_folder`` as paths: regular files, symlinks to files, broken symlinks and symlinks to folders.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    return [Path(raw_dir) / rel for rel in scan_folder(raw_dir).rel]
