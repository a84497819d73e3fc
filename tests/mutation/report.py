"""The survivors report (``tests/MUTANTS.md``), regenerated from the stored results of the last mutation runs.

Results come from mutmut's ``mutants/<module>.meta`` files (exit code per mutant) and the SQL runner's
``mutants-sql/results.json``. A mutant is named for the report by a stable identity, not by mutmut's numbered
name (which shifts when a function gains a line): ``py:<module>:<function>:<digest>`` where the digest covers the
function's qualified name, the removed and added lines of the mutant's diff and the occurrence of that same diff in
the function; SQL mutants by ``SqlMutant.identity``. ``tests/mutation/reasons.toml`` holds, per identity, why a
surviving mutant is equivalent (no input can tell it from the original). A survivor without a reason is reported
as a missing test; a reason whose mutant no longer exists is left out with a notice.

Statuses: ``killed``, ``timeout``, ``caught by type check`` and ``segfault`` count as killed; ``survived``, ``no
tests`` and ``suspicious`` as surviving; a module with any mutant ``not checked`` (or never run) is reported as
"not measured", never with an earlier number. The score is killed / (killed + surviving); a measured module
passes at ``PASS_SCORE`` or more.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REASONS = ROOT / "tests" / "mutation" / "reasons.toml"
REPORT = ROOT / "tests" / "MUTANTS.md"
SQL_RESULTS = ROOT / "mutants-sql" / "results.json"
PASS_SCORE = 0.90

KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVING = {"survived", "no tests", "suspicious"}


@dataclass
class Survivor:
    """A surviving mutant: ``identity`` (stable), ``name`` (mutmut's name or the SQL file and line), ``status``,
    ``diff`` (removed/added lines) and ``reason`` (from reasons.toml, or None: a missing test)."""

    identity: str
    name: str
    status: str
    diff: str
    reason: str | None = None


@dataclass
class ModuleScore:
    """One module's (or SQL file's) result: counts of mutants ``total``, ``killed``, ``surviving``, ``unchecked``,
    the date of its newest stored result (``measured``, ISO date, None when nothing is stored) and its survivors."""

    module: str
    total: int = 0
    killed: int = 0
    surviving: int = 0
    unchecked: int = 0
    measured: str | None = None
    survivors: list[Survivor] = field(default_factory=list)

    @property
    def is_measured(self) -> bool:
        """Every mutant of the module has a stored verdict (and there is at least one mutant)."""
        return self.total > 0 and self.unchecked == 0

    @property
    def score(self) -> float | None:
        """killed / (killed + surviving), a fraction; None when not measured."""
        if not self.is_measured:
            return None
        decided = self.killed + self.surviving
        return self.killed / decided if decided else 1.0

    @property
    def missing_tests(self) -> list[Survivor]:
        """Survivors with no reason in reasons.toml."""
        return [s for s in self.survivors if s.reason is None]


def load_reasons(path: Path = REASONS) -> dict[str, str]:
    """``{identity: why}`` from ``reasons.toml`` (``[[equivalent]]`` tables with ``id`` and ``why``).

    Raises:
        ValueError: an entry lacks ``id`` or ``why``, or an ``id`` appears twice (message names the file and id).
    """
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    reasons: dict[str, str] = {}
    for n, entry in enumerate(data.get("equivalent", [])):
        if not entry.get("id") or not entry.get("why"):
            raise ValueError(f"{path}: entry {n + 1} needs both 'id' and 'why'")
        if entry["id"] in reasons:
            raise ValueError(f"{path}: id {entry['id']} is listed twice")
        reasons[entry["id"]] = entry["why"].strip()
    return reasons


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """The removed and added lines of a unified ``diff`` (headers left out), each stripped."""
    removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return removed, added


def python_identity(module: str, function: str, diff: str, occurrence: int) -> str:
    """``py:<module>:<function>:<12 hex digits>``: the digest of the function, the diff's removed and added lines
    and the occurrence of that same change in the function (mutmut's number is not in it)."""
    removed, added = changed_lines(diff)
    key = "\x1f".join([module, function, "\n".join(removed), "\x1e", "\n".join(added), str(occurrence)])
    return f"py:{module}:{function}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def mutmut_modules(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The files ``[tool.mutmut] only_mutate`` lists (``pipeline/frontiers/spline.py`` …), in its order."""
    return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["mutmut"]["only_mutate"])


def _date_of(path: Path) -> str:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).date().isoformat()


