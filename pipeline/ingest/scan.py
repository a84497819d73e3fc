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
from typing import Callable

import numpy as np
import pyarrow as pa

MANIFEST_NAME = "runs.csv"
MAX_SLICES = 64  # a quick scan's listing is at most this many zero-copy slices, else one copy (take)
# A file name must become text (the ledger, the marts) even when it is not UTF-8: each byte that is not UTF-8 is
# listed as ESCAPE_MARK (U+FFFD, the replacement character) and its two hex digits, and an ESCAPE_MARK the name
# itself holds is listed twice, so two names never share a listed name (a UTF-8 name, even one spelled with the
# text "\xff", is listed as itself). A name listed escaped is never opened (``invalid_file_name``).
ESCAPE_MARK = "\ufffd"
# The opt-in date-folder layout (docs/operations.md, "Sensor fast path"): every result file lies under a top-level
# folder named by its night, RAW/<YYYY-MM-DD>/..., and a night's files land in that night's folder (or a newer one).
DATE_FOLDER = re.compile(r"\d{4}-\d{2}-\d{2}")


def listed_name(name: str) -> str:
    """A file name (as ``os.fsdecode`` gives it) as the scan lists it: itself when it is UTF-8 without U+FFFD,
    else escaped: each byte that is not UTF-8 (a lone surrogate U+DC80-U+DCFF of ``os.fsdecode``, which no Arrow
    string, hash or report can hold) as U+FFFD and two lowercase hex digits, and each U+FFFD as two. Different
    names give different listed names (U+FFFD is followed by a second one or by a hex digit, never both)."""
    if ESCAPE_MARK not in name:
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    return "".join(f"{ESCAPE_MARK}{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff"
                   else ESCAPE_MARK * 2 if c == ESCAPE_MARK else c for c in name)


def is_escaped(rel: str) -> bool:
    """Whether the listed path ``rel`` had a name escaped by ``listed_name`` (it is not the path on disk, and is
    never opened)."""
    return ESCAPE_MARK in rel


class Listing:
    """The files under a raw folder in scan order: ``rel`` POSIX paths relative to it, and per file ``size`` and
    ``mtime_ns`` from ``stat`` (symlinks followed), both None for entries that are not regular files (symlinked
    folders, broken symlinks, special files, and sub-folders that could not be listed: those are entries of their
    own, so their loss is a ledger row, never a silent gap).

    Held as Python lists (a scan that listed every folder) or as an Arrow table (``table``: ``rel`` string,
    ``size`` and ``mtime_ns`` int64; a quick scan that took most folders from the saved one, which stays in
    Arrow); either form is built from the other on first use."""

    __slots__ = ("_lists", "_table")

    def __init__(self, rel: list[str] | None = None, size: list[int | None] | None = None,
                 mtime_ns: list[int | None] | None = None, *, table: pa.Table | None = None):
        self._lists = None if table is not None else \
            (rel if rel is not None else [], size if size is not None else [], mtime_ns if mtime_ns is not None else [])
        self._table = table

    def _columns(self) -> tuple[list, list, list]:
        if self._lists is None:
            self._lists = tuple(self._table[name].to_pylist() for name in ("rel", "size", "mtime_ns"))
        return self._lists

    @property
    def rel(self) -> list[str]:
        return self._columns()[0]

    @property
    def size(self) -> list[int | None]:
        return self._columns()[1]

    @property
    def mtime_ns(self) -> list[int | None]:
        return self._columns()[2]

    @property
    def table(self) -> pa.Table:
        """The listing as Arrow: ``rel`` (string), ``size`` and ``mtime_ns`` (int64, null for entries that are
        not regular files), in scan order."""
        if self._table is None:
            rel, size, mtime_ns = self._lists
            self._table = pa.table({"rel": pa.array(rel, pa.string()), "size": pa.array(size, pa.int64()),
                                    "mtime_ns": pa.array(mtime_ns, pa.int64())})
        return self._table

    def keep_table_only(self) -> None:
        """Hold the listing as Arrow alone from now on (built when missing), letting the Python lists go: a str
        and two int objects per file, far larger than the table's columns. They are built again from the table if
        asked for."""
        self.table  # noqa: B018 — built from the lists before they go
        self._lists = None

    def __len__(self) -> int:
        return len(self._lists[0]) if self._lists is not None else self._table.num_rows

    def rels_at(self, positions: list[int]) -> list[str]:
        """``rel`` of the entries at ``positions``, without turning an Arrow listing into lists."""
        if self._lists is not None:
            return [self._lists[0][at] for at in positions]
        return self._table["rel"].take(pa.array(positions, pa.int64())).to_pylist()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Listing):
            return NotImplemented
        return self._columns() == other._columns()

    def __repr__(self) -> str:
        return f"Listing({len(self)} entries)"


