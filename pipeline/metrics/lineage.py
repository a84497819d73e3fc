"""The latest-run columns of ``run_metrics`` (``line_id``, ``sweep_id``, ``superseded_by``, ``repeat_group``,
``repeat_n``), derived here and only here, by ``pipeline.validate.lines.run_lineage`` (docs/metrics.md "Latest
run per line").

They are filled over the whole table, not per run-date partition: a new night's sweep supersedes runs of older
dates, so their rows (and their ``runs/`` files) change too.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from pipeline.validate.lines import LINE_COLUMNS, SWEEP_COLUMNS, line_and_sweep_ids, run_lineage

LINEAGE_COLUMNS = ("line_id", "sweep_id", "superseded_by", "repeat_group", "repeat_n")


def refresh_lineage(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Recompute the lineage columns of every ``run_metrics`` row and return the ``run_date_partition`` values
    whose rows changed (their ``runs/`` files must be rewritten).

    Args:
        conn: a warehouse connection with the ``run_metrics`` table (``sql/run_metrics.sql`` columns) and the
            ``validated_runs`` it was computed from.
    Returns:
        Sorted partition keys (``YYYY-MM-DD`` or ``undated``) of runs whose lineage changed.
    """
    # the line and sweep columns as validated (run_metrics' own sweep_id is the lineage's, which replaces the
    # metadata key of that name there)
    columns = ", ".join(f"v.{c}" for c in dict.fromkeys(("run_id", "conc", *LINE_COLUMNS, *SWEEP_COLUMNS)))
    runs = conn.sql(f"select {columns} from validated_runs v where v.run_id in (select run_id from run_metrics) "
                    "order by v.run_id").to_arrow_table()
    lines, sweeps = line_and_sweep_ids(runs)
    runs = runs.drop_columns(["sweep_id"]).append_column("line_id", pa.array(lines, pa.string())) \
        .append_column("sweep_id", pa.array(sweeps, pa.string()))
    lineage = run_lineage(runs).select(["run_id", *LINEAGE_COLUMNS])
    conn.register("_lineage", lineage)
    try:
        changed = conn.execute(
            "select distinct m.run_date_partition from run_metrics m join _lineage l using (run_id) where "
            + " or ".join(f"m.{c} is distinct from l.{c}" for c in LINEAGE_COLUMNS)
            + " order by 1").fetchall()
        conn.execute("update run_metrics set " + ", ".join(f"{c} = l.{c}" for c in LINEAGE_COLUMNS)
                     + " from _lineage l where run_metrics.run_id = l.run_id")
    finally:
        conn.unregister("_lineage")
    return [row[0] for row in changed]
