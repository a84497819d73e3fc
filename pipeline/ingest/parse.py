"""Parse listed files into run rows, reject rows and one ledger row per file, in this process or in workers.

Every file ends in exactly one place per row read: a run row (``RUN_SCHEMA``) or a reject row
(``QUARANTINE_SCHEMA``, stage ``ingest``). Each run's metadata is resolved from the file, its sidecar and its
folder's ``runs.csv`` (``pipeline.ingest.metadata.resolve``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import itertools
import multiprocessing
import multiprocessing.forkserver
import os
import posixpath
import stat
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.metadata import (
    ManifestError,
    MetadataError,
    load_manifest,
    load_sidecar,
    resolve,
)
from pipeline.ingest.parsers import SIDECAR_SUFFIX, FileReadout, Reject, read_path
from pipeline.ingest.parsers.base import interactivity
from pipeline.ingest.scan import MANIFEST_NAME, is_escaped
from pipeline.ingest.schema import (
    FIXED_SEQ,
    INTVTY_STATS,
    QUARANTINE_SCHEMA,
    RUN_COLUMNS,
    RUN_SCHEMA,
    partition_key,
)
from pipeline.io.opener import OUTSIDE_ROOT, RefusedFile, os_error_words

FILE_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("kind", pa.string()),
        ("source_format", pa.string()),
        ("size_bytes", pa.int64()),
        ("sha256", pa.string()),
        ("rows_read", pa.int32()),
        ("runs", pa.int32()),
        ("rejected", pa.int32()),
        # whether a JSON file read whole holds per-request arrays (``FileReadout.request_arrays``); null: not known
        ("request_arrays", pa.bool_()),
    ]
)


@dataclass
class IngestResult:
    """Arrow tables of one scan: ``runs`` (RUN_SCHEMA), ``rejects`` (QUARANTINE_SCHEMA) and ``files`` (FILE_SCHEMA,
    one row per file found: its kind, size, content hash and how many rows it gave)."""

    runs: pa.Table
    rejects: pa.Table
    files: pa.Table


# From this many files on, the parse is split over a pool of worker processes (``concurrent.futures``, one per core
# by default), each parsing blocks of files and writing its tables as Arrow IPC files the caller reads back (not
# pickled through a pipe). The workers are forked from multiprocessing's fork server, which has imported the parsers
# and none of the caller's modules, so they share no DuckDB or gRPC threads and start fast (multiprocessing still
# runs a main script started by path, guarded by ``if __name__ == "__main__"``, in each worker; ``python -m`` mains
# are skipped). Rows are put back in scan order, so the result is identical to the serial path. Below it, starting
# the pool costs more than it saves.
PARALLEL_MIN_FILES = 6000
PARALLEL_BLOCK_FILES = 1000  # per block, a worker writes and the parent reads three Arrow files: small beside its parse
# What a file in a worker that died gets, once the retry alone has killed its worker again (docs/inputs.md).
CRASH_REASON = "parse_crashed"


def parse_files(raw_dir: Path, rels: list[str], workers: int | None = None,
                listed: Iterable[str] | pa.Array | pa.ChunkedArray | None = None) -> IngestResult:
    """Parse the files ``rels`` (POSIX paths relative to ``raw_dir``, in ``scan_folder`` order) into runs, rejects
    and file rows, in the order of ``rels``: ``parse_blocks`` in a temporary folder, its blocks concatenated.

    Args and errors: as ``parse_blocks``.
    """
    with parse_blocks(raw_dir, rels, workers, listed) as blocks:
        return blocks.result()


def parse_blocks(raw_dir: Path, rels: list[str], workers: int | None = None,
                 listed: Iterable[str] | pa.Array | pa.ChunkedArray | None = None) -> ParsedBlocks:
    """Parse the files ``rels`` (POSIX paths relative to ``raw_dir``, in ``scan_folder`` order) into runs, rejects
    and file rows, block by block in the order of ``rels``, left where the workers wrote them (``ParsedBlocks``,
    a context manager that removes their temporary folder on leaving): a caller that writes the rows on need not
    hold them all at once.

    A worker process that dies (killed, out of memory, a crash in native code) costs only the file it was reading:
    the files its block and the other in-flight blocks had not finished are parsed again, the ones that were being
    read each alone in a one-process pool, and a file that kills that process too becomes one reject row
    (``parse_crashed``, stage ``ingest``) and one ledger row (kind ``unreadable``, no sha256, so the next run tries
    it again) instead of stopping the run.

    Args:
        raw_dir: the folder ``rels`` are relative to (sidecars and ``runs.csv`` are looked up beside each file).
        rels: the files to parse.
        workers: worker processes to parse in; default one per core when there are ``PARALLEL_MIN_FILES`` files or
            more, else none (this process parses, one block in memory). The output does not depend on it.
        listed: every file of the scan that found ``rels`` (``scan_folder``; strings, or an Arrow string array),
            when known: a run log's sidecar is then read only if the scan listed it, instead of tried on disk for
            every log (most have none).
    Raises:
        RuntimeError: the worker pool could not be started, or broke twice in a row without a file in flight (so
            no file can be blamed).
    """
    # only the sidecars of these files are ever asked for: a night's few files need not walk a million names
    sidecars = None
    if listed is not None:
        wanted = {rel + SIDECAR_SUFFIX for rel in rels}
        if isinstance(listed, (pa.Array, pa.ChunkedArray)):  # a quick scan's listing: probed, no Python strings
            sidecars = set(listed.filter(pc.is_in(listed, value_set=pa.array(list(wanted), pa.string()))).to_pylist())
        else:
            sidecars = wanted.intersection(listed)
    if workers is None:
        workers = (os.cpu_count() or 1) if len(rels) >= PARALLEL_MIN_FILES else 1
    if workers <= 1 or len(rels) < 2:
        stop_fork_server()  # the scan starts it on the files it lists, more than a serial parse may be given
        return ParsedBlocks([parse_serial(raw_dir, rels, sidecars)])
    block = max(1, min(PARALLEL_BLOCK_FILES, len(rels) // (4 * workers)))
    work = tempfile.TemporaryDirectory(prefix="inference-frontier-parse-")
    try:
        parts = _parse_in_pool(Path(raw_dir), [rels[i:i + block] for i in range(0, len(rels), block)], workers,
                               sidecars, Path(work.name))
    except BaseException:
        work.cleanup()
        raise
    finally:
        stop_fork_server()
    # every part is the rows of a run of consecutive files of rels, no two overlapping (a block, what is left of
    # one after a crash, a suspect file alone): ordered by their first file, they are in scan order
    firsts = {first for first, _ in parts}
    position = {rel: at for at, rel in enumerate(rels) if rel in firsts}
    parts.sort(key=lambda part: position[part[0]])
    return ParsedBlocks([part for _, part in parts], work)


RESULT_CHUNKS = 16  # record batches per table of a parallel parse (a parse cache table is compacted past 32)
_RESULT_SCHEMAS = {"runs": RUN_SCHEMA, "rejects": QUARANTINE_SCHEMA, "files": FILE_SCHEMA}


@dataclass
class ParsedBlocks:
    """A parse's rows in blocks of consecutive files, in scan order: each block the Arrow IPC files a worker wrote
    (``<prefix>.{runs,rejects,files}.arrow``, ``write_result``; read only when asked for) or an ``IngestResult``
    in memory (a serial parse; a file that killed its worker). A context manager: leaving it removes the
    workers' temporary folder (``work``), after which only the blocks in memory can be read."""

    parts: list[str | IngestResult]
    work: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> ParsedBlocks:
        return self

    def __exit__(self, *_: object) -> None:
        if self.work is not None:
            self.work.cleanup()

    def tables(self, name: str) -> Iterator[pa.Table]:
        """Table ``name`` ("runs", "rejects" or "files") of each block in turn."""
        from pipeline.io.storage import (
            read_arrow,  # here, not at the top: workers import this module, not DuckDB
        )

        for part in self.parts:
            yield getattr(part, name) if isinstance(part, IngestResult) else read_arrow(Path(f"{part}.{name}.arrow"))

    def groups(self, name: str, count: int) -> Iterator[pa.Table]:
        """Table ``name``'s rows as at most ``count`` tables of consecutive blocks, each one record batch, read a
        group at a time (none when there are no blocks)."""
        size = max(1, -(-len(self.parts) // count))
        tables = self.tables(name)
        for _ in range(0, len(self.parts), size):
            yield pa.concat_tables(itertools.islice(tables, size)).combine_chunks()

    def read(self, name: str) -> pa.Table:
        """Table ``name`` whole, in at most ``RESULT_CHUNKS`` record batches (a serial parse's own table)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], IngestResult):
            return getattr(self.parts[0], name)  # not copied: a serial parse of a large folder would hold two
        return pa.concat_tables([_RESULT_SCHEMAS[name].empty_table(), *self.groups(name, RESULT_CHUNKS)])

    def result(self) -> IngestResult:
        """Every table whole (``read``): the blocks and the result are never both whole in memory."""
        return IngestResult(**{name: self.read(name) for name in _RESULT_SCHEMAS})


def in_scan_order(table: pa.Table, order: pa.Array) -> pa.Table:
    """``table``'s rows sorted by the position of their ``source_file`` in ``order`` (stable: rows of one file
    keep their relative order)."""
    if table.num_rows == 0:
        return table
    position = pc.index_in(table["source_file"], value_set=order)
    return table.take(pc.sort_indices(pa.table({"position": position}), sort_keys=[("position", "ascending")]))


# What the fork server imports before it forks a worker: this module (so the parsers) and pandas, which pyarrow
# imports on its first conversion of Python values (each worker's first block would otherwise pay for that import).
_PRELOAD = [__name__, *(["pandas"] if importlib.util.find_spec("pandas") is not None else [])]


def start_fork_server() -> None:
    """Start the fork server the parse's workers are forked from (``_pool``) now, in the background.

    Its imports then overlap with the caller's own work (the folder's scan) instead of delaying the first block.
    Returns at once; a no-op when it runs already. Only worth calling once a parallel parse is certain
    (``ingest_folder_cached`` calls it mid-scan, when a folder with no parse cache has ``PARALLEL_MIN_FILES``
    files): otherwise it starts an idle process that holds pyarrow and pandas imported for nothing.
    """
    _fork_server_context()
    multiprocessing.forkserver.ensure_running()


def stop_fork_server() -> None:
    """Stop this process's fork server (``start_fork_server``, ``_pool``) once a parse's pools are done with it.

    Idle, it still holds pyarrow, pandas and the parsers imported, resident for the rest of the process: through
    every later step of an in-process run, or for the life of a sensor's or a code server's process.
    ``ensure_running`` starts it again for the next parallel parse, which pays the server's imports once more.
    Uses ``ForkServer._stop``, multiprocessing's own way to stop its server (what its tests call; there is no
    public one); on an interpreter without it the server is left running, which costs memory, not results.
    """
    stop = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


def _fork_server_context() -> multiprocessing.context.ForkServerContext:
    """multiprocessing's fork-server context, its server set to preload ``_PRELOAD`` when it starts."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


