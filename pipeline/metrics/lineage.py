"""The latest-run columns of ``run_metrics`` (``line_id``, ``sweep_id``, ``superseded_by``, ``repeat_group``,
``repeat_n``), derived here and only here, by ``pipeline.validate.lines.run_lineage`` (docs/metrics.md "Latest
run per line").

They are filled for the lines a run touches, over every date of those lines: a new night's sweep supersedes the
runs of the sweep before it, whatever their date, so their rows (and their ``runs/`` files) change too.
"""

from __future__ import annotations

from datetime import date

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.validate.lines import (
    LINE_COLUMNS,
    SWEEP_COLUMNS,
    line_and_sweep_ids,
    run_lineage,
    sweep_order_key,
)

LINEAGE_COLUMNS = ("line_id", "sweep_id", "superseded_by", "repeat_group", "repeat_n")
_RUN_COLUMNS = "run_id, conc, run_date, line_id, sweep_id"  # what run_lineage reads


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
    columns = ", ".join(f"v.{c}" for c in dict.fromkeys(("run_id", *LINE_COLUMNS, *SWEEP_COLUMNS)))
    fresh = conn.sql(f"select {columns} from validated_runs v where v.run_id in "
                     "(select run_id from run_metrics where line_id is null) order by v.run_id").to_arrow_table()
    lines, sweeps = line_and_sweep_ids(fresh)
    ids = pa.table({"run_id": fresh["run_id"], "line_id": pa.array(lines, pa.string()),
                    "sweep_id": pa.array(sweeps, pa.string())})
    conn.register("_ids", ids)
    try:
        conn.execute("update run_metrics set line_id = i.line_id, sweep_id = i.sweep_id from _ids i "
                     "where run_metrics.run_id = i.run_id").fetchall()
    finally:
        conn.unregister("_ids")
    new_lines = set(lines)
    del fresh, ids, lines, sweeps  # every fresh row's columns and ids: not needed past this point
    appended, heads = appended_lines(conn, new_lines - set(touched_lines))
    whole = sorted((set(touched_lines) | new_lines) - appended)
    conn.register("_touched", pa.table({"line_id": pa.array(whole, pa.string())}))
    try:  # a semi-join: list_contains over a list of every line would compare each row with each line
        runs = conn.sql(f"select distinct {_RUN_COLUMNS} from run_metrics "
                        "where line_id in (select line_id from _touched) order by run_id").to_arrow_table()
    finally:
        conn.unregister("_touched")
    runs = pa.concat_tables([runs, heads.cast(runs.schema)]) if heads.num_rows else runs
    del heads
    lineage = run_lineage(runs).select(["run_id", *LINEAGE_COLUMNS])
    del runs
    conn.register("_lineage", lineage)
    # line_id and sweep_id were set above; a new row's repeat_group is still null, so it is among the changed too
    derived = [c for c in LINEAGE_COLUMNS if c not in ("line_id", "sweep_id")]
    differs = " or ".join(f"run_metrics.{c} is distinct from l.{c}" for c in derived)
    try:
        changed = conn.execute("select distinct run_metrics.run_date_partition from run_metrics join _lineage l "
                               f"using (run_id) where {differs} order by 1").fetchall()
        conn.execute("update run_metrics set " + ", ".join(f"{c} = l.{c}" for c in derived)
                     + f" from _lineage l where run_metrics.run_id = l.run_id and ({differs})").fetchall()
    finally:
        conn.unregister("_lineage")
    return [row[0] for row in changed]


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
        sweep and of the new rows, one row per run and price book as ``run_metrics`` holds them).
    """
    conn.register("_lines", pa.table({"line_id": pa.array(sorted(lines), pa.string())}))
    try:
        head = conn.sql(f"select distinct {_RUN_COLUMNS}, repeat_group is null as new from run_metrics "
                        "where line_id in (select line_id from _lines) and superseded_by is null "
                        "order by run_id").to_arrow_table()
        if pc.all(head["new"]).as_py() is not False:
            # only new rows: every line is new (a line with older rows has a current sweep among them), as on a
            # full refresh, which skips the sweep bookkeeping below (a query and a Python pass over every row)
            return set(lines), head.drop_columns(["new"])
        conn.register("_head", head)
        # a new row in a sweep the line already superseded: an insertion into its past
        into_past = {row[0] for row in conn.execute(
            "select distinct r.line_id from run_metrics r "
            "join (select distinct line_id, sweep_id from _head where new) h using (line_id, sweep_id) "
            "where r.superseded_by is not null").fetchall()}
    finally:
        conn.unregister("_lines")
        conn.unregister("_head")
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
