"""The latest-run columns of ``run_metrics`` (``line_id``, ``sweep_id``, ``superseded_by``, ``repeat_group``,
``repeat_n``), derived here and only here, by ``pipeline.validate.lines.run_lineage`` (docs/metrics.md "Latest
run per line").

They are filled for the lines a run touches, over every date of those lines: a new night's sweep supersedes the
runs of the sweep before it, whatever their date, so their rows (and their ``runs/`` files) change too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io.paths import sql_text
from pipeline.validate.lines import (
    LINE_COLUMNS,
    SWEEP_COLUMNS,
    line_and_sweep_ids,
    run_lineage,
    sweep_order_key,
)

LINEAGE_COLUMNS = ("line_id", "sweep_id", "superseded_by", "repeat_group", "repeat_n")


def refresh_lineage(conn: duckdb.DuckDBPyConnection, touched_lines: set[str] = frozenset()) -> list[str]:
    """Fill the lineage columns of ``run_metrics`` where they changed and return the ``run_date_partition`` values
    whose rows changed (their ``runs/`` files must be rewritten).

    Work follows the batch, not the history: ``line_id``/``sweep_id`` are computed for rows that have none yet
    (just inserted), and the lineage only for the lines those rows or ``touched_lines`` belong to: a line's
    lineage depends on its own runs alone, and ``superseded_by`` names the next newer sweep, so a new sweep
    changes the rows of the one it replaces and no older row. A line whose new rows only extend it (the usual
    night, ``appended_lines``) is recomputed over its current sweep and its new rows alone; the others over
    their whole history.

    Args:
        conn: a warehouse connection with the ``run_metrics`` table (``sql/run_metrics.sql`` columns) and the
            ``validated_runs`` it was computed from.
        touched_lines: lines that lost runs since the last call (rows deleted or replaced): recomputed too.
    Returns:
        Sorted partition keys (``YYYY-MM-DD`` or ``undated``) of runs whose lineage changed.
    """
    # the line and sweep columns as validated (run_metrics' own sweep_id is the lineage's, which replaces the
    # metadata key of that name there)
    columns = dict.fromkeys(("run_id", *LINE_COLUMNS, *SWEEP_COLUMNS))
    fresh = conn.sql(sql_text("lineage_fresh_runs")).select(*columns).to_arrow_table()
    lines, sweeps = line_and_sweep_ids(fresh)
    ids = pa.table({"run_id": fresh["run_id"], "line_id": pa.array(lines, pa.string()),
                    "sweep_id": pa.array(sweeps, pa.string())})
    with _registered(conn, "_ids", ids):
        conn.execute(sql_text("lineage_fill_ids")).fetchall()
    new_lines = set(lines)
    del fresh, ids, lines, sweeps  # every fresh row's columns and ids: not needed past this point
    appended, heads = appended_lines(conn, new_lines - set(touched_lines))
    whole = sorted((set(touched_lines) | new_lines) - appended)
    runs = conn.sql(sql_text("lineage_line_runs"), params=[whole]).to_arrow_table()
    runs = pa.concat_tables([runs, heads.cast(runs.schema)]) if heads.num_rows else runs
    del heads
    lineage = run_lineage(runs).select(["run_id", *LINEAGE_COLUMNS])
    del runs
    with _registered(conn, "_lineage", lineage):
        # the partitions first, one row each (an update's returning gives a row per changed row: millions on a
        # full refresh), then the update
        changed = [row[0] for row in conn.execute(sql_text("lineage_changed_partitions")).fetchall()]
        conn.execute(sql_text("lineage_update")).fetchall()
    return changed


def appended_lines(conn: duckdb.DuckDBPyConnection, lines: set[str]) -> tuple[set[str], pa.Table]:
    """Which of ``lines`` (lines with new ``run_metrics`` rows, lineage still null, and no row removed) only
    grew at their newest end, and for those the rows their new lineage depends on.

    A line grew at its newest end when every sweep of its new rows is its current sweep (the one whose rows have
    no ``superseded_by``) or a sweep it did not have that orders after the current one (``sweep_order_key``,
    with the new rows' dates counted). Then no older sweep's successor or repeat count changes, and
    ``run_lineage`` over the current sweep's rows and the new rows gives every changed row's lineage; any other
    line (a new row in an older sweep, a sweep that moved back) is recomputed over its whole history.

    Returns:
        (those lines, their rows: ``run_id``, ``conc``, ``run_date``, ``line_id``, ``sweep_id`` of the current
        sweep and of the new rows, one row per run: ``run_metrics``' rows of a run's price books are one).
    """
    head = conn.sql(sql_text("lineage_current_sweep_runs"), params=[sorted(lines)]).to_arrow_table()
    if pc.all(head["new"]).as_py() is not False:
        # only new rows: every line is new (a line with older rows has a current sweep among them), as on a
        # full refresh, which skips the sweep bookkeeping below (a query and a Python pass over every row)
        return set(lines), head.drop_columns(["new"])
    # a new row in a sweep the line already superseded: an insertion into its past
    with _registered(conn, "_head", head):
        into_past = {row[0] for row in conn.execute(sql_text("lineage_lines_into_past")).fetchall()}
    newest: dict[tuple[str, str], date | None] = {}
    current: dict[str, set[str]] = {}
    added: dict[str, set[str]] = {}
    for line, sweep, day, new in zip(*(head[c].to_pylist() for c in ("line_id", "sweep_id", "run_date", "new"))):
        if day is not None and (newest.get((line, sweep)) is None or day > newest[(line, sweep)]):
            newest[(line, sweep)] = day
        else:
            newest.setdefault((line, sweep), None)
        (added if new else current).setdefault(line, set()).add(sweep)

    def grew_at_the_end(line: str) -> bool:
        if line in into_past or len(current.get(line, ())) > 1:
            return False
        if line not in current:  # a new line
            return True
        (now,) = current[line]
        newest_now = sweep_order_key(newest[(line, now)], now)
        return all(sweep == now or sweep_order_key(newest[(line, sweep)], sweep) > newest_now
                   for sweep in added.get(line, ()))

    appended = {line for line in lines if grew_at_the_end(line)}
    keep = pc.is_in(head["line_id"], value_set=pa.array(sorted(appended), pa.string()))
    return appended, head.filter(keep).drop_columns(["new"])


@contextmanager
def _registered(conn: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[None]:
    """``table`` registered on ``conn`` as the view ``name`` for the statements of the ``with`` block, and
    unregistered after it, also when one raises (the connection outlives this module's calls)."""
    conn.register(name, table)
    try:
        yield
    finally:
        conn.unregister(name)
