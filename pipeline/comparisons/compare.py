"""Matched-interactivity comparisons: both sides' frontiers splined at the same target interactivities, with
the seed pages' band, targets and sentences (one ``COMPARISON_SCHEMA`` row per comparison, target and side).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pipeline.comparisons.band import band_phrase, default_targets, displayed_band, interactivity_band, round_half_up
from pipeline.comparisons.confidence import COMPARISON_CI_COLUMNS, difference_significant, side_intervals
from pipeline.frontiers.points import OPTIONAL_METRICS, SPLINED_METRICS, frontiers_by_side
from pipeline.frontiers.sides import Comparison, enumerate_comparisons
from pipeline.frontiers.spline import interpolate

# Engine families whose acceptance-length conventions agree; points of two families on one comparison are
# flagged cross_engine (the seed pages warn acceptance rates are not comparable across engines).
ENGINE_FAMILY = {"vllm": "vllm", "dynamo-vllm": "vllm", "sglang": "sglang", "dynamo-sglang": "sglang",
                 "mori-sglang": "sglang", "trtllm": "trtllm", "dynamo-trt": "trtllm", "atom": "atom"}
TIE_RATIO = 1.01


COMPARISON_SCHEMA = pa.schema(
    [
        ("comparison_id", pa.string()),
        ("price_book", pa.string()),
        ("price_book_version", pa.string()),
        ("kind", pa.string()),
        ("title", pa.string()),
        ("model", pa.string()),
        ("isl", pa.int32()),
        ("osl", pa.int32()),
        ("side", pa.string()),
        ("side_label", pa.string()),
        ("side_id", pa.string()),
        ("hw", pa.string()),
        ("precision", pa.string()),
        ("spec_decoding", pa.string()),
        ("framework", pa.string()),
        ("side_runs", pa.int32()),
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
        *[(m, pa.float64()) for m in SPLINED_METRICS + OPTIONAL_METRICS],
        ("measured_power_coverage", pa.float64()),
        ("cross_engine", pa.bool_()),
        ("band_phrase", pa.string()),
        ("cost_sentence", pa.string()),
        ("tput_sentence", pa.string()),
        ("repeat_points", pa.int32()),
        *[(name, pa.float64()) for name in COMPARISON_CI_COLUMNS],
        ("difference_significant", pa.bool_()),
    ]
)


def compare(comparison: Comparison, frontiers: Mapping[str, Sequence[Mapping[str, Any]]],
            targets: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """Rows of one comparison (``COMPARISON_SCHEMA``): for each target, side a then side b.

    ``measured_tok_s_per_mw`` is splined only when every frontier point of the side has telemetry
    (``measured_power_coverage`` = share of points that do); ``cross_engine`` is True when the spec-decoding
    points of the two frontiers come from engine families with different acceptance conventions. Each side
    also carries the 95 % intervals of tok/s/GPU and interactivity at the target and ``difference_significant``
    (``pipeline.comparisons.confidence``; null unless every frontier point of the side is a repeat mean).

    Args:
        comparison: the two sides.
        frontiers: frontier rows of one price book by ``side_id`` (``FRONTIER_SCHEMA`` rows, in point order).
        targets: interactivities (tok/s/user); default: the band's three default targets.
    Returns:
        [] when a side has no frontier.
    """
    fa, fb = frontiers.get(comparison.a.side_id), frontiers.get(comparison.b.side_id)
    if not fa or not fb:
        return []
    lo, hi, is_union = interactivity_band(
        [fa[0]["side_intvty_min"], fa[0]["side_intvty_max"]], [fb[0]["side_intvty_min"], fb[0]["side_intvty_max"]]
    )
    targets = list(targets) if targets is not None else default_targets(lo, hi)
    d_lo, d_hi = displayed_band(lo, hi)
    values = {key: _evaluate(points, targets) for key, points in (("a", fa), ("b", fb))}
    intervals = {key: side_intervals(points, targets) for key, points in (("a", fa), ("b", fb))}
    families = {ENGINE_FAMILY.get(p["point_framework"], p["point_framework"])
                for p in (*fa, *fb) if p["point_spec_decoding"] != "none"}
    cross_engine = len(families) > 1
    rows: list[dict[str, Any]] = []
    for t_index, target in enumerate(targets):
        a_vals, b_vals = values["a"][1][t_index], values["b"][1][t_index]
        sentences = _sentences(comparison.label_a, comparison.label_b, a_vals, b_vals)
        for key, side, label, points in (("a", comparison.a, comparison.label_a, fa),
                                         ("b", comparison.b, comparison.label_b, fb)):
            evaluated, metrics = values[key][0][t_index], values[key][1][t_index]
            rows.append({
                "comparison_id": comparison.comparison_id, "price_book": points[0]["price_book"],
                "price_book_version": points[0]["price_book_version"], "kind": comparison.kind, "title": comparison.title,
                "model": side.model, "isl": side.isl, "osl": side.osl, "side": key, "side_label": label,
                "side_id": side.side_id, "hw": side.hw, "precision": side.precision,
                "spec_decoding": side.spec_decoding, "framework": side.framework,
                "side_runs": points[0]["side_runs"], "frontier_points": len(points),
                "band_min": lo, "band_max": hi, "band_is_union": is_union,
                "band_display_min": d_lo, "band_display_max": d_hi,
                "target_index": t_index + 1, "target_intvty": float(target), "evaluated_intvty": evaluated,
                "target_clamped": bool(evaluated != target), **metrics,
                "measured_power_coverage": sum(p["measured_tok_s_per_mw"] is not None for p in points) / len(points),
                "cross_engine": cross_engine,
                "band_phrase": band_phrase(target, lo, hi), **sentences,
                "repeat_points": sum((p.get("repeat_n") or 1) > 1 for p in points), **intervals[key][t_index],
                "difference_significant": difference_significant(intervals["a"][t_index], intervals["b"][t_index]),
            })
    return rows


def compare_all(side_keys: Iterable[Mapping[str, Any]], frontier_rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Every comparison (``enumerate_comparisons``) in every price book at its default targets: the
    ``comparisons`` mart (``COMPARISON_SCHEMA``), price books in name order, comparisons in kind then id order.

    Args:
        side_keys: the distinct (model, isl, osl, hw, precision, spec_decoding, framework) of the runs.
        frontier_rows: the ``frontiers`` mart's rows (``FRONTIER_SCHEMA``), every price book.
    """
    books: dict[str, list[Mapping[str, Any]]] = {}
    for row in frontier_rows:
        books.setdefault(row["price_book"], []).append(row)
    comparisons = enumerate_comparisons(side_keys)
    rows = [row for book in sorted(books) for by_side in [frontiers_by_side(books[book])]
            for comparison in comparisons for row in compare(comparison, by_side)]
    return pa.Table.from_pylist(rows, schema=COMPARISON_SCHEMA)


