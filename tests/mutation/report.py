"""The survivors report (``tests/MUTANTS.md``), regenerated from the stored results of the last mutation runs.

Results come from mutmut's ``mutants/<module>.meta`` files (exit code per mutant) and the SQL runner's
``mutants-sql/results.json``, both gitignored; each module's complete results are also kept in the committed
``tests/mutation/results.json`` (``RESULTS``: per module the digest of the source measured, the date, every mutant's
identity and status, the survivors' diffs), so a clone without ``mutants/`` reports the same scores. A module is read
from its run's results when they are complete and newer than the stored entry, else from the stored entry while the
file's digest is the one it was measured against; a file changed since reads "not measured". A mutant is named for
the report by a stable identity, not by mutmut's numbered name (which shifts when a function gains a line):
``py:<module>:<function>:<digest>`` where the digest covers the function's qualified name, the removed and added
lines of the mutant's diff and the occurrence of that same diff among the function's mutants (in mutmut's order);
SQL mutants by ``SqlMutant.identity``. ``tests/mutation/reasons.toml`` holds, per identity, why a
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
RESULTS = ROOT / "tests" / "mutation" / "results.json"  # the committed copy of every module's complete results
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
    note: str | None = None  # why a module reads "not measured" when it is not unchecked mutants
    # a SQL file the runner finds no edit in (no operator it mutates): nothing to measure, and nothing missing
    no_mutants: bool = False

    @property
    def is_measured(self) -> bool:
        """Every mutant of the module has a stored verdict (and there is at least one mutant), or it is a SQL file
        with no mutant at all (``no_mutants``)."""
        return self.no_mutants or (self.total > 0 and self.unchecked == 0)

    @property
    def score(self) -> float | None:
        """killed / (killed + surviving), a fraction; None when not measured or without mutants."""
        if not self.is_measured or self.no_mutants:
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


def _stamp_of(path: Path) -> str:
    """The modification time of ``path`` as a sortable UTC timestamp (``2026-11-27T14:05:09.123456Z``)."""
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---- The committed results (``RESULTS``) -------------------------------------------------------------------------
# ``mutants/`` and ``mutants-sql/`` are gitignored, so a fresh clone has no results of its own. After every run (and
# on ``--report-only``) each module's complete results are copied into ``tests/mutation/results.json``:
#
#   {"modules": {"<module or sql/file>": {
#       "source": <sha256 of the file's bytes, 16 hex digits, as measured>,
#       "measured": <ISO date shown in the report>, "stamp": <UTC time of the results copied>,
#       "meta": <digest of mutmut's exit codes for the module (Python only: skips re-reading an unchanged meta)>,
#       "mutants": {<status>: [<identity without its "py:<module>:" / "sql:<file>:" prefix>, ...]},
#       "survivors": [{"id": <short identity>, "name": ..., "status": ..., "diff": ...}, ...]}}}
#
# The report reads a module from its live results (``mutants/<module>.meta``, ``mutants-sql/results.json``) when they
# are complete and newer than the stored entry, else from the stored entry when its ``source`` digest is the
# file's current one; a stored entry of a file changed since reads "not measured".


def source_digest(path: Path) -> str:
    """The 16-hex-digit sha256 of a file's bytes (what a stored result was measured against)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _prefix(module: str) -> str:
    return f"sql:{module.removeprefix('sql/')}:" if module.startswith("sql/") else f"py:{module}:"


def load_results(path: Path | None = None) -> dict[str, dict]:
    """The stored entries ``{module: entry}`` of the committed results file (empty when it does not exist)."""
    path = RESULTS if path is None else path
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get("modules", {})


