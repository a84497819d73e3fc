"""Sides and the comparisons that pair them, over ``run_metrics`` rows.

A side is every run with the same (model, isl, osl, benchmark_type) and the side's fixed keys; a key not fixed by the comparison
kind is pooled (written ``all``) into one union frontier ("best available serving configuration"):
- spec_decoding: (hw, precision, spec = m) vs (hw, precision, spec = none), for each method m; frameworks pooled;
- precision: (hw, fp4) vs (hw, fp8); spec and frameworks pooled;
- hardware: (hw A, p) vs (hw B, p) for each pair of GPUs, in GPU-reference order; spec and frameworks pooled;
- framework: (hw, p, framework A) vs (hw, p, framework B) for each pair, alphabetical; spec pooled.
Agentic-trace runs (``benchmark_type = agentic_traces``, no ISL/OSL) form their own sides, compared only with each
other on their own x-axis (E2E-normalized interactivity); they never share a side with fixed-sequence runs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from pipeline.ingest.keys import (
    POOLED_WORD,
    framework_label,
    gpu_display_order,
    hw_label,
    precision_label,
    spec_label,
)
from pipeline.ingest.schema import BENCHMARK_TYPES, FIXED_SEQ

POOLED = POOLED_WORD  # ingest refuses it as a spec_decoding or framework key (keys.key_problem)
# The keys every side fixes (spec_decoding and framework may be pooled): ``fixed_key`` of a side and of a run.
FIXED_KEYS = ("model", "isl", "osl", "hw", "precision", "benchmark_type")


@dataclass(frozen=True)
class Side:
    """One side's fixed keys; ``spec_decoding``/``framework`` are ``all`` when pooled; ``isl``/``osl`` are None
    for ``benchmark_type = agentic_traces``."""

    model: str
    isl: int
    osl: int
    hw: str
    precision: str
    spec_decoding: str = POOLED
    framework: str = POOLED
    benchmark_type: str = FIXED_SEQ

    @property
    def side_id(self) -> str:
        """Stable id, e.g. ``dsr1|1024/1024|mi355x|fp4|spec=mtp|framework=all``; agentic sides write their
        benchmark type where ISL/OSL stand (``kimik2.5|agentic_traces|b200|fp4|…``)."""
        lengths = f"{self.isl}/{self.osl}" if self.benchmark_type == FIXED_SEQ else self.benchmark_type
        return (
            f"{self.model}|{lengths}|{self.hw}|{self.precision}"
            f"|spec={self.spec_decoding}|framework={self.framework}"
        )

    @property
    def fixed_key(self) -> tuple:
        """The side's values of ``FIXED_KEYS``: a run can belong to it only when ``run_fixed_key`` equals this."""
        return tuple(getattr(self, name) for name in FIXED_KEYS)

    @property
    def side_key(self) -> tuple:
        """(``fixed_key``, ``spec_decoding``, ``framework``): what ``holding_side_keys`` of a run is made of."""
        return self.fixed_key, self.spec_decoding, self.framework

    def matches(self, run: Mapping[str, Any]) -> bool:
        """Whether a run (``run_metrics`` row) belongs to this side: its fixed keys are the side's and
        ``matches_pooled_keys``."""
        return run_fixed_key(run) == self.fixed_key and self.matches_pooled_keys(run)

    def matches_pooled_keys(self, run: Mapping[str, Any]) -> bool:
        """Whether a run whose ``run_fixed_key`` is this side's ``fixed_key`` belongs to it: its spec decoding and
        framework are the side's, or the side pools them (``pooled_key_choices``; for callers that grouped the
        runs by fixed key)."""
        return (self.spec_decoding, self.framework) in pooled_key_choices(run)


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



def sides_of(comparison_id: str) -> tuple[str, Side, Side] | None:
    """The kind and the two sides ``Comparison.comparison_id`` wrote ``comparison_id`` from, or None when the text
    is not such an id (e.g. a key holding ``|`` or ``~``, which ingest refuses, makes it ambiguous)."""
    kind, colon, rest = comparison_id.partition(":")
    ids = rest.split("~")
    if not colon or len(ids) != 2:
        return None
    sides = []
    for side_id in ids:
        fields = side_id.split("|")
        if len(fields) != 6 or not fields[4].startswith("spec=") or not fields[5].startswith("framework="):
            return None
        model, lengths, hw, precision = fields[:4]
        isl, slash, osl = lengths.partition("/")
        if slash and isl.isdigit() and osl.isdigit():
            shape: dict[str, Any] = {"isl": int(isl), "osl": int(osl), "benchmark_type": FIXED_SEQ}
        elif lengths in BENCHMARK_TYPES and lengths != FIXED_SEQ:
            shape = {"isl": None, "osl": None, "benchmark_type": lengths}
        else:
            return None
        sides.append(Side(model=model, hw=hw, precision=precision, spec_decoding=fields[4][len("spec="):],
                          framework=fields[5][len("framework="):], **shape))
    return kind, sides[0], sides[1]


