"""The latest-run columns of ``run_metrics`` (``line_id``, ``sweep_id``, ``superseded_by``, ``repeat_group``,
``repeat_n``), derived here and only here, by ``pipeline.validate.lines.run_lineage`` (docs/metrics.md "Latest
run per line").

They are filled for the lines a run touches, over every date of those lines: a new night's sweep supersedes the
runs of the sweep before it, whatever their date, so their rows (and their ``runs/`` files) change too.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from pipeline.validate.lines import (
    LINE_COLUMNS,
    SWEEP_COLUMNS,
    line_and_sweep_ids,
    run_lineage,
)

LINEAGE_COLUMNS = ("line_id", "sweep_id", "superseded_by", "repeat_group", "repeat_n")


def refresh_lineage(conn: duckdb.DuckDBPyConnection, touched_lines: set[str] = frozenset()) -> list[str]:
    """Fill the lineage columns of ``run_metrics`` where they changed and return the ``run_date_partition`` values
    whose rows changed (their ``runs/`` files must be rewritten).

    Work follows the batch, not the history: ``line_id``/``sweep_id`` are computed for rows that have none yet
    (just inserted), and the lineage only for the lines those rows or ``touched_lines`` belong to: a line's
    lineage depends on its own runs alone, and ``superseded_by`` names the next newer sweep, so a new sweep
    changes the rows of the one it replaces and no older row.

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
    touched = pa.table({"line_id": pa.array(sorted(set(touched_lines) | set(lines)), pa.string())})
    conn.register("_touched", touched)
    try:  # a semi-join: list_contains over a list of every line would compare each row with each line
        runs = conn.sql("select distinct run_id, conc, run_date, line_id, sweep_id from run_metrics "
                        "where line_id in (select line_id from _touched) order by run_id").to_arrow_table()
    finally:
        conn.unregister("_touched")
    lineage = run_lineage(runs).select(["run_id", *LINEAGE_COLUMNS])
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