@dataclass(frozen=True)
class Folders:
    """The real folders a scan entered, in walk order: ``rel`` ("" for the raw folder itself), ``mtime_ns`` (the
    folder's mtime when the scan listed it; None when it may not be trusted next time: too recent, holding a
    too-recent file, holding a name that had to be escaped, or not listable), and ``first``/``count``, the slice
    of the listing that holds the folder's own entries (not its sub-folders')."""

    rel: list[str]
    mtime_ns: list[int | None]
    first: list[int]
    count: list[int]


def scan_folder(raw_dir: Path) -> Listing:
    """Every entry under ``raw_dir`` that is not a real folder, with its stat, in scan order: per folder its files
    and symlinks sorted by name, then its sub-folders in name order (the order of ``os.walk`` top-down with sorted
    names). Symlinked folders are recorded, never entered, so a symlink loop cannot hang the scan.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
        PermissionError: ``raw_dir`` itself cannot be listed (one line naming it and the cause).
    """
    return scan_tree(raw_dir)[0]


def settled_date_folders(previous: tuple[Listing, Folders]) -> frozenset[str]:
    """Under the date-folder layout (``DATE_FOLDER``): the top-level date folders of the ``previous`` scan but the
    newest, which a quick scan may take as they were without a ``stat`` (``scan_tree``'s ``settled``): a new
    night lands in the newest folder or a newer one, so only those, new folders and anything outside the date
    folders are looked at."""
    dates = sorted(rel for rel in previous[1].rel if rel and "/" not in rel and DATE_FOLDER.fullmatch(rel))
    return frozenset(dates[:-1])


def scan_tree(raw_dir: Path, previous: tuple[Listing, Folders] | None = None, trusted_before_ns: int = 0,
              on_many: tuple[int, Callable[[], None]] | None = None,
              settled: frozenset[str] = frozenset()) -> tuple[Listing, Folders]:
    """``scan_folder``, and the folders it entered; given the ``previous`` scan, a folder whose mtime is the one
    recorded then is not listed again: its entries and their stats are taken from that scan.

    A folder's mtime moves when an entry is added, removed or renamed in it, which is how result files arrive
    (written, or written elsewhere and moved in). It does not move when a file is rewritten in place: a scan with
    ``previous`` does not see such a rewrite, which the next scan without it (every run's ingest, the nightly
    refresh) does. A folder is recorded as trusted only when its mtime and its files' mtimes are older than
    ``trusted_before_ns`` (the racy-clean rule the parse cache uses for files) and no name in it was escaped.

    Args:
        raw_dir: the folder to scan.
        previous: an earlier ``scan_tree`` of the same folder, or None for a full scan.
        trusted_before_ns: mtimes at or after this instant (ns since the epoch) are not trusted next time.
        on_many: (n, callback): ``callback()`` is called once, mid-scan, as soon as n entries are listed (the
            caller starts work a large folder needs while the rest is listed).
        settled: top-level folder names (with ``previous``) whose saved subtrees are taken as the previous scan
            recorded them, without a ``stat`` (``settled_date_folders``: a file added there is not seen until a
            scan without it).
    Returns:
        (listing, folders).
    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
        PermissionError: ``raw_dir`` itself cannot be listed (one line naming it and the cause).
    """
    if not Path(raw_dir).is_dir():
        raise FileNotFoundError(f"raw folder {raw_dir} does not exist (set PIPELINE_RAW_DIR)")
    walk = _Walk(previous, trusted_before_ns, on_many)
    if previous is not None:
        walk.stat_saved_folders(os.fspath(raw_dir), settled)
    walk.visit(os.fspath(raw_dir), "")
    return walk.result(), walk.folders


