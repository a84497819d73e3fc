"""Row-level rules that move a parsed run to quarantine instead of failing the materialization.

Each rule looks at one run (a dict of ``RUN_SCHEMA`` values) and returns ``(reason_code, detail)`` or None. Rules
run in ``rules()`` order and every failing rule is reported; the first one is the run's ``reason_code``, the
``detail`` lists them all. Reason codes are stable snake_case (docs/inputs.md); field names in codes use the
engine's canonical key (``total_token_throughput``, ``median_tpot_ms``) whatever the source format called it.

One path: ``rule_verdicts`` (which ``validate_table`` and the asset's ``pipeline.validate.judge`` run) first asks
each rule's ``screen``, a column expression over the whole Arrow table that is True wherever the rule might fire,
and applies the rules only to the rows some screen flags. The row function decides and words the reason; the
screen only chooses the rows it looks at, so it may flag too much, never too little. Every rule has a screen.
Tests hold ``validate_table`` to the result of every rule applied to every run (written in the tests) on the
sample, the bad-input corpus and the real logs, and each screen to hand-computed rows.
To add a rule, append a function to ``rules()`` and give it a ``screen`` (``_screen``; ``lambda t: pa.array([True] *
t.num_rows)`` applies it to every row).
"""

from __future__ import annotations

import math
from collections import Counter
from functools import reduce
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.gpus import decode_gpu_column, gpu_count_column, run_decode_gpus, run_gpus
from pipeline.ingest.schema import (
    AGENTIC_TRACES,
    BENCHMARK_TYPES,
    FIXED_SEQ,
    LATENCY_COLUMNS,
    LATENCY_METRICS,
    QUARANTINE_SCHEMA,
    RUN_SCHEMA,
)
from pipeline.io.paths import reference_dir
from pipeline.validate.lengths import LENGTH_INPUT_COLUMNS, lengths_off_nominal
from pipeline.validate.lines import LINE_COLUMNS, line_id
from pipeline.validate.plausibility import Plausibility, Range, load_plausibility

Run = Mapping[str, Any]
Finding = tuple[str, str]
Rule = Callable[[Run], "Finding | None"]
Screen = Callable[[pa.Table], pa.ChunkedArray]

REQUIRED_METADATA = ("model", "hw", "framework", "precision", "spec_decoding", "isl", "osl", "conc")
# Agentic-trace runs replay recorded sessions with their own lengths: no nominal ISL/OSL to require.
NOT_REQUIRED_FOR_AGENTIC = ("isl", "osl")


def _screen(screen: Screen) -> Callable[[Rule], Rule]:
    """Give a rule its ``screen``: a column expression over a ``RUN_SCHEMA`` table, True on every row where the
    rule might fire (``validate_table`` applies the rule to those rows only)."""
    def attach(rule: Rule) -> Rule:
        rule.screen = screen  # type: ignore[attr-defined]
        return rule
    return attach


def _any_of(*conditions: pa.ChunkedArray) -> pa.ChunkedArray:
    """Rows where any condition holds. A null condition (a value that is absent, which the rules never read as a
    failure on its own) does not."""
    return reduce(pc.or_, (pc.fill_null(condition, False) for condition in conditions))


def _only_for(benchmark_type: str, rule: Rule) -> Rule:
    """``rule`` applied only to runs of ``benchmark_type`` (a null type is ``fixed_seq``), its screen narrowed
    the same way."""
    def typed(run: Run) -> Finding | None:
        return rule(run) if (run.get("benchmark_type") or FIXED_SEQ) == benchmark_type else None

    def screen(table: pa.Table) -> pa.ChunkedArray:
        return pc.and_(pc.equal(pc.fill_null(table["benchmark_type"], FIXED_SEQ), benchmark_type), rule.screen(table))

    return _screen(screen)(typed)


@_screen(lambda t: _any_of(pc.less_equal(t["completed"], 0), pc.not_equal(t["failed"], 0),
                        pc.less(t["completed"], t["num_prompts"])))
def _failed_requests(run: Run) -> Finding | None:
    """A run whose requests failed still writes a file; it must never reach a frontier (docs/metrics.md)."""
    completed, failed, prompts = run.get("completed"), run.get("failed"), run.get("num_prompts")
    if completed is not None and completed <= 0:
        return "no_completed_requests", f"completed={completed} (failed={failed}, num_prompts={prompts})"
    if failed is not None and failed < 0:  # a count: no engine writes one below zero
        return "inconsistent:failed", f"failed={failed} is negative (completed={completed})"
    if failed:
        total = (completed or 0) + failed
        return "failed_requests", f"{failed} of {total} requests failed ({failed / total:.1%})"
    if completed is not None and prompts and completed < prompts:
        return "failed_requests", f"completed {completed} of num_prompts {prompts} ({1 - completed / prompts:.1%} lost)"
    return None


def _positive(field: str, code_name: str, *alternatives: str) -> Callable[[Run], Finding | None]:
    """Rule: ``field`` (else the first of ``alternatives`` present) must be present, finite and > 0 (metrics and
    interactivity divide by it); codes ``missing_field|non_finite|non_positive:<code_name>``."""
    def rule(run: Run) -> Finding | None:
        value = next((run.get(f) for f in (field, *alternatives) if run.get(f) is not None), None)
        if value is None:
            return f"missing_field:{code_name}", f"{code_name} is absent"
        if not math.isfinite(value):
            return f"non_finite:{code_name}", f"{code_name} = {value}"
        if value <= 0:
            return f"non_positive:{code_name}", f"{code_name} = {value}"
        return None

    def screen(table: pa.Table) -> pa.ChunkedArray:
        value = pc.coalesce(*(table[f] for f in (field, *alternatives) if f in table.column_names))
        return pc.invert(_any_of(pc.and_(pc.is_finite(value), pc.greater(value, 0))))

    return _screen(screen)(rule)


def _finite_positive(*values: float | None) -> bool:
    """Every value present, finite and > 0 (evidence is computed from such values only)."""
    return all(v is not None and math.isfinite(v) and v > 0 for v in values)


def unit_mismatch_rule(tpot_range: Range) -> Callable[[Run], Finding | None]:
    """Latencies written in the wrong unit (docs/inputs.md ``unit_mismatch``), quarantined rather than guessed.

    Evidence: a median TPOT no LLM server reaches (below ``tpot_range.min``, the ``median_tpot_s`` row of
    plausibility.csv, for a ``*_ms`` key; above its ``max`` for a seconds key), confirmed by Little's law: in a
    closed-loop benchmark completed × mean E2EL ≈ conc × duration, so the E2EL column's unit is the one that makes
    that ratio ≈ 1 (for per-GPU rows without totals: output tok/s per user ≈ OSL / E2EL). Without the evidence to
    confirm, an impossible TPOT is ``implausible_value:median_tpot_ms``.
    """
    low, high = tpot_range.min, tpot_range.max

    def screen(t: pa.Table) -> pa.ChunkedArray:
        return _any_of(pc.and_(pc.equal(t["latency_unit_in_file"], "ms"), pc.less(t["median_tpot_s"], low)),
                    pc.and_(pc.equal(t["latency_unit_in_file"], "s"), pc.greater(t["median_tpot_s"], high)))

    @_screen(screen)
    def rule(run: Run) -> Finding | None:
        return _unit_mismatch(run, low, high)

    return rule


