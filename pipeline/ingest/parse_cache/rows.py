"""Row bookkeeping shared by the look-up, the save and the readers: a cache table holds each file's rows together,
in scan order, so a file's rows are found from the per-file row counts of the ``files`` table (``row_offsets``)
and taken as slices rather than copies (``rows_of_files``, ``splice_rows``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def rows_kept(table: pa.Table, stale: pa.Array) -> pa.Table:
    """The rows of ``table`` whose file is not in ``stale``."""
    if len(stale) == 0:
        return table
    return table.filter(pc.invert(pc.is_in(table["source_file"], value_set=stale)))


MAX_SPLICES = 64


def splice_rows(cached: pa.Table, new: pa.Table, places: list[int], kept_files: pa.Table, fresh_files: pa.Table,
                count: str | None) -> pa.Table | None:
    """``cached`` with ``new``'s rows of each fresh file inserted after the rows of the kept files before it
    (``places``); ``count`` names the ledger column holding each file's rows in this table (None: one row per
    file). None when those counts do not add up to the tables."""
    kept_at, fresh_at = row_offsets(kept_files, count), row_offsets(fresh_files, count)
    if kept_at[-1] != cached.num_rows or fresh_at[-1] != new.num_rows:
        return None
    pieces, taken, j = [], 0, 0
    while j < len(places):
        end = j
        while end + 1 < len(places) and places[end + 1] == places[j]:
            end += 1
        upto = kept_at[places[j]]
        pieces += [cached.slice(taken, upto - taken), new.slice(fresh_at[j], fresh_at[end + 1] - fresh_at[j])]
        taken, j = upto, end + 1
    pieces.append(cached.slice(taken))
    return pa.concat_tables(pieces)


def row_offsets(files: pa.Table, count: str | None) -> np.ndarray:
    """Where each file's rows start in a table whose per-file row counts are ``files``' column ``count`` (None:
    one row per file), and where the last one ends: int64, one more than ``files`` has rows."""
    if count is None:
        return np.arange(files.num_rows + 1, dtype=np.int64)
    rows = pc.fill_null(files[count], 0).to_numpy(zero_copy_only=False)
    return np.concatenate([[0], np.cumsum(rows, dtype=np.int64)])


MAX_SLICES = 256  # runs of files taken as slices of a table before one filtered copy is cheaper


def true_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of consecutive True values of ``mask`` starts, and where it ends (exclusive)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return edges[::2], edges[1::2]


def rows_of_files(table: pa.Table, mask: np.ndarray, offsets: np.ndarray) -> pa.Table:
    """The rows of ``table`` that belong to the files where ``mask`` (numpy bool, one per file, in the table's
    order) is True; ``offsets``: ``row_offsets`` of those files. Slices of ``table`` (no copy) when the chosen
    files form few runs, as a night's changes leave them; one filtered copy otherwise."""
    starts, ends = true_runs(mask)
    if len(starts) > MAX_SLICES:
        return table.filter(pa.array(np.repeat(mask, np.diff(offsets))))
    pieces = [table.slice(offsets[s], offsets[e] - offsets[s]) for s, e in zip(starts, ends)]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)
