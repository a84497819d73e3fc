"""Sides, frontiers per side, and matched-interactivity comparisons (DESIGN.md §4), over ``run_metrics`` rows.

A side is every run with the same (model, isl, osl) and the side's fixed keys; a key not fixed by the comparison
kind is pooled (written ``all``) into one union frontier ("best available serving configuration"):
- spec_decoding: (hw, precision, spec = m) vs (hw, precision, spec = none), for each method m; frameworks pooled;
- precision: (hw, fp4) vs (hw, fp8); spec and frameworks pooled;
- hardware: (hw A, p) vs (hw B, p) for each pair of GPUs, in GPU-reference order; spec and frameworks pooled;
- framework: (hw, p, framework A) vs (hw, p, framework B) for each pair, alphabetical; spec pooled.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pipeline.frontier import (
    band_phrase,
    default_targets,
    displayed_band,
    float_values,
    interactivity_band,
    interpolate,
    pareto_frontier,
    round_half_up,
)
from pipeline.keys import framework_label, hw_label, precision_label, spec_label

POOLED = "all"
# Metrics splined along each frontier, each on its own values at the frontier points (DESIGN.md §4).
SPLINED_METRICS = (
    "tput_per_gpu",
    "cost_per_mtok_hyperscaler",
    "cost_per_mtok_neocloud",
    "cost_per_mtok_rental",
    "tok_s_per_mw",
    "concurrency",
)
# Metrics some sources lack (an export row without output_tput_per_gpu, a run without telemetry): splined only
# when every frontier point of the side has a value, else null. Never interpolated across a hole.
OPTIONAL_METRICS = ("output_tput_per_gpu", "input_tput_per_gpu", "measured_tok_s_per_mw")
# Engine families whose acceptance-length conventions agree; points of two families on one comparison are
# flagged cross_engine (the seed pages warn acceptance rates are not comparable across engines).
ENGINE_FAMILY = {"vllm": "vllm", "dynamo-vllm": "vllm", "sglang": "sglang", "dynamo-sglang": "sglang",
                 "mori-sglang": "sglang", "trtllm": "trtllm", "dynamo-trt": "trtllm", "atom": "atom"}
GPU_ORDER = ("h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x")
TIE_RATIO = 1.01


@dataclass(frozen=True)
class Side:
    """One side's fixed keys; ``spec_decoding``/``framework`` are ``all`` when pooled."""

    model: str
    isl: int
    osl: int
    hw: str
    precision: str
    spec_decoding: str = POOLED
    framework: str = POOLED

    @property
    def side_id(self) -> str:
        """Stable id, e.g. ``dsr1|1024/1024|mi355x|fp4|spec=mtp|framework=all``."""
        return (
            f"{self.model}|{self.isl}/{self.osl}|{self.hw}|{self.precision}"
            f"|spec={self.spec_decoding}|framework={self.framework}"
        )

    def matches(self, run: Mapping[str, Any]) -> bool:
        """Whether a run (``run_metrics`` row) belongs to this side."""
        return (
            run["model"] == self.model
            and run["isl"] == self.isl
            and run["osl"] == self.osl
            and run["hw"] == self.hw
            and run["precision"] == self.precision
            and (self.spec_decoding == POOLED or run["spec_decoding"] == self.spec_decoding)
            and (self.framework == POOLED or run["framework"] == self.framework)
        )


@dataclass(frozen=True)
class Comparison:
    """Two sides of one kind, with their display labels; ``a`` is the challenger (MTP, FP4, …)."""

    kind: str
    a: Side
    b: Side
    label_a: str
    label_b: str

    @property
    def comparison_id(self) -> str:
        """Stable id ``<kind>:<side a id>~<side b id>``."""
        return f"{self.kind}:{self.a.side_id}~{self.b.side_id}"

    @property
    def title(self) -> str:
        """Seed-page title, e.g. "MI355X FP4: MTP vs Off"."""
        if self.kind == "spec_decoding":
            return f"{hw_label(self.a.hw)} {precision_label(self.a.precision)}: {self.label_a} vs {self.label_b}"
        if self.kind == "precision":
            return f"{hw_label(self.a.hw)}: {self.label_a} vs {self.label_b}"
        if self.kind == "hardware":
            return f"{self.label_a} vs {self.label_b} {precision_label(self.a.precision)}"
        return f"{hw_label(self.a.hw)} {precision_label(self.a.precision)}: {self.label_a} vs {self.label_b}"