def run_fixed_key(run: Mapping[str, Any]) -> tuple:
    """A run's (``run_metrics`` row) values of ``FIXED_KEYS``, a null ``benchmark_type`` read as ``fixed_seq``."""
    return (*(run[name] for name in FIXED_KEYS[:-1]), run.get("benchmark_type") or FIXED_SEQ)


def pooled_key_choices(run: Mapping[str, Any]) -> tuple[tuple, ...]:
    """The (``spec_decoding``, ``framework``) pairs of the sides a run belongs to among those with its fixed keys:
    its own value or ``all`` (pooled) for each, four pairs. The one rule of pooling (``Side.matches_pooled_keys``,
    ``holding_side_keys``)."""
    return tuple((spec, framework) for spec in (run["spec_decoding"], POOLED) for framework in (run["framework"], POOLED))


def holding_side_keys(run: Mapping[str, Any]) -> tuple[tuple, ...]:
    """The ``Side.side_key`` of every side a run (``run_metrics`` row) belongs to: its ``run_fixed_key`` with each
    of its ``pooled_key_choices``, four keys (a caller matching many runs to many sides looks these keys up)."""
    fixed = run_fixed_key(run)
    return tuple((fixed, spec, framework) for spec, framework in pooled_key_choices(run))

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


def enumerate_comparisons(runs: Iterable[Mapping[str, Any]]) -> list[Comparison]:
    """Every comparison for which both sides have runs, sorted by kind then id.

    Args:
        runs: rows with ``model, isl, osl, hw, precision, spec_decoding, framework`` and ``benchmark_type``
            (absent or null: ``fixed_seq``). ``model`` is keyed with the benchmark type (``(model, type)`` below),
            so sides of the two types are never paired.
    """
    present = {
        ((r["model"], r.get("benchmark_type") or FIXED_SEQ), r["isl"], r["osl"], r["hw"], r["precision"],
         r["spec_decoding"], r["framework"]) for r in runs
    }
    out: list[Comparison] = []
    by_config: dict[tuple, set[tuple[str, str]]] = {}
    for model, isl, osl, hw, precision, spec, framework in present:
        by_config.setdefault((model, isl, osl, hw, precision), set()).add((spec, framework))

    def side(model: tuple[str, str], *keys: Any, **pooled: str) -> Side:
        """A Side from a (model, benchmark_type) pair and the other keys."""
        return Side(model[0], *keys, **pooled, benchmark_type=model[1])

    for (model, isl, osl, hw, precision), combos in by_config.items():
        specs = {s for s, _ in combos}
        frameworks = sorted({f for _, f in combos})
        if "none" in specs:
            for method in sorted(specs - {"none"}):
                out.append(make_comparison("spec_decoding",
                                           side(model, isl, osl, hw, precision, spec_decoding=method),
                                           side(model, isl, osl, hw, precision, spec_decoding="none")))
        for fa, fb in itertools.combinations(frameworks, 2):
            out.append(make_comparison("framework", side(model, isl, osl, hw, precision, framework=fa),
                                       side(model, isl, osl, hw, precision, framework=fb)))

    configs = set(by_config)
    for model, isl, osl, hw in sorted({(m, i, o, h) for m, i, o, h, _ in configs}):
        if (model, isl, osl, hw, "fp4") in configs and (model, isl, osl, hw, "fp8") in configs:
            out.append(make_comparison("precision", side(model, isl, osl, hw, "fp4"), side(model, isl, osl, hw, "fp8")))
    for model, isl, osl, precision in sorted({(m, i, o, p) for m, i, o, _, p in configs}):
        hws = sorted({h for m, i, o, h, p in configs if (m, i, o, p) == (model, isl, osl, precision)}, key=_gpu_rank)
        for ha, hb in itertools.combinations(hws, 2):
            out.append(make_comparison("hardware", side(model, isl, osl, ha, precision),
                                       side(model, isl, osl, hb, precision)))
    return sorted(out, key=lambda c: (c.kind, c.comparison_id))


def _gpu_rank(hw: str) -> tuple[int, str]:
    """GPUs in the order of ``gpu_reference.csv``'s rows, a GPU absent from it last (then by key)."""
    order = gpu_display_order()
    return (order.index(hw) if hw in order else len(order), hw)
