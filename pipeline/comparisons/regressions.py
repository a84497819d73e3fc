"""Regressions: change points in the history of every line and every frontier, judged against the series' own
noise and a minimum magnitude (docs/regressions.md).

Two kinds of series, each a sequence of points in date order:

- **line** (``line_series``): one line (``line_id``: configuration × ISL/OSL × benchmark type) at one
  concurrency; a point per successive sweep (the sweep current on each date the line ran, the latest-run rule
  of ``pipeline.validate.lines``), holding the mean of its repeats of tok/s/GPU, median TPOT, p99 TTFT
  (``run_metrics``) and the failure rate (``raw_runs``: accepted runs and those quarantined for failed requests).
- **frontier** (``frontier_series``): one frontier group and price book of the ``trends`` table; a point per date
  whose as-of frontier reaches the trend target (tok/s/GPU, $/M tokens hyperscaler, tok/s/MW).

Which way is better, whether a change is relative or absolute, and the minimum magnitude of each metric are data:
``regression_metrics.csv`` of the reference folder (``load_metric_rules``).

Detection (``find_changes``), the Otava recipe with a maintained change-point library: candidate change points
by binary segmentation of the (log) series with an L2 cost (``ruptures.Binseg``, the search E-divisive also
runs, with a BIC-like penalty of ``penalty`` × σ̂² × ln n where σ̂ is the series' robust noise), then each
candidate kept only when a Student t-test of the points before against the points after (at most ``window`` of
each, noise pooled from the residuals around every segment's mean, or from repeats when they show more) gives
p ≤ ``max_p_value``, the change is at least the metric's minimum magnitude, there are at least
``min_points_before`` points before and ``min_points_after`` after, and each of those first ``min_points_after``
points lies beyond the midpoint of the two levels (one bad night is not yet a regression, nor is one outlier
beside a normal night: the PyTorch HUD's violations in a row).

``status``: ``recovered`` when a later change brought the series back within the minimum magnitude of the level
before (or beyond it); else ``new`` the first run that finds it, ``ongoing`` after (``assign_status``, from the
previous run's rows).
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.comparisons.trends import GROUP_FIELDS
from pipeline.io.columns import SIDE_KEY
from pipeline.io.opener import open_text
from pipeline.io.paths import reference_dir
from pipeline.validate.lines import (
    LINE_COLUMNS,
    SWEEP_COLUMNS,
    current_sweeps_by_date,
    first_rows,
    line_and_sweep_ids,
    row_codes,
)

SERIES_KINDS = ("line", "frontier")
LINE_METRICS = ("tput_per_gpu", "median_tpot_s", "p99_ttft_s", "failure_rate")
FRONTIER_METRICS = ("tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw")
# keys every series carries (null where a kind has none: a frontier has no line or concurrency, a line no price book)
KEY_COLUMNS = (*SIDE_KEY, "line_id", "conc", "price_book", "target_intvty")
FRONTIER_GROUP = (*SIDE_KEY, "x_intvty_stat")
# the ``trends`` columns ``frontier_series`` reads besides its metrics
FRONTIER_INPUT_COLUMNS = ("run_date", "price_book", *FRONTIER_GROUP, "target_intvty")
STATUSES = ("new", "ongoing", "recovered")
METHOD = "ruptures Binseg (l2) + Student t-test"

REGRESSION_SCHEMA = pa.schema([
    ("regression_id", pa.string()),
    ("series_kind", pa.string()),
    ("series_id", pa.string()),
    *GROUP_FIELDS,
    ("line_id", pa.string()),
    ("conc", pa.int32()),
    ("price_book", pa.string()),
    ("target_intvty", pa.float64()),
    ("metric", pa.string()),
    ("better", pa.string()),
    ("direction", pa.string()),
    ("status", pa.string()),
    ("last_good_date", pa.date32()),
    ("first_bad_date", pa.date32()),
    ("latest_date", pa.date32()),
    ("before_points", pa.int32()),
    ("after_points", pa.int32()),
    ("before_sweeps", pa.list_(pa.string())),
    ("after_sweeps", pa.list_(pa.string())),
    ("last_good_run", pa.string()),
    ("first_bad_run", pa.string()),
    ("mean_before", pa.float64()),
    ("mean_after", pa.float64()),
    ("latest_value", pa.float64()),
    ("magnitude_pct", pa.float64()),
    ("p_value", pa.float64()),
    ("noise_pct", pa.float64()),
    ("noise_source", pa.string()),
    ("method", pa.string()),
    ("detected_at", pa.timestamp("us", tz="UTC")),
    ("notified_at", pa.timestamp("us", tz="UTC")),
])


class RegressionRulesError(ValueError):
    """``regression_metrics.csv`` is malformed; the message names the file, line and column."""


@dataclass(frozen=True)
class MetricRule:
    """One row of ``regression_metrics.csv``: how a metric of one kind of series is judged.

    Attributes:
        series: ``line`` or ``frontier``.
        metric: the column of ``run_metrics`` / ``raw_runs`` (line) or ``trends`` (frontier).
        better: ``higher`` or ``lower``: the direction that is an improvement.
        scale: ``relative`` (changes as a fraction of the level, tested on log values) or ``absolute``
            (changes in the metric's own unit, tested on the values: a failure rate of 0 has no relative change).
        min_magnitude: smallest change announced (fraction for relative; metric units for absolute).
        noise_floor: smallest per-point noise assumed (same units), so identical values do not make every
            difference infinitely significant.
    """

    series: str
    metric: str
    better: str
    scale: str
    min_magnitude: float
    noise_floor: float


def load_metric_rules(path: Path | None = None) -> dict[tuple[str, str], MetricRule]:
    """``{(series, metric): MetricRule}`` from ``path`` or ``regression_metrics.csv`` of ``reference_dir()``.

    Raises:
        RegressionRulesError: a missing column, an unknown series kind, ``better`` not higher/lower, ``scale`` not
            relative/absolute, a metric the series kind does not have, a magnitude or floor that is not a
            positive finite number, or a (series, metric) given twice.
    """
    path = reference_dir() / "regression_metrics.csv" if path is None else path
    rules: dict[tuple[str, str], MetricRule] = {}
    known = {"line": LINE_METRICS, "frontier": FRONTIER_METRICS}
    with open_text(path, "reference") as handle:
        reader = csv.DictReader(handle)
        missing = {"series", "metric", "better", "scale", "min_magnitude", "noise_floor"} - set(reader.fieldnames or ())
        if missing:
            raise RegressionRulesError(f"{path}: missing columns {sorted(missing)}")
        for line, raw in enumerate(reader, start=2):
            def bad(column: str, why: str) -> RegressionRulesError:
                return RegressionRulesError(f"{path} line {line}, column {column}: {raw.get(column)!r} {why}")

            series, metric = (raw["series"] or "").strip(), (raw["metric"] or "").strip()
            if series not in known:
                raise bad("series", f"is not one of {', '.join(known)}")
            if metric not in known[series]:
                raise bad("metric", f"is not a {series} metric ({', '.join(known[series])})")
            if (series, metric) in rules:
                raise bad("metric", "is given twice for this series kind")
            better, scale = (raw["better"] or "").strip(), (raw["scale"] or "").strip()
            if better not in ("higher", "lower"):
                raise bad("better", "is not higher or lower")
            if scale not in ("relative", "absolute"):
                raise bad("scale", "is not relative or absolute")
            numbers = {}
            for column in ("min_magnitude", "noise_floor"):
                try:
                    numbers[column] = float(raw[column])
                except (TypeError, ValueError):
                    raise bad(column, "is not a number") from None
                if not (math.isfinite(numbers[column]) and numbers[column] > 0):
                    raise bad(column, "is not a positive finite number")
            rules[(series, metric)] = MetricRule(series, metric, better, scale, **numbers)
    return rules


@dataclass(frozen=True)
class DetectionSettings:
    """The thresholds of ``find_changes`` (run config of ``comparisons/regressions``; defaults measured by
    ``benchmarks/regressions.py``, docs/regressions.md).

    Attributes:
        max_p_value: largest two-sided t-test p-value of a change that is announced.
        min_points_before: fewest points before a change (its baseline).
        min_points_after: fewest points after it: 2 = a change is announced the morning after its second night.
        window: most points on each side that the means and the test use (the baseline is recent history).
        penalty: Binseg's penalty per change point, in units of σ̂² × ln n.
        min_magnitude: overrides every metric's ``min_magnitude`` when set (fraction, or metric units for
            absolute metrics).
    """

    max_p_value: float = 5e-5
    min_points_before: int = 3
    min_points_after: int = 2
    window: int = 20
    penalty: float = 4.0
    min_magnitude: float | None = None


@dataclass(frozen=True)
class Change:
    """One change point found in a series of n points (``find_changes``).

    Attributes:
        index: the first point after the change (0-based; ``index - 1`` is the last good point).
        before, after: the point indices the means and the test used (``range`` objects).
        later_level: the mean of the series' last segment (metric units), the level it is at now.
        last: no later change point was found (the change's own segment is the series' last).
        mean_before, mean_after: arithmetic means of the values (metric units).
        magnitude: ``mean_after / mean_before - 1`` (relative metrics) or ``mean_after - mean_before`` (absolute).
        p_value: two-sided Student t-test p-value.
        noise: the per-point noise used (log units ≈ coefficient of variation for relative metrics).
        noise_source: ``residuals``, ``repeats`` or ``floor``: which estimate was the largest.
    """

    index: int
    before: range
    after: range
    later_level: float
    last: bool
    mean_before: float
    mean_after: float
    magnitude: float
    p_value: float
    noise: float
    noise_source: str


def minimum_magnitude(rule: MetricRule, settings: DetectionSettings) -> float:
    """The smallest change announced: ``settings.min_magnitude`` when set, else the rule's own (a fraction for a
    relative metric, metric units for an absolute one)."""
    return rule.min_magnitude if settings.min_magnitude is None else settings.min_magnitude


def scaled_noise_floor(rule: MetricRule) -> float:
    """The rule's noise floor in the units the test works in: log(1 + floor) for a relative metric (its values'
    logs), the floor itself (metric units) for an absolute one."""
    return math.log1p(rule.noise_floor) if rule.scale == "relative" else rule.noise_floor


def search_penalty(penalty: float, noise: float | np.ndarray, n: int) -> float | np.ndarray:
    """Binseg's penalty per change point for a series of ``n`` points whose per-point noise is ``noise`` (a float,
    or an array of one per row): ``penalty × noise² × ln n`` (BIC-like), in the squared units of the series."""
    return penalty * noise * noise * math.log(n)


def robust_noise(x: np.ndarray) -> float | np.ndarray:
    """Robust per-point noise of a series with steps: 1.4826 × median |first difference| / √2 (a step moves one
    difference only). ``x``: one series (float64, shape (n,)): a float, NaN for fewer than 2 points; or k series
    of n ≥ 2 points as rows (shape (k, n)): an array of shape (k,), each row's."""
    if x.shape[-1] < 2:
        return float("nan")
    noise = 1.4826 * np.median(np.abs(np.diff(x)), axis=-1) / math.sqrt(2.0)  # np.diff: along the last axis
    return float(noise) if noise.ndim == 0 else noise


