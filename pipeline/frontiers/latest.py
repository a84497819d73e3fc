"""The runs a frontier is built from: each line's latest sweep (``pipeline.validate.lines``), repeats averaged.

``frontier_runs`` is the one door to a frontier: ``build_frontiers`` (and through its rows the comparisons) and
``build_trends`` call it, so no superseded run and no un-averaged repeat reaches a frontier point.

Repeats (same line, sweep and ``conc``) become one point: the mean of each averaged metric, and for tok/s/GPU and
interactivity a 95 % Student-t confidence interval of that mean, mean ± t(0.975, n − 1) · s / √n with s the
sample standard deviation (ddof 1), t from ``scipy.stats.t``; null where n < 2. A metric some member lacks is
null at the point (never a mean over fewer runs than the point claims).

A repeat group whose members differ by more than run-to-run noise is flagged, not silently averaged: the point
carries ``repeat_spread`` = (max − min) / min of its members' tok/s/GPU (null where n < 2) and ``repeats_disagree``
= ``repeat_spread`` > ``REPEAT_SPREAD_LIMIT`` (docs/metrics.md section 8a). The value stays the mean.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Hashable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.frontiers.pareto import float_values
from pipeline.validate.lines import first_appearance_numbers, run_lineage

# Columns frontier_runs needs besides the metrics: the line and the sweep of every run (run_metrics has them).
LINEAGE_INPUT_COLUMNS = ("run_id", "price_book", "conc", "run_date", "line_id", "sweep_id")
CI_LEVEL = 0.95
CI_COLUMNS = ("tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi", "median_intvty_ci_lo", "median_intvty_ci_hi")
# Rule: a repeat group whose members' tok/s/GPU spread, (max − min) / min, exceeds 10 % disagrees
# (``repeats_disagree``). Why: re-measuring one configuration on the same day moves tok/s/GPU by a few per cent
# (the t-interval's job); members 10 % apart measured something different (another image, a throttled node), and
# their mean is a point nobody measured. Comparisons name such a point in the cell's note
# (``pipeline.comparisons.compare`` re-exports this constant next to its other rule constants).
REPEAT_SPREAD_LIMIT = 0.10
# The columns average_repeats adds for that rule: repeat_spread (float64, null where n < 2), repeats_disagree (bool).
SPREAD_COLUMNS = ("repeat_spread", "repeats_disagree")


def t_intervals(values: np.ndarray, group: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95 % Student-t interval of each group's mean, for every group at once: mean ± t(0.975, n − 1) · s / √n.

    Args:
        values: float64, shape (rows,); NaN where a member lacks the value (its group's bounds are then NaN).
        group: int64 group number of each row, shape (rows,), 0 ≤ group < counts.size.
        counts: members per group, shape (groups,).
    Returns:
        (lo, hi), float64 arrays of shape (groups,), NaN where n < 2. The sums run in row order, as numpy's
        ``mean`` and ``std(ddof=1)`` of a group's members do (two passes: the mean, then the squared deviations);
        ``t.ppf`` is evaluated once per distinct n.
    """
    sizes = counts.astype(float)
    means = np.bincount(group, weights=values, minlength=counts.size) / sizes
    squares = np.bincount(group, weights=(values - means[group]) ** 2, minlength=counts.size)
    repeated = counts > 1
    lo, hi = np.full(counts.size, np.nan), np.full(counts.size, np.nan)
    n = counts[repeated]
    if n.size:  # scipy.stats is imported where a repeat needs it: most runs have none, and it is a large import
        from scipy import stats

        distinct_n, which = np.unique(n, return_inverse=True)
        t = stats.t.ppf(0.5 + CI_LEVEL / 2, distinct_n - 1)[which]
        half = t * np.sqrt(squares[repeated] / (n - 1)) / np.sqrt(n)
        lo[repeated], hi[repeated] = means[repeated] - half, means[repeated] + half
    return lo, hi