@contextmanager
def _pool(workers: int, raw_dir: Path, sidecars: set[str] | None,
          work: Path) -> Iterator[tuple[ProcessPoolExecutor, Callable[[], None]]]:
    """A pool of ``workers`` processes forked from the fork server, which imports this module (and so the parsers)
    when it starts; each worker is given ``raw_dir`` (a folder) and the sidecar listing (relative paths) once.

    Yields the pool and ``begin``: every worker waits before its first task until ``begin`` is called (it creates
    a flag file under ``work``). Call it once every block is submitted: ``ProcessPoolExecutor.submit`` starts
    workers on demand, and a worker that died while ``submit`` was starting another (a file that kills its
    parser) could fail that start with ``OSError: [Errno 9] Bad file descriptor`` in the fork server instead of
    marking the pool broken. A file, not a ``multiprocessing.Event``: the pool kills its workers when one dies,
    and a worker killed while holding the event's lock would leave the next ``set`` waiting forever. On leaving,
    ``begin`` is called whatever happened (a worker still waiting would block the pool's shutdown)."""
    context = _fork_server_context()
    flag = work / f"begin-{next(_POOL_IDS)}"
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                             initargs=(os.fspath(raw_dir), sidecars, os.fspath(flag))) as pool:
        try:
            yield pool, flag.touch
        finally:
            flag.touch()