def _unit_mismatch(run: Run, low: float, high: float) -> Finding | None:
    """``unit_mismatch_rule``'s row rule with the TPOT range ``[low, high]`` (s/token)."""
    tpot = run.get("median_tpot_s")
    unit = run.get("latency_unit_in_file")
    if tpot is None or not math.isfinite(tpot) or tpot <= 0 or unit not in ("ms", "s"):
        return None
    suspicious = (unit == "ms" and tpot < low) or (unit == "s" and tpot > high)
    if not suspicious:
        return None
    wrong_scale = 1e3 if unit == "ms" else 1e-3  # what the value becomes if the other unit was meant
    e2el, completed = run.get("mean_e2el_s") or run.get("median_e2el_s"), run.get("completed")
    duration, conc = run.get("duration_s"), run.get("conc")
    shown = f"median TPOT {tpot * 1e3:.4g} ms as read from {unit!r} keys"
    other = "s" if unit == "ms" else "ms"
    evidence = None
    if _finite_positive(e2el, completed, duration, conc):
        evidence = ("completed×E2EL/(conc×duration)", completed * e2el / (conc * duration))
    elif _finite_positive(e2el, conc, run.get("osl"), run.get("reported_output_tput_per_gpu"), run.get("tp")) \
            and not run.get("disagg"):
        # per-user output rate from throughput vs from latency: (out/GPU × GPUs / conc) / (OSL / E2EL) ≈ 1
        evidence = ("(output tok/s per user)/(OSL/E2EL)",
                    run["reported_output_tput_per_gpu"] * run_gpus(run) / conc / (run["osl"] / e2el))
    if evidence and evidence[1] > 0:
        name, as_read = evidence
        as_other = as_read * wrong_scale
        if abs(math.log10(as_other)) < abs(math.log10(as_read)):
            return "unit_mismatch", (
                f"{shown}; {name} = {as_read:.3g} as read, {as_other:.3g} if the file meant {other}")
    return "implausible_value:median_tpot_ms", f"{shown} is outside what any LLM server does"


@_screen(lambda t: _any_of(
    pc.greater(t["output_tput_tok_s"], pc.multiply(t["total_tput_tok_s"], 1 + 1e-9)),
    pc.and_(pc.greater(t["median_e2el_s"], 0), pc.greater(t["median_ttft_s"], pc.multiply(t["median_e2el_s"], 1 + 1e-9)))))
def _consistency(run: Run) -> Finding | None:
    """Relations every real run satisfies: output ≤ total throughput, median TTFT ≤ median E2EL."""
    total, output = run.get("total_tput_tok_s"), run.get("output_tput_tok_s")
    if total is not None and output is not None and output > total * (1 + 1e-9):
        return "inconsistent:output_throughput", f"output_throughput {output} > total_token_throughput {total}"
    ttft, e2el = run.get("median_ttft_s"), run.get("median_e2el_s")
    if ttft is not None and e2el is not None and e2el > 0 and ttft > e2el * (1 + 1e-9):
        return "inconsistent:ttft_ms", f"median TTFT {ttft} s > median E2EL {e2el} s"
    return None


@_screen(lambda t: _any_of(pc.not_equal(t["metadata_conflicts"], "")))
def _metadata_conflict(run: Run) -> Finding | None:
    """The file and its sidecar/runs.csv disagree: we cannot tell which is right, so neither is guessed."""
    conflicts = run.get("metadata_conflicts")
    if conflicts:
        key = conflicts.split(":", 1)[0]
        return f"metadata_conflict:{key}", conflicts
    return None


# Mean ITL / mean TPOT is ~1.0 without speculative decoding (one token per streamed chunk) and 1.6–3.5 with MTP or
# EAGLE on real files (several accepted tokens per chunk). A ratio far above the band is a stream interval (TRT-LLM
# and Dynamo stream every 10th–100th token: 9.9 to 99 on real non-spec rows), not evidence of drafting.
SPEC_EVIDENCE_ITL_TPOT = (1.5, 5.0)


def _itl_tpot_ratio(run: Run) -> float | None:
    """Mean ITL / mean TPOT of a run (medians when a mean is absent); None without both or with a TPOT ≤ 0."""
    for itl, tpot in ((run.get("mean_itl_s"), run.get("mean_tpot_s")), (run.get("median_itl_s"), run.get("median_tpot_s"))):
        if itl is not None and tpot is not None and math.isfinite(itl) and math.isfinite(tpot) and tpot > 0:
            return itl / tpot
    return None


def _spec_ratio_screen(table: pa.Table) -> pa.ChunkedArray:
    ratio = pc.coalesce(pc.divide(_float(table, "mean_itl_s"), _float(table, "mean_tpot_s")),
                        pc.divide(_float(table, "median_itl_s"), _float(table, "median_tpot_s")))
    lo, hi = SPEC_EVIDENCE_ITL_TPOT
    inside = pc.and_(pc.greater_equal(ratio, lo), pc.less_equal(ratio, hi))
    return _any_of(pc.and_(pc.equal(table["spec_decoding"], "none"), inside))


@_screen(_spec_ratio_screen)
def _spec_evident(run: Run) -> Finding | None:
    """The file's own latencies show speculative decoding (mean ITL / mean TPOT inside ``SPEC_EVIDENCE_ITL_TPOT``)
    while its metadata says ``none``, stated or by default: the label would be wrong, so neither is guessed
    (docs/metrics.md, "Speculative decoding the file shows"); the sidecar or runs.csv must name the method."""
    if run.get("spec_decoding") != "none":
        return None
    ratio = _itl_tpot_ratio(run)
    lo, hi = SPEC_EVIDENCE_ITL_TPOT
    if ratio is None or not lo <= ratio <= hi:
        return None
    source = metadata_source_of(run).get("spec_decoding", "default")
    said = ("no file, sidecar or runs.csv names the method (spec_decoding none is only the default)"
            if source == "default" else f"spec_decoding none comes from {source}")
    return "metadata_conflict:spec_decoding", (
        f"mean ITL / mean TPOT = {ratio:.2f}: the file's latencies show speculative decoding (≈1.0 without it, "
        f"{lo:g}–{hi:g} with MTP/EAGLE), but {said}; state spec_decoding (mtp, eagle3, …) in the <file>.meta.json "
        "sidecar or a runs.csv row")


@_screen(lambda t: _any_of(*(pc.is_null(t[key]) for key in REQUIRED_METADATA)))
def _missing_metadata(run: Run) -> Finding | None:
    """Sides and per-GPU metrics need these keys (agentic-trace runs: all but ISL/OSL); no file, sidecar or
    runs.csv gave them."""
    agentic = run.get("benchmark_type") == AGENTIC_TRACES
    missing = [key for key in REQUIRED_METADATA
               if run.get(key) is None and not (agentic and key in NOT_REQUIRED_FOR_AGENTIC)]
    if missing:
        return f"missing_metadata:{missing[0]}", (
            f"no value for {', '.join(missing)} in the file, a <file>.meta.json sidecar or a runs.csv row"
        )
    return None