class _Walk:
    """One scan in progress: the entries listed so far, the folders entered, and the previous scan's folders by
    ``rel``. A folder taken from the previous scan is recorded as a slice of that scan's listing (``segments``)
    instead of copied entry by entry: a night's quick scan over a million files lists a few folders and takes
    ~140,000, and the listing is then the saved Arrow table cut where new folders go in (zero-copy slices; one
    ``take`` when the cuts are many)."""

    def __init__(self, previous: tuple[Listing, Folders] | None, trusted_before_ns: int,
                 on_many: tuple[int, Callable[[], None]] | None = None):
        self.rel: list[str] = []  # the entries this scan listed itself, in the order it listed them
        self.size: list[int | None] = []
        self.mtime_ns: list[int | None] = []
        self.segments: list[list[int]] = []  # [from previous scan?, start, count], in scan order
        self.length = 0  # entries so far, listed or taken
        self.folders = Folders([], [], [], [])
        self.on_many = on_many
        self.trusted_before_ns = trusted_before_ns
        self.before = previous[0] if previous else None
        known = previous[1] if previous else Folders([], [], [], [])
        self.known = {rel: i for i, rel in enumerate(known.rel)}
        self.known_folders = known
        self.children: dict[str, list[str]] = {}
        for rel in known.rel[1:]:
            self.children.setdefault(rel.rpartition("/")[0], []).append(rel)
        self.subtree_end: list[int] = []  # index after the last saved folder under each saved folder
        self.moved_before: np.ndarray = np.zeros(1, dtype=np.int64)  # moved or untrusted folders before each index

    def stat_saved_folders(self, raw_dir: str, settled: frozenset[str] = frozenset()) -> None:
        """Stat every folder of the saved scan up front, so a saved folder whose whole subtree is unmoved is taken
        in one step (``_take_subtree``) instead of folder by folder: onto a million runs ~140,000 folders, of
        which a night moves a handful, and a walk's Python work per folder costs as much as the folder's ``stat``.
        A folder whose name was escaped, or recorded untrusted, counts as moved (it is listed again). A folder
        under a ``settled`` top-level folder keeps its recorded mtime unstatted (``scan_tree``)."""
        known = self.known_folders
        now: list[int | None] = []
        prefix, stat_of = f"{raw_dir}/", os.stat  # no os.path.join: its checks would weigh on a loop this tight
        for rel, recorded in zip(known.rel, known.mtime_ns):
            if settled and rel.partition("/")[0] in settled:
                now.append(recorded)
                continue
            try:
                now.append(stat_of(prefix + rel if rel else raw_dir).st_mtime_ns)
            except OSError:
                now.append(None)
        moved = [recorded is None or recorded != mtime or ESCAPE_MARK in rel
                 for rel, recorded, mtime in zip(known.rel, known.mtime_ns, now)]
        self.moved_before = np.concatenate([[0], np.cumsum(moved, dtype=np.int64)])
        # the saved folders are in walk order (pre-order): a folder's subtree ends at the next folder no deeper
        depth = [rel.count("/") + 1 if rel else 0 for rel in known.rel]
        end, open_folders = [len(depth)] * len(depth), []
        for i, d in enumerate(depth):
            while open_folders and depth[open_folders[-1]] >= d:
                end[open_folders.pop()] = i
            open_folders.append(i)
        self.subtree_end = end

    def _take_subtree(self, known: int) -> bool:
        """Take saved folder ``known`` and every saved folder under it from the saved scan at once, when none of
        them moved (``stat_saved_folders``); False, taking nothing, otherwise."""
        if not self.subtree_end:
            return False
        end = self.subtree_end[known]
        if self.moved_before[end] != self.moved_before[known]:
            return False
        saved = self.known_folders
        start, first = self.length, saved.first[known]
        entries = saved.first[end - 1] + saved.count[end - 1] - first  # a subtree's entries are contiguous
        self._segment(True, first, entries)
        shift = start - first
        folders = self.folders
        folders.rel.extend(saved.rel[known:end])
        folders.mtime_ns.extend(saved.mtime_ns[known:end])
        folders.first.extend(at + shift for at in saved.first[known:end])
        folders.count.extend(saved.count[known:end])
        return True

    def result(self) -> Listing:
        """The listing in scan order: the listed entries as lists when nothing was taken from the previous
        scan, else one Arrow table (previous rows and listed ones, in scan order)."""
        if not any(previous for previous, _, _ in self.segments):
            return Listing(self.rel, self.size, self.mtime_ns)
        before = self.before.table
        if len(self.segments) == 1 and self.segments[0] == [True, 0, before.num_rows]:
            return Listing(table=before)  # every folder taken: the saved listing as it is
        listed = pa.table({"rel": pa.array(self.rel, pa.string()), "size": pa.array(self.size, pa.int64()),
                           "mtime_ns": pa.array(self.mtime_ns, pa.int64())}).cast(before.schema)
        if len(self.segments) <= MAX_SLICES:  # the usual night: the saved listing cut where new folders go in
            return Listing(table=pa.concat_tables([(before if previous else listed).slice(start, count)
                                                   for previous, start, count in self.segments]))
        starts = np.array([start + (0 if previous else before.num_rows) for previous, start, _ in self.segments],
                          dtype=np.int64)
        counts = np.array([count for _, _, count in self.segments], dtype=np.int64)
        # row i of segment k is starts[k] + i: repeat each start, add each row's offset in its segment
        offsets = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = np.repeat(starts, counts) + offsets
        both = pa.concat_tables([before, listed])
        return Listing(table=both.take(pa.array(rows)))

    def _segment(self, previous: bool, start: int, count: int) -> None:
        if count == 0:
            return
        last = self.segments[-1] if self.segments else None
        if last is not None and last[0] == previous and last[1] + last[2] == start:
            last[2] += count  # contiguous with the last one: folders taken in the saved order merge
        else:
            self.segments.append([previous, start, count])
        self.length += count

    def visit(self, path: str, rel: str) -> None:
        known = self.known.get(rel)
        if known is not None and self._take_subtree(known):
            return
        recorded = self.known_folders.mtime_ns[known] if known is not None else None
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = None
        if recorded is not None and mtime == recorded:
            self._reuse(path, rel, known)
            return
        try:
            entries = _sorted_entries(path)
        except OSError as exc:
            if not rel:
                raise PermissionError(f"raw folder {path} cannot be listed: {exc.strerror or exc}") from exc
            # an unreadable sub-folder is listed itself: ingest records it with a reason
            self._record(rel, None, [(rel, None, None)])
            return
        own, subfolders, trusted = [], [], mtime is not None and mtime < self.trusted_before_ns
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            name = listed_name(entry.name)
            trusted = trusted and name == entry.name
            if is_dir and not entry.is_symlink():
                subfolders.append((entry.path, prefix + name))
                continue
            try:
                st = entry.stat()
                regular = not is_dir and stat.S_ISREG(st.st_mode)
            except OSError:
                regular = False
            regular = regular and name == entry.name  # an escaped name is not opened, so never cached by its stat
            own.append((prefix + name, st.st_size if regular else None, st.st_mtime_ns if regular else None))
            trusted = trusted and (not regular or st.st_mtime_ns < self.trusted_before_ns)
        self._record(rel, mtime if trusted else None, own)
        for child_path, child_rel in subfolders:
            self.visit(child_path, child_rel)

    def _reuse(self, path: str, rel: str, known: int) -> None:
        first, count = self.known_folders.first[known], self.known_folders.count[known]
        start = self.length
        self._segment(True, first, count)
        self._folder(rel, self.known_folders.mtime_ns[known], start)
        for child in self.children.get(rel, ()):  # no name in a trusted folder was escaped
            self.visit(os.path.join(path, child.rpartition("/")[2]), child)

    def _record(self, rel: str, mtime_ns: int | None, entries: list[tuple[str, int | None, int | None]]) -> None:
        start, listed = self.length, len(self.rel)
        for entry_rel, size, mtime in entries:
            self.rel.append(entry_rel)
            self.size.append(size)
            self.mtime_ns.append(mtime)
        self._segment(False, listed, len(entries))
        self._folder(rel, mtime_ns, start)

    def _folder(self, rel: str, mtime_ns: int | None, first: int) -> None:
        folders = self.folders
        folders.rel.append(rel)
        folders.mtime_ns.append(mtime_ns)
        folders.first.append(first)
        folders.count.append(self.length - first)
        if self.on_many is not None and self.length >= self.on_many[0]:
            self.on_many, callback = None, self.on_many[1]
            callback()


def _sorted_entries(folder: str) -> list[os.DirEntry]:
    with os.scandir(folder) as scan:
        return sorted(scan, key=lambda e: e.name)


def list_files(raw_dir: Path) -> list[Path]:
    """``scan_folder`` as paths: regular files, symlinks to files, broken symlinks and symlinks to folders.

    Raises:
        FileNotFoundError: ``raw_dir`` does not exist or is not a folder.
    """
    return [Path(raw_dir) / rel for rel in scan_folder(raw_dir).rel]