_POOL_IDS = itertools.count()
_WORKER: dict[str, Any] = {}


def _start_worker(raw_dir: str, sidecars: set[str] | None, flag: str) -> None:
    """Pool initializer: what every block of this worker shares; then wait until every block is submitted (the
    pool's flag file exists)."""
    _WORKER.update(raw_dir=Path(raw_dir), sidecars=sidecars)
    while not os.path.exists(flag):
        time.sleep(0.002)


def _parse_block(rels: list[str], prefix: str) -> str:
    """Worker task: parse ``rels`` (``parse_serial``) into ``<prefix>.{runs,rejects,files}.arrow`` and return
    ``prefix``. Before each file its position in ``rels`` is appended to ``<prefix>.progress``, so the caller can
    tell, if this process dies, which file it was reading and which it had finished."""
    fd = os.open(prefix + ".progress", os.O_CREAT | os.O_WRONLY | os.O_APPEND)

    def marked() -> Iterator[str]:
        for position, rel in enumerate(rels):
            os.write(fd, b"%d\n" % position)
            yield rel

    try:
        write_result(parse_serial(_WORKER["raw_dir"], marked(), _WORKER["sidecars"]), Path(prefix))
    finally:
        os.close(fd)
    return prefix


def _started(prefix: str) -> int:
    """How many files of its block the task at ``prefix`` had started (0 when it never ran)."""
    try:
        with open(prefix + ".progress", "rb") as progress:
            return len(progress.read().split())
    except FileNotFoundError:
        return 0


