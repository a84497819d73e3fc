"""The cache's runs streamed a record batch at a time, in scan order, optionally only some run dates
(``stream_cache``): how the nightly path and the sensor read a state too large to hold at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.parse_cache.load import delta_stamp, read_delta
from pipeline.ingest.parse_cache.rows import row_offsets, rows_of_files, splice_rows
from pipeline.ingest.parse_cache.store import CACHE_FILE_SCHEMA, METADATA_KEY, stamps_usable
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA


@dataclass
class CacheStream:
    """One cache state read for one pass over its runs, without holding them (``stream_cache``): ``files`` (the
    chosen columns of every file's cached row, in ``load_cache``'s order), ``runs`` (``RUN_SCHEMA`` record
    batches in ``load_cache``'s order, read from the base one record batch at a time; a reader is consumed once),
    ``num_runs`` and, when asked for, ``rejects`` (``QUARANTINE_SCHEMA``, whole: a tenth of the runs' size)."""

    files: pa.Table
    runs: pa.RecordBatchReader
    num_runs: int
    rejects: pa.Table | None = None


def stream_cache(cache_dir: Path, raw_dir: Path, generation: str,
                 file_columns: tuple[str, ...] = ("source_file", "sha256"), rejects: bool = False,
                 dates: Sequence[str] | None = None) -> CacheStream | None:
    """Cache state ``generation``, when it is the cache's (``load_cache``'s generation), with its runs streamed.

    At most one of the base's record batches (~1/16 of it) and the delta's rows are in memory at once, instead of
    the whole cache. For a reader that needs every run once: a digest, an insert.

    Args:
        cache_dir, raw_dir: the cache's folder and the raw folder it is of.
        generation: the state wanted (``CacheStats.generation``, ``cache_generation``).
        file_columns: the columns of ``CACHE_FILE_SCHEMA`` wanted in ``files``.
        rejects: read the state's rejects too (``CacheStream.rejects``).
        dates: the run dates (``run_date_partition`` values) the reader keeps, when it keeps only some: the
            base's record batches holding none of them are not read (their ``run_date_partition`` column is
            read to know), so a night's ingest onto a million runs reads the delta's rows, not the base's. The
            stream still has every row of the batches it reads (the reader filters); ``num_runs`` counts them all.
    Returns:
        The stream, or None when the cache does not hold ``generation`` any more (a later save, a torn or
        unreadable file): the caller then reads the folder as usual.
    """
    try:
        # the base's runs file is opened first and kept open: a save that replaces it meanwhile (a new file,
        # renamed over this one) leaves this reader on the file whose stamp it checked
        source = pa.OSFile(os.fspath(cache_dir / "runs.arrow"))
    except OSError:
        return None
    try:
        stream = _stream_of(source, cache_dir, raw_dir, generation, file_columns, rejects, dates)
    except (OSError, KeyError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError):
        stream = None
    if stream is None:
        source.close()
    return stream


def _stream_of(source: pa.NativeFile, cache_dir: Path, raw_dir: Path, generation: str,
               file_columns: tuple[str, ...], with_rejects: bool, dates: Sequence[str] | None) -> CacheStream | None:
    """``stream_cache`` once the base's runs file is open (``source``); raises on an unreadable file."""
    runs_file = pa.ipc.open_file(source)
    wanted = list(dict.fromkeys(["runs", "rejected", *file_columns]))
    # files and rejects are read whole, so mapped (no copy into the heap); every field, then the wanted ones
    # selected: Arrow copies a mapped file's batches when told which fields to read
    with pa.memory_map(os.fspath(cache_dir / "files.arrow")) as files_source, \
            pa.memory_map(os.fspath(cache_dir / "rejects.arrow")) as rejects_source:
        files_file = pa.ipc.open_file(files_source)
        rejects_file = pa.ipc.open_file(rejects_source)  # a base is whole only with its three files
        stamps = [orjson.loads((f.schema.metadata or {})[METADATA_KEY]) for f in (files_file, runs_file, rejects_file)]
        base_files = files_file.read_all().replace_schema_metadata(None).select(wanted).cast(
            pa.schema([CACHE_FILE_SCHEMA.field(name) for name in wanted]))
        base_rejects = rejects_file.read_all().replace_schema_metadata(None).cast(QUARANTINE_SCHEMA) \
            if with_rejects else None
    if not stamps_usable(stamps, raw_dir):
        return None
    base_generation = str(stamps[0]["generation"])
    delta = None
    if generation == base_generation:
        if delta_stamp(cache_dir, raw_dir, base_generation) is not None:
            return None  # a later state, saved as a delta on this base, is the cache's now
    else:
        loaded = read_delta(cache_dir, raw_dir, base_generation)
        if loaded is None or loaded[1].get("generation") != generation:
            return None
        delta = loaded[0]
    keep = np.ones(base_files.num_rows, dtype=bool) if delta is None \
        else delta["keep"]["keep"].to_numpy(zero_copy_only=False)
    offsets = row_offsets(base_files, "runs")
    # each batch's rows from its run_date_partition column alone (count_rows() would read whole batches)
    batch_rows, needed = _batches_holding(cache_dir / "runs.arrow", runs_file.schema.metadata,
                                          runs_file.num_record_batches, dates)
    if len(keep) != base_files.num_rows or offsets[-1] != batch_rows.sum():
        return None
    kept_files = rows_of_files(base_files, keep, row_offsets(base_files, None))
    places = np.zeros(0, dtype=np.int64)
    delta_files, delta_runs, delta_offsets = kept_files.slice(0, 0), RUN_SCHEMA.empty_table(), np.zeros(1, np.int64)
    if delta is not None:
        places = delta["files"]["base_place"].to_numpy(zero_copy_only=False)
        delta_files, delta_runs = delta["files"].select(wanted), delta["runs"]
        delta_offsets = row_offsets(delta_files, "runs")
        if delta_offsets[-1] != delta_runs.num_rows:
            return None
    files = splice_rows(kept_files, delta_files, places.tolist(), kept_files, delta_files, None)
    rejects = None
    if base_rejects is not None:
        rejected_at = row_offsets(base_files, "rejected")
        delta_rejects = delta["rejects"] if delta is not None else QUARANTINE_SCHEMA.empty_table()
        if rejected_at[-1] != base_rejects.num_rows:
            return None
        rejects = splice_rows(rows_of_files(base_rejects, keep, rejected_at), delta_rejects, places.tolist(),
                              kept_files, delta_files, "rejected")
        if rejects is None:
            return None
    pieces = _merged_pieces(np.flatnonzero(keep), offsets, places, delta_offsets)
    reader = pa.RecordBatchReader.from_batches(RUN_SCHEMA, _runs_in_order(
        source, runs_file.get_batch, delta_runs, pieces, batch_rows, needed))
    return CacheStream(files.select(list(file_columns)), reader,
                       int(offsets[-1] - np.diff(offsets)[~keep].sum() + delta_runs.num_rows), rejects)


def _merged_pieces(kept: np.ndarray, offsets: np.ndarray, places: np.ndarray,
                   delta_offsets: np.ndarray) -> list[tuple[bool, int, int]]:
    """The runs of a base with a delta, in merged order, as row ranges (from the delta?, start, stop): the rows
    of the kept base files (``kept``: their indices; ``offsets``: ``row_offsets`` of every base file), with the
    rows of each delta file (``delta_offsets``) after the ``places[i]`` first kept files."""
    pieces: list[tuple[bool, int, int]] = []

    def base_rows(first: int, last: int) -> None:  # the kept files first..last-1, by runs of adjacent files
        chosen = kept[first:last]
        if len(chosen) == 0:
            return
        breaks = np.flatnonzero(np.diff(chosen) != 1) + 1
        for run in np.split(chosen, breaks):
            if offsets[run[-1] + 1] > offsets[run[0]]:
                pieces.append((False, int(offsets[run[0]]), int(offsets[run[-1] + 1])))

    done = 0
    for place in np.unique(places):
        base_rows(done, int(place))
        files = np.flatnonzero(places == place)
        if delta_offsets[files[-1] + 1] > delta_offsets[files[0]]:
            pieces.append((True, int(delta_offsets[files[0]]), int(delta_offsets[files[-1] + 1])))
        done = int(place)
    base_rows(done, len(kept))
    return pieces


def _batches_holding(path: Path, stamp: dict | None, count: int,
                     dates: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows of each of the base runs file's ``count`` record batches and, when ``dates`` is given, whether
    each holds a run of one of them.

    Only the ``run_date_partition`` column's pages are touched: the file is memory-mapped and its batches taken
    whole, zero-copy, because Arrow's reader copies a batch's body when told to read one field (and an ordinary
    file's reader reads every column into the heap).

    Args:
        path: the base's ``runs.arrow``.
        stamp: its schema metadata as the caller's open reader saw it: the mapped file must carry the same,
            so a save that replaced the file meanwhile is noticed.
    Raises:
        ValueError: the file at ``path`` is not the one the caller opened (``stream_cache`` then answers None).
        OSError, pa.ArrowInvalid: the file cannot be mapped or read.
    """
    with pa.memory_map(os.fspath(path)) as mapped:
        runs_file = pa.ipc.open_file(mapped)
        if runs_file.schema.metadata != stamp or runs_file.num_record_batches != count:
            raise ValueError(f"{path} was replaced while it was read")
        dates_column = runs_file.schema.get_field_index("run_date_partition")
        batches = [runs_file.get_batch(i) for i in range(count)]
        rows = np.array([batch.num_rows for batch in batches], dtype=np.int64)
        if dates is None:
            return rows, None
        value_set = pa.array(list(dates), pa.string())
        return rows, np.array([bool(pc.any(pc.is_in(batch.column(dates_column), value_set=value_set)).as_py())
                               for batch in batches])


def _runs_in_order(source: pa.NativeFile, read_batch: Callable[[int], pa.RecordBatch], delta_runs: pa.Table,
                   pieces: list[tuple[bool, int, int]], batch_rows: np.ndarray,
                   needed: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
    """The record batches of ``pieces`` (``_merged_pieces``): delta rows as slices of ``delta_runs``, base rows
    from the base's record batch ``i`` (``read_batch(i)``, ``batch_rows[i]`` rows), each read once, when the
    first piece in it is reached, and not at all where ``needed[i]`` is False (it holds no run the reader
    keeps); closes ``source`` at the end. Read, not mapped: a mapping would keep every page this pass touched
    resident until it ends, the whole cache by then."""
    first_row = np.concatenate([[0], np.cumsum(batch_rows)])
    try:
        index, batch = -1, None  # the base batch in hand
        for from_delta, start, stop in pieces:
            if from_delta:
                yield from delta_runs.slice(start, stop - start).to_batches()
                continue
            i = int(np.searchsorted(first_row, start, side="right")) - 1
            while start < stop:
                end = min(stop, int(first_row[i + 1]))
                if needed is None or needed[i]:
                    if index != i:
                        index, batch = i, read_batch(i).replace_schema_metadata(None)
                    yield batch.slice(start - int(first_row[i]), end - start).cast(RUN_SCHEMA)
                start, i = end, i + 1
    finally:
        source.close()