def repeat_spreads(values: np.ndarray, group: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each group's spread (max − min) / min, for every group at once (section 8a of docs/metrics.md: the
    ``repeats_disagree`` rule compares it with ``REPEAT_SPREAD_LIMIT``).

    Args:
        values: float64 member values (tok/s/GPU), shape (rows,); NaN where a member lacks the value.
        group: int64 group number of each row, shape (rows,), 0 ≤ group < counts.size, every group non-empty.
        counts: members per group, shape (groups,).
    Returns:
        float64, shape (groups,): the relative spread (0.14 = members 14 % apart), NaN where n < 2, where a
        member lacks the value or where the smallest member is not positive.
    """
    spread = np.full(counts.size, np.nan)
    repeated = counts > 1
    if not repeated.any():
        return spread
    order = np.argsort(group, kind="stable")  # members of group 0, then group 1, …
    starts = np.cumsum(counts) - counts
    members = values[order]
    high, low = np.maximum.reduceat(members, starts), np.minimum.reduceat(members, starts)  # NaN propagates
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = (high - low) / low
    spread[repeated] = np.where(low[repeated] > 0, relative[repeated], np.nan)
    return spread


def frontier_runs(runs: pa.Table | Sequence[Mapping[str, Any]], metrics: Iterable[str],
                  as_of: date | None = None, only_runs: Iterable[str] | None = None) -> pa.Table:
    """The current runs of every line, one row per (``price_book``, repeat group), repeats averaged.

    Args:
        runs: ``run_metrics`` rows (Arrow table or dicts) with ``LINEAGE_INPUT_COLUMNS``, ``median_intvty``,
            ``tput_per_gpu`` and ``metrics``; several price books may be mixed.
        metrics: the float columns to average besides ``median_intvty`` and ``tput_per_gpu`` (tok/s/GPU, $/M
            tokens, tok/s/MW …); ``conc`` is equal within a group and kept.
        as_of: the frontier as it stood that day (``run_lineage``): later runs are not seen.
        only_runs: when given, keep only the current runs whose ``run_id`` is in it (e.g. the runs meeting an SLO).
            Which sweep is current is decided on every run first, so a line whose latest sweep fails never
            falls back to an older sweep.
    Returns:
        ``average_repeats`` of the current runs, with ``repeat_group`` (``<line_id>|<sweep_id>|conc=<conc>``).
    Raises:
        ValueError: a column of ``LINEAGE_INPUT_COLUMNS`` is missing (named).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    missing = [name for name in LINEAGE_INPUT_COLUMNS if name not in table.column_names]
    if missing:  # without the line columns, two configurations would merge and one supersede the other
        raise ValueError(f"frontier_runs: runs lack column(s) {', '.join(missing)}")
    lineage = run_lineage(table, as_of)
    current = lineage["current"]
    if only_runs is not None:
        current = pc.and_(current, pc.is_in(table["run_id"], pa.array(sorted(set(only_runs)), pa.string())))
    table = table.filter(current)
    groups = lineage.filter(current)["repeat_group"]
    table = table.drop_columns([c for c in ("repeat_group",) if c in table.column_names]).append_column(
        "repeat_group", groups)
    return average_repeats(table, list(zip(table["price_book"].to_pylist(), groups.to_pylist())), metrics)


def average_repeats(table: pa.Table, keys: Sequence[Hashable], metrics: Iterable[str]) -> pa.Table:
    """One row per distinct ``keys`` value (a repeat group): its mean and 95 % Student-t interval.

    Args:
        table: rows with ``median_intvty``, ``tput_per_gpu`` and ``metrics`` (float columns).
        keys: the group of each row, len = rows: any hashables, or an integer numpy array (column work; e.g.
            ``row_codes``).
        metrics: further float columns to average.
    Returns:
        ``table``'s columns, each group's first row (input order) for the columns not averaged; averaged columns
        hold the mean, null when some member lacks the value; plus ``repeat_n`` (int32) and ``CI_COLUMNS``
        (float64, null where ``repeat_n`` < 2 or a member's value is absent or not finite), ``repeat_spread``
        (float64: (max − min) / min of the members' tok/s/GPU, ``repeat_spreads``; null where ``repeat_n`` < 2) and ``repeats_disagree`` (bool: spread >
        ``REPEAT_SPREAD_LIMIT``; false for a single run). Groups keep the order of their first row.
    """
    if isinstance(keys, np.ndarray):
        group = first_appearance_numbers(keys)
    else:
        group_of: dict[Hashable, int] = {}
        group = np.fromiter((group_of.setdefault(key, len(group_of)) for key in keys), dtype=np.int64,
                            count=len(keys))
    groups = int(group.max()) + 1 if group.size else 0
    # groups are numbered in order of first appearance, so np.unique's first indices are in group order
    first_row = np.unique(group, return_index=True)[1].astype(np.int64)
    out = table.take(pa.array(first_row, pa.int64()))
    counts = np.bincount(group, minlength=groups).astype(np.int32)
    averaged = tuple(dict.fromkeys(("median_intvty", "tput_per_gpu", *metrics)))
    if np.any(counts > 1):
        for name in averaged:
            values, present = float_values(table[name]), table[name].is_valid().to_numpy(zero_copy_only=False)
            sums = np.bincount(group, weights=np.where(present, values, 0.0), minlength=groups)
            whole = np.bincount(group, weights=present.astype(float), minlength=groups) == counts
            kind = table.schema.field(name).type  # an all-null column (no run measured it) stays float64
            out = out.set_column(out.schema.get_field_index(name), name, pa.array(sums / counts, mask=~whole).cast(
                pa.float64() if pa.types.is_null(kind) else kind))
    intervals: dict[str, pa.Array] = {name: pa.nulls(groups, pa.float64()) for name in CI_COLUMNS}
    for metric in ("tput_per_gpu", "median_intvty") if np.any(counts > 1) else ():
        lo, hi = t_intervals(float_values(table[metric]), group, counts)
        # null where n < 2, and where a member lacks the value or is not finite (the bounds are NaN then, as the
        # mean is null): no interval rather than one a spline cannot read (an agentic run has no median_intvty)
        undefined = (counts < 2) | ~np.isfinite(lo) | ~np.isfinite(hi)
        intervals[f"{metric}_ci_lo"] = pa.array(lo, mask=undefined)
        intervals[f"{metric}_ci_hi"] = pa.array(hi, mask=undefined)
    spread = repeat_spreads(float_values(table["tput_per_gpu"]), group, counts)
    extra = {"repeat_n": pa.array(counts, pa.int32()),
             **intervals,
             "repeat_spread": pa.array(spread, pa.float64(), mask=np.isnan(spread)),
             "repeats_disagree": pa.array(np.nan_to_num(spread, nan=0.0) > REPEAT_SPREAD_LIMIT, pa.bool_())}
    for name, column in extra.items():
        if name in out.column_names:
            out = out.set_column(out.schema.get_field_index(name), name, column)
        else:
            out = out.append_column(name, column)
    return out