def _parse_in_pool(raw_dir: Path, blocks: list[list[str]], workers: int, sidecars: set[str] | None,
                   work: Path) -> list[tuple[str, str | IngestResult]]:
    """The results of every block (the prefix of its files under ``work``, or an ``IngestResult`` for a file that
    killed its worker), each with the first file it parsed, in no particular order (the caller puts them into
    scan order).

    Blocks run in a pool of ``workers``. When the pool breaks (a worker died; ``concurrent.futures`` then ends
    the others), every unfinished block is split: the files it had finished or not yet started go back into the
    queue for a new pool, the file it was reading is suspect. Suspects are then parsed one at a time in a
    one-process pool: a suspect that breaks it is the file that kills its worker (``_crashed``).

    Raises:
        RuntimeError: a pool broke twice in a row with no file in flight.
    """
    parts: list[tuple[str, str | IngestResult]] = []
    suspects: list[str] = []
    queue, tasks, fruitless = blocks, 0, 0
    while queue:
        pending: list[tuple[Future, list[str], str]] = []
        with _pool(workers, raw_dir, sidecars, work) as (pool, begin):
            unsubmitted: list[list[str]] = []
            for at, rels in enumerate(queue):
                prefix = os.fspath(work / f"block{tasks}")
                tasks += 1
                try:
                    pending.append((pool.submit(_parse_block, rels, prefix), rels, prefix))
                except BrokenProcessPool:  # a worker died while blocks were still being handed out
                    unsubmitted = queue[at:]
                    break
            begin()
            queue, in_flight = unsubmitted, 0
            for future, rels, prefix in pending:
                try:
                    parts.append((rels[0], future.result()))
                except BrokenProcessPool:
                    started = _started(prefix)
                    if started:  # the file being read is suspect; the ones before it and after it are not
                        suspects.append(rels[started - 1])
                        in_flight += 1
                    queue += [part for part in (rels[:max(started - 1, 0)], rels[started:]) if part]
        fruitless = 0 if not queue or in_flight else fruitless + 1
        if fruitless >= 2:
            raise RuntimeError(f"the parse worker pool broke twice with no file in flight; {len(queue)} blocks "
                               f"unparsed, from {queue[0][0]}")
    for rel in suspects:
        parts.append((rel, _parse_alone(raw_dir, rel, sidecars, work / f"alone{len(parts)}")))
    return parts