def change_points(x: np.ndarray, noise: float, min_size: int, penalty: float) -> list[int]:
    """Candidate change points of ``x`` (float64, shape (n,)): the index of the first point of every segment
    after the first, by ``ruptures.Binseg`` (L2 cost: shifts of the mean, ``cumulative_l2_cost``: ruptures'
    ``CostL2`` from prefix sums) with penalty ``penalty × noise² × ln n`` and segments of at least ``min_size``
    points. [] for a series shorter than 2 × ``min_size``.

    The cuts are ``CostL2``'s but where two cuts tie exactly in real arithmetic (an isolated failure night in a
    flat failure-rate series, either side of it): each cost breaks such a tie by its own rounding.

    Most series hold no change: when no single cut of the whole series gains more than the penalty, Binseg stops
    at its first step with no cut, so the search is not started (``best_first_gain``, the same cost arithmetic
    as Binseg's first step, in one array pass)."""
    import ruptures  # imported here: only this stage needs it, and it pulls in its compiled extensions

    n = x.size
    if n < 2 * min_size:
        return []
    pen = search_penalty(penalty, noise, n)
    cost = cumulative_l2_cost().fit(x)
    if cost.best_first_gain(min_size) <= pen:  # Binseg cuts only where the gain is > pen
        return []
    algo = ruptures.Binseg(custom_cost=cost, min_size=min_size, jump=1).fit(x.reshape(-1, 1))
    return [int(b) for b in algo.predict(pen=pen) if b < n]


