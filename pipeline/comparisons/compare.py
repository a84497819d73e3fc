"""Matched-interactivity comparisons: both sides' frontiers splined at the same target interactivities, with
the seed pages' band, targets and sentences (one ``COMPARISON_SCHEMA`` row per comparison, target and side).

Every cell says how it was obtained: the measured frontier points that bracket its target and how far apart they
are (``bracket_ratio``), whether the target was clamped to the side's frontier, whether the splined cost and
throughput disagree (``sparse_frontier``), all summed up in ``cell_basis``, and whether a bracketing point averages
repeats that disagree; no sentence presents a clamped or gap-bridging value as measured, and no sentence says "N%
more" where both sides' 95 % intervals overlap (``sentences``: the one rule for every tier and price book).

Interactivity is each frontier's x-axis (``x_intvty``): median interactivity for fixed-sequence sides,
E2E-normalized interactivity for agentic-trace sides; both sides of a comparison have the same benchmark type.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pipeline.comparisons.band import (
    band_phrase,
    default_targets,
    displayed_band,
    interactivity_band,
    round_half_up,
)
from pipeline.comparisons.confidence import (
    COMPARISON_CI_COLUMNS,
    difference_significant,
    intervals_apart,
    price_per_mtok,
    side_intervals,
)
from pipeline.frontiers.points import (
    NO_SLO,
    OPTIONAL_METRICS,
    SPLINED_METRICS,
    frontiers_by_side,
    split_by_slo,  # noqa: F401  (the comparisons mart splits its SLO rows by the frontiers' rule)
    with_slo,
)
from pipeline.frontiers.latest import REPEAT_SPREAD_LIMIT
from pipeline.frontiers.sides import Comparison, enumerate_comparisons
from pipeline.frontiers.spline import grouped_steffen_tangents, monotone_spline
from pipeline.ingest.schema import SIDE_KEY_FIELDS

# Engine families whose acceptance-length conventions agree; points of two families on one comparison are
# flagged cross_engine (the seed pages warn acceptance rates are not comparable across engines).
ENGINE_FAMILY = {"vllm": "vllm", "dynamo-vllm": "vllm", "sglang": "sglang", "dynamo-sglang": "sglang",
                 "mori-sglang": "sglang", "trtllm": "trtllm", "dynamo-trt": "trtllm", "atom": "atom"}
# Rule: two values whose larger / smaller is below this ratio are "essentially tied" (the seed pages' sentences).
# Why: a 1 % difference is within what a re-run moves, and the dashboard says "tied" below it.
TIE_RATIO = 1.01
# compare logs each comparison it leaves without rows because its sides' x-axes hold different statistics
_log = logging.getLogger(__name__)
# A cell whose splined cost and throughput-implied cost differ by more than this ratio is flagged sparse_frontier:
# cost and tok/s/GPU are splined separately, and across a wide gap between two frontier points they stop agreeing.
SPARSE_RATIO = 1.05
# Rule: a cell whose measured neighbours are more than this ratio apart (bracket_hi_intvty / bracket_lo_intvty >
# 1.5) is "interpolated across a gap" (cell_basis interpolated_gap), whatever the splines agree on. Why: between
# points that far apart the curve is the spline's guess, not a measurement; splines that happen to agree (cost and
# tok/s/GPU read off the same guess) do not make it one (a real SGLang frontier splined between 8.1 and 65.5
# tok/s/user gave "4% more" where a log-log reading of the same gap gives 30 %).
GAP_RATIO = 1.5
# REPEAT_SPREAD_LIMIT (0.10, pipeline/frontiers/latest.py, where the frontier point is flagged): a repeat group whose
# members' tok/s/GPU differ by more than 10 % ((max − min) / min) disagrees; a cell bracketed by such a point says so
# in its note. Imported above, defined once.
# How a cell was read off its side's frontier (column cell_basis, ``cell_basis``).
CELL_BASES = ("measured", "interpolated", "interpolated_gap", "clamped")


COMPARISON_SCHEMA = pa.schema(
    [
        ("comparison_id", pa.string()),
        ("price_book", pa.string()),
        ("price_book_version", pa.string()),
        ("kind", pa.string()),
        ("title", pa.string()),
        ("side", pa.string()),
        ("side_label", pa.string()),
        ("side_id", pa.string()),
        *SIDE_KEY_FIELDS,
        ("x_intvty_stat", pa.string()),
        ("side_runs", pa.int32()),
        ("excluded_runs", pa.int32()),
        ("frontier_points", pa.int32()),
        ("band_min", pa.float64()),
        ("band_max", pa.float64()),
        ("band_is_union", pa.bool_()),
        ("band_display_min", pa.int32()),
        ("band_display_max", pa.int32()),
        ("target_index", pa.int32()),
        ("target_intvty", pa.float64()),
        ("evaluated_intvty", pa.float64()),
        ("target_clamped", pa.bool_()),
        ("bracket_lo_intvty", pa.float64()),
        ("bracket_hi_intvty", pa.float64()),
        ("bracket_ratio", pa.float64()),
        ("bracket_lo_repeat_spread", pa.float64()),
        ("bracket_hi_repeat_spread", pa.float64()),
        *[(m, pa.float64()) for m in SPLINED_METRICS + OPTIONAL_METRICS],
        ("implied_cost_per_mtok_hyperscaler", pa.float64()),
        ("sparse_frontier", pa.bool_()),
        ("cell_basis", pa.string()),
        ("cell_note", pa.string()),
        ("measured_power_coverage", pa.float64()),
        ("cross_engine", pa.bool_()),
        ("band_phrase", pa.string()),
        ("cost_sentence", pa.string()),
        ("tput_sentence", pa.string()),
        ("sentence_caveat", pa.string()),
        ("repeat_points", pa.int32()),
        *[(name, pa.float64()) for name in COMPARISON_CI_COLUMNS],
        ("difference_significant", pa.bool_()),
    ]
)


def compare(comparison: Comparison, frontiers: Mapping[str, Sequence[Mapping[str, Any]]],
            targets: Sequence[float] | None = None,
            curves: Mapping[tuple[str, str], SideCurve] | None = None) -> list[dict[str, Any]]:
    """Rows of one comparison (``COMPARISON_SCHEMA``): for each target, side a then side b.

    ``measured_tok_s_per_mw`` is splined only when every frontier point of the side has telemetry
    (``measured_power_coverage`` = share of points that do); ``cross_engine`` is True when the spec-decoding
    points of the two frontiers come from engine families with different acceptance conventions. Each side
    also carries the 95 % intervals of tok/s/GPU and interactivity at the target and ``difference_significant``
    (``pipeline.comparisons.confidence``; null unless every frontier point of the side is a repeat mean).

    Honest cells: ``bracket_lo_intvty``/``bracket_hi_intvty`` are the side's measured frontier points around the
    target (equal when the target is a point; null beyond the end the target lies past, with ``target_clamped``)
    and ``bracket_ratio`` their ratio hi / lo; ``implied_cost_per_mtok_hyperscaler`` is the cost the splined
    tok/s/GPU implies at the side's $/GPU-h, and ``sparse_frontier`` is True when it and the splined cost differ
    by more than ``SPARSE_RATIO``; ``cell_basis`` sums them up (``cell_basis``); ``bracket_lo_repeat_spread`` /
    ``bracket_hi_repeat_spread`` are the bracketing points' repeat spreads. The splined values stay in their columns
    (the seed pages' numbers); ``cell_note`` says in words which side is outside its measured range and where its
    frontier ends, across which gap a value is interpolated, or which bracketing point averages repeats that
    disagree, and both sentences end with those notes in parentheses (``sentence_caveat``). The sentences are
    ``sentences``' (hyperscaler tier): "within run-to-run noise" where both sides' 95 % intervals overlap.

    Args:
        comparison: the two sides.
        frontiers: frontier rows of one price book by ``side_id`` (``FRONTIER_SCHEMA`` rows, in point order).
        targets: interactivities (tok/s/user); default: the band's three default targets.
        curves: splines already built, by (price book, ``side_id``) (``compare_all`` builds every compared side's
            at once, ``side_curves``, so a side in several comparisons is splined once); a side not in it is
            splined here. The values are the same without it.
    Returns:
        [] when a side has no frontier, or when the two frontiers' ``x_intvty_stat`` differ (logged).
    """
    fa, fb = frontiers.get(comparison.a.side_id), frontiers.get(comparison.b.side_id)
    if not fa or not fb:
        return []
    if fa[0].get("x_intvty_stat") != fb[0].get("x_intvty_stat"):
        # two x-axes holding different statistics (an agentic side on 1 / p90(E2EL / OSL), the other on the stand-in
        # mean OSL / p90 E2EL) are not read at one target: no rows (docs/metrics.md section 4a)
        _log.info("%s not compared: x-axes hold %s and %s", comparison.comparison_id,
                  fa[0].get("x_intvty_stat"), fb[0].get("x_intvty_stat"))
        return []
    lo, hi, is_union = interactivity_band(
        [fa[0]["side_intvty_min"], fa[0]["side_intvty_max"]], [fb[0]["side_intvty_min"], fb[0]["side_intvty_max"]]
    )
    targets = list(targets) if targets is not None else default_targets(lo, hi)
    d_lo, d_hi = displayed_band(lo, hi)
    values = {key: _evaluate(points, targets, _curve(curves, side.side_id, points))
              for key, side, points in (("a", comparison.a, fa), ("b", comparison.b, fb))}
    labels = {"a": comparison.label_a, "b": comparison.label_b}
    intervals = {key: side_intervals(points, targets) for key, points in (("a", fa), ("b", fb))}
    families = {ENGINE_FAMILY.get(p["point_framework"], p["point_framework"])
                for p in (*fa, *fb) if p["point_spec_decoding"] != "none"}
    cross_engine = len(families) > 1
    per_side = {key: {  # what a side's rows share at every target
        "side_runs": points[0]["side_runs"], "excluded_runs": points[0]["excluded_runs"],
        "frontier_points": len(points),
        "measured_power_coverage": sum(p["measured_tok_s_per_mw"] is not None for p in points) / len(points),
        "repeat_points": sum((p.get("repeat_n") or 1) > 1 for p in points),
    } for key, points in (("a", fa), ("b", fb))}
    rows: list[dict[str, Any]] = []
    for t_index, target in enumerate(targets):
        a_vals, b_vals = values["a"][1][t_index], values["b"][1][t_index]
        notes = {key: cell_note(labels[key], float(target), values[key][1][t_index]) for key in ("a", "b")}
        caveat = "; ".join(n for n in notes.values() if n) or None
        said = sentences(comparison.label_a, comparison.label_b, {**a_vals, **intervals["a"][t_index]},
                         {**b_vals, **intervals["b"][t_index]}, caveat=caveat)
        for key, side, label, points in (("a", comparison.a, comparison.label_a, fa),
                                         ("b", comparison.b, comparison.label_b, fb)):
            evaluated, metrics = values[key][0][t_index], values[key][1][t_index]
            rows.append({
                "comparison_id": comparison.comparison_id, "price_book": points[0]["price_book"],
                "price_book_version": points[0]["price_book_version"], "kind": comparison.kind, "title": comparison.title,
                "model": side.model, "isl": side.isl, "osl": side.osl, "side": key, "side_label": label,
                "side_id": side.side_id, "hw": side.hw, "precision": side.precision,
                "spec_decoding": side.spec_decoding, "framework": side.framework,
                "benchmark_type": side.benchmark_type, "x_intvty_stat": points[0].get("x_intvty_stat"),
                "side_runs": per_side[key]["side_runs"], "excluded_runs": per_side[key]["excluded_runs"],
                "frontier_points": per_side[key]["frontier_points"],
                "band_min": lo, "band_max": hi, "band_is_union": is_union,
                "band_display_min": d_lo, "band_display_max": d_hi,
                "target_index": t_index + 1, "target_intvty": float(target), "evaluated_intvty": evaluated,
                "target_clamped": bool(evaluated != target), **metrics, "cell_note": notes[key],
                "measured_power_coverage": per_side[key]["measured_power_coverage"],
                "cross_engine": cross_engine,
                "band_phrase": band_phrase(target, lo, hi), **said, "sentence_caveat": caveat,
                "repeat_points": per_side[key]["repeat_points"], **intervals[key][t_index],
                "difference_significant": difference_significant(intervals["a"][t_index], intervals["b"][t_index]),
            })
    return rows


def compare_all(side_keys: Iterable[Mapping[str, Any]], frontier_rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Every comparison (``enumerate_comparisons``) in every price book at its default targets: the
    ``comparisons`` mart (``COMPARISON_SCHEMA``), price books in name order, comparisons in kind then id order.

    Args:
        side_keys: the distinct (model, isl, osl, hw, precision, spec_decoding, framework, benchmark_type) of the
            runs.
        frontier_rows: the ``frontiers`` mart's rows (``FRONTIER_SCHEMA``), every price book.
    """
    books: dict[str, list[Mapping[str, Any]]] = {}
    for row in frontier_rows:
        books.setdefault(row["price_book"], []).append(row)
    comparisons = enumerate_comparisons(side_keys)
    rows: list[dict[str, Any]] = []
    for book in sorted(books):
        by_side = frontiers_by_side(books[book])
        # the sides a comparison splines (both of its sides have a frontier), each once, all in one pass
        compared = {side for c in comparisons if c.a.side_id in by_side and c.b.side_id in by_side
                    for side in (c.a.side_id, c.b.side_id)}
        curves = {(book, side): curve
                  for side, curve in side_curves({s: p for s, p in by_side.items() if s in compared}).items()}
        rows.extend(row for comparison in comparisons for row in compare(comparison, by_side, curves=curves))
    return pa.Table.from_pylist(rows, schema=COMPARISON_SCHEMA)


def compare_all_slos(side_keys: Iterable[Mapping[str, Any]], frontier_rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """``compare_all`` once per ``slo`` of the frontier rows, each on that SLO's frontiers only: the
    ``comparisons`` mart, ``COMPARISON_SCHEMA`` plus a last column ``slo`` (string). The ``none`` rows (every run)
    come first and are exactly ``compare_all`` over the ``none`` frontiers; then one block per SLO in name order.

    Args:
        side_keys: as ``compare_all``.
        frontier_rows: ``frontiers`` mart rows with their ``slo`` column (rows without one count as ``none``).
    """
    by_slo: dict[str, list[Mapping[str, Any]]] = {NO_SLO: []}
    for row in frontier_rows:
        by_slo.setdefault(row.get("slo") or NO_SLO, []).append(row)
    side_keys = list(side_keys)
    order = [NO_SLO] + sorted(s for s in by_slo if s != NO_SLO)
    return pa.concat_tables([with_slo(compare_all(side_keys, by_slo[slo]), slo) for slo in order])


@dataclass(frozen=True)
class SideCurve:
    """One side's frontier ready to be read at any targets: its interactivities ``x`` (tok/s/user), the metrics
    it splines (``SPLINED_METRICS`` plus the ``OPTIONAL_METRICS`` every point has) and their spline ``at``
    (``monotone_spline``)."""

    x: np.ndarray
    splined: list[str]
    at: Callable[..., np.ndarray]

    @classmethod
    def of(cls, points: Sequence[Mapping[str, Any]]) -> SideCurve:
        x = np.array([p["x_intvty"] for p in points], dtype=float)
        splined = _splined_metrics(points)
        return cls(x, splined, monotone_spline(x, np.array([[p[m] for m in splined] for p in points], dtype=float)))


def side_curves(by_side: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, SideCurve]:
    """``SideCurve.of`` of every side at once.

    The Steffen tangents of all of them come from one ``grouped_steffen_tangents`` call over every metric (each
    metric's column is its own curve, so a side's splined columns are picked afterwards), then one scipy
    ``CubicHermiteSpline`` per side. The same numbers, to the bit, as ``SideCurve.of`` per side
    (``tests/test_comparisons.py``), with the tangents in one pass instead of one per side.

    Args:
        by_side: frontier rows (``FRONTIER_SCHEMA``) by ``side_id``, each side in point order with ≥ 1 point
            (``frontiers_by_side``).
    Returns:
        ``{side_id: SideCurve}``, the keys of ``by_side``.
    Raises:
        ValueError: a side whose ``x_intvty`` is not strictly increasing.
    """
    if not by_side:
        return {}
    metrics = list(SPLINED_METRICS + OPTIONAL_METRICS)
    points = [p for side_points in by_side.values() for p in side_points]
    x = np.array([p["x_intvty"] for p in points], dtype=float)
    values = np.array([[p[m] for m in metrics] for p in points], dtype=float)  # a missing metric reads NaN
    sizes = [len(side_points) for side_points in by_side.values()]
    tangents = grouped_steffen_tangents(x, values, sizes)
    curves: dict[str, SideCurve] = {}
    start = 0
    for (side, side_points), size in zip(by_side.items(), sizes):
        rows = slice(start, start + size)
        splined = _splined_metrics(side_points)
        columns = [metrics.index(m) for m in splined]
        curves[side] = SideCurve(x[rows], splined,
                                 monotone_spline(x[rows], values[rows][:, columns], tangents[rows][:, columns]))
        start += size
    return curves


def _splined_metrics(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metrics a side splines: ``SPLINED_METRICS``, then each ``OPTIONAL_METRICS`` every point has."""
    return list(SPLINED_METRICS) + [m for m in OPTIONAL_METRICS if all(p[m] is not None for p in points)]


def _curve(curves: Mapping[tuple[str, str], SideCurve] | None, side_id: str,
           points: Sequence[Mapping[str, Any]]) -> SideCurve:
    """The side's ``SideCurve``: from ``curves`` when it was built there (``compare_all``'s ``side_curves``), else
    splined now."""
    curve = curves.get((points[0]["price_book"], side_id)) if curves is not None else None
    return curve if curve is not None else SideCurve.of(points)


def _evaluate(points: Sequence[Mapping[str, Any]], targets: Sequence[float],
              curve: SideCurve) -> tuple[list[float], list[dict]]:
    """Per target: the clamped interactivity and every metric splined along one side's frontier (``curve``, one
    spline object for all metrics; an optional metric with a hole is None), with the cell's bracket (``_bracket``),
    sparse flag and ``cell_basis``.

    The side's $/GPU-h (hyperscaler) is recovered as cost × tok/s/GPU × 3600 / 1e6 at its first frontier point (the
    product is the same at every point of one GPU and price book), so the implied cost at a target is that price
    over the splined tok/s/GPU."""
    x = curve.x
    evaluated = np.clip(np.asarray(targets, dtype=float), x[0], x[-1]).tolist()
    values = curve.at(targets, clamp=True)
    price = price_per_mtok(points)  # = $/GPU-h / 0.0036
    x_list = x.tolist()  # bisected per target: a few µs less than array searches on a frontier of ~10 points
    spreads = [p.get("repeat_spread") for p in points]
    rows = [dict.fromkeys(SPLINED_METRICS + OPTIONAL_METRICS) for _ in targets]
    for row, target, at_target in zip(rows, targets, values):
        row.update(zip(curve.splined, map(float, at_target)))
        row.update(_bracket(x_list, float(target), spreads))
        implied = price / row["tput_per_gpu"]
        splined_cost = row["cost_per_mtok_hyperscaler"]
        row["implied_cost_per_mtok_hyperscaler"] = implied
        row["sparse_frontier"] = bool(max(implied, splined_cost) / min(implied, splined_cost) > SPARSE_RATIO)
        row["cell_basis"] = cell_basis(row)
    return evaluated, rows


def _bracket(x: list[float], target: float, spreads: Sequence[float | None] | None = None) -> dict[str, Any]:
    """The measured frontier points around ``target``: the last x ≤ target and the first x ≥ target (the same
    point when the target is one; None on the side the target lies beyond the frontier, both for a NaN target),
    their ratio hi / lo (``bracket_ratio``, 1.0 on a point, None unless both exist) and each one's
    ``repeat_spread`` (``bracket_lo_repeat_spread``/``_hi_``; None where the point is no repeat group or absent).
    ``x``: the side's frontier interactivities (tok/s/user), strictly increasing; ``spreads``: the points'
    ``repeat_spread`` in the same order (default: none)."""
    if target != target:  # NaN: no point is on either side of it
        return {"bracket_lo_intvty": None, "bracket_hi_intvty": None, "bracket_ratio": None,
                "bracket_lo_repeat_spread": None, "bracket_hi_repeat_spread": None}
    below, above = bisect.bisect_right(x, target), bisect.bisect_left(x, target)
    lo = x[below - 1] if below else None
    hi = x[above] if above < len(x) else None
    spread = (lambda i: None) if spreads is None else (lambda i: spreads[i])
    return {"bracket_lo_intvty": lo, "bracket_hi_intvty": hi,
            "bracket_ratio": None if lo is None or hi is None else hi / lo,
            "bracket_lo_repeat_spread": spread(below - 1) if lo is not None else None,
            "bracket_hi_repeat_spread": spread(above) if hi is not None else None}


def cell_basis(cell: Mapping[str, Any]) -> str:
    """How a side's value at a target was obtained (docs/metrics.md section 12a), one of ``CELL_BASES``:

    - ``clamped``: the target lies outside the side's frontier (a bracket end is None; the value is the end point's);
    - ``measured``: the target is a frontier point (``bracket_lo_intvty`` = ``bracket_hi_intvty``);
    - ``interpolated_gap``: between two points more than ``GAP_RATIO`` (1.5×) apart (``bracket_ratio`` > 1.5), or
      where the splined cost and tok/s/GPU disagree (``sparse_frontier``);
    - ``interpolated``: between two points at most 1.5× apart whose splines agree.

    Args:
        cell: ``bracket_lo_intvty``, ``bracket_hi_intvty`` (tok/s/user or None), ``bracket_ratio`` (may be absent:
            computed from the bracket) and ``sparse_frontier``.
    """
    lo, hi = cell["bracket_lo_intvty"], cell["bracket_hi_intvty"]
    if lo is None or hi is None:
        return "clamped"
    if lo == hi:
        return "measured"
    ratio = cell.get("bracket_ratio")
    ratio = hi / lo if ratio is None else ratio
    return "interpolated_gap" if ratio > GAP_RATIO or cell["sparse_frontier"] else "interpolated"


def cell_note(label: str, target: float, cell: Mapping[str, Any]) -> str | None:
    """How a side's value at ``target`` was obtained, in words, or None when it is measured or lies between two
    measured points at most ``GAP_RATIO`` apart that agree, and no bracketing point averages disagreeing repeats
    (docs/metrics.md section 12a).

    Args:
        label: the side's label ("MTP").
        target: the requested interactivity (tok/s/user).
        cell: the side's cell: ``bracket_lo_intvty``, ``bracket_hi_intvty``, ``sparse_frontier``, and optionally
            ``cell_basis`` (else computed, ``cell_basis``) and ``bracket_lo_repeat_spread`` /
            ``bracket_hi_repeat_spread`` (the bracketing points' (max − min) / min of tok/s/GPU over their repeats).
    Returns:
        By ``cell_basis``: "MTP is outside its measured range: its frontier ends at 17.8 tok/s/user, below the 124
        tok/s/user target" (or "starts at …, above the …") when clamped, "Off's values are interpolated across a
        gap between 20.1 and 95.3 tok/s/user" for ``interpolated_gap``; then, joined by "; ", for each bracketing
        point whose repeat spread exceeds ``REPEAT_SPREAD_LIMIT``: "MTP's point at 45.2 tok/s/user averages repeats
        14% apart in tok/s/GPU" (N rounded half up). None when there is nothing to say.
    """
    lo, hi = cell["bracket_lo_intvty"], cell["bracket_hi_intvty"]
    basis = cell.get("cell_basis") or cell_basis(cell)
    parts = []
    if basis == "clamped" and hi is None and lo is not None:
        parts.append(f"{label} is outside its measured range: its frontier ends at {lo:.1f} tok/s/user, below the "
                     f"{target:g} tok/s/user target")
    elif basis == "clamped" and lo is None and hi is not None:
        parts.append(f"{label} is outside its measured range: its frontier starts at {hi:.1f} tok/s/user, above "
                     f"the {target:g} tok/s/user target")
    elif basis == "interpolated_gap":
        parts.append(f"{label}'s values are interpolated across a gap between {lo:.1f} and {hi:.1f} tok/s/user")
    seen = set()
    for x, spread in ((lo, cell.get("bracket_lo_repeat_spread")), (hi, cell.get("bracket_hi_repeat_spread"))):
        if x is None or x in seen or spread is None or not spread > REPEAT_SPREAD_LIMIT:
            continue
        seen.add(x)
        parts.append(f"{label}'s point at {x:.1f} tok/s/user averages repeats {round_half_up(spread * 100)}% apart "
                     "in tok/s/GPU")
    return "; ".join(parts) or None


def headline(row: Mapping[str, Any]) -> str:
    """A comparison row's cost and throughput sentences as one line, "<cost>; <throughput>", with their shared
    caveat (``sentence_caveat``) said once at the end instead of after each."""
    caveat = row.get("sentence_caveat")
    if not caveat:
        return f"{row['cost_sentence']}; {row['tput_sentence']}"
    suffix = f" ({caveat})"
    return f"{row['cost_sentence'].removesuffix(suffix)}; {row['tput_sentence'].removesuffix(suffix)}{suffix}"


def sentences(label_a: str, label_b: str, a: Mapping[str, Any], b: Mapping[str, Any], tier: str = "hyperscaler",
              caveat: str | None = None) -> dict[str, str]:
    """The seed pages' two sentences at one target, for any cost tier and price book: the one rule that the
    comparisons mart (hyperscaler), the CLI (``--tier``) and the report page (``static/comparison.js``, held equal
    by tests/test_report_browser.py) write (docs/metrics.md section 14).

    Cost, at ``tier`` ("cost per token", or "cost per token at <tier> prices" for a tier other than hyperscaler),
    ratio = pricier / cheaper:
      - ratio < ``TIE_RATIO``: "{A} and {B} are essentially tied on cost per token";
      - else, when both sides' cost intervals exist and overlap: "{A} and {B} are within run-to-run noise (95 %
        intervals overlap) on cost per token";
      - else N = round_half_up((ratio − 1) · 100): N < 100 "{cheaper} is N% cheaper per token" (the dashboard's
        sentence); N ≥ 100 "{cheaper} is R× cheaper per token ({pricier} costs N% more)", R the ratio with one
        decimal, so the dashboard's N is kept and never read as "more than all of the price".
    Throughput, ratio = faster / slower: tied below ``TIE_RATIO``; "within run-to-run noise (95 % intervals
    overlap) on tok/s/GPU" when both sides' tok/s/GPU intervals exist and overlap (``difference_significant`` False);
    else "{faster} delivers N% more tok/s/GPU" at any N. On equal values side a counts as cheaper / faster. Each
    sentence ends with `` (<caveat>)`` when given (the cells' notes). A side without a cost at the tier gives "no
    <tier> price for one side".

    Args:
        label_a, label_b: the sides' labels ("MTP", "Off").
        a, b: each side's cell at the target: ``cost_per_mtok_<tier>`` ($/M tok), ``tput_per_gpu`` (tok/s/GPU) and,
            when repeats give them, ``tput_per_gpu_ci_lo/hi`` and ``cost_per_mtok_<tier>_ci_lo/hi`` (absent or None:
            no interval, the difference is said as today).
        tier: ``hyperscaler`` (the mart's), ``neocloud`` or ``rental``.
        caveat: the cells' notes joined by "; " (``sentence_caveat``), or None.
    Returns:
        {"cost_sentence": str, "tput_sentence": str}.
    """
    suffix = f" ({caveat})" if caveat else ""
    on_cost = "cost per token" if tier == "hyperscaler" else f"cost per token at {tier} prices"
    at_tier = "" if tier == "hyperscaler" else f" at {tier} prices"
    cost_a, cost_b = a.get(f"cost_per_mtok_{tier}"), b.get(f"cost_per_mtok_{tier}")
    if cost_a is None or cost_b is None:
        cost = f"no {tier} price for one side"
    else:
        cheaper, pricier = (label_a, label_b) if cost_a <= cost_b else (label_b, label_a)
        ratio = max(cost_a, cost_b) / min(cost_a, cost_b)
        apart = intervals_apart(*(side.get(f"cost_per_mtok_{tier}_ci_{end}") for side in (a, b)
                                  for end in ("lo", "hi")))
        n = round_half_up((ratio - 1) * 100)
        if ratio < TIE_RATIO:
            cost = f"{label_a} and {label_b} are essentially tied on {on_cost}"
        elif apart is False:
            cost = f"{label_a} and {label_b} are within run-to-run noise (95 % intervals overlap) on {on_cost}"
        elif n < 100:
            cost = f"{cheaper} is {n}% cheaper per token{at_tier}"
        else:
            cost = f"{cheaper} is {ratio:.1f}× cheaper per token{at_tier} ({pricier} costs {n}% more)"
    tput_a, tput_b = a["tput_per_gpu"], b["tput_per_gpu"]
    faster = label_a if tput_a >= tput_b else label_b
    tput_ratio = max(tput_a, tput_b) / min(tput_a, tput_b)
    if tput_ratio < TIE_RATIO:
        tput = f"{label_a} and {label_b} are essentially tied on tok/s/GPU"
    elif difference_significant({k: a.get(k) for k in ("tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi")},
                                {k: b.get(k) for k in ("tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi")}) is False:
        tput = f"{label_a} and {label_b} are within run-to-run noise (95 % intervals overlap) on tok/s/GPU"
    else:
        tput = f"{faster} delivers {round_half_up((tput_ratio - 1) * 100)}% more tok/s/GPU"
    return {"cost_sentence": cost + suffix, "tput_sentence": tput + suffix}
