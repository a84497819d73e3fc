"""Judging the warehouse's ``raw_runs`` of some run dates a group of dates at a time, so validating a million runs
holds one group's rows in memory rather than the history (``accepted_runs``' verdicts exactly: its two halves,
``rule_verdicts`` per group and ``duplicate_verdicts`` once over every group's candidates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import duckdb
import numpy as np
import pyarrow as pa

from pipeline.io.paths import sql_text
from pipeline.io.storage import column_names, date_groups, rows_by_rowid, table_names
from pipeline.validate.rules import (
    DUPLICATE_SEARCH_COLUMNS,
    PAIRING_COLUMNS,
    QUARANTINE_SCHEMA,
    RUN_SCHEMA,
    RUN_SCHEMA_PAIRING,
    SAME_MEASUREMENT_RTOL,
    duplicate_verdicts,
    pairing_rows,
    rule_verdicts,
)

# raw rows judged at a time (whole run dates; a larger date alone): one read of every row would hold the history
# as Arrow
GROUP_ROWS = 100_000
# width of the ln|TPOT| buckets sql/duplicate_candidates.sql joins on: any width well above the tolerance finds the
# same rows (two runs within it are in one bucket or adjacent ones); narrower buckets pair fewer runs
TPOT_BUCKET_WIDTH = 1000 * SAME_MEASUREMENT_RTOL
# the validated_runs asset's preview is of the accepted rows among the first this many raw rows (enough for its 12
# preview rows unless nearly all of them were rejected), not of a copy of every accepted row
PREVIEW_SCAN_ROWS = 1000
_SEARCH_SCHEMA = pa.schema([RUN_SCHEMA.field(name) for name in DUPLICATE_SEARCH_COLUMNS])


@dataclass(frozen=True)
class Judged:
    """The verdicts on the raw runs of some run dates.

    Attributes:
        rejected_rows: ``raw_runs`` rowids (int64) of every rejected run: the accepted runs are the others.
        rejects: their quarantine rows (``QUARANTINE_SCHEMA``, stage ``validate``): rule rejections group by group
            in storage order, then duplicates in storage order.
        accepted: how many runs were accepted.
        preview: the accepted runs among the first ``preview_rows`` raw rows of the first group (``RUN_SCHEMA``).
    """

    rejected_rows: pa.Array
    rejects: pa.Table
    accepted: int
    preview: pa.Table


def judge_raw_runs(conn: duckdb.DuckDBPyConnection, keys: list[str], known_hw: Iterable[str],
                   max_rows: int = GROUP_ROWS, preview_rows: int = PREVIEW_SCAN_ROWS) -> Judged:
    """Judge the ``raw_runs`` rows of run dates ``keys`` as ``pipeline.validate.rules.accepted_runs`` would judge
    them all at once, with the accepted ``validated_runs`` of other dates as its ``accepted_elsewhere``.

    Per group of dates (``pipeline.io.storage.date_groups``): every column of the group's rows, the row rules
    (``rule_verdicts``); of the passing runs only ``PAIRING_COLUMNS`` are kept. Then, once: the other dates'
    accepted runs that could be a duplicate of a passing run (``sql/duplicate_candidates.sql``), the passing
    runs that could pair with another or with one of those (``pairing_rows``), their
    ``DUPLICATE_SEARCH_COLUMNS`` read back by rowid (``rows_by_rowid``), and the duplicate search over them
    (``duplicate_verdicts``). Any other passing run is never a duplicate nor the kept copy of one, so the
    verdicts are the whole table's.

    Args:
        conn: a warehouse connection with ``raw_runs`` (``RUN_SCHEMA`` columns); ``validated_runs`` when it exists.
        keys: run-date partition keys.
        known_hw: the GPU reference's ``hw`` keys.
        max_rows: rows per group.
        preview_rows: raw rows of the first group the preview is chosen from (default ``PREVIEW_SCAN_ROWS``).
    Raises:
        KeyError: ``raw_runs`` lacks a ``RUN_SCHEMA`` column a rule's screen reads.
    """
    known_hw = list(known_hw)
    rejected, failed_rows, passing_parts = [], [], []
    preview, total = None, 0
    for group in date_groups(conn, "raw_runs", keys, max_rows):
        raw = conn.sql("select rowid as raw_row, * from raw_runs where list_contains($keys, run_date_partition)",
                       params={"keys": group}).to_arrow_table()
        total += raw.num_rows
        rows = raw.column("raw_row")
        runs = raw.drop_columns(["raw_row"]).cast(RUN_SCHEMA)
        del raw
        failed, found = rule_verdicts(runs, known_hw)
        rejected += found
        passed = pa.array(~failed)
        failed_rows.append(rows.filter(pa.array(failed)))
        passing_parts.append(runs.select(list(PAIRING_COLUMNS)).append_column("raw_row", rows).filter(passed))
        if preview is None:
            preview = runs.slice(0, preview_rows).append_column("raw_row", rows.slice(0, preview_rows)) \
                .filter(passed[:preview_rows])
        del runs
    passing = (pa.concat_tables(passing_parts) if passing_parts else
               RUN_SCHEMA_PAIRING.empty_table().append_column("raw_row", pa.array([], pa.int64())))
    del passing_parts
    elsewhere = accepted_elsewhere(conn, keys, passing)
    maybe = passing.column("raw_row").take(pa.array(pairing_rows(passing, elsewhere), pa.int64()))
    del passing
    searched = rows_by_rowid(conn, "raw_runs", DUPLICATE_SEARCH_COLUMNS, maybe)
    duplicates, found = duplicate_verdicts(searched.drop_columns(["rowid"]).cast(_SEARCH_SCHEMA), elsewhere)
    rejected += found
    duplicate_rows = searched.column("rowid").take(pa.array(duplicates, pa.int64()))
    rejected_rows = pa.array(np.concatenate([rows.to_numpy() for rows in (*failed_rows, duplicate_rows)]), pa.int64())
    if preview is None:
        preview = RUN_SCHEMA.empty_table()
    else:
        dropped = np.isin(preview.column("raw_row").to_numpy(), duplicate_rows.to_numpy())
        preview = preview.filter(pa.array(~dropped)).drop_columns(["raw_row"])
    return Judged(rejected_rows=rejected_rows, rejects=pa.Table.from_pylist(rejected, schema=QUARANTINE_SCHEMA),
                  accepted=total - len(rejected_rows), preview=preview)


def accepted_elsewhere(conn: duckdb.DuckDBPyConnection, keys: list[str], batch: pa.Table) -> pa.Table | None:
    """The ``validated_runs`` rows outside run dates ``keys`` that could be a duplicate of a run of ``batch``
    (its ``content_sha256``, ``model``, ``hw``, ``conc``, ``median_tpot_s``; ``sql/duplicate_candidates.sql``),
    ``RUN_SCHEMA`` columns; None when there is no ``validated_runs`` yet or it was stored before a schema change
    (its columns are not ``raw_runs``'; this run rebuilds it)."""
    if "validated_runs" not in table_names(conn):
        return None
    conn.register("_batch", batch)
    try:
        found = conn.sql(sql_text("duplicate_candidates"), params={
            "partition_keys": keys, "rtol": SAME_MEASUREMENT_RTOL, "bucket_width": TPOT_BUCKET_WIDTH}).to_arrow_table()
    finally:
        conn.unregister("_batch")
    return found if found.column_names == column_names(conn, "raw_runs") else None
