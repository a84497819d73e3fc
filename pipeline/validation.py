"""Row-level rules that move a parsed run to quarantine instead of failing the materialization.

Each rule looks at one run (a dict of ``RUN_SCHEMA`` values) and returns ``(reason_code, detail)`` or None. Rules
run in ``RULES`` order and every failing rule is reported; the first one is the run's ``reason_code``, the
``detail`` lists them all. Reason codes are stable snake_case (DESIGN.md §5); field names in codes use the
engine's canonical key (``total_token_throughput``, ``median_tpot_ms``) whatever the source format called it.
To add a rule, append a function to ``RULES``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping

Run = Mapping[str, Any]
Finding = tuple[str, str]

REQUIRED_METADATA = ("model", "hw", "framework", "precision", "spec_decoding", "isl", "osl", "conc")


def _failed_requests(run: Run) -> Finding | None:
    """A run whose requests failed still writes a file; it must never reach a frontier (DESIGN.md §6)."""
    completed, failed, prompts = run.get("completed"), run.get("failed"), run.get("num_prompts")
    if completed is not None and completed <= 0:
        return "no_completed_requests", f"completed={completed} (failed={failed}, num_prompts={prompts})"
    if failed:
        total = (completed or 0) + failed
        return "failed_requests", f"{failed} of {total} requests failed ({failed / total:.1%})"
    if completed is not None and prompts and completed < prompts:
        return "failed_requests", f"completed {completed} of num_prompts {prompts} ({1 - completed / prompts:.1%} lost)"
    return None


def _positive(field: str, code_name: str, *alternatives: str) -> Callable[[Run], Finding | None]:
    def rule(run: Run) -> Finding | None:
        value = next((run.get(f) for f in (field, *alternatives) if run.get(f) is not None), None)
        if value is None:
            return f"missing_field:{code_name}", f"{code_name} is absent"
        if not math.isfinite(value):
            return f"non_finite:{code_name}", f"{code_name} = {value}"
        if value <= 0:
            return f"non_positive:{code_name}", f"{code_name} = {value}"
        return None

    rule.__doc__ = f"{code_name} must be present, finite and > 0 (metrics and interactivity divide by it)."
    return rule


def _unit_mismatch(run: Run) -> Finding | None:
    """Latencies written in the wrong unit (DESIGN.md §5 ``unit_mismatch``), quarantined rather than guessed.

    Evidence: a median TPOT no LLM server reaches (< 0.5 ms/token, i.e. > 2000 tok/s/user, for a ``*_ms`` key;
    > 5 s/token for a seconds key), confirmed by Little's law: in a closed-loop benchmark
    completed × mean E2EL ≈ conc × duration, so the E2EL column's unit is the one that makes that ratio ≈ 1
    (for per-GPU rows without totals: output tok/s per user ≈ OSL / E2EL). Without the evidence to confirm, an
    impossible TPOT is ``implausible_value:median_tpot_ms``.
    """
    tpot = run.get("median_tpot_s")
    unit = run.get("latency_unit_in_file")
    if tpot is None or not math.isfinite(tpot) or tpot <= 0 or unit not in ("ms", "s"):
        return None
    suspicious = (unit == "ms" and tpot < 0.5e-3) or (unit == "s" and tpot > 5.0)
    if not suspicious:
        return None
    wrong_scale = 1e3 if unit == "ms" else 1e-3  # what the value becomes if the other unit was meant
    e2el, completed = run.get("mean_e2el_s") or run.get("median_e2el_s"), run.get("completed")
    duration, conc = run.get("duration_s"), run.get("conc")
    shown = f"median TPOT {tpot * 1e3:.4g} ms as read from {unit!r} keys"
    other = "s" if unit == "ms" else "ms"
    evidence = None
    if e2el and completed and duration and conc:
        evidence = ("completed×E2EL/(conc×duration)", completed * e2el / (conc * duration))
    elif e2el and conc and run.get("osl") and run.get("reported_output_tput_per_gpu") and run.get("tp") \
            and not run.get("disagg"):
        # per-user output rate from throughput vs from latency: (out/GPU × GPUs / conc) / (OSL / E2EL) ≈ 1
        gpus = run["tp"] * (run.get("pp") or 1) * (run.get("pcp") or 1)
        evidence = ("(output tok/s per user)/(OSL/E2EL)",
                    run["reported_output_tput_per_gpu"] * gpus / conc / (run["osl"] / e2el))
    if evidence and evidence[1] > 0:
        name, as_read = evidence
        as_other = as_read * wrong_scale
        if abs(math.log10(as_other)) < abs(math.log10(as_read)):
            return "unit_mismatch", (
                f"{shown}; {name} = {as_read:.3g} as read, {as_other:.3g} if the file meant {other}")
    return "implausible_value:median_tpot_ms", f"{shown} is outside what any LLM server does"


def _consistency(run: Run) -> Finding | None:
    """Relations every real run satisfies: output ≤ total throughput, median TTFT ≤ median E2EL."""
    total, output = run.get("total_tput_tok_s"), run.get("output_tput_tok_s")
    if total is not None and output is not None and output > total * (1 + 1e-9):
        return "inconsistent:output_throughput", f"output_throughput {output} > total_token_throughput {total}"
    ttft, e2el = run.get("median_ttft_s"), run.get("median_e2el_s")
    if ttft is not None and e2el is not None and e2el > 0 and ttft > e2el * (1 + 1e-9):
        return "inconsistent:ttft_ms", f"median TTFT {ttft} s > median E2EL {e2el} s"
    return None


def _metadata_conflict(run: Run) -> Finding | None:
    """The file and its sidecar/runs.csv disagree: we cannot tell which is right, so neither is guessed."""
    conflicts = run.get("metadata_conflicts")
    if conflicts:
        key = conflicts.split(":", 1)[0]
        return f"metadata_conflict:{key}", conflicts
    return None


def _missing_metadata(run: Run) -> Finding | None:
    """Sides and per-GPU metrics need these keys; no file, sidecar or runs.csv gave them."""
    missing = [key for key in REQUIRED_METADATA if run.get(key) is None]
    if missing:
        return f"missing_metadata:{missing[0]}", (
            f"no value for {', '.join(missing)} in the file, a <file>.meta.json sidecar or a runs.csv row"
        )
    return None


def _gpu_count(run: Run) -> Finding | None:
    """Per-GPU throughput needs a GPU count unless the source reported per-GPU values itself."""
    if run.get("reported_tput_per_gpu") is not None:
        return None
    if run.get("disagg"):
        missing = [k for k in ("num_prefill_gpu", "num_decode_gpu") if not run.get(k)]
    else:
        missing = [] if run.get("tp") else ["tp"]
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

    rule.__doc__ = unknown_hw_rule.__doc__
    return rule


def rules(known_hw: Iterable[str]) -> list[Callable[[Run], Finding | None]]:
    """The rule list, in reporting order: failures and numbers first (the strongest reason), metadata after."""
    return [
        _failed_requests,
        _positive("total_tput_tok_s", "total_token_throughput", "reported_tput_per_gpu"),
        _positive("median_tpot_s", "median_tpot_ms"),
        _unit_mismatch,
        _consistency,
        _metadata_conflict,
        unknown_hw_rule(known_hw),
        _missing_metadata,
        _gpu_count,
    ]


def check_run(run: Run, rule_list: list[Callable[[Run], Finding | None]]) -> Finding | None:
    """The first failing rule's reason code and a detail naming every failing rule, or None when the run passes."""
    findings = [f for f in (rule(run) for rule in rule_list) if f is not None]
    if not findings:
        return None
    detail = "; ".join(f"{code}: {text}" for code, text in findings)
    return findings[0][0], detail