def _parse_alone(raw_dir: Path, rel: str, sidecars: set[str] | None, prefix: Path) -> str | IngestResult:
    """``rel`` parsed in a pool of one process of its own: the prefix of its files, or its ``_crashed`` rows when
    that process dies too."""
    with _pool(1, raw_dir, sidecars, prefix.parent) as (pool, begin):
        try:
            future = pool.submit(_parse_block, [rel], os.fspath(prefix))
            begin()
            return future.result()
        except BrokenProcessPool:
            return _crashed(raw_dir, rel)


def _crashed(raw_dir: Path, rel: str) -> IngestResult:
    """The rows of a file whose parse kills its worker process: one ``parse_crashed`` reject and one ledger row
    (kind ``unreadable``, size when it can be read, no sha256)."""
    try:
        size: int | None = os.stat(os.path.join(raw_dir, rel)).st_size
    except OSError:
        size = None
    readout = FileReadout("unreadable", rejects=[Reject(
        None, CRASH_REASON, "the parse worker process died reading this file, alone, twice (killed, out of "
                            "memory or a crash in native code); the other files were parsed")], size_bytes=size)
    return IngestResult(
        runs=RUN_SCHEMA.empty_table(),
        rejects=pa.Table.from_pylist([_reject_row(rel, None, None, CRASH_REASON, readout.rejects[0].detail)],
                                     schema=QUARANTINE_SCHEMA),
        files=pa.Table.from_pylist([_file_row(rel, readout, 0, 1)], schema=FILE_SCHEMA))


def write_result(result: IngestResult, prefix: Path) -> None:
    """Write ``result`` as ``<prefix>.{runs,rejects,files}.arrow`` (Arrow IPC files; a parse worker's output)."""
    for name in ("runs", "rejects", "files"):
        table = getattr(result, name)
        with pa.OSFile(os.fspath(prefix.with_suffix(f".{name}.arrow")), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)


def parse_serial(raw_dir: Path, rels: Iterable[str], sidecars: set[str] | None = None) -> IngestResult:
    """Parse ``rels`` in this process (``parse_files`` without workers; a worker's own loop).

    Args:
        raw_dir: the folder ``rels`` are relative to.
        rels: the files to parse, in order.
        sidecars: the sidecar files the scan listed (``<log>.meta.json``, relative paths); None to try each
            log's sidecar on disk.
    """
    root = os.fspath(raw_dir)
    real_root = os.path.realpath(root)
    runs: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    manifests: dict[str, dict[str, dict[str, str]] | ManifestError] = {}
    for rel in rels:
        path = os.path.join(root, rel)
        if is_escaped(rel):  # a name that is not UTF-8 (or holds U+FFFD), listed escaped: never opened
            readout = FileReadout("refused", rejects=[Reject(
                None, "invalid_file_name", "the file name is not UTF-8 or holds U+FFFD (listed with each such byte "
                                           "as U+FFFD and two hex digits): not opened")])
        else:
            readout = _read(path, real_root)
        folder, name = posixpath.split(rel)
        if name == MANIFEST_NAME and not readout.runs and readout.kind != "refused":
            manifest = _manifest(manifests, root, folder)
            if isinstance(manifest, ManifestError):  # its own ledger row names why its folder's runs are refused
                readout = FileReadout("unreadable", rejects=[Reject(None, manifest.file_reason, manifest.why)],
                                      sha256=readout.sha256, size_bytes=readout.size_bytes)
        for reject in readout.rejects:
            rejects.append(_reject_row(rel, reject.source_format or readout.source_format, reject.row,
                                       reject.reason_code, reject.detail))
        n_runs = 0
        if readout.runs:
            manifest = _manifest(manifests, root, folder)
            try:  # read once per file; a bad sidecar or runs.csv rejects each of the file's runs
                if isinstance(manifest, ManifestError):
                    raise manifest
                listed = sidecars is None or rel + SIDECAR_SUFFIX in sidecars
                sidecar, sidecar_error = (_load_listed_sidecar(path + SIDECAR_SUFFIX, real_root) if listed
                                          else None), None
            except MetadataError as exc:
                sidecar, sidecar_error = None, exc
            for row, fmt, parsed in readout.runs:
                try:
                    if sidecar_error is not None:
                        raise sidecar_error
                    meta, sources, conflicts = resolve(
                        parsed.in_file_meta, sidecar, manifest.get(name), parsed.fallback_meta)
                except MetadataError as exc:
                    rejects.append(_reject_row(rel, fmt, row, exc.reason_code, exc.detail))
                    continue
                if sources.get("spec_decoding") == "default" and parsed.values.get("spec_accept_length") is not None:
                    # the engine measured draft acceptance: "none" would be a guess, and a wrong one
                    meta["spec_decoding"], sources["spec_decoding"] = None, "unknown"
                record = _run_row(rel, fmt, row, parsed, meta, sources, conflicts)
                unstorable = _out_of_range(record)
                if unstorable is not None:  # one row lost, not the run: Arrow would raise on the whole table
                    rejects.append(_reject_row(rel, fmt, row, f"int_out_of_range:{unstorable[0]}", unstorable[1]))
                    continue
                runs.append(record)
                n_runs += 1
        files.append(_file_row(rel, readout, n_runs, len(readout.rejects) + len(readout.runs) - n_runs))
    return IngestResult(
        # column lists, then one array per column: cheaper than from_pylist's lookups of every key in every row
        runs=pa.Table.from_pydict({name: [run[name] for run in runs] for name in RUN_COLUMNS}, schema=RUN_SCHEMA),
        rejects=pa.Table.from_pylist(rejects, schema=QUARANTINE_SCHEMA),
        files=pa.Table.from_pylist(files, schema=FILE_SCHEMA),
    )


