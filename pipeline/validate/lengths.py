"""The length rule (``sql/run_lengths.sql``) applied to rows the validate stage holds in memory.

The duplicate rule keeps, of two copies of one measurement, the copy that stays on the frontier (docs/inputs.md
``duplicate_run``), and whether a copy stays there depends on its lengths: a raw vLLM file with token totals can be
off its nominal ISL while its InferenceX agg twin, which has no totals, is checked on its latencies only. The
rule itself lives in one SQL file; this module runs that file over an Arrow table in a private in-memory DuckDB
rather than restating it in Python.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from pipeline.io.paths import sql_text

# The RUN_SCHEMA columns sql/run_lengths.sql reads.
LENGTH_INPUT_COLUMNS = ("run_id", "isl", "osl", "random_range_ratio", "completed", "total_input_tokens",
                        "total_output_tokens", "median_ttft_s", "median_tpot_s", "median_e2el_s")


def lengths_off_nominal(runs: pa.Table) -> list[bool]:
    """``run_lengths.length_off_nominal`` of every row of ``runs``, in row order.

    Args:
        runs: rows with ``LENGTH_INPUT_COLUMNS`` (``RUN_SCHEMA`` types; ``run_id`` need not be unique).
    Returns:
        One bool per row: True when the run is not shown to have run its nominal ISL/OSL (a measured length more
        than 10 % off the mean its ``random_range_ratio`` implies, a latency-implied OSL more than 25 % off, or
        lengths that cannot be checked), False otherwise and for runs without ISL/OSL.
    Raises:
        KeyError: a column of ``LENGTH_INPUT_COLUMNS`` is missing.
    """
    if runs.num_rows == 0:
        return []
    rows = runs.select(list(LENGTH_INPUT_COLUMNS))
    with duckdb.connect() as conn:
        # the view reads a relation named validated_runs, whose run_id it passes through: key the rows by position
        keyed = rows.set_column(0, "run_id", pa.array([str(at) for at in range(runs.num_rows)]))  # inferred: string
        conn.register("validated_runs", keyed)
        conn.execute(sql_text("run_lengths"))
        found = dict(conn.execute("select cast(run_id as bigint), length_off_nominal from run_lengths").fetchall())
    return [bool(found[at]) for at in range(runs.num_rows)]