# The natural key of a run (issue "duplicate runs"): two accepted runs with equal keys measure the same thing.
NATURAL_KEY = ("model", "hw", "framework", "precision", "spec_decoding", "tp", "pp", "pcp", "ep", "dp_attention",
               "disagg", "num_prefill_gpu", "num_decode_gpu", "isl", "osl", "conc", "run_date")


def find_duplicates(runs: list[Mapping[str, Any]]) -> dict[int, Finding]:
    """Duplicate runs among ``runs`` (rows that passed every rule), by index → (``duplicate_run``, detail).

    A run is a duplicate when an earlier run has the same content (``content_sha256``: the same run object,
    whatever the file name or key order) or the same ``NATURAL_KEY``. Keep rule: runs are ordered by
    (``source_file``, ``source_row``) and the first of each group is kept, so the outcome depends only on the
    folder's content and re-ingesting the same folder changes nothing.
    """
    order = sorted(range(len(runs)), key=lambda i: (runs[i]["source_file"], runs[i]["source_row"]))
    seen_content: dict[str, int] = {}
    seen_key: dict[tuple, int] = {}
    found: dict[int, Finding] = {}
    for i in order:
        run = runs[i]
        where = lambda j: f"{runs[j]['source_file']} row {runs[j]['source_row']}"  # noqa: E731
        content = run.get("content_sha256")
        key = tuple(run.get(k) for k in NATURAL_KEY)
        if content and content in seen_content:
            found[i] = ("duplicate_run", f"same content as {where(seen_content[content])} (kept)")
        elif key in seen_key:
            found[i] = ("duplicate_run", f"same natural key ({', '.join(f'{k}={run.get(k)}' for k in NATURAL_KEY if run.get(k) is not None)}) "
                                         f"as {where(seen_key[key])} (kept)")
        else:
            if content:
                seen_content[content] = i
            seen_key[key] = i
    return found


def validate_runs(runs: list[Mapping[str, Any]], known_hw: Iterable[str]) -> tuple[list[Mapping[str, Any]], list[dict]]:
    """Split parsed runs into accepted runs and quarantine rows (stage ``validate``).

    Row rules first (``rules``), then duplicates among the runs that passed (so a bad copy never displaces a
    good one). Quarantine rows follow ``pipeline.schema.QUARANTINE_SCHEMA``; details start with the file name.
    """
    rule_list = rules(known_hw)
    passing, rejected = [], []
    for run in runs:
        finding = check_run(run, rule_list)
        if finding is None:
            passing.append(run)
        else:
            rejected.append(_quarantine_row(run, *finding))
    duplicates = find_duplicates(passing)
    accepted = [run for i, run in enumerate(passing) if i not in duplicates]
    rejected += [_quarantine_row(passing[i], *finding) for i, finding in sorted(duplicates.items())]
    return accepted, rejected


def _quarantine_row(run: Mapping[str, Any], code: str, detail: str) -> dict:
    return {"source_file": run["source_file"], "source_format": run["source_format"], "source_row": run["source_row"],
            "reason_code": code, "detail": f"{run['source_file']} row {run['source_row']}: {detail}",
            "stage": "validate", "run_date_partition": run.get("run_date_partition")}