# The metadata keys a GPU count is made of (``pipeline.ingest.gpus``), in the order a missing one is named: the
# decode GPUs first, since they divide the output throughput a disaggregated run is judged by.
GPU_COUNT_KEYS = ("tp", "pp", "pcp", "num_decode_gpu", "num_prefill_gpu")
# ``metadata_sources`` names a count key's source; ``engine`` means the parser only inferred it (an SGLang
# prefill/decode split's server_info lists the servers its router reported, often one per role however many run).
_ENGINE_COUNT = "(^|;)(" + "|".join(GPU_COUNT_KEYS) + ")=engine(;|$)"


def metadata_source_of(run: Run) -> dict[str, str]:
    """``metadata_sources`` of a run read back: {key: file | sidecar | runs.csv | engine | default | unknown}."""
    return dict(pair.partition("=")[::2] for pair in (run.get("metadata_sources") or "").split(";") if pair)


def engine_implied_counts(run: Run) -> list[str]:
    """The GPU-count keys of ``run`` whose value only the engine output implies (``metadata_sources`` says
    ``<key>=engine``), in ``GPU_COUNT_KEYS`` order."""
    sources = metadata_source_of(run)
    return [key for key in GPU_COUNT_KEYS if sources.get(key) == "engine"]


def _no_gpu_count(table: pa.Table) -> pa.ChunkedArray:
    def falsy(name: str) -> pa.ChunkedArray:  # None or 0, as ``not run.get(name)``
        return pc.fill_null(pc.equal(table[name], 0), True)

    disagg = pc.fill_null(table["disagg"], False)
    missing = pc.if_else(disagg, pc.or_(falsy("num_prefill_gpu"), falsy("num_decode_gpu")), falsy("tp"))
    implied = pc.match_substring_regex(table["metadata_sources"], _ENGINE_COUNT)
    return _any_of(pc.and_(pc.is_null(table["reported_tput_per_gpu"]), _any_of(missing, implied)))


@_screen(_no_gpu_count)
def _gpu_count(run: Run) -> Finding | None:
    """Per-GPU throughput needs a GPU count unless the source reported per-GPU values itself, and a count the
    engine only implies is never that denominator (docs/metrics.md section 2: a 1 prefill + 8 decode SGLang run whose
    server_info lists one server per role is 9 GPUs, not 2): such a run waits for a sidecar or runs.csv that
    states the counts, under ``missing_metadata:<key>`` naming what to state."""
    if run.get("reported_tput_per_gpu") is not None:
        return None
    needed = ("num_decode_gpu", "num_prefill_gpu") if run.get("disagg") else ("tp",)
    implied = [key for key in engine_implied_counts(run) if key in (needed if run.get("disagg") else GPU_COUNT_KEYS[:3])]
    if implied:
        said = ", ".join(f"{key}={run.get(key)}" for key in implied)
        return f"missing_metadata:{implied[0]}", (
            f"{said} only implied by the engine output (e.g. server_info lists one server per role, however many "
            f"run): a count never stated is not a per-GPU denominator; state {' and '.join(needed)} in the "
            "<file>.meta.json sidecar or a runs.csv row")
    missing = [key for key in needed if not run.get(key)]
    if missing:
        return f"missing_metadata:{missing[0]}", f"GPU count needs {', '.join(missing)}"
    return None


def unknown_hw_rule(known_hw: Iterable[str]) -> Callable[[Run], Finding | None]:
    """Rule: ``hw`` must be a key of the GPU reference table (costs and power come from it)."""
    known = frozenset(known_hw)

    def rule(run: Run) -> Finding | None:
        hw = run.get("hw")
        if hw is not None and hw not in known:
            return "unknown_hw", f"hw {hw!r} is not in the GPU reference ({', '.join(sorted(known))})"
        return None

    # a null hw is flagged too (the rule lets it pass; missing_metadata rejects it)
    known_keys = pa.array(sorted(known), pa.string())
    return _screen(lambda t: pc.invert(_any_of(pc.is_in(t["hw"], value_set=known_keys))))(rule)


@_screen(lambda t: pc.invert(_any_of(pc.is_in(t["benchmark_type"], value_set=pa.array(BENCHMARK_TYPES, pa.string())))))
def _benchmark_type(run: Run) -> Finding | None:
    """Sides and x-axes are chosen by ``benchmark_type``: a value no rule knows has neither (null is read as
    ``fixed_seq``, as everywhere)."""
    kind = run.get("benchmark_type")
    if kind is not None and kind not in BENCHMARK_TYPES:
        return "unknown_benchmark_type", f"benchmark_type {kind!r} is not one of {', '.join(BENCHMARK_TYPES)}"
    return None


def _float(table: pa.Table, name: str) -> pa.ChunkedArray:
    return pc.cast(table[name], pa.float64())


def _ratio_value(run: Run, field: str) -> float | None:
    """A derived ratio of ``plausibility.csv`` for one run: tokens / throughput / duration (None when an input is
    missing or not positive: other rules judge those)."""
    duration = run.get("duration_s")
    if field == "output_duration_ratio":
        tokens, tput = run.get("total_output_tokens"), run.get("output_tput_tok_s")
    else:
        tokens_in, tokens_out, tput = run.get("total_input_tokens"), run.get("total_output_tokens"), run.get("total_tput_tok_s")
        tokens = None if tokens_in is None or tokens_out is None else tokens_in + tokens_out
    if tokens is None or tput is None or duration is None or tput <= 0 or duration <= 0 or tokens <= 0:
        return None
    return tokens / tput / duration


def _ratio_column(table: pa.Table, field: str) -> pa.ChunkedArray:
    duration = _float(table, "duration_s")
    if field == "output_duration_ratio":
        tokens, tput = _float(table, "total_output_tokens"), _float(table, "output_tput_tok_s")
    else:
        tokens = pc.add(_float(table, "total_input_tokens"), _float(table, "total_output_tokens"))
        tput = _float(table, "total_tput_tok_s")
    return pc.divide(pc.divide(tokens, tput), duration)


def range_rule(bound: Range) -> Callable[[Run], Finding | None]:
    """Rule ``implausible:<reason_field>``: the run's ``bound.field`` (a column or a derived duration ratio) lies
    outside [``bound.min``, ``bound.max``] (NaN and infinities included); absent values pass."""
    derived = bound.field in ("output_duration_ratio", "total_duration_ratio")

    def rule(run: Run) -> Finding | None:
        value = _ratio_value(run, bound.field) if derived else run.get(bound.field)
        if value is None or bound.min <= value <= bound.max:
            return None
        return (f"implausible:{bound.reason_field}",
                f"{bound.field} = {value:.6g} {bound.unit} is outside [{bound.min:g}, {bound.max:g}] "
                "(data/reference/plausibility.csv)")

    def screen(table: pa.Table) -> pa.ChunkedArray:
        value = _ratio_column(table, bound.field) if derived else _float(table, bound.field)
        return _any_of(pc.invert(pc.and_(pc.greater_equal(value, bound.min), pc.less_equal(value, bound.max))))

    return _screen(screen)(rule)