def _evaluate(points: Sequence[Mapping[str, Any]], targets: Sequence[float]) -> tuple[list[float], list[dict]]:
    """Per target: the clamped interactivity and every metric splined along one side's frontier (one spline
    object for all metrics; an optional metric with a hole is None)."""
    x = np.array([p["median_intvty"] for p in points], dtype=float)
    evaluated = np.clip(np.asarray(targets, dtype=float), x[0], x[-1]).tolist()
    splined = list(SPLINED_METRICS) + [m for m in OPTIONAL_METRICS if all(p[m] is not None for p in points)]
    values = interpolate(x, np.array([[p[m] for m in splined] for p in points], dtype=float), targets, clamp=True)
    rows = [dict.fromkeys(SPLINED_METRICS + OPTIONAL_METRICS) for _ in targets]
    for row, at_target in zip(rows, values):
        row.update(zip(splined, map(float, at_target)))
    return evaluated, rows


def _sentences(label_a: str, label_b: str, a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, str]:
    """The seed pages' sentences at one target: hyperscaler cost per token and tok/s/GPU."""
    cost_a, cost_b = a["cost_per_mtok_hyperscaler"], b["cost_per_mtok_hyperscaler"]
    cheaper = label_a if cost_a <= cost_b else label_b
    cost_ratio = max(cost_a, cost_b) / min(cost_a, cost_b)
    tput_a, tput_b = a["tput_per_gpu"], b["tput_per_gpu"]
    faster = label_a if tput_a >= tput_b else label_b
    tput_ratio = max(tput_a, tput_b) / min(tput_a, tput_b)
    return {
        "cost_sentence": (
            f"{label_a} and {label_b} are essentially tied on cost per token" if cost_ratio < TIE_RATIO
            else f"{cheaper} is {round_half_up((cost_ratio - 1) * 100)}% cheaper per token"
        ),
        "tput_sentence": (
            f"{label_a} and {label_b} are essentially tied on tok/s/GPU" if tput_ratio < TIE_RATIO
            else f"{faster} delivers {round_half_up((tput_ratio - 1) * 100)}% more tok/s/GPU"
        ),
    }