def python_scores(modules: list[str], reasons: dict[str, str]) -> tuple[list[ModuleScore], set[str]]:
    """Scores of the mutmut ``modules`` from ``mutants/*.meta`` and every current identity (surviving or not
    only for survivors: killed mutants need no identity). Reads diffs through mutmut's own ``get_diff_for_mutant``
    (run with the repository root as working directory)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    scores, identities = [], set()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for module in modules:
            score = ModuleScore(module)
            meta = ROOT / "mutants" / f"{module}.meta"
            scores.append(score)
            if not meta.exists():
                continue
            codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
            score.measured = _date_of(meta)
            seen: dict[tuple, int] = {}
            for name in sorted(codes, key=_mutant_order):
                status = status_by_exit_code[codes[name]]
                score.total += 1
                if status in KILLED:
                    score.killed += 1
                    continue
                if status not in SURVIVING:
                    score.unchecked += 1
                    continue
                score.surviving += 1
                function, cls = orig_function_and_class_names_from_key(name)
                qualified = f"{cls}.{function}" if cls else function
                diff = get_diff_for_mutant(name, path=module)
                key = (qualified, *map(tuple, changed_lines(diff)))
                occurrence = seen.get(key, 0)
                seen[key] = occurrence + 1
                identity = python_identity(module, qualified, diff, occurrence)
                identities.add(identity)
                score.survivors.append(Survivor(identity, name.rpartition(".")[2], status,
                                                "\n".join(f"{'-' if n < len(key[1]) else '+'} {line}"
                                                          for n, line in enumerate([*key[1], *key[2]])),
                                                reasons.get(identity)))
    finally:
        os.chdir(cwd)
    return scores, identities


def _mutant_order(name: str) -> tuple[str, int]:
    base, _, number = name.rpartition("__mutmut_")
    return base, int(number) if number.isdigit() else 0


def sql_scores(reasons: dict[str, str]) -> tuple[list[ModuleScore], set[str]]:
    """Scores per ``sql/*.sql`` file from the SQL runner's stored results against the current mutants (a mutant
    with no stored result is unchecked, so an edited file reads "not measured" until it is run again)."""
    from tests.mutation.sql_mutants import SQL_DIR, mutants_of

    stored = json.loads(SQL_RESULTS.read_text(encoding="utf-8")) if SQL_RESULTS.exists() else {}
    results = stored.get("results", {})
    scores, identities = [], set()
    for file in sorted(SQL_DIR.glob("*.sql")):
        score = ModuleScore(f"sql/{file.name}", measured=stored.get("dates", {}).get(file.name))
        for mutant in mutants_of(file):
            score.total += 1
            result = results.get(mutant.identity)
            status = result["status"] if result else "not checked"
            if status in KILLED:
                score.killed += 1
            elif status in SURVIVING:
                score.surviving += 1
                identities.add(mutant.identity)
                score.survivors.append(Survivor(mutant.identity, f"{file.name}:{mutant.line} {mutant.operator}",
                                                status, mutant.diff(), reasons.get(mutant.identity)))
            else:
                score.unchecked += 1
        scores.append(score)
    return scores, identities


def _score_cell(score: ModuleScore) -> tuple[str, str, str]:
    if not score.is_measured:
        done = score.total - score.unchecked
        detail = f"not measured ({done} of {score.total} checked)" if score.total else "not measured"
        return detail, "", ""
    return score.measured or "", f"{score.killed:,} / {score.killed + score.surviving:,}", f"{100 * score.score:.1f} %"


def render(scores: list[ModuleScore], stale_reasons: list[str]) -> str:
    """The text of ``tests/MUTANTS.md``: the score table, then every module's survivors with their reasons (or
    **missing test**), then the reasons left out because their mutant no longer exists."""
    out = ["# Mutation scores and surviving mutants", "",
           "Generated by `python -m tests.mutation` (tests/mutation/README.md) from the stored results of the last",
           "runs; do not edit by hand. Why a survivor is equivalent is written in `tests/mutation/reasons.toml`, keyed",
           "by the mutant's stable identity; a survivor with no reason there is a **missing test**. A module scores",
           f"killed / (killed + surviving) and passes at {PASS_SCORE:.0%}; \"not measured\" means some of its current",
           "mutants have no result (never run, or its code changed since).", "",
           "| module | measured | killed | score |", "| --- | --- | ---: | ---: |"]
    for score in scores:
        measured, killed, percent = _score_cell(score)
        flag = " (below 90 %)" if score.score is not None and score.score < PASS_SCORE else ""
        out.append(f"| `{score.module}` | {measured} | {killed} | {percent}{flag} |")
    out.append("")
    for score in scores:
        if not score.survivors:
            continue
        out += [f"## `{score.module}`", ""]
        for s in score.survivors:
            why = s.reason if s.reason is not None else "**missing test** (no reason in tests/mutation/reasons.toml)"
            out.append(f"- `{s.name}` ({s.status}), id `{s.identity}`: {why}")
            out += ["  ```diff", *[f"  {line}" for line in s.diff.splitlines()], "  ```"]
        out.append("")
    if stale_reasons:
        out += ["## Reasons whose mutant no longer exists", "",
                "These ids are in reasons.toml but no current survivor has them (the line changed, the mutant is now",
                "killed, or its module is not measured); they are left out of the lists above.", ""]
        out += [f"- `{identity}`" for identity in stale_reasons]
        out.append("")
    return "\n".join(out)


def regenerate(python_modules: list[str] | None = None, write: bool = True) -> list[ModuleScore]:
    """Compute every score, write ``tests/MUTANTS.md`` (when ``write``) and return the scores (Python modules
    first, then SQL files). Prints a notice for each reason whose mutant no longer exists."""
    reasons = load_reasons()
    py, py_ids = python_scores(python_modules if python_modules is not None else mutmut_modules(), reasons)
    sql, sql_ids = sql_scores(reasons)
    measured_modules = {s.module for s in py + sql if s.is_measured}
    stale = sorted(i for i in reasons if i not in py_ids | sql_ids
                   and (_module_of(i) in measured_modules))
    for identity in stale:
        print(f"notice: reason {identity} matches no current survivor; left out of the report")
    if write:
        REPORT.write_text(render(py + sql, stale), encoding="utf-8")
    return py + sql


def _module_of(identity: str) -> str:
    kind, module = identity.split(":")[:2]
    return f"sql/{module}" if kind == "sql" else module


def summary_lines(scores: list[ModuleScore]) -> list[str]:
    """One printed line per module: its score as in the report, and the count of missing tests."""
    lines = []
    for score in scores:
        measured, killed, percent = _score_cell(score)
        missing = len(score.missing_tests)
        lines.append(f"{score.module:45s} {measured:12s} {killed:>13s} {percent:>8s}"
                     + (f"  {missing} missing test(s)" if missing else ""))
    return lines
