"""Historical trends: for each frontier group and run date, the frontier's metrics at one target interactivity.

A frontier group is (model, isl, osl, hw, framework, precision, spec_decoding, benchmark_type) — one serving stack
on one kind of load — and one ``run_date``; its Pareto frontier is built from the group's lines as they stood that
day: each line's latest sweep dated that day or earlier (``pipeline.validate.lines``), repeats averaged
(``pipeline.frontiers.latest``). Values follow the trend rule (docs/metrics.md,
"Trends"): monotone cubic interpolation inside the frontier's interactivity range, **null outside it** (no clamping, no
extrapolation), so a date whose runs never reached the target shows a gap, not a made-up number. Interactivity is
the frontier x-axis ``x_intvty`` (E2E-normalized for agentic-trace groups).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.frontiers.latest import average_repeats
from pipeline.frontiers.pareto import float_values, grouped_pareto_frontiers
from pipeline.frontiers.spline import interpolate
from pipeline.validate.lines import current_sweeps_by_date

DEFAULT_TARGET_INTVTY = 35.0
GROUP_KEYS = ("model", "isl", "osl", "hw", "framework", "precision", "spec_decoding", "benchmark_type")
TREND_METRICS = ("tput_per_gpu", "output_tput_per_gpu", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud",
                 "cost_per_mtok_rental", "tok_s_per_mw", "concurrency")

TREND_SCHEMA = pa.schema(
    [
        ("price_book", pa.string()),
        ("model", pa.string()),
        ("isl", pa.int32()),
        ("osl", pa.int32()),
        ("hw", pa.string()),
        ("framework", pa.string()),
        ("precision", pa.string()),
        ("spec_decoding", pa.string()),
        ("benchmark_type", pa.string()),
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


def build_trends(runs: pa.Table | Iterable[Mapping[str, Any]],
                 target_intvty: float = DEFAULT_TARGET_INTVTY, dates: Iterable[Any] | None = None) -> pa.Table:
    """The trend mart (``TREND_SCHEMA``): one row per (price_book, frontier group, run_date) where the group has
    runs that day, in key order. The day's frontier is built from the group's lines as of that day (each line's
    latest sweep dated that day or earlier, ``current_sweeps_by_date``; concurrencies of older sweeps not
    stitched in), repeats averaged (``average_repeats``); ``runs`` counts the runs behind it.

    Column work: runs are sorted by group once, every group's frontier comes from one
    ``grouped_pareto_frontiers`` call and, where the target lies inside a frontier, every metric that frontier
    has whole is read with one ``interpolate`` call.

    Args:
        runs: ``run_metrics`` rows, an Arrow table or dicts, with the group keys, ``run_date``, ``price_book``,
            ``run_id``, ``line_id``, ``sweep_id``, ``x_intvty`` (tok/s/user), ``conc`` and the trend metrics,
            dated ``dates`` and earlier. Runs without a ``run_date`` have no place on a time axis and are left out.
        target_intvty: the interactivity to read every frontier at (tok/s/user).
        dates: the run dates to give rows for (default: every date of ``runs``).
    Raises:
        ValueError: a run's interactivity or tok/s/GPU is NaN (``grouped_pareto_frontiers``).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    if table.num_rows == 0:
        return TREND_SCHEMA.empty_table()
    key_names = ("price_book", *GROUP_KEYS, "run_date")
    table = table.filter(pc.is_valid(table["run_date"]))
    table = _lines_as_of_each_date(table, dates)
    if table.num_rows == 0:
        return TREND_SCHEMA.empty_table()
    table = table.take(pc.sort_indices(table, sort_keys=[(name, "ascending") for name in key_names]))  # stable
    keys = list(zip(*(table[name].to_pylist() for name in key_names)))
    n = len(keys)
    new_group = np.fromiter((i == 0 or keys[i] != keys[i - 1] for i in range(n)), dtype=bool, count=n)
    group = np.cumsum(new_group) - 1
    x = float_values(table["x_intvty"])
    points = grouped_pareto_frontiers(group, x, float_values(table["tput_per_gpu"]))  # by group, then x
    runs_per_group = np.bincount(group)  # frontier candidates (repeat groups) per row
    points_per_group = np.bincount(group[points], minlength=runs_per_group.size)
    first_point = np.cumsum(points_per_group) - points_per_group
    x_min, x_max = x[points[first_point]], x[points[first_point + points_per_group - 1]]
    in_range = (x_min <= target_intvty) & (target_intvty <= x_max)

    metric_columns = [table["conc" if m == "concurrency" else m] for m in TREND_METRICS]
    metric_values = np.column_stack([float_values(column) for column in metric_columns])
    metric_present = np.column_stack([column.is_valid().to_numpy(zero_copy_only=False) for column in metric_columns])
    values = np.full((runs_per_group.size, len(TREND_METRICS)), np.nan)
    known = np.zeros(values.shape, dtype=bool)
    for g in np.flatnonzero(in_range):  # outside the frontier every value is null: no spline
        on_frontier = points[first_point[g]:first_point[g] + points_per_group[g]]
        # a metric some frontier point lacks (e.g. output tok/s in an export row) is null, not bridged
        whole = np.flatnonzero(metric_present[on_frontier].all(axis=0))
        values[g, whole] = interpolate(x[on_frontier], metric_values[np.ix_(on_frontier, whole)], [target_intvty],
                                       clamp=False)[0]
        known[g, whole] = True

    firsts = table.take(pa.array(np.flatnonzero(new_group)))
    return pa.table({
        **{name: firsts[name] for name in key_names},
        "target_intvty": np.full(runs_per_group.size, float(target_intvty)),
        "runs": np.bincount(group, weights=table["repeat_n"].to_numpy()).astype(np.int32),
        "frontier_points": points_per_group,
        "frontier_intvty_min": x_min, "frontier_intvty_max": x_max, "in_range": in_range,
        **{m: pa.array(values[:, i], mask=~known[:, i]) for i, m in enumerate(TREND_METRICS)},
    }).select(TREND_SCHEMA.names).cast(TREND_SCHEMA)