def _load_listed_sidecar(path: str, real_root: str) -> dict[str, Any] | None:
    """``load_sidecar`` of the sidecar ``path`` beside a log the scan listed. Confined to ``real_root`` (the raw
    folder, symlinks resolved) only when it is a symlink, as ``_read`` confines a log: the log's folder is one the
    scan listed (it never enters a symlinked folder), so a sidecar there that is not a link lies in the raw
    folder, and resolving its path again (``pipeline.io.opener.inside``, a system call per part of the path) is
    most of what reading a small sidecar costs. A sidecar swapped for a link between this look and its read is
    followed, the window ``_read`` leaves a log; ``read_whole`` still refuses anything but a regular file.

    Raises:
        MetadataError: as ``load_sidecar``.
    """
    return load_sidecar(path, real_root if os.path.islink(path) else None)


def _manifest(cache: dict, root: str, folder: str) -> dict[str, dict[str, str]] | ManifestError:
    """``load_manifest`` of ``folder`` once per parse, its error kept in place of its rows."""
    if folder not in cache:
        try:
            cache[folder] = load_manifest(Path(root, folder), root)
        except ManifestError as exc:
            cache[folder] = exc
    return cache[folder]


_INT_RANGES = {field.name: (-(2 ** (field.type.bit_width - 1)), 2 ** (field.type.bit_width - 1) - 1)
               for field in RUN_SCHEMA if pa.types.is_integer(field.type)}


def _out_of_range(record: dict[str, Any]) -> tuple[str, str] | None:
    """(column, detail) of the first integer column of a run row whose value its Arrow type cannot hold, else None
    (the parsers bound what they read; this holds for values they compute, such as sums of counts)."""
    for column, (low, high) in _INT_RANGES.items():
        value = record[column]
        if value is not None and not low <= value <= high:
            return column, f"{column} = {value:.4g} does not fit the {RUN_SCHEMA.field(column).type} column"
    return None