def ceiling_rule(plausibility: Plausibility) -> Callable[[Run], Finding | None]:
    """Rule ``implausible:tput_per_gpu``: tok/s/GPU (system total ÷ GPUs of ``pipeline.ingest.gpus``, else the
    reported per-GPU value, as the metrics read it) above what the GPU's dense peak can compute for the model (``Plausibility.ceiling``)."""
    lowest = plausibility.lowest_ceiling

    def rule(run: Run) -> Finding | None:
        total, gpus = run.get("total_tput_tok_s"), run_gpus(run)
        per_gpu = total / gpus if total is not None and (gpus or 0) > 0 else run.get("reported_tput_per_gpu")
        ceiling = plausibility.ceiling(run.get("hw"), run.get("model"))
        if per_gpu is None or ceiling is None or not per_gpu > ceiling:
            return None
        return "implausible:tput_per_gpu", (
            f"{per_gpu:.6g} tok/s/GPU is above the {ceiling:.6g} a {run.get('hw')} can compute for model "
            f"{run.get('model')!r} (dense peak ÷ 2 FLOPs per activated parameter; data/reference/gpu_peak_flops.csv, "
            "model_active_params.csv)")

    def screen(table: pa.Table) -> pa.ChunkedArray:
        gpus = gpu_count_column(table)
        from_total = pc.if_else(pc.greater(gpus, 0), pc.divide(table["total_tput_tok_s"], gpus), None)
        per_gpu = pc.coalesce(from_total, table["reported_tput_per_gpu"])
        return _any_of(pc.greater(per_gpu, lowest))

    return _screen(screen)(rule)


def unknown_model_size_rule(plausibility: Plausibility) -> Callable[[Run], Finding | None]:
    """Rule ``unknown_model_size``: ``model`` must be a key of ``data/reference/model_active_params.csv``. The
    tok/s/GPU and tok/s/user ceilings divide by the model's activated parameters; a size guessed for an unlisted
    model would loosen them (a small guess) or judge a run against another model's bound (a large one), so the run
    waits for a row stating the size from the model's card. A null ``model`` passes (``missing_metadata`` names it).
    """
    known = sorted(plausibility.active_params_b)

    def rule(run: Run) -> Finding | None:
        model = run.get("model")
        if model is None or model in plausibility.active_params_b:
            return None
        return "unknown_model_size", (
            f"model {model!r} has no activated-parameter count: add a row (model, active_params_b, basis) to "
            "data/reference/model_active_params.csv from its model card; the tok/s/GPU and tok/s/user ceilings "
            "divide by it")

    # a null model is flagged too (the rule lets it pass; missing_metadata rejects it)
    return _screen(lambda t: pc.invert(_any_of(pc.is_in(t["model"], value_set=pa.array(known, pa.string())))))(rule)


def tokens_per_step(run: Run, plausibility: Plausibility) -> float:
    """The most tokens one decode step of ``run`` may emit: 1 without speculative decoding (``spec_decoding`` =
    ``none``), else the acceptance length the run states (``spec_accept_length``, tokens per step, bonus token
    included), else the most any step may emit (``Plausibility.max_tokens_per_step``, ``spec_accept_length``'s
    max in plausibility.csv; also for a null ``spec_decoding``)."""
    if run.get("spec_decoding") == "none":
        return 1.0
    stated = run.get("spec_accept_length")
    return plausibility.max_tokens_per_step if stated is None else stated


def interactivity_ceiling_rule(plausibility: Plausibility) -> Callable[[Run], Finding | None]:
    """Rule ``implausible:median_intvty``: median tok/s/user (1 / median TPOT in s, the dashboard's 1000 / TPOT in
    ms) above ``Plausibility.intvty_ceiling``: one decode step of a request reads the model's activated weights
    at least once, at the GPU's HBM bandwidth (``gpu_reference.csv``), spread at best over every GPU serving decode
    (``run_decode_gpus``), in the fewest bytes a weight takes, and emits at most ``tokens_per_step`` tokens.
    Runs without a median TPOT, a known GPU, a known model size or a decode GPU count are left to the rules that
    judge those."""

    def rule(run: Run) -> Finding | None:
        tpot = run.get("median_tpot_s")
        if tpot is None or not tpot > 0:
            return None
        gpus, tokens = run_decode_gpus(run), tokens_per_step(run, plausibility)
        ceiling = plausibility.intvty_ceiling(run.get("hw"), run.get("model"), gpus, tokens)
        if ceiling is None or not 1 / tpot > ceiling:
            return None
        return "implausible:median_intvty", (
            f"{1 / tpot:.6g} tok/s/user (median TPOT {tpot * 1e3:.4g} ms) is above the {ceiling:.6g} a "
            f"{run.get('hw')} can decode for model {run.get('model')!r}: "
            f"{plausibility.bandwidth_tb_s[run.get('hw')]:g} TB/s × {gpus:g} decode GPUs × {tokens:g} tokens/step "
            f"÷ ({plausibility.active_params_b[run.get('model')]:g}B activated parameters × "
            f"{plausibility.weight_bytes_per_param:g} bytes) (data/reference/gpu_reference.csv, "
            "model_active_params.csv, plausibility.csv)")

    hws = sorted(plausibility.bandwidth_tb_s)
    models = sorted(plausibility.active_params_b)

    def screen(table: pa.Table) -> pa.ChunkedArray:
        bandwidth = pc.take(pa.array([plausibility.bandwidth_tb_s[h] for h in hws], pa.float64()),
                            pc.index_in(table["hw"], value_set=pa.array(hws, pa.string())))
        active = pc.take(pa.array([plausibility.active_params_b[m] for m in models], pa.float64()),
                         pc.index_in(table["model"], value_set=pa.array(models, pa.string())))
        none = pc.fill_null(pc.equal(table["spec_decoding"], "none"), False)
        tokens = pc.if_else(none, 1.0, pc.fill_null(_float(table, "spec_accept_length"),
                                                    plausibility.max_tokens_per_step))
        gpus = decode_gpu_column(table)
        # Plausibility.intvty_ceiling's operations in its order; flag a hair below it so rounding never hides a row
        ceiling = pc.divide(pc.multiply(pc.multiply(pc.multiply(bandwidth, 1e12), gpus), tokens),
                            pc.multiply(pc.multiply(active, 1e9), plausibility.weight_bytes_per_param))
        tpot = _float(table, "median_tpot_s")
        intvty = pc.divide(1.0, pc.if_else(pc.greater(tpot, 0.0), tpot, None))
        return _any_of(pc.and_(pc.greater(gpus, 0.0), pc.greater(intvty, pc.multiply(ceiling, 1 - 1e-12))))

    return _screen(screen)(rule)


