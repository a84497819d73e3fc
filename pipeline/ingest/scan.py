"""List a raw folder: every entry that is not a real folder, with its stat, in one fixed scan order.

Symlinked folders are recorded, never entered (no loops, no double counting); symlinked files are listed and read
later like any file.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "runs.csv"
# A byte of a file name that is not UTF-8 is listed as ``\xNN`` (backslash, x, two lowercase hex digits): the
# name must become text in the ledger and the marts. Such a file is never opened (``invalid_file_name``).
_ESCAPED_BYTE = re.compile(r"\\x([0-9a-f]{2})")


def listed_name(name: str) -> str:
    r"""A file name as the scan lists it: itself when it is UTF-8, else its undecodable bytes as ``\xNN``
    (``os.fsdecode`` keeps them as lone surrogates, which no Arrow string, hash or report can hold)."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def undecodable_path(raw_dir: str, rel: str) -> str | None:
    """The path on disk (with ``os.fsdecode``'s surrogates) of a ``rel`` (relative to ``raw_dir``) that
    ``listed_name`` escaped, when that entry exists; None for every other path."""
    if "\\x" not in rel:
        return None
    original = _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m[1], 16)), rel)
    path = os.path.join(raw_dir, original)
    return path if original != rel and os.path.lexists(path) else None


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
        name = listed_name(entry.name)
        regular = regular and name == entry.name  # an escaped name is not opened, so never cached by its stat
        listing.rel.append(prefix + name)
        listing.size.append(st.st_size if regular else None)
        listing.mtime_ns.append(st.st_mtime_ns if regular else None)
    for entry in subfolders:
        try:
            children = _sorted_entries(entry.path)
        except OSError:  # an unreadable sub-folder is listed itself: ingest records it with a reason
            listing.rel.append(prefix + listed_name(entry.name))
            listing.size.append(None)
            listing.mtime_ns.append(None)
            continue
        _scan_into(children, f"{prefix}{listed_name(entry.name)}/", listing)


def list_files(raw_dir: Path) -> list[Path]:
    """``scan_folder`` as paths: regular files, symlinks to files, broken symlinks and symlinks to folders.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    return [Path(raw_dir) / rel for rel in scan_folder(raw_dir).rel]