def _read(path: str, root: str) -> FileReadout:
    """``read_path`` plus the cases that are not content: symlinked folders and folders the scan could not list are
    recorded here; every file is opened by ``pipeline.io.opener``, which refuses, before reading a byte, anything
    that is not a regular file (a FIFO would block ``open`` forever, a device never ends), symlinks that leave the
    raw folder (their target is never read, so nothing outside the folder reaches a mart) and files over the
    run-log cap.

    Args:
        path: the file, under ``root``.
        root: the raw folder with every symlink resolved (``os.path.realpath``).
    """
    try:  # lstat first: one call for the common case, a regular file that is not a link
        link_mode = os.lstat(path).st_mode
        is_link = stat.S_ISLNK(link_mode)
        mode = os.stat(path).st_mode if is_link else link_mode
    except OSError as exc:  # a broken symlink, a file removed since the scan
        return _unreadable(exc)
    if stat.S_ISDIR(mode):
        if is_link:
            return FileReadout("symlinked_folder", rejects=[Reject(
                None, "symlink_not_followed",
                f"symlink to folder {os.readlink(path)!r} not followed (loops and double counting)")])
        # the scan lists a real folder only when it could not list its contents
        try:
            os.scandir(path).close()
            why = "listed by the scan but readable now: its files are read by the next run"
        except OSError as exc:
            why = os_error_words(exc)
        return FileReadout("unreadable", rejects=[Reject(
            None, "unreadable_folder", f"folder cannot be listed, its files are not read ({why})")])
    try:
        return read_path(path, root if is_link else None)  # a file that is not a link lies in the folder it was listed in
    except RefusedFile as exc:
        return FileReadout("refused", rejects=[Reject(None, *_refusal(exc))])
    except OSError as exc:
        return _unreadable(exc)


def _refusal(exc: RefusedFile) -> tuple[str, str]:
    """(reason code, detail) of a run log's ledger row for a file the opener refused."""
    if exc.reason_code == OUTSIDE_ROOT:  # the scan lists only entries of the raw folder: this one is a link
        return "symlink_outside_raw_dir", "symlink to a file outside the raw folder: not followed, not read"
    return exc.reason_code, exc.detail


def _unreadable(exc: OSError) -> FileReadout:
    return FileReadout("unreadable", rejects=[Reject(None, "unreadable_file", os_error_words(exc))])


def _run_row(rel: str, fmt: str, row: int, parsed: Any, meta: dict, sources: dict, conflicts: list) -> dict:
    record = dict.fromkeys(RUN_COLUMNS)
    record["benchmark_type"] = FIXED_SEQ  # parsers of agentic formats say so (schema.BENCHMARK_TYPES)
    record.update(parsed.values)
    for intvty, tpot_s in _INTVTY_FROM_TPOT:  # formats that give TPOT in seconds: 1 / tpot_s is the file's own
        if record[intvty] is None and record[tpot_s] is not None:  # arithmetic
            record[intvty] = interactivity(record[tpot_s], "s")
    record.update(meta)
    record.update(
        source_file=rel,
        source_format=fmt,
        source_row=row,
        run_id=hashlib.sha1(f"{rel}#{row}".encode()).hexdigest()[:16],
        run_date_partition=partition_key(meta.get("run_date")),
        metadata_sources=_sources_text(tuple(sources.items())),
        metadata_conflicts="; ".join(conflicts) or None,
        derivations="; ".join(parsed.derivations) or None,
    )
    return record


_INTVTY_FROM_TPOT = tuple((f"{which}_intvty", f"{which}_tpot_s") for which in INTVTY_STATS)


@functools.lru_cache(maxsize=4096)
def _sources_text(sources: tuple[tuple[str, str], ...]) -> str:
    """``metadata_sources``: ``key=source`` pairs sorted by key, ``;``-joined (a fleet's runs share a few dozen
    patterns, so each is built once)."""
    return ";".join(f"{key}={source}" for key, source in sorted(sources))


def _reject_row(rel: str, fmt: str | None, row: int | None, code: str, detail: str) -> dict:
    return {"source_file": rel, "source_format": fmt, "source_row": row, "reason_code": code,
            "detail": f"{rel}: {detail}", "stage": "ingest"}


def _file_row(rel: str, readout: FileReadout, n_runs: int, n_rejected: int) -> dict:
    return {
        "source_file": rel,
        "kind": readout.kind,
        "source_format": readout.source_format,
        "size_bytes": readout.size_bytes,
        "sha256": readout.sha256,
        "rows_read": n_runs + n_rejected,
        "runs": n_runs,
        "rejected": n_rejected,
        "request_arrays": readout.request_arrays,
    }
