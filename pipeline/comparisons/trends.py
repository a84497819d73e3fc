"""Historical trends: for each frontier group and run date, the frontier's metrics at one target interactivity.

A frontier group is (model, isl, osl, hw, framework, precision, spec_decoding, benchmark_type, x_intvty_stat) — one
serving stack on one kind of load, read on one x-axis statistic — and one ``run_date``; its Pareto frontier is
built from the group's lines as they stood that day: each line's latest sweep dated that day or earlier (``pipeline.validate.lines``), repeats averaged
(``pipeline.frontiers.latest``). Values follow the trend rule (docs/metrics.md,
"Trends"): monotone cubic interpolation inside the frontier's interactivity range, **null outside it** (no clamping, no
extrapolation), so a date whose runs never reached the target shows a gap, not a made-up number. Interactivity is
the frontier x-axis ``x_intvty`` (E2E-normalized for agentic-trace groups).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.frontiers.latest import average_repeats
from pipeline.frontiers.pareto import float_values, grouped_pareto_frontiers
from pipeline.frontiers.spline import interpolate_frontiers, slices
from pipeline.validate.lines import current_sweeps_by_date, first_rows, row_codes

DEFAULT_TARGET_INTVTY = 35.0
_EPOCH = dt.date(1970, 1, 1)
# A frontier group's keys as columns of the marts that are per group (trends, regressions), in this order.
GROUP_FIELDS = [("model", pa.string()), ("isl", pa.int32()), ("osl", pa.int32()), ("hw", pa.string()),
                ("framework", pa.string()), ("precision", pa.string()), ("spec_decoding", pa.string()),
                ("benchmark_type", pa.string())]
# x_intvty_stat: a group's frontier is drawn on one x-axis statistic (docs/metrics.md section 4a), so runs placed by
# another statistic (an agentic run on the stand-in, an LLMPerf run on E2E-normalized interactivity) form their own
# groups
GROUP_KEYS = (*(name for name, _ in GROUP_FIELDS), "x_intvty_stat")
TREND_METRICS = ("tput_per_gpu", "output_tput_per_gpu", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud",
                 "cost_per_mtok_rental", "tok_s_per_mw", "concurrency")

TREND_SCHEMA = pa.schema(
    [
        ("price_book", pa.string()),
        *GROUP_FIELDS,
        ("x_intvty_stat", pa.string()),
        ("run_date", pa.date32()),
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
    """The trend mart (``TREND_SCHEMA``): one row per (price_book, frontier group, run_date) where the group has
    runs that day, in key order. The day's frontier is built from the group's lines as of that day (each line's
    latest sweep dated that day or earlier, ``current_sweeps_by_date``; concurrencies of older sweeps not
    stitched in), repeats averaged (``average_repeats``); ``runs`` counts the runs behind it.

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
    """The trend mart (``TREND_SCHEMA``) from ``trend_frontiers``' points: each frontier read at
    ``target_intvty`` (tok/s/user) by monotone cubic interpolation, null with ``in_range`` false outside its
    interactivity range (the trend rule: no clamping, no extrapolation), a metric some point lacks null.

    The frontiers holding the target are read by one spline per date (``interpolate_frontiers``: the trend
    rule's numbers to about 1e-12 relative, and to the last bit the same for the same frontiers of a date in the
    same order: a date's rows are the same whether it is computed alone, in a nightly batch, with every other
    date, or from slices of the runs).
    """
    if frontiers.num_rows == 0:
        return TREND_SCHEMA.empty_table()
    codes = row_codes(frontiers, _KEY_NAMES)  # sorted by the keys: a new code starts a new group
    new_group = np.concatenate(([True], codes[1:] != codes[:-1]))
    group = np.cumsum(new_group) - 1
    x = float_values(frontiers["x_intvty"])
    points_per_group = np.bincount(group)
    first_point = np.flatnonzero(new_group)
    x_min, x_max = x[first_point], x[first_point + points_per_group - 1]
    in_range = (x_min <= target_intvty) & (target_intvty <= x_max)
    metric_columns = [frontiers[m] for m in TREND_METRICS]
    metric_values = np.column_stack([float_values(column) for column in metric_columns])
    metric_present = np.column_stack([column.is_valid().to_numpy(zero_copy_only=False) for column in metric_columns])
    # a metric some frontier point lacks (e.g. output tok/s in an export row) is null, not bridged
    gaps = np.zeros((points_per_group.size, len(TREND_METRICS)))
    np.add.at(gaps, group, ~metric_present)
    known = in_range[:, None] & (gaps == 0)
    values = np.full(known.shape, np.nan)
    firsts = frontiers.take(pa.array(first_point))
    day_of_group = firsts["run_date"].to_numpy(zero_copy_only=False)
    for day in np.unique(day_of_group[in_range]):  # one spline per date: a batch re-reads whole dates
        chosen = np.flatnonzero(in_range & (day_of_group == day))
        on_frontier = slices(first_point[chosen], points_per_group[chosen])
        values[chosen] = interpolate_frontiers(x[on_frontier], metric_values[on_frontier],
                                               points_per_group[chosen], target_intvty)
    return pa.table({
        **{name: firsts[name] for name in _KEY_NAMES},
        "target_intvty": np.full(points_per_group.size, float(target_intvty)),
        "runs": firsts["runs"],
        "frontier_points": points_per_group,
        "frontier_intvty_min": x_min, "frontier_intvty_max": x_max, "in_range": in_range,
        **{m: pa.array(values[:, i], mask=~known[:, i]) for i, m in enumerate(TREND_METRICS)},
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
