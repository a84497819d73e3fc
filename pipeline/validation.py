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

REQUIRED_METADATA = ("model", "hw", "framework", "precision", "isl", "osl", "conc")


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