def _lines_as_of_each_date(table: pa.Table, dates: Iterable[Any] | None) -> pa.Table:
    """For each (price book, group) and each date it has runs (within ``dates``), the group's current runs as of
    that date, repeats averaged, with ``run_date`` set to that date: the rows the day's frontier is built from."""
    books_groups = list(zip(*(table[name].to_pylist() for name in ("price_book", *GROUP_KEYS))))
    run_dates = table["run_date"].to_pylist()
    lines, sweeps, concs = (table[name].to_pylist() for name in ("line_id", "sweep_id", "conc"))
    wanted = None if dates is None else set(dates)
    active: dict[Any, set] = {}  # date -> the (book, group)s with runs that day
    lines_of: dict[tuple, set] = {}
    for key, day, line in zip(books_groups, run_dates, lines):
        if wanted is None or day in wanted:
            active.setdefault(day, set()).add(key)
        lines_of.setdefault(key, set()).add(line)
    book_of_row = table["price_book"].to_pylist()
    # lineage per price book keeps each row's own book (the lines are the same in every book)
    picked: list[int] = []
    keys: list[tuple] = []
    day_of: list[Any] = []
    for book in sorted(set(book_of_row)):
        rows = np.flatnonzero(np.array([b == book for b in book_of_row], dtype=bool))
        sub = table.take(pa.array(rows, pa.int64())).select(["run_id", "run_date", "line_id", "sweep_id"])
        for day, current in current_sweeps_by_date(sub, sorted(active)):
            for key in active[day]:
                if key[0] != book:
                    continue
                for line in lines_of[key]:
                    for position in current.get(line, ()):
                        i = int(rows[position])
                        picked.append(i)
                        keys.append((key, day, f"{lines[i]}|{sweeps[i]}|conc={concs[i]}"))
                        day_of.append(day)
    chosen = table.take(pa.array(picked, pa.int64()))
    chosen = chosen.set_column(chosen.schema.get_field_index("run_date"), "run_date",
                               pa.array(day_of, chosen.schema.field("run_date").type))
    return average_repeats(chosen, keys, [*(m for m in TREND_METRICS if m != "concurrency"), "x_intvty"])
