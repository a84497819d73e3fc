"""Frontier points of every side: the ``frontiers`` mart's rows (``FRONTIER_SCHEMA``), one per side, price book
and Pareto point, with the metrics that comparisons spline along the frontier.

The x-axis is ``x_intvty`` (tok/s/user) of ``run_metrics``: median interactivity (1 / median TPOT) for
fixed-sequence sides, E2E-normalized interactivity (1 / p90(E2EL / OSL)) for agentic-trace sides
(docs/metrics.md); a side holds runs of one ``benchmark_type`` only.
"""

from __future__ import annotations

import itertools
from datetime import date
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.frontiers.latest import CI_COLUMNS, LINEAGE_INPUT_COLUMNS, SPREAD_COLUMNS, frontier_runs
from pipeline.frontiers.pareto import float_values, pareto_frontier
from pipeline.frontiers.sides import POOLED, Side
from pipeline.ingest.schema import AGENTIC_TRACES, FIXED_SEQ, SIDE_KEY, SIDE_KEY_FIELDS, X_STAT_E2E_NORM, X_STAT_MEDIAN
from pipeline.metrics.reference import PRICE_TIERS
from pipeline.metrics.slo import NO_SLO  # the default ``slo`` value, also for the stages after this one

# Metrics splined along each frontier, each on its own values at the frontier points (docs/metrics.md).
SPLINED_METRICS = (
    "tput_per_gpu",
    "cost_per_mtok_hyperscaler",
    "cost_per_mtok_neocloud",
    "cost_per_mtok_rental",
    "tok_s_per_mw",
    "concurrency",
)
# Metrics some sources lack (an export row without output_tput_per_gpu, a run without telemetry, an input cost
# where no input throughput was measured): splined only when every frontier point of the side has a value, else
# null. Never interpolated across a hole.
OPTIONAL_METRICS = (
    "output_tput_per_gpu",
    "input_tput_per_gpu",
    "measured_tok_s_per_mw",
    *(f"{direction}_cost_per_mtok_{tier}" for direction in ("output", "input")
      for tier in PRICE_TIERS),
)
# The run_metrics columns build_frontiers reads (concurrency is the run's conc; run_date, line_id and sweep_id
# decide which runs are current, pipeline/frontiers/latest.py; length_off_nominal, from sql/run_lengths.sql, leaves
# a run off the frontiers; x_intvty is the frontier's x-axis, by benchmark_type).
FRONTIER_INPUT_COLUMNS = tuple(dict.fromkeys((
    "run_id", "source_file", "price_book", "price_book_version", "model", "isl", "osl", "hw", "precision",
    "spec_decoding", "framework", "spec_metric_source", "conc", "median_intvty", "length_off_nominal",
    "benchmark_type", "x_intvty", "x_intvty_stat",
    *(m for m in SPLINED_METRICS + OPTIONAL_METRICS if m != "concurrency"), *LINEAGE_INPUT_COLUMNS,
)))


FRONTIER_SCHEMA = pa.schema(
    [
        ("side_id", pa.string()),
        ("price_book", pa.string()),
        ("price_book_version", pa.string()),
        *SIDE_KEY_FIELDS,
        ("side_runs", pa.int32()),
        ("excluded_runs", pa.int32()),
        ("side_intvty_min", pa.float64()),
        ("side_intvty_max", pa.float64()),
        ("point_index", pa.int32()),
        ("run_id", pa.string()),
        ("source_file", pa.string()),
        ("point_framework", pa.string()),
        ("point_spec_decoding", pa.string()),
        ("point_spec_metric_source", pa.string()),
        ("median_intvty", pa.float64()),
        ("x_intvty", pa.float64()),
        ("x_intvty_stat", pa.string()),
        *[(m, pa.float64()) for m in SPLINED_METRICS + OPTIONAL_METRICS],
        ("line_id", pa.string()),
        ("sweep_id", pa.string()),
        ("repeat_group", pa.string()),
        ("repeat_n", pa.int32()),
        *[(name, pa.float64()) for name in CI_COLUMNS],
        # a repeat group's members (max − min) / min in tok/s/GPU, and whether that exceeds REPEAT_SPREAD_LIMIT
        ("repeat_spread", pa.float64()),
        ("repeats_disagree", pa.bool_()),
    ]
)