def save_results(modules: dict[str, dict], path: Path | None = None) -> None:
    """Write ``modules`` (``{module: entry}``) to the committed results file, sorted, one identity a line."""
    path = RESULTS if path is None else path
    text = json.dumps({"about": "mutation results per module; written by python -m tests.mutation "
                                "(tests/mutation/report.py), not by hand",
                       "modules": dict(sorted(modules.items()))}, indent=1, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def make_entry(module: str, statuses: dict[str, str], survivors: list[Survivor], *, source: str, measured: str | None,
               stamp: str, meta: str | None = None) -> dict:
    """A stored entry for ``module`` from ``statuses`` (``{full identity: status}``, every mutant) and its
    ``survivors`` (in report order)."""
    prefix = _prefix(module)
    by_status: dict[str, list[str]] = {}
    for identity, status in statuses.items():
        by_status.setdefault(status, []).append(identity.removeprefix(prefix))
    entry = {"source": source, "measured": measured, "stamp": stamp,
             "mutants": {status: sorted(ids) for status, ids in sorted(by_status.items())},
             "survivors": [{"id": s.identity.removeprefix(prefix), "name": s.name, "status": s.status,
                            "diff": s.diff} for s in survivors]}
    if meta is not None:
        entry["meta"] = meta
    return entry


def merge_entry(module: str, entry: dict, statuses: dict[str, str], survivors: list[Survivor], stamp: str,
                meta: str | None = None) -> dict:
    """``entry`` with the statuses of the mutants ``statuses`` (``{full identity: status}``; unchecked ones left
    out) run again, ``survivors`` their survivors; the date stays that of the entry's full run."""
    prefix = _prefix(module)
    old = {i: status for status, ids in entry.get("mutants", {}).items() for i in ids}
    new = {i.removeprefix(prefix): status for i, status in statuses.items() if status in KILLED | SURVIVING}
    kept = [Survivor(prefix + s["id"], s["name"], s["status"], s["diff"]) for s in entry.get("survivors", [])
            if s["id"] not in new]
    merged = make_entry(module, {prefix + i: status for i, status in {**old, **new}.items()},
                        kept + [s for s in survivors if s.identity.removeprefix(prefix) in new],
                        source=entry["source"], measured=entry.get("measured"), stamp=stamp, meta=meta)
    merged["survivors"].sort(key=lambda s: _mutant_order(s["name"]))
    return merged


def score_from_entry(module: str, entry: dict, reasons: dict[str, str]) -> ModuleScore:
    """The module's score as a stored ``entry`` holds it (its survivors with their reasons)."""
    prefix = _prefix(module)
    score = ModuleScore(module, measured=entry.get("measured"))
    for status, ids in entry.get("mutants", {}).items():
        score.total += len(ids)
        if status in KILLED:
            score.killed += len(ids)
        elif status in SURVIVING:
            score.surviving += len(ids)
        else:
            score.unchecked += len(ids)
    score.survivors = [Survivor(prefix + s["id"], s["name"], s["status"], s["diff"], reasons.get(prefix + s["id"]))
                       for s in entry.get("survivors", [])]
    return score


def _chosen_score(kind: str, module: str, live, entry, reasons) -> "ModuleScore":
    """The score ``choose``'s ``kind`` names: the live results, the stored entry's, the stored entry's as changed
    since, or not measured."""
    if kind == "live":
        return live
    if kind == "stored":
        return score_from_entry(module, entry, reasons)
    if kind == "changed":
        return _changed_score(module, entry)
    return ModuleScore(module)


def choose(module: str, live: ModuleScore | None, live_stamp: str | None, live_current: bool, entry: dict | None,
           digest: str | None) -> str:
    """Which results the report reads for ``module``: ``"live"`` (the run's own results, ``live``, stamped
    ``live_stamp``; ``live_current``: the file has not changed since), ``"stored"`` (the committed ``entry``, valid
    while its source digest is the file's current ``digest``), ``"changed"`` (only a stored entry or a complete
    run of an older version of the file: not measured) or ``"none"`` (nothing stored)."""
    entry_valid = entry is not None and digest is not None and entry.get("source") == digest
    if live is not None and live.is_measured and live_current and (
            not entry_valid or (live_stamp or "") > entry.get("stamp", "")):
        return "live"
    if entry_valid:
        return "stored"
    if live is not None and not (live.is_measured and not live_current):
        return "live"
    if entry is not None or live is not None:
        return "changed"
    return "none"


def _changed_score(module: str, entry: dict | None) -> ModuleScore:
    """A module whose results were measured against another version of its file: not measured."""
    score = ModuleScore(module, note=f"not measured (changed since {entry.get('measured')})" if entry
                        else "not measured (changed since its run)")
    return score


def _meta_digest(codes: dict) -> str:
    return hashlib.sha256(json.dumps(codes, sort_keys=True).encode()).hexdigest()[:16]


def _python_live(module: str, codes: dict, reasons: dict[str, str]) -> tuple[ModuleScore, dict[str, str]]:
    """A module's score from mutmut's exit ``codes`` and ``{identity: status}`` of every mutant (of a module with
    unchecked mutants: only of the functions with a checked mutant). Reads diffs through mutmut's own
    ``get_diff_for_mutant`` (run with the repository root as working directory)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    score, statuses = ModuleScore(module), {}
    seen: dict[tuple, int] = {}
    # an identity counts earlier mutants of the same change in its function, so it needs the diffs of every mutant
    # of that function; a module that is not complete needs only those of the functions with a survivor
    complete = all(status_by_exit_code[c] in KILLED | SURVIVING for c in codes.values())
    wanted = None if complete else {name.rpartition("__mutmut_")[0] for name, c in codes.items()
                                    if status_by_exit_code[c] in KILLED | SURVIVING}
    for name in sorted(codes, key=_mutant_order):
        status = status_by_exit_code[codes[name]]
        score.total += 1
        if wanted is not None and name.rpartition("__mutmut_")[0] not in wanted:
            score.unchecked += status not in KILLED | SURVIVING
            score.killed += status in KILLED
            continue
        function, cls = orig_function_and_class_names_from_key(name)
        qualified = f"{cls}.{function}" if cls else function
        diff = get_diff_for_mutant(name, path=module)
        key = (qualified, *map(tuple, changed_lines(diff)))
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        identity = python_identity(module, qualified, diff, occurrence)
        statuses[identity] = status
        if status in KILLED:
            score.killed += 1
        elif status in SURVIVING:
            score.surviving += 1
            score.survivors.append(Survivor(identity, name.rpartition(".")[2], status,
                                            "\n".join(f"{'-' if n < len(key[1]) else '+'} {line}"
                                                      for n, line in enumerate([*key[1], *key[2]])),
                                            reasons.get(identity)))
        else:
            score.unchecked += 1
    return score, statuses


def python_scores(modules: list[str], reasons: dict[str, str],
                  stored: dict[str, dict] | None = None) -> tuple[list[ModuleScore], set[str]]:
    """Scores of the mutmut ``modules``, each from its live results (``mutants/*.meta``) or its ``stored`` entry
    (``choose``), and every current survivor identity. ``stored`` is updated in place with the complete live
    results it should keep."""
    from mutmut.stats import status_by_exit_code

    stored = {} if stored is None else stored
    scores, identities = [], set()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for module in modules:
            source = ROOT / module
            digest = source_digest(source) if source.exists() else None
            meta = ROOT / "mutants" / f"{module}.meta"
            entry = stored.get(module)
            live = live_stamp = None
            live_current = False
            if meta.exists():
                codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
                live_stamp, live_current = _stamp_of(meta), source.exists() and _stamp_of(source) <= _stamp_of(meta)
                unchanged = entry is not None and entry.get("meta") == _meta_digest(codes) \
                    and entry.get("source") == digest
                checked = [status_by_exit_code[c] in KILLED | SURVIVING for c in codes.values()]
                if unchanged:
                    live_stamp = entry.get("stamp")  # the same results as stored: nothing to copy
                elif (codes and all(checked)) or entry is None or entry.get("source") != digest:
                    live, statuses = _python_live(module, codes, reasons)
                    live.measured = _date_of(meta)
                elif any(checked) and live_current and live_stamp > entry.get("stamp", ""):
                    # some mutants run again on the stored results' source (``--survivors``): their new statuses
                    # replace the stored ones
                    part, statuses = _python_live(module, codes, reasons)
                    stored[module] = entry = merge_entry(module, entry, statuses, part.survivors, live_stamp,
                                                         _meta_digest(codes))
            kind = choose(module, live, live_stamp, live_current, entry, digest)
            score = _chosen_score(kind, module, live, entry, reasons)
            if kind == "live" and live.is_measured:
                stored[module] = make_entry(module, statuses, live.survivors, source=digest,
                                            measured=live.measured, stamp=live_stamp, meta=_meta_digest(codes))
            identities.update(s.identity for s in score.survivors)
            scores.append(score)
    finally:
        os.chdir(cwd)
    return scores, identities


def _mutant_order(name: str) -> tuple[str, int]:
    base, _, number = name.rpartition("__mutmut_")
    return base, int(number) if number.isdigit() else 0


def sql_scores(reasons: dict[str, str], stored: dict[str, dict] | None = None) -> tuple[list[ModuleScore], set[str]]:
    """Scores per ``sql/*.sql`` file, each from the SQL runner's results (``mutants-sql/results.json``) against the
    current mutants (a mutant with no result is unchecked) or from its ``stored`` entry (``choose``); ``stored`` is
    updated in place with the complete live results it should keep."""
    from tests.mutation.sql_mutants import SQL_DIR, mutants_of

    stored = {} if stored is None else stored
    live_results = json.loads(SQL_RESULTS.read_text(encoding="utf-8")) if SQL_RESULTS.exists() else None
    scores, identities = [], set()
    for file in sorted(SQL_DIR.glob("*.sql")):
        module, digest = f"sql/{file.name}", source_digest(file)
        if not mutants_of(file):  # e.g. a statement of columns, joins and ``in`` alone: no result is ever stored
            stored.pop(module, None)
            scores.append(ModuleScore(module, no_mutants=True))
            continue
        entry = stored.get(module)
        live, statuses = None, {}
        if live_results is not None:
            results = live_results.get("results", {})
            live = ModuleScore(module, measured=live_results.get("dates", {}).get(file.name))
            for mutant in mutants_of(file):
                live.total += 1
                result = results.get(mutant.identity)
                status = result["status"] if result else "not checked"
                statuses[mutant.identity] = status
                if status in KILLED:
                    live.killed += 1
                elif status in SURVIVING:
                    live.surviving += 1
                    live.survivors.append(Survivor(mutant.identity, f"{file.name}:{mutant.line} {mutant.operator}",
                                                   status, mutant.diff(), reasons.get(mutant.identity)))
                else:
                    live.unchecked += 1
            if live.killed + live.surviving == 0:
                live = None  # this file has no results in the runner's store
        live_stamp = _stamp_of(SQL_RESULTS) if live is not None else None
        if live is not None and live.is_measured:
            live_entry = make_entry(module, statuses, live.survivors, source=digest, measured=live.measured,
                                    stamp=live_stamp)
            if entry is not None and entry.get("source") == digest and all(
                    entry.get(k) == live_entry[k] for k in ("mutants", "survivors")):
                live_stamp = entry.get("stamp")  # the same results as stored: keep the entry (and its date)
        # the runner's identities hold each edited line's text, so its results always match the current file
        kind = choose(module, live, live_stamp, True, entry, digest)
        score = _chosen_score(kind, module, live, entry, reasons)
        if kind == "live" and live.is_measured:
            stored[module] = live_entry
        identities.update(s.identity for s in score.survivors)
        scores.append(score)
    return scores, identities


def _score_cell(score: ModuleScore) -> tuple[str, str, str]:
    if score.no_mutants:
        return "no mutants", "", ""
    if not score.is_measured:
        if score.note:
            return score.note, "", ""
        done = score.total - score.unchecked
        detail = f"not measured ({done} of {score.total} checked)" if score.total else "not measured"
        return detail, "", ""
    return score.measured or "", f"{score.killed:,} / {score.killed + score.surviving:,}", f"{100 * score.score:.1f} %"


def render(scores: list[ModuleScore], stale_reasons: list[str],
           stale_status: dict[str, str | None] | None = None) -> str:
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
                "killed, or its module is not measured); they are left out of the lists above. A mutant shown as",
                "timeout was stopped by mutmut's CPU limit (counted as killed); on a less loaded machine it may",
                "survive again, so its reason is kept.", ""]
        stale_status = stale_status or {}
        out += [f"- `{identity}`" + (f" ({stale_status[identity]})" if stale_status.get(identity) else "")
                for identity in stale_reasons]
        out.append("")
    return "\n".join(out)


def regenerate(python_modules: list[str] | None = None, write: bool = True) -> list[ModuleScore]:
    """Compute every score, write ``tests/MUTANTS.md`` and the committed results (``RESULTS``: each module's newest
    complete results) when ``write``, and return the scores (Python modules first, then SQL files). Prints a notice
    for each reason whose mutant no longer exists."""
    reasons = load_reasons()
    stored = load_results()
    before = json.dumps(stored, sort_keys=True)
    py, py_ids = python_scores(python_modules if python_modules is not None else mutmut_modules(), reasons, stored)
    sql, sql_ids = sql_scores(reasons, stored)
    for name in prune_removed(stored, set(mutmut_modules()) | {s.module for s in sql}):
        print(f"notice: the stored results of {name} are dropped: no such module or SQL file is measured now")
    measured_modules = {s.module for s in py + sql if s.is_measured}
    stale = sorted(i for i in reasons if i not in py_ids | sql_ids
                   and (_module_of(i) in measured_modules))
    status = {identity: _stored_status(stored, identity) for identity in stale}
    for identity in stale:
        print(f"notice: reason {identity} matches no current survivor"
              f"{f' (its mutant: {status[identity]})' if status[identity] else ''}; left out of the report")
    if write:
        REPORT.write_text(render(py + sql, stale, status), encoding="utf-8")
        if json.dumps(stored, sort_keys=True) != before or not RESULTS.exists():
            save_results(stored)
    return py + sql


def prune_removed(stored: dict[str, dict], current: set[str]) -> list[str]:
    """Drop from ``stored`` (in place) the entries of every module or SQL file not in ``current`` (deleted,
    renamed, or no longer in ``only_mutate``): their results describe no file that is measured. Returns the
    dropped names, sorted."""
    gone = sorted(name for name in stored if name not in current)
    for name in gone:
        del stored[name]
    return gone


def _stored_status(stored: dict[str, dict], identity: str) -> str | None:
    """The stored status of the mutant ``identity`` (None when its module's entry has no such mutant)."""
    module = _module_of(identity)
    short = identity.removeprefix(_prefix(module))
    return next((status for status, ids in stored.get(module, {}).get("mutants", {}).items() if short in ids), None)


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