# The statistics the E2EL relation is read from, in the order tried: means add per request (mean E2EL = mean TTFT +
# mean of TPOT × (output tokens − 1)), medians do not (the median request of one statistic is not that of another),
# so a run's means are used when it gives all three, its medians otherwise.
E2EL_STATISTICS = ("mean", "median")


def _e2el_terms(run: Run) -> tuple[str, float, float, float] | None:
    """(statistic, E2EL, TTFT, TPOT in s) of the first of ``E2EL_STATISTICS`` the run gives all three of, or None."""
    for stat in E2EL_STATISTICS:
        terms = [run.get(f"{stat}_{metric}_s") for metric in ("e2el", "ttft", "tpot")]
        if None not in terms:
            return (stat, *terms)  # type: ignore[return-value]
    return None


def e2el_consistency_rule(plausibility: Plausibility) -> Callable[[Run], Finding | None]:
    """Rule ``inconsistent:e2el`` (fixed-sequence runs): a request's decoding time, E2EL − TTFT, must agree with
    TPOT × (OSL − 1), its TPOT over the nominal OSL, within ``Plausibility.e2el_decode_ratio`` (plausibility.csv
    ``e2el_decode_ratio``, ends inclusive; NaN outside): (E2EL − TTFT) / (TPOT × (OSL − 1)) of the run's means when
    it gives all three, else its medians (``E2EL_STATISTICS``). Means can give at most 1, since no request outruns
    its OSL; early EOS gives less, an E2EL or TPOT off by a factor gives more. Runs without E2EL, TTFT and TPOT of
    one statistic, without OSL, with an OSL of 1 or a TPOT ≤ 0 are not checked (agentic-trace runs have no fixed
    OSL: ``_only`` keeps the rule to fixed-sequence runs)."""
    bound = plausibility.e2el_decode_ratio

    def rule(run: Run) -> Finding | None:
        terms, osl = _e2el_terms(run), run.get("osl")
        if terms is None or osl is None:
            return None
        stat, e2el, ttft, tpot = terms
        decoding = tpot * (osl - 1)
        if not decoding > 0:
            return None
        ratio = (e2el - ttft) / decoding
        if bound.min <= ratio <= bound.max:
            return None
        return f"inconsistent:{bound.reason_field}", (
            f"({stat} E2EL {e2el:.6g} s − {stat} TTFT {ttft:.6g} s) / ({stat} TPOT {tpot * 1e3:.4g} ms × "
            f"(OSL {osl} − 1)) = {ratio:.6g}, outside [{bound.min:g}, {bound.max:g}]: the decoding time and the TPOT "
            f"disagree ({bound.field}, data/reference/plausibility.csv)")

    def screen(table: pa.Table) -> pa.ChunkedArray:
        def terms(stat: str) -> list[pa.ChunkedArray]:
            return [_float(table, f"{stat}_{metric}_s") for metric in ("e2el", "ttft", "tpot")]

        mean, median = terms("mean"), terms("median")
        have_mean = reduce(pc.and_, (pc.is_valid(column) for column in mean))
        e2el, ttft, tpot = (pc.if_else(have_mean, m, d) for m, d in zip(mean, median))
        decoding = pc.multiply(tpot, pc.subtract(_float(table, "osl"), 1.0))
        ratio = pc.divide(pc.subtract(e2el, ttft), pc.if_else(pc.greater(decoding, 0.0), decoding, None))
        return _any_of(pc.invert(pc.and_(pc.greater_equal(ratio, bound.min), pc.less_equal(ratio, bound.max))))

    return _only_for(FIXED_SEQ, _screen(screen)(rule))


# Percentiles of one latency metric, in the order their values must keep (the mean is not among them: a heavy tail
# can put it above p99).
PERCENTILE_ORDER = ("median", "p90", "p95", "p99")
# Rounding only: percentiles a file writes from the same numbers are ordered exactly.
_ORDER_RTOL = 1e-9
# The range whose upper end bounds every latency statistic: no request lasts longer than the longest E2EL allowed.
_LONGEST_LATENCY_FIELD = "median_e2el_s"


def _engine_key(column: str) -> str:
    """A latency column's name as engines write it, for reason codes: ``p99_tpot_s`` → ``p99_tpot_ms``."""
    return column[:-2] + "_ms"


def latency_statistics_rule(plausibility: Plausibility) -> Callable[[Run], Finding | None]:
    """Rule: every latency statistic a run gives (``LATENCY_COLUMNS``: mean, median, std and percentiles of TTFT,
    TPOT, ITL, E2EL, in seconds) is a time: finite (``non_finite:<key>``), not negative and not beyond the longest
    latency ``plausibility.csv`` allows (the upper end of ``median_e2el_s``, a day; ``implausible:<key>``), and the
    percentiles of one metric are ordered, median ≤ p90 ≤ p95 ≤ p99 (``inconsistent:<metric>_percentiles``). A
    p99 of 1e308 s or a negative std is a broken file whatever its median says; the medians' own ranges are the
    range rules'. Keys are the engines' (``p99_tpot_ms``) whatever unit the file used. A reference without a
    ``median_e2el_s`` row bounds the statistics by finiteness alone.
    """
    longest = next((r.max for r in plausibility.ranges if r.field == _LONGEST_LATENCY_FIELD), math.inf)

    def rule(run: Run) -> Finding | None:
        for column in LATENCY_COLUMNS:
            value = run.get(column)
            if value is None:
                continue
            if not math.isfinite(value):
                return f"non_finite:{_engine_key(column)}", f"{_engine_key(column)} = {value}"
            if value < 0:
                return f"implausible:{_engine_key(column)}", f"{column} = {value:.6g} s is negative"
            if value > longest:
                return f"implausible:{_engine_key(column)}", (
                    f"{column} = {value:.6g} s is longer than any request may take ({longest:g} s, "
                    f"{_LONGEST_LATENCY_FIELD} in data/reference/plausibility.csv)")
        for metric in LATENCY_METRICS:
            given = [(stat, run.get(f"{stat}_{metric}_s")) for stat in PERCENTILE_ORDER
                     if run.get(f"{stat}_{metric}_s") is not None]
            for (low_stat, low), (high_stat, high) in zip(given, given[1:]):
                if low > high * (1 + _ORDER_RTOL):
                    return f"inconsistent:{metric}_percentiles", (
                        f"{low_stat} {metric.upper()} {low:.6g} s > {high_stat} {metric.upper()} {high:.6g} s")
        return None

    def screen(table: pa.Table) -> pa.ChunkedArray:
        flags = []
        for column in LATENCY_COLUMNS:
            value = _float(table, column)
            flags.append(pc.invert(pc.and_(pc.is_finite(value), pc.and_(pc.greater_equal(value, 0.0),
                                                                       pc.less_equal(value, longest)))))
        for metric in LATENCY_METRICS:
            for at, low_stat in enumerate(PERCENTILE_ORDER):
                for high_stat in PERCENTILE_ORDER[at + 1:]:  # every later one: a stat between may be absent
                    low, high = _float(table, f"{low_stat}_{metric}_s"), _float(table, f"{high_stat}_{metric}_s")
                    flags.append(pc.greater(low, pc.multiply(high, 1 + _ORDER_RTOL)))
        return _any_of(*flags)

    return _screen(screen)(rule)