def side_label(kind: str, side: Side) -> str:
    """The label of a side in a comparison of ``kind``: the key that differs (MTP/Off, FP4, H200, SGLang)."""
    if kind == "spec_decoding":
        return spec_label(side.spec_decoding)
    if kind == "framework":
        return framework_label(side.framework)
    if kind == "precision":
        return precision_label(side.precision)
    return hw_label(side.hw)


def make_comparison(kind: str, a: Side, b: Side) -> Comparison:
    """A comparison of two sides, labelled by ``side_label``."""
    return Comparison(kind, a, b, side_label(kind, a), side_label(kind, b))


def frontiers_by_side(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Frontier rows (``FRONTIER_SCHEMA``, one price book) grouped by ``side_id``, each in point order: the shape
    ``compare`` reads."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["side_id"], []).append(row)
    return {side: sorted(points, key=lambda p: p["point_index"]) for side, points in grouped.items()}


def enumerate_comparisons(runs: Iterable[Mapping[str, Any]]) -> list[Comparison]:
    """Every comparison for which both sides have runs, sorted by kind then id.

    Args:
        runs: rows with ``model, isl, osl, hw, precision, spec_decoding, framework``.
    """
    present = {
        (r["model"], r["isl"], r["osl"], r["hw"], r["precision"], r["spec_decoding"], r["framework"]) for r in runs
    }
    out: list[Comparison] = []
    by_config: dict[tuple, set[tuple[str, str]]] = {}
    for model, isl, osl, hw, precision, spec, framework in present:
        by_config.setdefault((model, isl, osl, hw, precision), set()).add((spec, framework))

    for (model, isl, osl, hw, precision), combos in by_config.items():
        specs = {s for s, _ in combos}
        frameworks = sorted({f for _, f in combos})
        if "none" in specs:
            for method in sorted(specs - {"none"}):
                out.append(make_comparison("spec_decoding",
                                           Side(model, isl, osl, hw, precision, spec_decoding=method),
                                           Side(model, isl, osl, hw, precision, spec_decoding="none")))
        for fa, fb in itertools.combinations(frameworks, 2):
            out.append(make_comparison("framework", Side(model, isl, osl, hw, precision, framework=fa),
                                       Side(model, isl, osl, hw, precision, framework=fb)))

    configs = set(by_config)
    for model, isl, osl, hw in sorted({(m, i, o, h) for m, i, o, h, _ in configs}):
        if (model, isl, osl, hw, "fp4") in configs and (model, isl, osl, hw, "fp8") in configs:
            out.append(make_comparison("precision", Side(model, isl, osl, hw, "fp4"), Side(model, isl, osl, hw, "fp8")))
    for model, isl, osl, precision in sorted({(m, i, o, p) for m, i, o, _, p in configs}):
        hws = sorted({h for m, i, o, h, p in configs if (m, i, o, p) == (model, isl, osl, precision)}, key=_gpu_rank)
        for ha, hb in itertools.combinations(hws, 2):
            out.append(make_comparison("hardware", Side(model, isl, osl, ha, precision),
                                       Side(model, isl, osl, hb, precision)))
    return sorted(out, key=lambda c: (c.kind, c.comparison_id))


def _gpu_rank(hw: str) -> tuple[int, str]:
    return (GPU_ORDER.index(hw) if hw in GPU_ORDER else len(GPU_ORDER), hw)


FRONTIER_SCHEMA = pa.schema(
    [
        ("side_id", pa.string()),
        ("price_book", pa.string()),
        ("price_book_version", pa.string()),
        ("model", pa.string()),
        ("isl", pa.int32()),
        ("osl", pa.int32()),
        ("hw", pa.string()),
        ("precision", pa.string()),
        ("spec_decoding", pa.string()),
        ("framework", pa.string()),
        ("side_runs", pa.int32()),
        ("side_intvty_min", pa.float64()),
        ("side_intvty_max", pa.float64()),
        ("point_index", pa.int32()),
        ("run_id", pa.string()),
        ("source_file", pa.string()),
        ("point_framework", pa.string()),
        ("point_spec_decoding", pa.string()),
        ("point_spec_metric_source", pa.string()),
        ("median_intvty", pa.float64()),
        *[(m, pa.float64()) for m in SPLINED_METRICS + OPTIONAL_METRICS],
    ]
)


def build_frontiers(runs: pa.Table | Sequence[Mapping[str, Any]], sides: Iterable[Side]) -> pa.Table:
    """Pareto frontier points of every side in every price book (``FRONTIER_SCHEMA``: one row per side, price
    book and frontier point). The points are the same in every book; costs and tok/s/MW differ.

    Column work: the runs are indexed once by their keys, each side's frontier is ``pareto_frontier`` over numpy
    arrays, and the point rows are taken from the input table, not rebuilt row by row.

    Args:
        runs: ``run_metrics`` rows, an Arrow table or dicts (need ``run_id``, ``source_file``, ``price_book``,
            ``price_book_version``, the side keys, ``conc``, ``median_intvty``, ``tput_per_gpu`` and the other
            splined metrics; ``spec_metric_source`` and the optional metrics may be absent). Ties on a frontier
            resolve to the earlier row.
        sides: the sides to build; a side without runs yields no rows.
    Raises:
        ValueError: a member run's interactivity or tok/s/GPU is NaN (``pareto_frontier``).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    if table.num_rows == 0:
        return FRONTIER_SCHEMA.empty_table()
    for name, kind in (("spec_metric_source", pa.string()), *((m, pa.float64()) for m in OPTIONAL_METRICS)):
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, kind))
    key_names = ("price_book", "model", "isl", "osl", "hw", "precision", "spec_decoding", "framework")
    keys = [table[name].to_pylist() for name in key_names]
    x_all, y_all = float_values(table["median_intvty"]), float_values(table["tput_per_gpu"])
    # run positions by (book, model, isl, osl, hw, precision) and then (spec_decoding, framework): a side takes
    # one sub-list, or several when a key is pooled; members keep the input order
    index: dict[tuple, dict[tuple, list[int]]] = {}
    for position, (book, model, isl, osl, hw, precision, spec, framework) in enumerate(zip(*keys)):
        index.setdefault((book, model, isl, osl, hw, precision), {}).setdefault((spec, framework), []).append(position)
    side_columns: dict[str, list] = {name: [] for name in (
        "side_id", "price_book", "model", "isl", "osl", "hw", "precision", "spec_decoding", "framework",
        "side_runs", "side_intvty_min", "side_intvty_max", "point_index")}
    points: list[np.ndarray] = []
    for book, side in itertools.product(sorted(set(keys[0])), sorted(set(sides), key=lambda s: s.side_id)):
        by_stack = index.get((book, side.model, side.isl, side.osl, side.hw, side.precision), {})
        members = np.array(sorted(p for (spec, framework), stack in by_stack.items()
                                  if side.spec_decoding in (POOLED, spec) and side.framework in (POOLED, framework)
                                  for p in stack), dtype=np.int64)
        if members.size == 0:
            continue
        x, y = x_all[members], y_all[members]
        on_frontier = members[pareto_frontier(x, y)]
        points.append(on_frontier)
        n = on_frontier.size
        for name, value in (("side_id", side.side_id), ("price_book", book), ("model", side.model),
                            ("isl", side.isl), ("osl", side.osl), ("hw", side.hw), ("precision", side.precision),
                            ("spec_decoding", side.spec_decoding), ("framework", side.framework),
                            ("side_runs", members.size), ("side_intvty_min", float(x.min())),
                            ("side_intvty_max", float(x.max()))):
            side_columns[name].extend([value] * n)
        side_columns["point_index"].extend(range(n))
    taken = table.take(pa.array(np.concatenate(points) if points else np.zeros(0, np.int64)))
    from_runs = {
        "price_book_version": taken["price_book_version"], "run_id": taken["run_id"],
        "source_file": taken["source_file"], "point_framework": taken["framework"],
        "point_spec_decoding": taken["spec_decoding"], "point_spec_metric_source": taken["spec_metric_source"],
        "median_intvty": taken["median_intvty"],
        **{m: taken["conc" if m == "concurrency" else m] for m in SPLINED_METRICS + OPTIONAL_METRICS},
    }
    columns = {**{name: pa.array(values, FRONTIER_SCHEMA.field(name).type) for name, values in side_columns.items()},
               **{name: column.cast(FRONTIER_SCHEMA.field(name).type) for name, column in from_runs.items()}}
    return pa.table([columns[name] for name in FRONTIER_SCHEMA.names], schema=FRONTIER_SCHEMA)


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
    ]
)


def compare(comparison: Comparison, frontiers: Mapping[str, Sequence[Mapping[str, Any]]],
            targets: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """Rows of one comparison (``COMPARISON_SCHEMA``): for each target, side a then side b.

    ``measured_tok_s_per_mw`` is splined only when every frontier point of the side has telemetry
    (``measured_power_coverage`` = share of points that do); ``cross_engine`` is True when the spec-decoding
    points of the two frontiers come from engine families with different acceptance conventions.

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
            })
    return rows


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