def prefix_sums(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prefix sums ``cumulative_l2_cost`` reads a series' segments from: of the series minus its mean, and of
    their squares, each with a leading 0 (float64, shape (n + 1,) for ``x`` of shape (n,), n ≥ 1; per row, shape
    (k, n + 1), for k series of n points as rows). The cost does not change with a shift, and centred sums lose
    fewer digits to the subtraction."""
    centred = x - x.mean(axis=-1, keepdims=True)
    zero = np.zeros((*x.shape[:-1], 1))
    return (np.concatenate((zero, np.cumsum(centred, axis=-1)), axis=-1),
            np.concatenate((zero, np.cumsum(centred * centred, axis=-1)), axis=-1))


def first_cut_gains(sums: np.ndarray, squares: np.ndarray, min_size: int) -> float | np.ndarray:
    """The best gain of one cut of a whole series: the largest ``error(0, n) − error(0, b) − error(b, n)`` (L2
    cost, ``cumulative_l2_cost``) over the cuts ``b`` with at least ``min_size`` (≥ 1) points on each side, from
    ``prefix_sums`` (n ≥ 2 × ``min_size``): a float for one series, an array of shape (k,) for k rows. Binseg's
    first step computes this gain and cuts only where it beats the penalty; these are its operations in its
    order (the same floats, ``tests/test_regressions.py``)."""
    n = sums.shape[-1] - 1
    cuts = np.arange(min_size, n - min_size + 1)
    whole = np.maximum(squares[..., n] - sums[..., n] * sums[..., n] / n, 0.0)
    left_sum, right_sum = sums[..., cuts], sums[..., n, None] - sums[..., cuts]
    left = np.maximum(squares[..., cuts] - left_sum * left_sum / cuts, 0.0)
    right = np.maximum(squares[..., n, None] - squares[..., cuts] - right_sum * right_sum / (n - cuts), 0.0)
    gain = np.max(whole[..., None] - left - right, axis=-1)
    return float(gain) if gain.ndim == 0 else gain


def cumulative_l2_cost() -> Any:
    """A new ruptures cost (a ``ruptures.base.BaseCost``) equal to ruptures' ``CostL2`` (the segment's sum of
    squared deviations from its mean, in the signal's units squared) whose ``error(start, end)`` is O(1): from
    prefix sums of the signal and of its squares, Σx² − (Σx)²/m over the segment's m points.

    ``CostL2`` computes ``numpy.var`` of each candidate segment anew, and ``Binseg`` asks for two segments per
    candidate cut: O(n) per error, O(n²) per split. The prefix sums are taken of the signal minus its mean (the
    cost does not change with a shift, and centred sums lose fewer digits to the subtraction); an error the
    rounding makes negative is 0, as a variance is.

    ``fit(signal)``: a float array of shape (n,) or (n, 1). Raises ValueError for more than one column (the
    series here have one); ``error`` raises ruptures' ``NotEnoughPoints`` for an empty segment, as ``CostL2``.
    ``best_first_gain(min_size)``: the largest ``error(0, n) − error(0, b) − error(b, n)`` over the cuts ``b``
    with at least ``min_size`` points on each side (−inf when there is none): what ``Binseg``'s first step
    compares with the penalty, from the same sums with the same operations in the same order (the same floats).
    """
    return _cumulative_l2_class()()


@functools.cache
def _cumulative_l2_class() -> type:
    """The class of ``cumulative_l2_cost``, defined on first use (ruptures is imported only by this stage)."""
    from ruptures.base import BaseCost
    from ruptures.costs import NotEnoughPoints

    class CumulativeL2Cost(BaseCost):
        """``CostL2`` from prefix sums (``cumulative_l2_cost``)."""

        model = "l2"

        def __init__(self) -> None:
            self.signal = None
            self.min_size = 1
            self._sums: list[float] = []
            self._squares: list[float] = []

        def fit(self, signal: np.ndarray) -> "CumulativeL2Cost":
            x = np.asarray(signal, dtype=float)
            x = x.reshape(-1, 1) if x.ndim == 1 else x
            if x.ndim != 2 or x.shape[1] != 1:
                raise ValueError(f"cumulative L2 cost: a signal of one column expected, got shape {x.shape}")
            self.signal = x
            empty = np.zeros(1)
            self._sum_array, self._square_array = prefix_sums(x[:, 0]) if x.shape[0] else (empty, empty)
            # error() reads Python floats: indexing a list is several times faster than a numpy array
            self._sums = self._sum_array.tolist()
            self._squares = self._square_array.tolist()
            return self

        def best_first_gain(self, min_size: int) -> float:
            min_size = max(min_size, self.min_size)  # Binseg's own floor: the cost's min_size
            if self._sum_array.size - 1 < 2 * min_size:
                return -math.inf
            return first_cut_gains(self._sum_array, self._square_array, min_size)

        def error(self, start: int, end: int) -> float:
            size = end - start
            if size < self.min_size:
                raise NotEnoughPoints
            total = self._sums[end] - self._sums[start]
            return max(self._squares[end] - self._squares[start] - total * total / size, 0.0)

    return CumulativeL2Cost


def find_changes(values: Sequence[float], rule: MetricRule, settings: DetectionSettings = DetectionSettings(),
                 repeat_sd: Sequence[float] | None = None, repeat_n: Sequence[int] | None = None) -> list[Change]:
    """The announced changes of one series (both directions), in index order.

    Args:
        values: the points in date order (metric units; each the mean of its repeats); finite, and > 0 for a
            relative metric.
        rule: the metric's ``MetricRule`` (scale, minimum magnitude, noise floor).
        settings: ``DetectionSettings``.
        repeat_sd: per point, the sample standard deviation of its repeats (metric units; NaN or absent where a
            point has one run); repeat_n: per point, its number of runs.
    Returns:
        ``Change`` for every candidate change point that passes the test, the magnitude and the point counts.
    Raises:
        ValueError: a value is not finite, or not positive for a relative metric.
    """
    y = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(y)) or (rule.scale == "relative" and np.any(y <= 0)):
        raise ValueError(f"{rule.metric}: values must be finite{' and > 0' if rule.scale == 'relative' else ''}")
    n = y.size
    if n < settings.min_points_before + settings.min_points_after:
        return []
    min_magnitude = minimum_magnitude(rule, settings)
    if widest_change(y, rule.scale) < min_magnitude:
        return []  # no two means of these points differ by the minimum magnitude: nothing to search or test
    x = np.log(y) if rule.scale == "relative" else y
    floor = scaled_noise_floor(rule)
    search_noise = max(robust_noise(x), floor)
    cuts = change_points(x, search_noise, min(settings.min_points_before, settings.min_points_after), settings.penalty)
    if not cuts:
        return []  # every change found below is at one of the cuts
    bounds = [0, *cuts, n]
    # pooled residual noise around every segment's mean (df = n - segments)
    residuals = np.concatenate([x[a:b] - x[a:b].mean() for a, b in zip(bounds, bounds[1:])])
    df_res = n - (len(bounds) - 1)
    noise, df, source = floor, max(df_res, 1), "floor"
    if df_res > 0:
        # the residuals around segments the search placed to fit the noise understate it (the search picks the
        # cuts that shrink them): the robust first-difference estimate, which a step moves by one difference
        # only, bounds the residual one from below
        res_sd = max(float(np.sqrt(np.sum(residuals ** 2) / df_res)), search_noise)
        if res_sd > noise:
            noise, source = res_sd, "residuals"
    if repeat_sd is not None and repeat_n is not None:
        rep_noise, rep_df = _repeat_noise(y, np.asarray(repeat_sd, float), np.asarray(repeat_n, float), rule)
        if rep_df > 0 and rep_noise > noise:
            noise, df, source = rep_noise, rep_df, "repeats"
    last_level = float(y[bounds[-2]:].mean())
    found = []
    for i, cut in enumerate(cuts):
        change = _judge(x, y, bounds[i], cut, bounds[i + 2], settings, noise, df)
        if change is None:
            continue
        before, after, p, mean_before, mean_after = change
        magnitude = mean_after / mean_before - 1 if rule.scale == "relative" else mean_after - mean_before
        if p <= settings.max_p_value and abs(magnitude) >= min_magnitude:
            found.append(Change(after.start, before, after, last_level, i == len(cuts) - 1, mean_before, mean_after,
                                magnitude, p, noise, source))
    return found


# Relative rounding allowed for in ``widest_change``: a mean of n floats computed by numpy may lie outside the
# points' range by about n units in the last place; this is far above that for any series, far below any magnitude.
_MEAN_ROUNDING = 1e-9


def widest_change(y: np.ndarray, scale: str) -> float | np.ndarray:
    """The largest magnitude any change of the series ``y`` (float64, shape (n,), n ≥ 1, finite; > 0 for a
    relative metric; or k such series as rows, shape (k, n), giving an array of shape (k,)) can have:
    ``max / min − 1`` (``relative``) or ``max − min`` (``absolute``, metric units), widened by ``_MEAN_ROUNDING``.
    A change's magnitude compares two means of the points (``find_changes``), and a mean lies between the smallest
    and the largest point, so a series narrower than the minimum magnitude holds no change to announce, whatever
    the search would cut."""
    low, high = y.min(axis=-1), y.max(axis=-1)
    if scale == "relative":
        widest = high / low * (1 + _MEAN_ROUNDING) - 1
    else:
        widest = high - low + _MEAN_ROUNDING * (np.abs(high) + np.abs(low))
    return float(widest) if widest.ndim == 0 else widest


def _judge(x: np.ndarray, y: np.ndarray, lo: int, cut: int, hi: int, settings: DetectionSettings, noise: float,
           df: int) -> tuple[range, range, float, float, float] | None:
    """Test the candidate change at ``cut`` between the segments ``[lo, cut)`` and ``[cut, hi)``: (points
    before, points after, two-sided t-test p-value, mean before, mean after in metric units), or None when a
    side has too few points.

    Every one of the first ``min_points_after`` points after the change must look like the new level (lie
    beyond the midpoint of the two levels): an outlier night beside a normal one is not a change (the HUD's
    violations in a row). When the search put a weak first night after the cut (its cost weighs every point,
    not the first ones), the change is dated up to ``MATCH_POINTS`` nights later instead, where the nights do.
    """
    for shift in range(MATCH_POINTS + 1):
        at = cut + shift
        before = range(max(lo, at - settings.window), at)
        after = range(at, min(hi, at + settings.window))
        if len(before) < settings.min_points_before or len(after) < settings.min_points_after:
            return None
        level_before, level_after = x[before.start:before.stop].mean(), x[after.start:after.stop].mean()
        diff = level_after - level_before
        first_nights = x[at:at + settings.min_points_after]
        if np.any((first_nights - (level_before + level_after) / 2) * math.copysign(1.0, diff) <= 0):
            continue
        t = diff / (noise * math.sqrt(1 / len(before) + 1 / len(after)))
        from scipy import stats  # imported where a change is tested: a large import most runs do not need

        p = float(2 * stats.t.sf(abs(t), df))
        return before, after, p, float(y[before.start:before.stop].mean()), float(y[after.start:after.stop].mean())
    return None


def _repeat_noise(y: np.ndarray, sd: np.ndarray, counts: np.ndarray, rule: MetricRule) -> tuple[float, int]:
    """(noise of one point, degrees of freedom) from the repeats: the pooled within-point variance divided by
    the harmonic mean of the points' run counts, in the test's units (log for relative metrics); (0, 0) when no
    point has two runs."""
    has = (counts >= 2) & np.isfinite(sd)
    if not has.any():
        return 0.0, 0
    scaled = sd[has] / y[has] if rule.scale == "relative" else sd[has]
    df = int(np.sum(counts[has] - 1))
    pooled = float(np.sum((counts[has] - 1) * scaled ** 2) / df)
    harmonic = counts.size / float(np.sum(1.0 / np.maximum(counts, 1)))
    return math.sqrt(pooled / harmonic), df


def direction_of(change: Change, rule: MetricRule) -> str:
    """``regression`` when the change goes the worse way for the metric (``rule.better``), else ``improvement``."""
    return "improvement" if (change.magnitude > 0) == (rule.better == "higher") else "regression"


def recovered(change: Change, rule: MetricRule, settings: DetectionSettings = DetectionSettings()) -> bool:
    """The series' current level (its last segment) is back within the minimum magnitude of the level before the
    change, or beyond it: a later change undid this one. False while the change's own segment is the last."""
    if change.last:
        return False
    min_magnitude = minimum_magnitude(rule, settings)
    moved = (change.later_level / change.mean_before - 1 if rule.scale == "relative"
             else change.later_level - change.mean_before)
    return moved * math.copysign(1.0, change.magnitude) < min_magnitude


@dataclass
class Series:
    """One series' points, in date order, and its keys.

    Attributes:
        kind: ``line`` or ``frontier``; series_id: its text id; keys: ``KEY_COLUMNS`` values.
        metric: the metric; dates: each point's date; sweeps: each point's sweep id (line) or date text
            (frontier); values: the metric (mean of the point's runs); repeat_sd / repeat_n: spread and count of
            the runs behind each point; links: each point's run link (InferenceX ``run_url``, else the first
            run's ``source_file``; None for frontier points).
    """

    kind: str
    series_id: str
    keys: dict[str, Any]
    metric: str
    dates: list[dt.date] = field(default_factory=list)
    sweeps: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    repeat_sd: list[float] = field(default_factory=list)
    repeat_n: list[int] = field(default_factory=list)
    links: list[str | None] = field(default_factory=list)


# Series of one metric that ``line_series_by_metric`` builds and yields at once: at a million runs a metric has about
# a million points, and each point's date, sweep, value, spread and link as Python objects take far more memory than
# the columns they are read from.
LINE_SERIES_BATCH = 512

LINE_INPUT_COLUMNS = ("run_id", "line_id", "sweep_id", "run_date", "conc", *SIDE_KEY, "run_url", "source_file")


def line_series(runs: pa.Table, metrics: Iterable[str]) -> list[Series]:
    """Per (line, concurrency) and metric, one point per successive sweep (``Series``, kind ``line``): every
    batch of ``line_series_by_metric`` in one list, sorted by series id, then metric."""
    batches = [s for batch in line_series_by_metric(runs, metrics) for s in batch]
    return sorted(batches, key=lambda s: (s.series_id, s.metric))


def line_series_by_metric(runs: pa.Table, metrics: Iterable[str]) -> Iterator[list[Series]]:
    """Per metric of ``metrics`` in the order given, the series of ``line_series`` for that metric in series-id
    order, in batches of at most ``LINE_SERIES_BATCH`` series (a metric no run has a value of yields nothing).
    The work shared by the metrics (the points and their runs) is done once, before the first batch; each batch
    is built when asked for, so a caller that judges a batch and lets it go holds one batch's points at a time as
    Python objects, not every metric's or every series'.

    A line's points are the sweeps that were current on the dates the line ran (``current_sweeps_by_date``: on a
    date with several sweeps, the newest; a re-run attempt replaces its earlier attempts); each point is the
    mean over the sweep's runs at that concurrency (its repeats), dated the first date the sweep was current.
    The points are column work over the runs (numpy: one group per (point, concurrency), ``repeat_stats`` for
    the means and spreads, numpy's own bits); Python steps once per (line, date) and once per series.

    Args:
        runs: one row per run (no price-book duplicates) with ``LINE_INPUT_COLUMNS`` and ``metrics`` (float);
            undated runs (null ``run_date``) are left out (no place on a time axis).
        metrics: the metric columns to build series of; a run's null value is left out of that metric's point.
    Yields:
        Lists of Series: each metric's series in series-id order across its batches (a batch never mixes
        metrics); only points with a value.
    """
    metrics = list(metrics)
    # a filter copies every column: only when there is an undated run to leave out (sql/regression_line_runs.sql
    # reads dated runs only)
    table = runs.filter(pc.is_valid(runs["run_date"])) if runs["run_date"].null_count else runs
    if table.num_rows == 0:
        return
    ran = table.group_by(["run_date", "line_id"]).aggregate([])  # the lines that ran on each date
    by_day: dict[dt.date, list[str]] = {}
    for day, line in zip(ran["run_date"].to_pylist(), ran["line_id"].to_pylist()):
        by_day.setdefault(day, []).append(line)
    days = sorted(by_day)
    # each row's sweep id as a code into the distinct ids: a million runs are far fewer sweeps than rows
    sweep_codes = pc.dictionary_encode(table["sweep_id"].combine_chunks())
    sweep_names = sweep_codes.dictionary.to_pylist()
    sweep_of = pc.fill_null(sweep_codes.indices, -1).to_numpy(zero_copy_only=False)
    sweep_names.append(None)  # code -1: a run without a sweep id
    points: dict[str, list[tuple[dt.date, str, list[int]]]] = {}  # line -> [(first day, sweep, rows)]
    for day, current in current_sweeps_by_date(table.select(["run_date", "line_id", "sweep_id"]), days):
        for line in by_day[day]:  # each line's points are its own: the order of the lines does not matter
            if line not in current:
                continue
            rows = current[line]
            sweep = sweep_names[sweep_of[rows[0]]]
            held = points.setdefault(line, [])
            if held and held[-1][1] == sweep:
                held[-1] = (held[-1][0], sweep, rows)  # the same sweep, more of its runs visible
            else:
                held.append((day, sweep, rows))
    # every point as its runs: (line, first day, sweep) per point, the lines in name order, and its rows in
    # current_sweeps_by_date's order; a row is one entry per point it is in
    point_line: list[str] = []
    point_day: list[dt.date] = []
    point_sweep: list[str] = []
    member_rows: list[int] = []
    sizes: list[int] = []
    line_points: list[int] = []  # per line (name order), its number of points
    for line in sorted(points):
        line_points.append(len(points[line]))
        for day, sweep, rows in points[line]:
            point_line.append(line)
            point_day.append(day)
            point_sweep.append(sweep)
            member_rows.extend(rows)
            sizes.append(len(rows))
    rows = np.asarray(member_rows, dtype=np.int64)
    point = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    conc_column = table["conc"].combine_chunks()
    has_conc = conc_column.is_valid().to_numpy(zero_copy_only=False)[rows]  # a run without a concurrency: no point
    rows, point = rows[has_conc], point[has_conc]
    conc = pc.cast(conc_column, pa.float64()).to_numpy(zero_copy_only=False)[rows]  # exact for any concurrency
    # one group per (point, concurrency), the points in order and each point's concurrencies ascending; a group's
    # runs keep their order (lexsort is stable)
    order = np.lexsort((conc, point))
    rows, point, conc = rows[order], point[order], conc[order]
    new_group = np.r_[True, (point[1:] != point[:-1]) | (conc[1:] != conc[:-1])][:rows.size]
    starts, group_of = np.flatnonzero(new_group), np.cumsum(new_group) - 1
    first = rows[starts]
    # each group's link: the first of its runs with a run_url (not null, not empty), else its first run's source file
    # (the row each is read from, kept as numbers: the text is read a batch of series at a time)
    url_column = table["run_url"].combine_chunks()
    has_url = pc.fill_null(pc.not_equal(url_column, ""), False).to_numpy(zero_copy_only=False)
    position = np.where(has_url[rows], np.arange(rows.size), rows.size)
    first_url = np.minimum.reduceat(position, starts) if starts.size else position
    use_url = first_url < rows.size
    url_row = rows[np.minimum(first_url, rows.size - 1)]  # where use_url: the row of its first URL
    file_column = table["source_file"]
    line_of_point = np.repeat(np.arange(len(line_points), dtype=np.int64), line_points)
    group_point, group_conc = point[starts], conc[starts]
    for metric in metrics:
        values = pc.fill_null(pc.cast(table[metric], pa.float64()), math.nan).to_numpy(zero_copy_only=False)[rows]
        usable = np.isfinite(values)  # a null, NaN or infinite value is left out of its point
        counts = np.bincount(group_of[usable], minlength=starts.size)
        kept = np.flatnonzero(counts > 0)
        if not kept.size:
            continue  # no run has a value of this metric: no series
        means, sds = repeat_stats(values[usable], counts[kept])
        # the kept groups by series (line, concurrency), each series' points in order
        p, c = group_point[kept], group_conc[kept]
        order = np.lexsort((p, c, line_of_point[p]))
        kept, p, c, means, sds, n = kept[order], p[order], c[order], means[order], sds[order], counts[kept][order]
        edges = np.flatnonzero(np.r_[True, (line_of_point[p][1:] != line_of_point[p][:-1]) | (c[1:] != c[:-1]),
                                     True])
        # each series' keys and concurrency, as the table holds them, read from its first group's first run only
        series_first = pa.array(first[kept[edges[:-1]]])
        key_values = {k: table[k].take(series_first).to_pylist() for k in (*SIDE_KEY, "line_id")}
        conc_values = conc_column.take(series_first).to_pylist()  # the series id writes it as held
        sids = [f"{point_line[i]}|conc={line_conc}" for i, line_conc in zip(p[edges[:-1]].tolist(), conc_values)]
        by_sid = sorted(range(len(sids)), key=sids.__getitem__)
        # the series are built LINE_SERIES_BATCH at a time, in series-id order: their points as Python objects
        # (dates, sweeps, values, links) exist for one batch at once, not for every point of the metric
        for lo in range(0, len(by_sid), LINE_SERIES_BATCH):
            chosen = by_sid[lo:lo + LINE_SERIES_BATCH]
            at = np.concatenate([np.arange(edges[j], edges[j + 1]) for j in chosen])
            groups = kept[at]
            links = [url if chosen_url else file for chosen_url, url, file in zip(
                use_url[groups].tolist(), url_column.take(pa.array(url_row[groups])).to_pylist(),
                file_column.take(pa.array(first[groups])).to_pylist())]
            point_list = p[at].tolist()
            batch_means, batch_sds, batch_n = means[at].tolist(), sds[at].tolist(), n[at].tolist()
            batch, a = [], 0
            for j in chosen:
                b = a + int(edges[j + 1] - edges[j])
                keys = {k: key_values[k][j] for k in (*SIDE_KEY, "line_id")}
                batch.append(Series(
                    "line", sids[j], {**keys, "conc": conc_values[j], "price_book": None, "target_intvty": None},
                    metric, dates=[point_day[i] for i in point_list[a:b]],
                    sweeps=[point_sweep[i] for i in point_list[a:b]], values=batch_means[a:b],
                    repeat_sd=batch_sds[a:b], repeat_n=batch_n[a:b], links=links[a:b]))
                a = b
            yield batch


# numpy adds fewer than this many values one after the other from 0 (its pairwise summation starts above)
_SEQUENTIAL_SUM = 8


def repeat_stats(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group of consecutive ``values`` (float64; group sizes ``counts``, each ≥ 1): ``numpy.mean`` and
    ``numpy.std(ddof=1)`` (NaN for a group of one), the same bits as those calls on each group's slice.

    numpy sums fewer than ``_SEQUENTIAL_SUM`` values in order from 0, so such groups are summed here one column
    of groups at a time (column work over the groups); a larger group, whose sum numpy splits pairwise, is
    passed to numpy itself.
    """
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(counts) - counts
    small = counts < _SEQUENTIAL_SUM
    sums, squares = np.zeros(counts.size), np.zeros(counts.size)
    for k in range(int(counts[small].max(initial=0))):
        take = np.flatnonzero(small & (counts > k))
        sums[take] += values[starts[take] + k]
    means = sums / counts
    for k in range(int(counts[small].max(initial=0))):
        take = np.flatnonzero(small & (counts > k))
        deviation = values[starts[take] + k] - means[take]
        squares[take] += deviation * deviation
    with np.errstate(divide="ignore", invalid="ignore"):
        sds = np.where(counts > 1, np.sqrt(squares / np.maximum(counts - 1, 1)), np.nan)
    for g in np.flatnonzero(~small).tolist():
        chunk = values[starts[g]:starts[g] + counts[g]]
        means[g], sds[g] = np.mean(chunk), np.std(chunk, ddof=1)
    return means, sds


# The raw_runs columns failure_runs reads (sql/regression_failure_runs.sql selects exactly these): the line and
# sweep id columns, the series' keys and links, and the request counts.
FAILURE_INPUT_COLUMNS = tuple(dict.fromkeys((
    "run_id", *LINE_COLUMNS, *SWEEP_COLUMNS, *(c for c in LINE_INPUT_COLUMNS if c != "line_id"), "failed",
    "completed")))


def failure_runs(raw_runs: pa.Table) -> pa.Table:
    """The rows of ``raw_runs`` (parsed runs, accepted or not; ``FAILURE_INPUT_COLUMNS`` of ``RUN_SCHEMA``, absent
    ones read as null) as ``line_series`` input for the failure rate:
    ``LINE_INPUT_COLUMNS`` (line and sweep ids computed as validation computes them) plus ``failure_rate`` =
    failed / (failed + completed), a null ``failed`` read as 0 (docs/metrics.md, as ``sql/run_metrics.sql``);
    null where ``completed`` is null or the sum is 0. The caller picks which rows to pass (accepted runs and
    those quarantined for failed requests)."""
    lines, sweeps = line_and_sweep_ids(raw_runs)
    failed = pc.fill_null(pc.cast(raw_runs["failed"], pa.float64()), 0.0)
    completed = pc.cast(raw_runs["completed"], pa.float64())
    total = pc.add(failed, completed)
    rate = pc.if_else(pc.greater(total, 0), pc.divide(failed, total), pa.scalar(None, pa.float64()))
    columns = {name: raw_runs[name] if name in raw_runs.column_names else pa.nulls(raw_runs.num_rows, pa.string())
               for name in LINE_INPUT_COLUMNS if name not in ("line_id", "sweep_id")}
    return pa.table({**columns, "line_id": pa.array(lines, pa.string()), "sweep_id": pa.array(sweeps, pa.string()),
                     "failure_rate": rate})


def frontier_series(trends: pa.Table, metrics: Iterable[str]) -> list[Series]:
    """Every series of ``frontier_series_batches(trends, metrics)`` in one list: sorted by series id, then
    metric."""
    return [s for batch in frontier_series_batches(trends, metrics) for s in batch]


# Frontier series ids whose series ``frontier_series_batches`` builds and yields at once (each with a series per
# metric): at a million runs the trends hold a million and a half dated rows, and their points as Python objects
# (a date, its text, a value per point) take far more memory than the columns they are read from.
FRONTIER_SERIES_BATCH = 512


def frontier_series_batches(trends: pa.Table, metrics: Iterable[str]) -> Iterator[list[Series]]:
    """Per (price book, frontier group, target) and metric of the ``trends`` table, one point per date whose
    frontier reaches the target (``Series``, kind ``frontier``; dates without a value are gaps, not points). A
    target two comparisons of the group share (trend rows alike but for ``comparison_id``) is one series.

    Args:
        trends: ``trends`` rows (``pipeline.comparisons.trends.TREND_SCHEMA``), at least ``FRONTIER_INPUT_COLUMNS``
            and ``metrics``; undated rows are left out.
        metrics: columns of ``trends`` to build series of (float; null, NaN and infinite values are gaps).
    Yields:
        Lists of Series, sorted by series id, then metric, across the lists; a list holds the series of at most
        ``FRONTIER_SERIES_BATCH`` series ids, so a caller that judges a list and lets it go holds one list's
        points at a time. Column work (numpy groups per series, a stable lexsort by target, date and table
        order); Python writes each series id once and each series' lists once.
    """
    metric_names = sorted(set(metrics))  # one series per (id, metric), a metric named twice included
    table = trends.filter(pc.is_valid(trends["run_date"]))
    if table.num_rows == 0:
        return
    # the series of each row: its id text, written once per distinct (price book, group, target)
    code = row_codes(table, ("price_book", *FRONTIER_GROUP, "target_intvty"))
    firsts = first_rows(code, int(code.max()) + 1)
    named = table.select(["price_book", *FRONTIER_GROUP, "target_intvty"]).take(pa.array(firsts)).to_pylist()
    sids = [f"{r['price_book']}|{'|'.join(str(r[k]) for k in FRONTIER_GROUP)}|at={r['target_intvty']:g}"
            for r in named]
    sid_index: dict[str, int] = {}
    of_code = np.array([sid_index.setdefault(sid, len(sid_index)) for sid in sids], dtype=np.int64)
    sid_names = list(sid_index)
    series_of = of_code[code]
    # each series' rows by target, then date (a series id may hold targets its text rounds alike), then table order
    day = pc.cast(table["run_date"], pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False)
    target = pc.cast(table["target_intvty"], pa.float64()).to_numpy(zero_copy_only=False)
    order = np.lexsort((np.arange(table.num_rows), day, target, series_of))
    # each distinct date as the table holds it and its text, read once: a point takes its date from its day number
    # (a column's to_pylist makes a date object per row, a million and a half of them at a million runs)
    distinct_days, first_of_day = np.unique(day, return_index=True)
    date_of = dict(zip(distinct_days.tolist(), table["run_date"].take(pa.array(first_of_day)).to_pylist()))
    text_of = {number: date.isoformat() for number, date in date_of.items()}
    # per metric: its points' rows in series order, and each series id's range of them (start -1: no series)
    points: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for metric in metric_names:
        values = pc.fill_null(pc.cast(table[metric], pa.float64()), math.nan).to_numpy(zero_copy_only=False)
        rows = order[np.isfinite(values[order])]  # a date without a value is a gap, not a point
        if rows.size == 0:  # no value of this metric on any date: no series
            continue
        # the same target of another comparison of the group on the same date: the same value, one point
        keep = np.r_[True, (series_of[rows][1:] != series_of[rows][:-1]) | (day[rows][1:] != day[rows][:-1])]
        rows = rows[keep[:rows.size]]
        edges = np.flatnonzero(np.r_[True, series_of[rows][1:] != series_of[rows][:-1], True])
        start, stop = np.full(len(sid_names), -1, np.int64), np.full(len(sid_names), -1, np.int64)
        start[series_of[rows[edges[:-1]]]], stop[series_of[rows[edges[:-1]]]] = edges[:-1], edges[1:]
        points[metric] = rows, values, start, stop
    by_sid = sorted(range(len(sid_names)), key=sid_names.__getitem__)
    for lo in range(0, len(by_sid), FRONTIER_SERIES_BATCH):
        chosen = by_sid[lo:lo + FRONTIER_SERIES_BATCH]
        built: dict[tuple[int, str], Series] = {}
        for metric, (rows, values, start, stop) in points.items():
            held = [j for j in chosen if start[j] >= 0]
            if not held:
                continue
            at = rows[np.concatenate([np.arange(start[j], stop[j]) for j in held])]
            numbers, value_list = day[at].tolist(), values[at].tolist()
            dates, sweeps = [date_of[n] for n in numbers], [text_of[n] for n in numbers]
            a = 0
            for j in held:
                b = a + int(stop[j] - start[j])
                key = named[code[at[a]]]  # the keys of the series' first row, read once per code above
                built[(j, metric)] = Series(
                    "frontier", sid_names[j], {**{k: key[k] for k in SIDE_KEY}, "line_id": None, "conc": None,
                                               "price_book": key["price_book"],
                                               "target_intvty": key["target_intvty"]}, metric,
                    dates=dates[a:b], sweeps=sweeps[a:b], values=value_list[a:b], repeat_sd=[math.nan] * (b - a),
                    repeat_n=[1] * (b - a), links=[None] * (b - a))
                a = b
        batch = [built[(j, m)] for j in chosen for m in metric_names if (j, m) in built]
        if batch:
            yield batch


def detect(series: Iterable[Series], rules: Mapping[tuple[str, str], MetricRule],
           settings: DetectionSettings = DetectionSettings()) -> list[dict[str, Any]]:
    """Every announced change of every series, as rows of ``REGRESSION_SCHEMA`` (``status`` ``recovered`` or,
    until ``assign_status`` compares with the previous run, ``new``; ``detected_at``/``notified_at`` null) plus
    ``_near``: the dates of the points within ``MATCH_POINTS`` of the first bad point, for ``assign_status``.
    Ordered by series, metric and first bad date. A series whose metric has no rule is skipped; a relative
    metric's non-positive values are left out of its series (no log)."""
    out: list[dict[str, Any]] = []
    judged: list[tuple[Series, Sequence[int]]] = []
    screened: list[tuple[MetricRule, Sequence[float]]] = []
    for s in series:
        rule = rules.get((s.kind, s.metric))
        if rule is None:
            continue
        values: Sequence[float] = s.values
        keep: Sequence[int] = range(len(values))
        if rule.scale == "relative" and not all(v > 0 for v in values):
            keep = [i for i, v in enumerate(values) if v > 0]
            values = [values[i] for i in keep]
        judged.append((s, keep))
        screened.append((rule, values))
    quiet = quiet_series(screened, settings)
    for (s, keep), (rule, values), skip in zip(judged, screened, quiet):
        if skip:
            continue
        changes = find_changes(values, rule, settings, [s.repeat_sd[i] for i in keep], [s.repeat_n[i] for i in keep])
        for change in changes:
            before = [keep[i] for i in change.before]
            after = [keep[i] for i in change.after]
            near = range(max(0, change.index - MATCH_POINTS), min(len(keep), change.index + MATCH_POINTS + 1))
            row = {
                "series_kind": s.kind, "series_id": s.series_id, **s.keys, "metric": s.metric, "better": rule.better,
                "direction": direction_of(change, rule),
                "status": "recovered" if recovered(change, rule, settings) else "new",
                "last_good_date": s.dates[before[-1]], "first_bad_date": s.dates[after[0]],
                "latest_date": s.dates[keep[-1]],
                "before_points": len(before), "after_points": len(after),
                "before_sweeps": [s.sweeps[i] for i in before], "after_sweeps": [s.sweeps[i] for i in after],
                "last_good_run": s.links[before[-1]], "first_bad_run": s.links[after[0]],
                "mean_before": change.mean_before, "mean_after": change.mean_after,
                "latest_value": s.values[keep[-1]],
                "magnitude_pct": 100 * change.magnitude, "p_value": change.p_value,
                "noise_pct": 100 * (math.expm1(change.noise) if rule.scale == "relative" else change.noise),
                "noise_source": change.noise_source, "method": METHOD, "detected_at": None, "notified_at": None,
                "_near": {s.dates[keep[i]] for i in near},
            }
            row["regression_id"] = regression_id(row)
            out.append(row)
    return out


def quiet_series(items: Sequence[tuple[MetricRule, Sequence[float]]],
                 settings: DetectionSettings = DetectionSettings()) -> list[bool]:
    """For each (rule, values) of ``items`` (values as ``find_changes`` takes them), True where ``find_changes``
    certainly returns no change, False where it must be run. Series of one rule and one length are screened
    together as the rows of one array (``quiet_rows``): most series hold no change, and their cost is numpy's
    per-call overhead, not their arithmetic."""
    groups: dict[tuple[MetricRule, int], list[int]] = {}
    for i, (rule, values) in enumerate(items):
        groups.setdefault((rule, len(values)), []).append(i)
    quiet: dict[int, bool] = {}
    for (rule, _), members in groups.items():
        quiet.update(zip(members, quiet_rows(np.array([items[i][1] for i in members]), rule, settings).tolist()))
    return [quiet[i] for i in range(len(items))]


# How far below the search's penalty a series' best first cut must gain for ``quiet_rows`` to call it quiet,
# relative to the penalty and to the series' total sum of squares (the scale of the rounding in the gain): the
# rows' arithmetic may differ from ``change_points``' by a few units in the last place, never by this much.
_SCREEN_MARGIN = 1e-9


def quiet_rows(rows: np.ndarray, rule: MetricRule, settings: DetectionSettings = DetectionSettings()) -> np.ndarray:
    """``find_changes``' early exits, for k series of n points at once (``rows``: float64, shape (k, n), the
    metric's values): a bool array of shape (k,), True where ``find_changes`` certainly returns [].

    A row is quiet when it is finite (and > 0 for a relative metric) and either
    - it has fewer than ``min_points_before + min_points_after`` points (or fewer than 2: nothing to cut);
    - it is narrower than the minimum magnitude (``widest_change``);
    - no single cut gains more than Binseg's penalty (``change_points``' first step: ``robust_noise``, the
      penalty, ``prefix_sums`` and ``first_cut_gains`` per row), by a margin (``_SCREEN_MARGIN``) that covers the
      rounding of a row-wise computation. A row within the margin is not quiet: ``find_changes`` decides it.
    A row that is not finite is not quiet: ``find_changes`` raises for it."""
    finite = np.isfinite(rows).all(axis=1)
    if rule.scale == "relative":
        finite &= (rows > 0).all(axis=1)
    n = rows.shape[1]
    if n < max(settings.min_points_before + settings.min_points_after, 2):
        return finite
    min_magnitude = minimum_magnitude(rule, settings)
    safe = np.where(finite[:, None], rows, 1.0)  # the rows find_changes raises for are screened as ones
    x = np.log(safe) if rule.scale == "relative" else safe
    floor = scaled_noise_floor(rule)
    noise = np.maximum(robust_noise(x), floor)
    penalty = search_penalty(settings.penalty, noise, n)
    sums, squares = prefix_sums(x)
    # the cost's own floor of one point a segment, as best_first_gain
    gain = first_cut_gains(sums, squares, max(min(settings.min_points_before, settings.min_points_after), 1))
    no_cut = gain <= penalty - _SCREEN_MARGIN * (penalty + squares[:, n])
    return finite & ((widest_change(safe, rule.scale) < min_magnitude) | no_cut)


class JudgedSeries:
    """``detect`` over batches of series, keeping only what it found and how many series it saw, so that each
    batch can be let go once judged (``line_series_by_metric``).

    Attributes:
        found: ``detect``'s rows of every batch, in batch order (``sort_found`` reorders those added so far).
        series: series seen; long_enough: those with at least ``min_points_before + min_points_after`` points
            (shorter ones cannot be judged: the asset's metadata says how many could).
    """

    def __init__(self, rules: Mapping[tuple[str, str], MetricRule], settings: DetectionSettings) -> None:
        self.rules, self.settings = rules, settings
        self.found: list[dict[str, Any]] = []
        self.series = self.long_enough = 0

    def add(self, batch: Sequence[Series]) -> None:
        """Judge ``batch`` (``detect``) and count it."""
        self.found += detect(batch, self.rules, self.settings)
        self.series += len(batch)
        need = self.settings.min_points_before + self.settings.min_points_after
        self.long_enough += sum(len(s.values) >= need for s in batch)

    def sort_found(self) -> None:
        """Order the rows found so far by series id, then metric, keeping each series' own order (first bad
        date): the order ``detect`` gives over ``line_series``' one sorted list."""
        self.found.sort(key=lambda row: (row["series_id"], row["metric"]))


def regression_id(row: Mapping[str, Any]) -> str:
    """A change's id: the first 16 hex digits of sha256 over series id, metric, direction and first bad date."""
    text = "|".join(str(row[k]) for k in ("series_id", "metric", "direction", "first_bad_date"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# A change found again by a later run may have moved by a point or two (the new nights sharpen the estimate):
# a previous row of the same series, metric and direction whose first bad date lies within this many of the
# series' points of the new one is the same change (its id, detection time and notification are kept).
MATCH_POINTS = 2


def assign_status(found: Sequence[Mapping[str, Any]], previous: pa.Table | None, now: dt.datetime) -> pa.Table:
    """The regressions table (``REGRESSION_SCHEMA``) from ``detect``'s rows, with ``status``,
    ``regression_id``, ``detected_at`` and ``notified_at`` carried over from the previous run's rows
    (``previous``, ``REGRESSION_SCHEMA``, or None).

    A found change matches a previous row of the same series, metric and direction whose first bad date is one
    of the dates of its points within ``MATCH_POINTS`` of its first bad point (``_near``): it keeps that row's
    id, ``detected_at`` and ``notified_at``, and is ``ongoing`` unless ``recovered``. An unmatched change is
    ``new`` (or ``recovered``), detected ``now`` (UTC). Previous rows nothing matches are dropped (the history
    no longer shows them).
    """
    prev = [] if previous is None else previous.to_pylist()
    by_key: dict[tuple, list[dict]] = {}
    for row in prev:
        by_key.setdefault((row["series_id"], row["metric"], row["direction"]), []).append(row)
    used: set[str] = set()
    rows = []
    for found_row in found:
        row = {k: v for k, v in found_row.items() if k != "_near"}
        candidates = by_key.get((row["series_id"], row["metric"], row["direction"]), [])
        near = found_row.get("_near") or {row["first_bad_date"]}
        match = next((p for p in candidates if p["first_bad_date"] in near and p["regression_id"] not in used), None)
        if match is not None:
            used.add(match["regression_id"])
            row["regression_id"] = match["regression_id"]
            row["detected_at"], row["notified_at"] = match["detected_at"], match["notified_at"]
            if row["status"] != "recovered":
                row["status"] = "ongoing"
        else:
            row["detected_at"] = now
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=REGRESSION_SCHEMA)


METRIC_LABELS = {"tput_per_gpu": "tok/s/GPU", "median_tpot_s": "median TPOT (s)", "p99_ttft_s": "p99 TTFT (s)",
                 "failure_rate": "failure rate", "cost_per_mtok_hyperscaler": "$/M tokens (hyperscaler)",
                 "tok_s_per_mw": "tok/s/MW"}


def series_label(row: Mapping[str, Any]) -> str:
    """A regression row's series as people name it: ``<line id> conc=<N>`` for a line, ``<model> <isl>/<osl>
    <hw> <framework> <precision> spec=<method> at <target> tok/s/user (<price book>)`` for a frontier."""
    if row["series_kind"] == "line":
        return f"{row['line_id']} conc={row['conc']}"
    lengths = "agentic" if row["isl"] is None else f"{row['isl']}/{row['osl']}"
    return (f"{row['model']} {lengths} {row['hw']} {row['framework']} {row['precision']} "
            f"spec={row['spec_decoding']} frontier at {row['target_intvty']:g} tok/s/user ({row['price_book']})")


def format_value(value: float | None, metric: str) -> str:
    """A metric value for people: "—" for None; failure rates in % to one decimal; tok/s and tok/s/MW from 100 up
    (either sign) without decimals, grouped by thousands ("1,234,568"), below 100 to 3 significant digits; seconds,
    dollars and any other metric to 4 significant digits."""
    if value is None:
        return "—"
    if metric == "failure_rate":
        return f"{100 * value:.1f} %"
    if metric in ("tput_per_gpu", "tok_s_per_mw"):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{value:.4g}"


def change_text(row: Mapping[str, Any]) -> str:
    """``before → after (±N.N %)`` of a regression row (percentage points for an absolute metric)."""
    unit = " pp" if row["metric"] == "failure_rate" else " %"
    return (f"{format_value(row['mean_before'], row['metric'])} → {format_value(row['mean_after'], row['metric'])} "
            f"({row['magnitude_pct']:+.1f}{unit})")


def regressions_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table for the Dagster UI, one row per regression: series, metric, before → after, change, first
    bad date, the last good and first bad runs (links where they are URLs), status; every cell passes
    ``markdown_text``."""
    from pipeline.io.storage import markdown_text

    def link(value: str | None, label: str) -> str:
        if not value:
            return "—"
        if value.startswith(("https://", "http://")):
            return f"[{label}]({value.replace(')', '%29').replace(' ', '%20')})"
        return markdown_text(value)

    lines = ["| line | metric | before → after | change | first bad date | last good run | first bad run | status |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        before_after, change = change_text(row).rsplit(" (", 1)
        lines.append(f"| {markdown_text(series_label(row))} | {markdown_text(METRIC_LABELS.get(row['metric'], row['metric']))} "
                     f"| {markdown_text(before_after)} | {markdown_text(change.rstrip(')'))} | {row['first_bad_date']} "
                     f"| {link(row['last_good_run'], 'last good')} | {link(row['first_bad_run'], 'first bad')} "
                     f"| {row['status']} |")
    return "\n".join(lines)


def slack_message(rows: Sequence[Mapping[str, Any]], report_url: str | None = None) -> dict[str, Any]:
    """The webhook payload announcing ``rows`` (Slack incoming-webhook JSON: ``{"text": …}``, mrkdwn): one line
    per regression with its series, metric, before → after, change and first bad date, and the first bad run's
    link where it is a URL."""
    lines = [f":warning: {len(rows)} new benchmark regression{'s' if len(rows) != 1 else ''}"
             + (f" (<{report_url}|report>)" if report_url else "")]
    for row in rows:
        run = row.get("first_bad_run") or ""
        where = f" <{run}|first bad run>" if run.startswith(("https://", "http://")) else ""
        lines.append(f"• {series_label(row)}: {METRIC_LABELS.get(row['metric'], row['metric'])} {change_text(row)}, "
                     f"first bad {row['first_bad_date']}{where}")
    return {"text": "\n".join(lines)}