def rules(known_hw: Iterable[str], plausibility: Plausibility | None = None) -> list[Callable[[Run], Finding | None]]:
    """The rule list, in reporting order: failures and numbers first (the strongest reason), metadata after, then
    plausibility (``unknown_model_size``, the tok/s/GPU and tok/s/user ceilings, ``implausible:<field>`` of
    ``data/reference/plausibility.csv``), then the secondary latency statistics (``latency_statistics_rule``), then
    the E2EL relation (``e2el_consistency_rule``: values are judged one by one before a relation between them).

    Together the rules reject every run the blocking expectations of ``pipeline.validate.expectations`` (and the
    metrics stage's finite-and-positive check) would fail on, so a failing blocking check means a bug, not a bad
    file.

    Args:
        known_hw: the GPU reference's ``hw`` keys.
        plausibility: the plausibility reference; default ``load_plausibility()``.
    Raises:
        PlausibilityError: the default reference files cannot be used.
    """
    plausibility = plausibility if plausibility is not None else _default_plausibility()
    return [
        _failed_requests,
        _positive("total_tput_tok_s", "total_token_throughput", "reported_tput_per_gpu"),
        # a fixed-sequence run is placed by its median TPOT, or, when its harness measures no TPOT (LLMPerf), by its
        # E2E-normalized interactivity (docs/metrics.md section 4a)
        _only_for(FIXED_SEQ, _positive("median_tpot_s", "median_tpot_ms", "e2e_norm_intvty_p90")),
        # the agentic x-axis (docs/metrics.md); their interactivity is not read from TPOT
        # (the dashboard's value, else the row's stand-in mean OSL / p90 E2EL; the metrics stage prefers
        # 1 / p90(E2EL / OSL) from per-request records when the run has them, docs/metrics.md section 4a)
        _only_for(AGENTIC_TRACES, _positive("e2e_norm_intvty_p90", "p90_e2e_norm_intvty", "mean_osl_over_p90_e2el")),
        unit_mismatch_rule(plausibility.range_of("median_tpot_s")),
        _consistency,
        _metadata_conflict,
        _spec_evident,
        unknown_hw_rule(known_hw),
        _missing_metadata,
        _gpu_count,
        _benchmark_type,
        unknown_model_size_rule(plausibility),
        ceiling_rule(plausibility),
        interactivity_ceiling_rule(plausibility),
        *(range_rule(bound) for bound in plausibility.ranges),
        latency_statistics_rule(plausibility),
        e2el_consistency_rule(plausibility),
    ]


_LOADED: dict[Path, Plausibility] = {}


def _default_plausibility() -> Plausibility:
    """``load_plausibility()`` read once per process and reference folder (``PIPELINE_REFERENCE_DIR``)."""
    folder = reference_dir()
    if folder not in _LOADED:
        _LOADED[folder] = load_plausibility(folder)
    return _LOADED[folder]


def check_run(run: Run, rule_list: list[Callable[[Run], Finding | None]]) -> Finding | None:
    """The first failing rule's reason code and a detail naming every failing rule, or None when the run passes."""
    findings = [f for f in (rule(run) for rule in rule_list) if f is not None]
    if not findings:
        return None
    detail = "; ".join(f"{code}: {text}" for code, text in findings)
    return findings[0][0], detail


# What makes two runs the same measurement (docs/inputs.md ``duplicate_run``): the same line (``lines.line_id``)
# and ``conc``, and every measured number both give equal within ``SAME_MEASUREMENT_RTOL`` (a raw vLLM result
# and the InferenceX agg row made from it: ms vs s, total vs per-GPU, but the same numbers). Runs that share the
# line and ``conc`` but differ in a number are repeats, not duplicates (``lines.run_lineage``).
MEASUREMENT_KEY = (*LINE_COLUMNS, "conc")
MEASUREMENT_COLUMNS = (*LATENCY_COLUMNS, "total_tput_tok_s", "output_tput_tok_s", "input_tput_tok_s",
                       "reported_tput_per_gpu", "reported_output_tput_per_gpu", "reported_input_tput_per_gpu")
SAME_MEASUREMENT_RTOL = 1e-9
# A match needs at least this many shared numbers, median TPOT among them, so two sparse rows never match by luck.
_MIN_SHARED = 3
# Every column the duplicate search reads, so a caller holding a million runs can read these alone.
DUPLICATE_SEARCH_COLUMNS = tuple(dict.fromkeys((
    "source_file", "source_format", "source_row", "run_id", "run_date_partition", "content_sha256", "run_date",
    *MEASUREMENT_KEY, *MEASUREMENT_COLUMNS, *LENGTH_INPUT_COLUMNS)))


