"""Historical trends: for each frontier group and run date, the frontier's metrics at the targets of the comparisons
the group belongs to (``trends_at_targets``), or at any one target interactivity (``trends_at_target``).

A frontier group is (model, isl, osl, hw, framework, precision, spec_decoding, benchmark_type, x_intvty_stat) — one
serving stack on one kind of load, read on one x-axis statistic — and one ``run_date``; its Pareto frontier is
built from the group's lines as they stood that day: each line's latest sweep dated that day or earlier (``pipeline.validate.lines``), repeats averaged
(``pipeline.frontiers.latest``). Values follow the trend rule (docs/metrics.md,
"Trends"): monotone cubic interpolation inside the frontier's interactivity range, **null outside it** (no clamping, no
extrapolation), so a date whose runs never reached the target shows a gap, not a made-up number. Interactivity is
the frontier x-axis ``x_intvty`` (E2E-normalized for agentic-trace groups).

The trend mart reads each group at the three default targets (25/50/75 % of the band, ``pipeline.comparisons.band``)
of every comparison one of whose sides holds the group (``comparison_targets``: the side's fixed keys equal the
group's, its pooled keys take any value, ``pipeline.frontiers.sides.Side.matches``), so a group is read where its
comparisons are read, not at one interactivity its frontier may never reach. A group in no comparison has no trend
row.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.frontiers.latest import average_repeats
from pipeline.frontiers.pareto import float_values, grouped_pareto_frontiers
from pipeline.frontiers.sides import Side, holding_side_keys
from pipeline.frontiers.spline import frontiers_at, slices
from pipeline.ingest.schema import SIDE_KEY_FIELDS
from pipeline.validate.lines import current_sweeps_by_date, first_rows, row_codes

DEFAULT_TARGET_INTVTY = 35.0
_EPOCH = dt.date(1970, 1, 1)
# A frontier group's keys as columns of the marts that are per group (trends, regressions): the side key, fully
# specified (no key pooled), in its order.
GROUP_FIELDS = list(SIDE_KEY_FIELDS)
# x_intvty_stat: a group's frontier is drawn on one x-axis statistic (docs/metrics.md section 4a), so runs placed by
# another statistic (an agentic run on the stand-in, an LLMPerf run on E2E-normalized interactivity) form their own
# groups
GROUP_KEYS = (*(name for name, _ in GROUP_FIELDS), "x_intvty_stat")
TREND_METRICS = ("tput_per_gpu", "output_tput_per_gpu", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud",
                 "cost_per_mtok_rental", "tok_s_per_mw", "concurrency")

# Which comparison target a trend row is read at: the comparison, the side of it holding the group, and which of its
# three default targets (1, 2, 3); null for a target given by hand (``trends_at_target``).
TARGET_FIELDS = [("comparison_id", pa.string()), ("side", pa.string()), ("target_index", pa.int32())]
# A comparison's targets as the trend reads them (``comparison_targets``): one row per (price book, comparison,
# side, target), with the side's keys as the comparisons mart writes them (``all`` where pooled).
COMPARISON_TARGET_SCHEMA = pa.schema([
    ("price_book", pa.string()), *TARGET_FIELDS, ("target_intvty", pa.float64()),
    *GROUP_FIELDS, ("x_intvty_stat", pa.string())])

TREND_SCHEMA = pa.schema(
    [
        ("price_book", pa.string()),
        *GROUP_FIELDS,
        ("x_intvty_stat", pa.string()),
        ("run_date", pa.date32()),
        *TARGET_FIELDS,
        ("target_intvty", pa.float64()),
        ("runs", pa.int32()),
        ("frontier_points", pa.int32()),
        ("frontier_intvty_min", pa.float64()),
        ("frontier_intvty_max", pa.float64()),
        ("in_range", pa.bool_()),
        *[(m, pa.float64()) for m in TREND_METRICS],
    ]
)


_KEY_NAMES = ("price_book", *GROUP_KEYS, "run_date")  # a trend row's key, in its sort order
_FRONTIER_SCHEMA = pa.schema([
    *(TREND_SCHEMA.field(name) for name in _KEY_NAMES),
    ("runs", pa.int64()),
    ("x_intvty", pa.float64()),
    *((m, pa.float64()) for m in TREND_METRICS),
])


def build_trends(runs: pa.Table | Iterable[Mapping[str, Any]],
                 target_intvty: float = DEFAULT_TARGET_INTVTY, dates: Iterable[Any] | None = None) -> pa.Table:
    """Trend rows at one target (``TREND_SCHEMA``, comparison columns null): one row per (price_book, frontier
    group, run_date) where the group has runs that day, in key order. The day's frontier is built from the
    group's lines as of that day (each line's latest sweep dated that day or earlier, ``current_sweeps_by_date``;
    concurrencies of older sweeps not stitched in), repeats averaged (``average_repeats``); ``runs`` counts the runs behind it.

    Two steps, ``trend_frontiers`` (the day's frontiers) then ``trends_at_target`` (each read at the target): a
    caller with more runs than it wants to hold at once gives the first step slices of whole groups and lines,
    and the second their frontiers together (``merge_trend_frontiers``), and gets this table to the last bit.

    Args:
        runs: ``run_metrics`` rows, an Arrow table or dicts, with the group keys, ``run_date``, ``price_book``,
            ``run_id``, ``line_id``, ``sweep_id``, ``x_intvty`` (tok/s/user), ``conc`` and the trend metrics,
            dated ``dates`` and earlier. Runs without a ``run_date`` have no place on a time axis and are left out.
        target_intvty: the interactivity to read every frontier at (tok/s/user).
        dates: the run dates to give rows for (default: every date of ``runs``).
    Raises:
        ValueError: a run's interactivity or tok/s/GPU is NaN (``grouped_pareto_frontiers``).
    """
    return trends_at_target(trend_frontiers(runs, dates), target_intvty)


def trend_frontiers(runs: pa.Table | Iterable[Mapping[str, Any]], dates: Iterable[Any] | None = None) -> pa.Table:
    """Each (price_book, frontier group, run_date)'s Pareto frontier as of that day (``build_trends`` says which
    runs): one row per frontier point, groups in key order, each group's points by interactivity.

    Columns: ``price_book``, the ``GROUP_KEYS``, ``run_date``, ``runs`` (int64, the runs behind the group's
    frontier, on each of its points), ``x_intvty`` (float64, tok/s/user) and the ``TREND_METRICS`` (float64,
    null where the point lacks one; ``concurrency`` is the run's ``conc``). Column work: runs are sorted by group
    once, and every group's frontier comes from one ``grouped_pareto_frontiers`` call.

    Args and errors: as ``build_trends``.
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    del runs  # each step below replaces the table: a caller that lets go of it holds one copy at a time
    if table.num_rows == 0:
        return _FRONTIER_SCHEMA.empty_table()
    table = table.filter(pc.is_valid(table["run_date"]))
    table = _lines_as_of_each_date(table, dates)
    if table.num_rows == 0:
        return _FRONTIER_SCHEMA.empty_table()
    table = _in_key_order(table)
    codes = row_codes(table, _KEY_NAMES)  # sorted by the keys: a new code starts a new group
    group = np.cumsum(np.concatenate(([True], codes[1:] != codes[:-1]))) - 1
    x = float_values(table["x_intvty"])
    points = grouped_pareto_frontiers(group, x, float_values(table["tput_per_gpu"]))  # by group, then x
    runs_per_group = np.bincount(group, weights=table["repeat_n"].to_numpy()).astype(np.int64)
    taken = pa.array(points, pa.int64())
    return pa.table({
        **{name: table[name].take(taken) for name in _KEY_NAMES},
        "runs": runs_per_group[group[points]],
        "x_intvty": x[points],
        **{m: pc.cast(table["conc" if m == "concurrency" else m], pa.float64()).take(taken) for m in TREND_METRICS},
    }).cast(_FRONTIER_SCHEMA)


def merge_trend_frontiers(parts: list[pa.Table]) -> pa.Table:
    """``trend_frontiers`` of disjoint slices of the runs (each slice whole frontier groups and whole lines) as
    the one table ``trend_frontiers`` of all of them gives: groups in key order, each group's points as its
    slice ordered them."""
    if not parts:
        return _FRONTIER_SCHEMA.empty_table()
    return _in_key_order(pa.concat_tables(parts))


def _in_key_order(table: pa.Table) -> pa.Table:
    """``table``'s rows sorted by a trend row's key (``_KEY_NAMES``), stably: rows of one key keep their order."""
    return table.take(pc.sort_indices(table, sort_keys=[(name, "ascending") for name in _KEY_NAMES]))


def trends_at_target(frontiers: pa.Table, target_intvty: float = DEFAULT_TARGET_INTVTY) -> pa.Table:
    """The trend rows (``TREND_SCHEMA``) from ``trend_frontiers``' points: each frontier read at
    ``target_intvty`` (tok/s/user), ``comparison_id``, ``side`` and ``target_index`` null. The reading rule is
    ``_read_at``'s (null with ``in_range`` false outside a frontier's range: no clamping, no extrapolation); any
    target can be asked for (a page reading a day's frontiers at a typed target).
    """
    groups = _frontier_groups(frontiers)
    return _read_at(frontiers, groups, np.arange(groups.size, dtype=np.int64),
                    np.full(groups.size, float(target_intvty)),
                    *(pa.nulls(groups.size, kind) for _, kind in TARGET_FIELDS))


def trends_at_targets(frontiers: pa.Table, targets: pa.Table) -> pa.Table:
    """The trend mart (``TREND_SCHEMA``): each of ``trend_frontiers``' frontiers read at every target of
    ``targets`` (``COMPARISON_TARGET_SCHEMA``, ``comparison_targets``) whose side holds its group in its price book
    (``Side.matches`` on the group's keys, the same ``x_intvty_stat``). One row per (price book, frontier group,
    run date, comparison, target index), in that order; a frontier group no target's side holds has none.
    Values as ``_read_at`` (tok/s/GPU, $/M tok, tok/s/MW, concurrency; null outside the day's frontier).

    Which targets hold a group is decided once per (price book, group), whatever its dates.

    Raises:
        KeyError: ``targets`` lacks a column of ``COMPARISON_TARGET_SCHEMA``.
    """
    groups = _frontier_groups(frontiers)
    targets = targets.sort_by([(name, "ascending") for name in ("comparison_id", "side", "target_index")])
    firsts = frontiers.take(pa.array(groups.first_point, pa.int64())).select(["price_book", *GROUP_KEYS])
    book_group = row_codes(firsts, firsts.column_names)  # the same (book, group) on every date: one code
    keys = firsts.take(pa.array(first_rows(book_group, int(book_group.max(initial=-1)) + 1), pa.int64())).to_pylist()
    held = _targets_held(keys, targets)  # per (book, group) code: its targets' rows
    count = np.array([len(rows) for rows in held], dtype=np.int64)
    start = np.cumsum(count) - count
    flat = np.array([row for rows in held for row in rows], dtype=np.int64)
    per_group = count[book_group]
    pair_group = np.repeat(np.arange(groups.size, dtype=np.int64), per_group)
    pair_row = flat[slices(start[book_group], per_group)] if flat.size else np.zeros(0, dtype=np.int64)
    chosen = targets.take(pa.array(pair_row, pa.int64()))
    return _read_at(frontiers, groups, pair_group, chosen["target_intvty"].to_numpy(zero_copy_only=False),
                    *(chosen[name].combine_chunks() for name, _ in TARGET_FIELDS))


def _targets_held(keys: list[dict[str, Any]], targets: pa.Table) -> list[list[int]]:
    """For each (price book, frontier group) of ``keys`` (dicts with ``price_book`` and the ``GROUP_KEYS``), the
    rows of ``targets`` (``COMPARISON_TARGET_SCHEMA``) whose side holds it: the same price book and
    ``x_intvty_stat``, and ``Side.matches`` on the group's keys (the side's pooled keys take any value)."""
    by_side: dict[tuple, list[int]] = {}  # (book, x statistic, side key) -> target rows, ascending
    for row, target in enumerate(targets.select(["price_book", "x_intvty_stat", *(n for n, _ in GROUP_FIELDS)])
                                 .to_pylist()):
        side = Side(**{name: target[name] for name, _ in GROUP_FIELDS})
        by_side.setdefault((target["price_book"], target["x_intvty_stat"], side.side_key), []).append(row)
    return [sorted({row for side_key in holding_side_keys(key)
                    for row in by_side.get((key["price_book"], key["x_intvty_stat"], side_key), ())})
            for key in keys]


def comparison_targets(comparisons: pa.Table) -> pa.Table:
    """The targets the trend mart reads each frontier group at (``COMPARISON_TARGET_SCHEMA``), from ``comparisons``
    rows of every run (the ``comparisons`` table's ``slo = 'none'`` rows, ``pipeline.comparisons.compare``: each
    comparison's band and its three default targets, the same in each of its rows): one row per (price book,
    comparison, side, target index), sorted, so that two tables of the same targets are equal.

    Raises:
        KeyError: ``comparisons`` lacks a column of ``COMPARISON_TARGET_SCHEMA``.
    """
    table = comparisons.select(COMPARISON_TARGET_SCHEMA.names).cast(COMPARISON_TARGET_SCHEMA)
    table = table.group_by(COMPARISON_TARGET_SCHEMA.names, use_threads=False).aggregate([])
    return table.select(COMPARISON_TARGET_SCHEMA.names).sort_by(
        [(name, "ascending") for name in ("price_book", "comparison_id", "side", "target_index")])


@dataclass(frozen=True)
class _Groups:
    """``trend_frontiers``' frontiers, each (price book, frontier group, run date) a group: its first point's row,
    its points, interactivity range and the metrics, as arrays (``_frontier_groups``)."""

    first_point: np.ndarray  # int64, (groups,)
    points: np.ndarray  # int64, (groups,)
    x: np.ndarray  # float64, (rows,): every point's x_intvty, tok/s/user
    metric_values: np.ndarray  # float64, (rows, len(TREND_METRICS))
    complete: np.ndarray  # bool, (groups, len(TREND_METRICS)): no point of the group lacks the metric

    @property
    def size(self) -> int:
        """How many frontiers."""
        return int(self.first_point.size)


def _frontier_groups(frontiers: pa.Table) -> _Groups:
    """``frontiers`` (``trend_frontiers``' points, in key order) split into its frontiers."""
    if frontiers.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Groups(empty, empty, np.zeros(0), np.zeros((0, len(TREND_METRICS))),
                       np.zeros((0, len(TREND_METRICS)), dtype=bool))
    codes = row_codes(frontiers, _KEY_NAMES)  # sorted by the keys: a new code starts a new group
    new_group = np.concatenate(([True], codes[1:] != codes[:-1]))
    group = np.cumsum(new_group) - 1
    points_per_group = np.bincount(group)
    metric_columns = [frontiers[m] for m in TREND_METRICS]
    metric_present = np.column_stack([column.is_valid().to_numpy(zero_copy_only=False) for column in metric_columns])
    # a metric some frontier point lacks (e.g. output tok/s in an export row) is null, not bridged
    gaps = np.zeros((points_per_group.size, len(TREND_METRICS)))
    np.add.at(gaps, group, ~metric_present)
    return _Groups(np.flatnonzero(new_group), points_per_group, float_values(frontiers["x_intvty"]),
                   np.column_stack([float_values(column) for column in metric_columns]), gaps == 0)


def _read_at(frontiers: pa.Table, groups: _Groups, pair_group: np.ndarray, pair_target: np.ndarray,
             comparison_id: pa.Array, side: pa.Array, target_index: pa.Array) -> pa.Table:
    """The trend rule, once for every reader: row i of the result (``TREND_SCHEMA``) is frontier
    ``pair_group[i]`` read at ``pair_target[i]`` (tok/s/user) by monotone cubic interpolation, null with
    ``in_range`` false outside its interactivity range (no clamping, no extrapolation), a metric some point lacks
    null; ``comparison_id``, ``side``, ``target_index`` are the row's target columns.

    A (frontier, target) pair asked for twice is read once. The frontiers of one date are read by one spline at
    every target (``frontiers_at``: the trend rule's numbers to about 1e-12 relative, and to the last bit the same
    for the same frontiers and targets of a date: a date's rows are the same whether it is computed alone, in a
    nightly batch, with every other date, or from slices of the runs).
    """
    if pair_group.size == 0:
        return TREND_SCHEMA.empty_table()
    first_point, points_per_group, x = groups.first_point, groups.points, groups.x
    x_min, x_max = x[first_point], x[first_point + points_per_group - 1]
    day_of_group = frontiers["run_date"].take(pa.array(first_point, pa.int64())).cast(pa.int32()).to_numpy(
        zero_copy_only=False)
    target_values, target_code = np.unique(pair_target, return_inverse=True)
    unique, inverse = np.unique(pair_group * target_values.size + target_code.reshape(-1), return_inverse=True)
    u_group, u_target = unique // target_values.size, target_values[unique % target_values.size]
    inverse = inverse.reshape(-1)
    in_range = (x_min[u_group] <= u_target) & (u_target <= x_max[u_group])
    values = np.full((u_group.size, len(TREND_METRICS)), np.nan)
    u_day = day_of_group[u_group]
    for day in np.unique(u_day[in_range]):  # one spline per date: a batch re-reads whole dates
        reads = np.flatnonzero(in_range & (u_day == day))  # by group (key order), then target
        read_groups, local = np.unique(u_group[reads], return_inverse=True)
        on_frontier = slices(first_point[read_groups], points_per_group[read_groups])
        values[reads] = frontiers_at(x[on_frontier], groups.metric_values[on_frontier],
                                     points_per_group[read_groups], local.reshape(-1), u_target[reads])
    known = in_range[:, None] & groups.complete[u_group]
    firsts = frontiers.take(pa.array(first_point[pair_group], pa.int64()))
    return pa.table({
        **{name: firsts[name] for name in _KEY_NAMES},
        "comparison_id": comparison_id, "side": side, "target_index": target_index,
        "target_intvty": np.asarray(pair_target, dtype=float),
        "runs": firsts["runs"],
        "frontier_points": points_per_group[pair_group],
        "frontier_intvty_min": x_min[pair_group], "frontier_intvty_max": x_max[pair_group],
        "in_range": in_range[inverse],
        **{m: pa.array(values[inverse, i], mask=~known[inverse, i]) for i, m in enumerate(TREND_METRICS)},
    }).select(TREND_SCHEMA.names).cast(TREND_SCHEMA)


def _lines_as_of_each_date(table: pa.Table, dates: Iterable[Any] | None) -> pa.Table:
    """For each (price book, group) and each date it has runs (within ``dates``), the group's current runs as of
    that date, repeats averaged, with ``run_date`` set to that date: the rows the day's frontier is built from.

    Column work except for one loop over (book, date, line): a (book, group) and a repeat group are integer
    codes (``row_codes``), and a picked run's repeat key is its repeat group's code and the date's index."""
    book_group = row_codes(table, ("price_book", *GROUP_KEYS))
    repeat_group = row_codes(table, ("price_book", "line_id", "sweep_id", "conc"))
    day_number = pc.cast(table["run_date"], pa.date32()).cast(pa.int32()).to_numpy().astype(np.int64)  # no nulls
    groups = int(book_group.max(initial=-1)) + 1
    # the (date, book and group) pairs with runs, within ``dates``
    in_dates = np.ones(table.num_rows, dtype=bool) if dates is None else np.isin(
        day_number, [(day - _EPOCH).days for day in dates])
    active: dict[int, set[int]] = {}  # day number -> the (book, group) codes with runs that day
    for pair in np.unique(day_number[in_dates] * groups + book_group[in_dates]).tolist():
        active.setdefault(pair // groups, set()).add(pair % groups)
    # each (book, group)'s lines, sorted once
    line = row_codes(table, ("line_id",))
    line_count = int(line.max(initial=-1)) + 1
    line_names = table["line_id"].take(pa.array(first_rows(line, line_count), pa.int64())).to_pylist()
    lines_of: dict[int, list[str]] = {}
    for pair in np.unique(book_group * max(line_count, 1) + line).tolist():
        lines_of.setdefault(pair // max(line_count, 1), []).append(line_names[pair % max(line_count, 1)])
    for names in lines_of.values():
        names.sort()
    days = [_EPOCH + dt.timedelta(days=day) for day in sorted(active)]
    # lineage per price book keeps each row's own book (the lines are the same in every book)
    picked: list[np.ndarray] = []
    day_index: list[np.ndarray] = []
    for book in sorted(pc.unique(table["price_book"]).to_pylist()):
        rows = np.flatnonzero(pc.equal(table["price_book"], book).to_numpy(zero_copy_only=False))
        book_codes = set(book_group[rows].tolist())
        sub = table.select(["run_date", "line_id", "sweep_id"]).take(pa.array(rows, pa.int64()))
        for at, (day, current) in enumerate(current_sweeps_by_date(sub, days)):  # days in order, each once
            positions: list[int] = []
            for code in sorted(active[(day - _EPOCH).days] & book_codes):
                for name in lines_of[code]:
                    positions.extend(current.get(name, ()))
            picked.append(rows[np.array(positions, dtype=np.int64)])
            day_index.append(np.full(len(positions), at, dtype=np.int64))
    chosen_rows = np.concatenate(picked) if picked else np.zeros(0, dtype=np.int64)
    chosen_days = np.concatenate(day_index) if day_index else np.zeros(0, dtype=np.int64)
    chosen = table.take(pa.array(chosen_rows, pa.int64()))
    date_type = chosen.schema.field("run_date").type
    chosen = chosen.set_column(chosen.schema.get_field_index("run_date"), "run_date",
                               pa.array(days, date_type).take(pa.array(chosen_days, pa.int64())))
    keys = repeat_group[chosen_rows] * max(len(days), 1) + chosen_days
    return average_repeats(chosen, keys, [*(m for m in TREND_METRICS if m != "concurrency"), "x_intvty"])
