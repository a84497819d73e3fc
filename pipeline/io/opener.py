"""The one way the pipeline opens a file it did not write: run logs, sidecars, ``runs.csv``, power logs,
per-request records and the reference CSVs all come through here.

A file is opened only when it resolves (every symlink and ``..`` followed) under its root, is a regular file and
is no larger than its kind's cap (``SIZE_CAPS``). The open never blocks (``O_NONBLOCK``: a FIFO swapped in after a
listing would otherwise wait for a writer forever) and the checks are made on the opened descriptor, so a file
replaced between a listing and the open is judged as what was opened. A refusal is a ``RefusedFile`` whose
``reason_code`` the caller records (a ledger row, a quarantine reason, a power reason); nothing is read after it.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import BinaryIO

MiB = 1 << 20
# Bytes a file of each kind may hold. Run logs and per-request records are streamed when large, so their caps only
# keep a sparse or runaway file from being read for minutes; the others are read whole and are small by nature
# (a sidecar is a few keys; a day of 1 Hz telemetry for 8 GPUs is ~35 MiB).
SIZE_CAPS: dict[str, int] = {
    "run_log": 2048 * MiB,
    "per_request": 1024 * MiB,
    "sidecar": 1 * MiB,
    "manifest": 64 * MiB,
    "power_log": 512 * MiB,
    "reference": 16 * MiB,
}
OUTSIDE_ROOT = "outside_raw_dir"
NOT_REGULAR = "not_a_regular_file"
TOO_LARGE = "too_large"


class RefusedFile(Exception):
    """A file the opener would not read. ``reason_code``: ``outside_raw_dir`` (it resolves outside its root),
    ``not_a_regular_file`` (a FIFO, socket, device or folder) or ``too_large`` (over its kind's cap);
    ``detail`` is one sentence naming the file and why."""

    def __init__(self, reason_code: str, detail: str):
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


def os_error_words(exc: OSError) -> str:
    """``"<error type>: <its own words>"`` of an OSError, e.g. ``"PermissionError: Permission denied"``, without the
    path Python appends to its text. A detail that reaches a mart or the ledger names its file by the column beside
    it (relative to the raw folder), never by this machine's absolute path, which differs between machines and can
    tell more than the file's name. An error without an ``strerror`` (raised with a message of its own) keeps that
    message."""
    return f"{type(exc).__name__}: {exc.strerror or exc}"


def inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """``path`` resolves, with every symlink and ``..`` followed, to ``root`` or below it (``root`` resolved too)."""
    real_root = os.path.realpath(root)
    return os.path.commonpath([real_root, os.path.realpath(path)]) == real_root


def special_kind(mode: int) -> str:
    """What a file that is not regular is, for messages: ``FIFO``, ``socket``, ``character device``, ``block
    device`` or ``special file`` (``mode``: ``st_mode`` of ``os.stat``)."""
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def _base(name: str) -> str:
    """The file's own name for a message: details land in marts, where the machine's paths do not belong."""
    return os.path.basename(name)


def _refuse_special(name: str, mode: int) -> None:
    """Raise unless ``mode`` is a regular file's: ``IsADirectoryError`` for a folder (callers treat it as no
    file, as ``open`` does), ``RefusedFile`` (``not_a_regular_file``) for anything else."""
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", name)
    raise RefusedFile(NOT_REGULAR, f"{_base(name)} is a {special_kind(mode)}, not a regular file: not read")


def _open_checked(name: str, kind: str, root: str | os.PathLike | None) -> tuple[int, int]:
    """(descriptor, size in bytes) of ``name`` opened without blocking, after the checks of ``open_regular``."""
    if root is not None and not inside(name, root):
        raise RefusedFile(OUTSIDE_ROOT, f"{_base(name)} resolves outside its folder: not followed, not read")
    _refuse_special(name, os.stat(name).st_mode)  # before the open: a socket cannot be opened, a device need not be
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _refuse_special(name, info.st_mode)  # again on what was opened: the file may have been swapped meanwhile
        cap = SIZE_CAPS[kind]
        if info.st_size > cap:
            raise RefusedFile(TOO_LARGE, f"{_base(name)} holds {info.st_size:,} bytes, over the {cap:,} a {kind} file may "
                                         "hold: not read")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def open_regular(path: str | os.PathLike, kind: str, root: str | os.PathLike | None = None) -> BinaryIO:
    """Open ``path`` for reading as a binary file object, when it is a regular file within ``kind``'s cap and, with
    ``root``, inside ``root``. For files streamed in parts; the caller closes it (``with open_regular(...)``).

    Args:
        path: the file.
        kind: a key of ``SIZE_CAPS`` (``run_log``, ``per_request``, ``sidecar``, ``manifest``, ``power_log``,
            ``reference``).
        root: the folder the file must resolve into; None when the caller has confined it already.
    Raises:
        RefusedFile: outside ``root``, not a regular file, or larger than ``SIZE_CAPS[kind]`` bytes.
        IsADirectoryError: ``path`` is a folder.
        FileNotFoundError, PermissionError, OSError: the file cannot be opened at all.
    """
    fd, _ = _open_checked(os.fspath(path), kind, root)
    return os.fdopen(fd, "rb")


def read_whole(path: str | os.PathLike, kind: str, root: str | os.PathLike | None = None,
               stream_over: int | None = None) -> tuple[int, bytes]:
    """(size in bytes by ``fstat``, whole content) of ``path``, opened and checked as ``open_regular`` does (same
    arguments). With ``stream_over``, a file larger than that is not read: its content is ``b""`` and the caller
    streams it through ``open_regular``. Descriptor calls rather than a buffered file object: the parse reads
    every run log and sidecar this way, and most are a few KiB. A file that grows past its cap while it is read
    is refused, so no more than ``SIZE_CAPS[kind] + 1`` bytes are ever held.

    Raises:
        RefusedFile: as ``open_regular``, or ``too_large`` when the file grew past the cap during the read.
        OSError: the file cannot be opened or read (``FileNotFoundError`` when it is missing).
    """
    name = os.fspath(path)
    fd, size = _open_checked(name, kind, root)
    try:
        if stream_over is not None and size > stream_over:
            return size, b""
        data = os.read(fd, size + 1)  # a short read of a regular file is its end
        if len(data) <= size:
            return size, data
        cap = SIZE_CAPS[kind]  # the file grew since fstat: read to its end, as a buffered read() would, to the cap
        chunks, held = [data], len(data)
        while held <= cap and (chunk := os.read(fd, min(1 << 20, cap + 1 - held))):
            chunks.append(chunk)
            held += len(chunk)
        if held > cap:
            raise RefusedFile(TOO_LARGE, f"{_base(name)} grew past the {cap:,} bytes a {kind} file may hold while it was "
                                         "read: not used")
        return size, b"".join(chunks)
    finally:
        os.close(fd)


def open_text(path: str | os.PathLike, kind: str, root: str | os.PathLike | None = None) -> io.StringIO:
    """The whole of ``path`` as text for ``csv`` readers (UTF-8, a byte-order mark dropped, newlines kept as
    written), read by ``read_whole`` (same arguments; for the reference CSVs and other small tables).

    Raises:
        RefusedFile, OSError: as ``read_whole``.
        UnicodeDecodeError: the file is not UTF-8.
    """
    return io.StringIO(read_whole(path, kind, root)[1].decode("utf-8-sig"), newline="")