def same_measurement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when ``a`` and ``b`` (same line and ``conc``) carry the same numbers: every ``MEASUREMENT_COLUMNS``
    value both give is equal within ``SAME_MEASUREMENT_RTOL`` relative, median TPOT is among them and they share
    at least three values."""
    shared = 0
    for name in MEASUREMENT_COLUMNS:
        x, y = a.get(name), b.get(name)
        if x is None or y is None:
            continue
        if not math.isclose(x, y, rel_tol=SAME_MEASUREMENT_RTOL, abs_tol=0.0):
            return False
        shared += 1
    return shared >= _MIN_SHARED and a.get("median_tpot_s") is not None and b.get("median_tpot_s") is not None


def _keep_order(run: Mapping[str, Any]) -> tuple:
    """Which copy of a duplicate is kept: the copy that stays on the frontier (``length_off_nominal`` false, when
    the caller judged it: ``pipeline.validate.lengths``), then one with request counts (``completed``: a raw
    result file rather than the InferenceX agg row made from it, which keeps only per-GPU rates), then a dated copy
    before an undated one (the date places it on the time axis), then the (``source_file``, ``source_row``) that
    sorts first."""
    return (bool(run.get("length_off_nominal")), run.get("completed") is None, run.get("run_date") is None,
            run["source_file"], run["source_row"])


def find_duplicates(runs: list[Mapping[str, Any]], accepted_before: int = 0) -> dict[int, tuple[str, str, str]]:
    """Duplicate runs among ``runs`` (rows that passed every rule), by index → (``duplicate_run``, detail,
    ``duplicate_of``: the kept run's ``run_id``).

    A run is a duplicate when a run kept before it has the same content (``content_sha256``: the same run
    object, whatever the file name or key order) or is the same measurement (same ``MEASUREMENT_KEY``,
    ``same_measurement``). Keep rule: runs are ordered by ``_keep_order`` and the first of each group is kept, so
    the outcome depends only on the folder's content. Same line and ``conc`` with different numbers is a repeat
    and both are kept. The first ``accepted_before`` runs were accepted earlier (other run-date partitions) and
    come first: a new run never displaces one of them.
    """
    order = sorted(range(len(runs)), key=lambda i: (i >= accepted_before, _keep_order(runs[i])))
    seen_content: dict[str, int] = {}
    kept_by_key: dict[str, list[int]] = {}
    found: dict[int, tuple[str, str, str]] = {}
    for i in order:
        run = runs[i]
        where = lambda j: f"{runs[j]['source_file']} row {runs[j]['source_row']}"  # noqa: E731
        content = run.get("content_sha256")
        key = f"{line_id(run)}|conc={run.get('conc')}"
        if content and content in seen_content:
            j = seen_content[content]
            found[i] = ("duplicate_run", f"same content as {where(j)} (kept)", runs[j]["run_id"])
            continue
        twin = next((j for j in kept_by_key.get(key, ()) if same_measurement(run, runs[j])), None)
        if twin is not None:
            found[i] = ("duplicate_run", f"same measurement as {where(twin)} (kept): line {key}, every number "
                                         f"within {SAME_MEASUREMENT_RTOL:g} relative", runs[twin]["run_id"])
            continue
        if content:
            seen_content[content] = i
        kept_by_key.setdefault(key, []).append(i)
    return found


def validate_table(runs: pa.Table, known_hw: Iterable[str],
                   accepted_elsewhere: pa.Table | None = None) -> tuple[pa.Table, pa.Table]:
    """``accepted_runs``' verdict applied: (the accepted rows of ``runs``, ``RUN_SCHEMA``, in input order; the
    quarantine rows). Arguments, rules and errors as ``accepted_runs``."""
    runs = runs.cast(RUN_SCHEMA)
    accepted, rejects = accepted_runs(runs, known_hw, accepted_elsewhere)
    return (runs.filter(pa.array(accepted)) if not accepted.all() else runs), rejects


def accepted_runs(runs: pa.Table, known_hw: Iterable[str],
                  accepted_elsewhere: pa.Table | None = None) -> tuple[np.ndarray, pa.Table]:
    """Judge parsed runs: which are accepted, and the quarantine rows of the others (stage ``validate``): the
    rules of ``rules()`` first, then duplicates among the runs that passed (``find_duplicates``; so a bad copy
    never displaces a good one).

    A mask rather than the accepted rows, so a caller that stores them (the ``validated_runs`` asset) lets DuckDB
    read them straight from ``runs`` instead of holding a filtered copy of every accepted row.

    The rules run in Python only on the rows some rule's ``screen`` flags (every rule has one); the
    duplicate search (``find_duplicates``) only on the passing runs that share a content hash, or a line and
    ``conc`` and a median TPOT within 2e-9 relative, with another passing run (``duplicates_in_table``), since any
    other run is never a duplicate nor the kept copy of one.

    Args:
        runs: ``RUN_SCHEMA`` rows (cast to it), in any order (the outputs keep it; which copy of a duplicate is
            kept does not depend on it).
        known_hw: the GPU reference's ``hw`` keys.
        accepted_elsewhere: runs accepted earlier in other run-date partitions (``RUN_SCHEMA``): a run that is
            the same measurement as one of them is the duplicate (a raw result dated one day and its undated agg
            row sit in two partitions). A full refresh validates every date at once and applies the keep rule.
    Returns:
        (accepted: numpy bool array, one per row of ``runs``; quarantine rows, ``QUARANTINE_SCHEMA``, stage
        ``validate``, details starting with the file name: rule rejections in input order, then duplicates in
        input order).
    Raises:
        KeyError: ``runs`` lacks a ``RUN_SCHEMA`` column a screen reads.
    """
    runs = runs.cast(RUN_SCHEMA)
    failed, rejected = rule_verdicts(runs, known_hw)
    # the duplicate search's columns of the passing runs, not every column
    passing_rows = np.flatnonzero(~failed)
    searched = runs.select(list(DUPLICATE_SEARCH_COLUMNS))
    passing = searched.take(pa.array(passing_rows, pa.int64())) if failed.any() else searched
    duplicates, duplicate_rejects = duplicate_verdicts(passing, accepted_elsewhere)
    del passing
    accepted = ~failed
    accepted[passing_rows[np.array(duplicates, dtype=np.int64)]] = False
    return accepted, pa.Table.from_pylist(rejected + duplicate_rejects, schema=QUARANTINE_SCHEMA)


def rule_verdicts(runs: pa.Table, known_hw: Iterable[str]) -> tuple[np.ndarray, list[dict]]:
    """The row rules' half of ``accepted_runs``: the rules of ``rules()`` applied to the rows some rule's
    ``screen`` flags.

    Args:
        runs: ``RUN_SCHEMA`` rows (cast to it), in any order.
        known_hw: the GPU reference's ``hw`` keys.
    Returns:
        (failed: numpy bool array, one per row of ``runs``; the failed rows' quarantine rows (``QUARANTINE_SCHEMA``
        dicts, stage ``validate``) in input order).
    Raises:
        KeyError: ``runs`` lacks a ``RUN_SCHEMA`` column a screen reads.
    """
    runs = runs.cast(RUN_SCHEMA)
    rule_list = rules(known_hw)
    flagged_at = pc.indices_nonzero(reduce(pc.or_, (rule.screen(runs) for rule in rule_list)))
    rejected, failed = [], np.zeros(runs.num_rows, dtype=bool)
    for at, run in zip(flagged_at.to_pylist(), runs.take(flagged_at).to_pylist()):
        finding = check_run(run, rule_list)
        if finding is not None:
            rejected.append(_quarantine_row(run, *finding))
            failed[at] = True
    return failed, rejected


def duplicate_verdicts(passing: pa.Table, accepted_elsewhere: pa.Table | None = None) -> tuple[list[int], list[dict]]:
    """The duplicate half of ``accepted_runs``: which runs that passed the rules are duplicates
    (``find_duplicates``), among themselves and of runs accepted in other run-date partitions.

    Args:
        passing: ``DUPLICATE_SEARCH_COLUMNS`` of the runs that passed every rule, or of those among them that
            ``pairing_rows`` flags (any other run is never a duplicate nor the kept copy of one, so the verdicts
            are the same).
        accepted_elsewhere: as ``accepted_runs``.
    Returns:
        (the duplicates' positions in ``passing``, ascending; their quarantine rows (``QUARANTINE_SCHEMA`` dicts,
        reason ``duplicate_run``, ``duplicate_of`` the kept run's ``run_id``) in that order).
    """
    candidates, duplicates = duplicates_in_table(passing)
    if accepted_elsewhere is not None and accepted_elsewhere.num_rows:
        ours = [i for i in range(passing.num_rows) if i not in duplicates]
        prior = accepted_elsewhere.cast(RUN_SCHEMA).select(list(DUPLICATE_SEARCH_COLUMNS))
        both = pa.concat_tables([prior, passing.select(list(DUPLICATE_SEARCH_COLUMNS))
                                 .cast(prior.schema).take(pa.array(ours, pa.int64()))])
        rows, found = duplicates_in_table(both, accepted_before=prior.num_rows)
        for at, finding in found.items():
            if at >= prior.num_rows:
                candidates[ours[at - prior.num_rows]] = rows[at]
                duplicates[ours[at - prior.num_rows]] = finding
    at = sorted(duplicates)
    return at, [_quarantine_row(candidates[i], *duplicates[i]) for i in at]


def pairing_rows(passing: pa.Table, accepted_elsewhere: pa.Table | None = None) -> np.ndarray:
    """Positions (ascending) of the rows of ``passing`` that may be a duplicate or the kept copy of one, among
    ``passing`` or of a run of ``accepted_elsewhere`` (``_could_pair`` over both): the rows ``duplicate_verdicts``
    needs, so a caller judging a million runs reads the search columns of these alone.

    Args:
        passing: runs that passed every rule, at least their ``PAIRING_COLUMNS`` (``RUN_SCHEMA`` types).
        accepted_elsewhere: as ``accepted_runs`` (``RUN_SCHEMA``).
    """
    ours = passing.select(list(PAIRING_COLUMNS)).cast(RUN_SCHEMA_PAIRING)
    prior = (accepted_elsewhere.cast(RUN_SCHEMA).select(list(PAIRING_COLUMNS))
             if accepted_elsewhere is not None else RUN_SCHEMA_PAIRING.empty_table())
    at = _could_pair(pa.concat_tables([prior, ours]))
    return at[at >= prior.num_rows] - prior.num_rows


def duplicates_in_table(runs: pa.Table, accepted_before: int = 0) -> tuple[dict[int, dict], dict[int, tuple[str, str, str]]]:
    """``find_duplicates`` over an Arrow table (its ``DUPLICATE_SEARCH_COLUMNS``; others are ignored), searching
    only the rows that could pair (``_could_pair``: a shared content hash, or the line's verbatim columns and
    ``conc`` with a median TPOT within 2e-9 relative of another row's) and, of those, the ones that share a
    content hash or a line and ``conc`` with another (any other row is never a duplicate nor the kept copy of one).

    Returns:
        (candidate rows as dicts by row position, duplicates by row position → (``duplicate_run``, detail,
        ``duplicate_of`` run_id)).
    """
    runs = runs.select(list(DUPLICATE_SEARCH_COLUMNS))  # so the search provably reads nothing else
    # only rows that could pair with another are keyed in Python (``_could_pair``); among them, bucketed by
    # line_id (not the raw columns), which reads an absent EP as 1 etc. as find_duplicates does
    maybe = _could_pair(runs)
    subset = runs.take(pa.array(maybe, pa.int64()))
    keys = [f"{line_id(run)}|conc={run['conc']}" for run in subset.select(list(MEASUREMENT_KEY)).to_pylist()]
    contents = subset["content_sha256"].to_pylist()
    key_count, content_count = Counter(keys), Counter(c for c in contents if c)
    shared = [int(maybe[i]) for i, (key, content) in enumerate(zip(keys, contents))
              if key_count[key] > 1 or content_count[content] > 1]
    chosen = runs.take(pa.array(shared, pa.int64()))
    candidates = chosen.select(list(dict.fromkeys(
        ["source_file", "source_format", "source_row", "run_id", "run_date_partition", "content_sha256", "run_date",
         *MEASUREMENT_KEY, *MEASUREMENT_COLUMNS, "completed"]))).to_pylist()
    for candidate, off in zip(candidates, lengths_off_nominal(chosen)):
        candidate["length_off_nominal"] = off
    found = find_duplicates(candidates, accepted_before=sum(i < accepted_before for i in shared))
    return ({shared[i]: row for i, row in enumerate(candidates)},
            {shared[local]: finding for local, finding in found.items()})


# Columns every run of one line_id and conc shares verbatim (line_id writes them as they are; among runs that
# passed the rules none is null), and the tolerance two median TPOTs of one measurement are within at most.
_VERBATIM_KEY = ("model", "hw", "framework", "precision", "spec_decoding", "conc")
_NEIGHBOUR_RTOL = 2 * SAME_MEASUREMENT_RTOL
# every column _could_pair reads, and their RUN_SCHEMA types
PAIRING_COLUMNS = ("content_sha256", *_VERBATIM_KEY, "median_tpot_s")
RUN_SCHEMA_PAIRING = pa.schema([RUN_SCHEMA.field(name) for name in PAIRING_COLUMNS])


def _could_pair(runs: pa.Table) -> np.ndarray:
    """Row positions (ascending) that may be a duplicate or the kept copy of one: a content hash another row
    has, or a median TPOT within ``_NEIGHBOUR_RTOL`` of the nearest TPOT among the rows with the same
    ``_VERBATIM_KEY`` values. A superset, column work only: two runs of one measurement share those values and
    their TPOTs are within 1e-9 relative, so after sorting every gap between them is within 2e-9 of the larger
    neighbour; every other row is never a duplicate nor the kept copy of one.
    """
    n = runs.num_rows
    flagged = np.zeros(n, dtype=bool)
    content = runs["content_sha256"]
    counts = pc.value_counts(content.drop_null())
    repeated = counts.filter(pc.greater(counts.field("counts"), 1)).field("values")
    flagged |= pc.fill_null(pc.is_in(content, value_set=repeated), False).to_numpy(zero_copy_only=False)
    if n > 1:
        keyed = runs.select(list(_VERBATIM_KEY)).append_column("tpot", runs["median_tpot_s"]).append_column(
            "at", pa.array(np.arange(n)))
        keyed = keyed.sort_by([(name, "ascending") for name in (*_VERBATIM_KEY, "tpot")])
        same = np.ones(n - 1, dtype=bool)
        for name in _VERBATIM_KEY:
            column = keyed[name]
            same &= pc.fill_null(pc.equal(column.slice(1), column.slice(0, n - 1)), False).to_numpy(
                zero_copy_only=False)
        tpot = keyed["tpot"].to_numpy(zero_copy_only=False).astype(float)  # nulls are NaN: never close
        with np.errstate(invalid="ignore"):
            close = np.abs(tpot[1:] - tpot[:-1]) <= _NEIGHBOUR_RTOL * np.maximum(np.abs(tpot[1:]), np.abs(tpot[:-1]))
        pair = same & close
        at = keyed["at"].to_numpy()
        flagged[at[1:][pair]] = True
        flagged[at[:-1][pair]] = True
    return np.flatnonzero(flagged)


def _quarantine_row(run: Mapping[str, Any], code: str, detail: str, duplicate_of: str | None = None) -> dict:
    return {"source_file": run["source_file"], "source_format": run["source_format"], "source_row": run["source_row"],
            "reason_code": code, "detail": f"{run['source_file']} row {run['source_row']}: {detail}",
            "stage": "validate", "run_date_partition": run.get("run_date_partition"), "duplicate_of": duplicate_of}


def quarantine_table(ingest_rejects: pa.Table, rule_rejects: pa.Table) -> pa.Table:
    """Everything that did not become a run, as the ``quarantine`` mart holds it: the rejects of ingest (files and
    rows) and of the row rules together, ``QUARANTINE_SCHEMA``, sorted by ``source_file`` then ``source_row``."""
    table = pa.concat_tables([ingest_rejects.cast(QUARANTINE_SCHEMA), rule_rejects.cast(QUARANTINE_SCHEMA)])
    return table.sort_by([("source_file", "ascending"), ("source_row", "ascending")])