def build_frontiers(runs: pa.Table | Sequence[Mapping[str, Any]], sides: Iterable[Side],
                    as_of: date | None = None, *, include_off_nominal: bool = False,
                    only_runs: Iterable[str] | None = None) -> pa.Table:
    """Pareto frontier points of every side in every price book (``FRONTIER_SCHEMA``: one row per side, price
    book and frontier point). The points are the same in every book; costs and tok/s/MW differ.

    Only current runs count (``pipeline.frontiers.latest.frontier_runs``): each line's latest sweep as of
    ``as_of`` (default: every run), repeats of one line, sweep and conc averaged into one point that carries
    ``repeat_n`` and the 95 % Student-t intervals ``tput_per_gpu_ci_lo/hi``, ``median_intvty_ci_lo/hi`` (null
    where ``repeat_n`` < 2), ``repeat_spread`` (members' (max − min) / min of tok/s/GPU, null where ``repeat_n`` < 2)
    and ``repeats_disagree`` (spread > ``REPEAT_SPREAD_LIMIT``, 10 %; the value stays the mean). A point's
    ``run_id`` and ``source_file`` are its repeat group's first run's.

    Runs flagged ``length_off_nominal`` (``sql/run_lengths.sql``: lengths off the mean their nominal ISL/OSL and
    range ratio imply, or unverified) are left out by default:
    they ran another workload than the side's nominal ISL/OSL. ``side_runs`` counts the current runs used (repeats
    each; ``side_intvty_min``/``_max`` span the points), ``excluded_runs`` the side's current runs left out; a side
    whose runs are all left out has no frontier. A frontier holds one x-axis statistic (``x_intvty_stat``): on an
    agentic side whose current runs mix them, the runs without the definition are left out too and counted
    (``one_x_statistic``).

    Column work: the runs are indexed once by their keys, each side's frontier is ``pareto_frontier`` over numpy
    arrays, and the point rows are taken from the input table, not rebuilt row by row.

    Args:
        runs: ``run_metrics`` rows, an Arrow table or dicts, with every column of ``FRONTIER_INPUT_COLUMNS``
            (a metric a run lacks is null in its row, never an absent column). Ties on a frontier resolve to the
            earlier row.
        sides: the sides to build; a side without runs yields no rows.
        as_of: the frontiers as they stood that day (runs dated later are not seen).
        include_off_nominal: keep runs flagged ``length_off_nominal`` (``excluded_runs`` is then 0).
        only_runs: build from these runs only (``run_id``s, e.g. those meeting an SLO; ``frontier_runs``): the
            latest-sweep rule is applied on every run first. None = every run.
    Raises:
        ValueError: a column of ``FRONTIER_INPUT_COLUMNS`` is missing (named), or a member run's interactivity or
            tok/s/GPU is NaN (``pareto_frontier``).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    if table.num_rows == 0:
        return FRONTIER_SCHEMA.empty_table()
    missing = [name for name in FRONTIER_INPUT_COLUMNS
               if name not in table.column_names and name not in DERIVED_INPUT_COLUMNS]
    if missing:  # a left-out column would reach the marts as nulls that look like "not measured"
        raise ValueError(f"build_frontiers: runs lack column(s) {', '.join(missing)}")
    table = with_x_statistic(table)
    averaged = [*(m for m in SPLINED_METRICS + OPTIONAL_METRICS if m != "concurrency"), "x_intvty",
                X_DEFINITION_SHARE]
    table = frontier_runs(table, averaged, as_of, only_runs)
    repeats = table["repeat_n"].to_numpy()
    key_names = ("price_book", *SIDE_KEY)
    keys = [table[name].to_pylist() for name in key_names]
    x_all, y_all = float_values(table["x_intvty"]), float_values(table["tput_per_gpu"])
    definition_share = float_values(table[X_DEFINITION_SHARE])
    off_nominal = np.zeros(table.num_rows, dtype=bool) if include_off_nominal else (
        table["length_off_nominal"].fill_null(False).to_numpy(zero_copy_only=False).astype(bool))
    # run positions by (book, model, isl, osl, hw, precision, benchmark_type) and then (spec_decoding, framework):
    # a side takes one sub-list, or several when a key is pooled; members keep the input order
    index: dict[tuple, dict[tuple, list[int]]] = {}
    for position, (book, model, isl, osl, hw, precision, spec, framework, kind) in enumerate(zip(*keys)):
        index.setdefault((book, model, isl, osl, hw, precision, kind or FIXED_SEQ), {}).setdefault(
            (spec, framework), []).append(position)
    side_columns: dict[str, list] = {name: [] for name in (
        "side_id", "price_book", *SIDE_KEY, "side_runs", "excluded_runs", "side_intvty_min", "side_intvty_max", "point_index")}
    points: list[np.ndarray] = []
    for book, side in itertools.product(sorted(set(keys[0])), sorted(set(sides), key=lambda s: s.side_id)):
        by_stack = index.get((book, side.model, side.isl, side.osl, side.hw, side.precision, side.benchmark_type), {})
        members = np.array(sorted(p for (spec, framework), stack in by_stack.items()
                                  if side.spec_decoding in (POOLED, spec) and side.framework in (POOLED, framework)
                                  for p in stack), dtype=np.int64)
        excluded = int(repeats[members][off_nominal[members]].sum()) if members.size else 0
        members = members[~off_nominal[members]] if members.size else members
        if members.size == 0:
            continue
        members, other_statistic = one_x_statistic(members, definition_share)
        excluded += int(repeats[other_statistic].sum())
        if members.size == 0:
            continue
        x, y = x_all[members], y_all[members]
        on_frontier = members[pareto_frontier(x, y)]
        points.append(on_frontier)
        n = on_frontier.size
        for name, value in (("side_id", side.side_id), ("price_book", book), ("model", side.model),
                            ("isl", side.isl), ("osl", side.osl), ("hw", side.hw), ("precision", side.precision),
                            ("spec_decoding", side.spec_decoding), ("framework", side.framework),
                            ("benchmark_type", side.benchmark_type), ("side_runs", int(repeats[members].sum())),
                            ("excluded_runs", excluded), ("side_intvty_min", float(x.min())),
                            ("side_intvty_max", float(x.max()))):
            side_columns[name].extend([value] * n)
        side_columns["point_index"].extend(range(n))
    taken = table.take(pa.array(np.concatenate(points) if points else np.zeros(0, np.int64)))
    from_runs = {
        "price_book_version": taken["price_book_version"], "run_id": taken["run_id"],
        "source_file": taken["source_file"], "point_framework": taken["framework"],
        "point_spec_decoding": taken["spec_decoding"], "point_spec_metric_source": taken["spec_metric_source"],
        "median_intvty": taken["median_intvty"], "x_intvty": taken["x_intvty"],
        "x_intvty_stat": taken["x_intvty_stat"],
        **{m: taken["conc" if m == "concurrency" else m] for m in SPLINED_METRICS + OPTIONAL_METRICS},
        **{name: taken[name] for name in ("line_id", "sweep_id", "repeat_group", "repeat_n", *CI_COLUMNS)},
        **{name: taken[name] for name in SPREAD_COLUMNS},
    }
    columns = {**{name: pa.array(values, FRONTIER_SCHEMA.field(name).type) for name, values in side_columns.items()},
               **{name: column.cast(FRONTIER_SCHEMA.field(name).type) for name, column in from_runs.items()}}
    return pa.table([columns[name] for name in FRONTIER_SCHEMA.names], schema=FRONTIER_SCHEMA)


# Input columns build_frontiers derives when the rows lack them (hand-built rows, a runs/ mart written before the
# column existed): x_intvty_stat is median_intvty for a fixed-sequence run, unknown (null) for an agentic one.
DERIVED_INPUT_COLUMNS = ("x_intvty_stat",)
# Helper column averaged over each repeat group: the share of its runs whose x_intvty is their benchmark type's
# own statistic (PREFERRED_X_STAT), 1.0 or 0.0 unless a group's repeats mix statistics.
X_DEFINITION_SHARE = "_x_definition_share"
# The statistic a side's frontier keeps when its runs mix several: the definition of its benchmark type's axis
PREFERRED_X_STAT = {FIXED_SEQ: X_STAT_MEDIAN, AGENTIC_TRACES: X_STAT_E2E_NORM}


def with_x_statistic(table: pa.Table) -> pa.Table:
    """``table`` with ``x_intvty_stat`` (derived when absent, ``DERIVED_INPUT_COLUMNS``) and the helper column
    ``X_DEFINITION_SHARE`` (float64: 1.0 where ``x_intvty_stat`` is the run's ``PREFERRED_X_STAT``, else 0.0)."""
    if "x_intvty_stat" not in table.column_names:
        fixed = pc.equal(pc.fill_null(table["benchmark_type"].cast(pa.string()), FIXED_SEQ), FIXED_SEQ)
        table = table.append_column("x_intvty_stat", pc.if_else(fixed, pa.scalar(X_STAT_MEDIAN),
                                                                pa.scalar(None, pa.string())))
    agentic = pc.fill_null(pc.equal(table["benchmark_type"].cast(pa.string()), AGENTIC_TRACES), False)
    preferred = pc.if_else(agentic, pa.scalar(PREFERRED_X_STAT[AGENTIC_TRACES]),
                           pa.scalar(PREFERRED_X_STAT[FIXED_SEQ]))
    definition = pc.fill_null(pc.equal(table["x_intvty_stat"].cast(pa.string()), preferred), False)
    share = pc.if_else(definition, 1.0, 0.0).cast(pa.float64())
    if X_DEFINITION_SHARE in table.column_names:
        table = table.drop_columns([X_DEFINITION_SHARE])
    return table.append_column(X_DEFINITION_SHARE, share)


def one_x_statistic(members: np.ndarray, share: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A side's frontier never mixes x-axis statistics (docs/metrics.md section 4a): when the side's current
    points (``members``, positions of averaged repeat groups) include both runs on the definition of their axis
    (``PREFERRED_X_STAT``: ``e2e_norm_intvty_p90`` for agentic sides) and runs on another statistic (the agentic
    stand-in ``mean_osl_over_p90_e2el``), only the points whose every run has the definition are kept; a repeat
    group whose repeats mix the two is left out whole (its mean would mix them).

    Args:
        members: int64 positions of the side's points in the averaged table.
        share: ``X_DEFINITION_SHARE`` of every row of that table, float64.
    Returns:
        (kept positions, left-out positions); nothing left out when the side holds one statistic.
    """
    if members.size == 0:
        return members, members[:0]
    values = share[members]
    if np.all(values == 1.0) or np.all(values == 0.0):
        return members, members[:0]
    keep = values == 1.0
    return members[keep], members[~keep]


def with_slo(table: pa.Table, slo: str) -> pa.Table:
    """``table`` (frontier or comparison rows) with a last column ``slo`` (string) set to ``slo`` on every row:
    ``none`` for rows built from every run, else the SLO whose runs built them."""
    return table.append_column(pa.field("slo", pa.string()), pa.array([slo] * table.num_rows, pa.string()))


def split_by_slo(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The two file marts of a ``frontiers`` or ``comparisons`` warehouse table (rows of every ``slo``, last
    column ``slo``): (the rows of every run, ``slo = 'none'``, without the ``slo`` column: ``<name>.parquet``,
    one grain), (the SLO-restricted rows, ``slo`` kept as their key: ``<name>_slo.parquet``). Rows keep their
    order. A reader of the first file never sees a row twice, whatever ``slos.csv`` lists (docs/marts.md).

    Raises:
        KeyError: ``table`` has no ``slo`` column.
    """
    every_run = pc.equal(table["slo"], NO_SLO)
    return table.filter(every_run).drop_columns(["slo"]), table.filter(pc.invert(every_run))


def frontiers_by_side(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Frontier rows (``FRONTIER_SCHEMA``, one price book) grouped by ``side_id``, each in point order: the shape
    ``compare`` reads."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["side_id"], []).append(row)
    return {side: sorted(points, key=lambda p: p["point_index"]) for side, points in grouped.items()}
