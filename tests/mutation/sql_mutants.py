"""Mutants of the SQL in ``sql/``: mutmut mutates Python only, and the metric formulas live in ``sql/*.sql``.

The candidates are generated mechanically from each file's tokens (DuckDB's own tokenizer, ``duckdb.tokenize``),
so the list follows the SQL as it changes and is never kept by hand. Operators, each a one-place edit:

- ``arith``: binary ``+`` ↔ ``-``, ``*`` ↔ ``/`` (a ``*`` after ``select``, ``(``, ``,`` or ``.`` is a star, not
  a product, and is left alone);
- ``compare``: ``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``=`` ↔ ``<>``, ``<>``/``!=`` → ``=`` (not the ``=`` of an
  update's ``set`` list, an assignment);
- ``logic``: ``and`` ↔ ``or`` (not the ``and`` of ``between … and …``);
- ``function``: ``greatest`` ↔ ``least``, ``min`` ↔ ``max``;
- ``coalesce``: the first two arguments of ``coalesce(a, b, …)`` swapped;
- ``constant``: a numeric constant ``0`` → ``1``, an integer ``n`` → ``n + 1``, a decimal ``x`` → ``2x`` (not the
  number of a positional parameter ``$1``);
- ``drop_term``: one ``and``-joined term of a ``where``, ``on``, ``having`` or ``qualify`` clause left out.

A mutant's identity (``SqlMutant.identity``) is its file, operator, the text of the line it edits, the edit, and
which occurrence of that same edit on an identical line it is: it survives edits elsewhere in the file, so the
reasons of ``tests/mutation/reasons.toml`` stay attached to it across runs.

Which tests run for a file's mutants: the ones that open that file. ``map_tests`` runs the SQL test selection
(``SQL_TEST_FILES``) once with an audit hook on ``open`` and records, per test, the ``sql/*.sql`` files it read
(``sql_text`` reads the file on every call, so every reader is seen). A mutant is killed when one of them fails.

Each worker runs in its own copy of the checkout (``mutants-sql/<n>/``: ``pipeline``, ``sql``, ``tests``,
``data``, ``benchmarks``, ``pyproject.toml``), imports the libraries once and forks one child per mutant that
runs pytest on the mapped tests with the mutated file in place, so the checkout's own ``sql/`` is never edited.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SQL_DIR = ROOT / "sql"
WORK_DIR = ROOT / "mutants-sql"
COPIED = ("pipeline", "sql", "tests", "data", "benchmarks", "pyproject.toml")

# The test files whose tests may read SQL (mapped once, whole-pipeline tests included; ``fast_tests`` picks the ones
# run per mutant).
SQL_TEST_FILES = (
    "tests/test_run_metrics_sql.py",
    "tests/test_ingest_ledger_sql.py",
    "tests/test_quarantine_scope_sql.py",
    "tests/test_regression_inputs_sql.py",
    "tests/test_parse_cache_sql.py",
    "tests/test_raw_partitions_sql.py",
    "tests/test_dashboard_arithmetic.py",
    "tests/test_gpu_count.py",
    "tests/test_nominal_lengths.py",
    "tests/test_requests_slo.py",
    "tests/test_duplicate_candidates.py",
    "tests/test_agentic_axis.py",
    "tests/test_judge.py",
    "tests/test_regressions.py",
    "tests/test_parse_cache.py",
    "tests/test_automation.py",
    "tests/test_validation_paths.py",
    "tests/test_power.py",
    "tests/test_real_meaning.py",
    "tests/test_nightly_batches.py",
    "tests/test_latest_runs.py",
)

# A mapped test whose clean run took longer than this (s) is not run per mutant (it would cost that per mutant)
# unless it is its file's only reader; the runner prints which it left out.
SLOW_TEST_S = 15.0

# Seconds a mutant's tests may take beyond the mapped tests' clean duration times this factor (an infinite loop in
# SQL is rare, but a mutated join can explode a result).
TIMEOUT_FACTOR, TIMEOUT_FLOOR_S = 5.0, 30.0

SWAPS = {
    "arith": {"+": "-", "-": "+", "*": "/", "/": "*"},
    "compare": {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "=": "<>", "<>": "=", "!=": "="},
    "logic": {"and": "or", "or": "and"},
    "function": {"greatest": "least", "least": "greatest", "min": "max", "max": "min"},
}
CLAUSE_STARTS = {"where", "on", "having", "qualify"}
# What ends an update's ``set`` list at its own depth.
SET_ENDS = {"from", "where", "returning"}
CLAUSE_ENDS = {"group", "order", "having", "window", "qualify", "limit", "union", "except", "intersect", "select",
               "from", "join", "left", "right", "inner", "full", "cross", "using", "where", "on", "returning",
               "when", "then", "else", "end", "as", "anti", "semi", "asof", "positional", "natural"}


@dataclass(frozen=True)
class SqlMutant:
    """One edit of one SQL file: ``text[start:end]`` (the ``original`` snippet) replaced by ``replacement``.

    ``file`` is the name under ``sql/`` (``run_metrics.sql``), ``line`` the 1-based line of ``start``, ``line_text``
    that line stripped, ``occurrence`` the 0-based count of earlier mutants with the same operator, line text and
    edit. ``identity`` is stable across edits of other lines (no offsets or line numbers in it)."""

    file: str
    operator: str
    start: int
    end: int
    original: str
    replacement: str
    line: int
    line_text: str
    occurrence: int

    @property
    def identity(self) -> str:
        """``sql:<file>:<12 hex digits>``, a digest of file, operator, line text, original, replacement and
        occurrence."""
        key = "\x1f".join([self.file, self.operator, self.line_text, self.original, self.replacement,
                           str(self.occurrence)])
        return f"sql:{self.file}:{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def apply(self, text: str) -> str:
        """``text`` (the file's original text) with this edit."""
        return text[:self.start] + self.replacement + text[self.end:]

    def diff(self) -> str:
        """Two lines for a reader: ``- <the line's text>`` and ``+ <original snippet> → <replacement>``."""
        return f"- {self.line_text}\n+ {self.original!r} → {self.replacement or '(left out)'!r}"


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    text: str
    kind: str

    @property
    def word(self) -> str:
        return self.text.lower()


def _tokens(text: str) -> list[_Token]:
    """DuckDB's tokens of ``text`` without comments, each with its end (the tokenizer gives starts only) and text."""
    import duckdb

    data = text.encode("utf-8")
    # DuckDB gives byte offsets into the UTF-8 text; the comments hold non-ASCII characters (×, —)
    starts = [(len(data[:start].decode("utf-8")), kind) for start, kind in duckdb.tokenize(text)]
    out = []
    for i, (start, kind) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        raw = text[start:end]
        if kind.name == "comment":
            continue
        piece = raw.rstrip()
        # an operator token may run into the next token's whitespace-free neighbour: DuckDB splits '(' and ','
        out.append(_Token(start, start + len(piece), piece, kind.name))
    return out


def _is_value_end(token: _Token | None) -> bool:
    return token is not None and (token.kind in ("identifier", "numeric_const", "string_const")
                                  or token.text == ")" or (token.kind == "keyword" and token.word in
                                                           ("null", "true", "false", "end")))


def _is_value_start(token: _Token | None) -> bool:
    return token is not None and (token.kind in ("identifier", "numeric_const", "string_const")
                                  or token.text == "(" or (token.kind == "keyword" and token.word in
                                                           ("case", "cast", "coalesce", "null", "nullif")))


def _constant_replacement(text: str) -> str | None:
    if re.fullmatch(r"\d+", text):
        return str(int(text) + 1)
    if re.fullmatch(r"\d*\.\d+|\d+\.\d*|\d+(\.\d*)?[eE][-+]?\d+", text):
        value = float(text)
        return "1.0" if value == 0 else repr(value * 2)
    return None


def _edits(text: str) -> list[tuple[str, int, int, str]]:
    """``(operator, start, end, replacement)`` of every candidate edit of ``text``, in text order."""
    tokens = _tokens(text)
    edits: list[tuple[str, int, int, str]] = []
    depth, between_depths, case_depth = 0, [], 0
    set_depth = None  # the depth of an update's ``set`` list while in it: its ``=`` assign, they do not compare
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.text == "(":
            depth += 1
        elif tok.text == ")":
            depth -= 1
        if tok.kind == "keyword" and tok.word == "set":
            set_depth = depth
        elif set_depth is not None and (depth < set_depth or (depth == set_depth and tok.word in SET_ENDS)):
            set_depth = None
        if tok.text == "=" and set_depth == depth:
            continue  # ``set a = b``: an assignment (``<>`` there is no statement)
        if prev is not None and prev.text == "$":
            continue  # ``$1``: a parameter's number, not a constant (``$2`` is a missing parameter)
        if tok.kind == "operator" and tok.text in SWAPS["arith"]:
            if _is_value_end(prev) and _is_value_start(nxt) and not (prev and prev.text == "."):
                edits.append(("arith", tok.start, tok.end, SWAPS["arith"][tok.text]))
        elif tok.kind == "operator" and tok.text in SWAPS["compare"]:
            edits.append(("compare", tok.start, tok.end, SWAPS["compare"][tok.text]))
        elif tok.kind == "keyword" and tok.word == "between":
            between_depths.append((depth, case_depth))
        elif tok.kind == "keyword" and tok.word in SWAPS["logic"]:
            if tok.word == "and" and between_depths and between_depths[-1] == (depth, case_depth):
                between_depths.pop()
            else:
                swapped = SWAPS["logic"][tok.word]
                edits.append(("logic", tok.start, tok.end, swapped if tok.text.islower() else swapped.upper()))
        elif tok.word in SWAPS["function"] and nxt is not None and nxt.text == "(":
            swapped = SWAPS["function"][tok.word]
            edits.append(("function", tok.start, tok.end, swapped if tok.text.islower() else swapped.upper()))
        elif tok.kind == "numeric_const" and (replacement := _constant_replacement(tok.text)) is not None:
            if not (prev is not None and prev.word in ("limit", "offset")):
                edits.append(("constant", tok.start, tok.end, replacement))
        if tok.word == "case":
            case_depth += 1
        elif tok.word == "end" and case_depth:
            case_depth -= 1
        if tok.word == "coalesce" and nxt is not None and nxt.text == "(":
            args = _arguments(tokens, i + 1)
            if len(args) >= 2:
                (a0, a1), (b0, b1) = args[0], args[1]
                first, second = text[a0:a1], text[b0:b1]
                edits.append(("coalesce", a0, b1, f"{second}{text[a1:b0]}{first}"))
        if tok.kind == "keyword" and tok.word in CLAUSE_STARTS:
            edits.extend(("drop_term", s, e, "") for s, e in _droppable_terms(text, tokens, i))
    return edits


def _arguments(tokens: list[_Token], open_index: int) -> list[tuple[int, int]]:
    """Character spans of the top-level arguments of the call whose ``(`` is ``tokens[open_index]``."""
    spans, depth, begin = [], 0, None
    for tok in tokens[open_index:]:
        if tok.text == "(":
            depth += 1
            if depth == 1:
                continue
        elif tok.text == ")":
            depth -= 1
            if depth == 0:
                if begin is not None:
                    spans.append((begin, last_end))
                return spans
        if depth == 1 and tok.text == ",":
            spans.append((begin, last_end))
            begin = None
            continue
        if begin is None:
            begin = tok.start
        last_end = tok.end
    return spans


def _droppable_terms(text: str, tokens: list[_Token], clause_index: int) -> list[tuple[int, int]]:
    """Spans to cut so that one ``and``-joined term of the clause starting at ``tokens[clause_index]`` is left out
    (the term with the ``and`` joining it); none when the clause has one term or an ``or`` at its top level."""
    depth, case_depth, pending_between = 0, 0, 0
    terms: list[list[int]] = [[tokens[clause_index + 1].start, tokens[clause_index + 1].start]] \
        if clause_index + 1 < len(tokens) else []
    joins: list[int] = []
    for tok in tokens[clause_index + 1:]:
        if tok.text == "(":
            depth += 1
        elif tok.text == ")":
            depth -= 1
            if depth < 0:
                break
        if depth == 0 and case_depth == 0 and (tok.text == ";" or (tok.kind == "keyword" and tok.word in CLAUSE_ENDS
                                                                     and tok.word != "end")):
            break
        if tok.word == "case":
            case_depth += 1
        elif tok.word == "end" and case_depth:
            case_depth -= 1
        elif depth == 0 and case_depth == 0 and tok.word == "between":
            pending_between += 1
        elif depth == 0 and case_depth == 0 and tok.word == "or":
            return []
        elif depth == 0 and case_depth == 0 and tok.word == "and":
            if pending_between:
                pending_between -= 1
            else:
                joins.append(tok.start)
                terms.append([tok.end, tok.end])
                continue
        terms[-1][1] = tok.end
    if len(terms) < 2:
        return []
    cuts = []
    for n, (start, end) in enumerate(terms):
        if n == 0:  # "A and B" -> "B": cut from A's start to B's start
            cuts.append((start, terms[1][0] + len(text[terms[1][0]:]) - len(text[terms[1][0]:].lstrip())))
        else:  # "... and X" -> "...": cut from the joining "and" to X's end
            cuts.append((joins[n - 1], end))
    return cuts


def mutants_of(file: Path) -> list[SqlMutant]:
    """Every candidate mutant of the SQL file ``file`` (operators: the module docstring), in text order."""
    text = file.read_text(encoding="utf-8")
    lines = text.split("\n")
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    seen: dict[tuple[str, str, str, str], int] = {}
    out = []
    for operator, start, end, replacement in _edits(text):
        line = max(n for n, s in enumerate(line_starts) if s <= start) + 1
        original = text[start:end]
        line_text = lines[line - 1].strip()
        key = (operator, line_text, original, replacement)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        out.append(SqlMutant(file.name, operator, start, end, original, replacement, line, line_text, occurrence))
    return out


def all_mutants(files: list[str] | None = None) -> list[SqlMutant]:
    """The mutants of every ``sql/*.sql`` (or of the named files, ``run_metrics.sql``), file by file."""
    names = files or sorted(p.name for p in SQL_DIR.glob("*.sql"))
    return [m for name in names for m in mutants_of(SQL_DIR / name)]


def prepare_copy(n: int) -> Path:
    """A fresh copy of the checkout's code, SQL, tests and data at ``mutants-sql/<n>/`` for one worker."""
    dest = WORK_DIR / str(n)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "marts", "warehouse.duckdb*"))
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest


def pytest_extra_args(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """``[tool.mutmut] pytest_add_cli_args`` (its ``--deselect``s of slow tests), passed to every SQL test run too."""
    import tomllib

    return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["mutmut"]["pytest_add_cli_args"])


def fast_tests(mapping: dict) -> tuple[dict[str, list[str]], list[str]]:
    """Per SQL file, the mapped tests to run per mutant: those whose clean run took at most ``SLOW_TEST_S``; for a
    file read only by slower tests (the ones running the whole Dagster job), its fastest test alone. Fastest
    first: a mutant stops at its first failing test (``-x``), so a file's focused tests, which kill most of its
    mutants, run before the whole-pipeline ones. Returns ``({sql name: [test ids]}, [the slow test ids left
    out])``."""
    durations = mapping["durations"]
    chosen, left_out = {}, set()
    for name, tests in mapping["tests_by_file"].items():
        tests = sorted(tests, key=lambda t: durations.get(t, 0.0))
        fast = [t for t in tests if durations.get(t, 0.0) <= SLOW_TEST_S]
        chosen[name] = fast or tests[:1]
        left_out |= set(tests) - set(chosen[name])
    return chosen, sorted(left_out)


def _enter_copy(copy: Path) -> None:
    """Make this process import ``pipeline`` and the tests from ``copy`` (run before anything imports them)."""
    os.chdir(copy)
    sys.path.insert(0, str(copy))


class _OpenRecorder:
    """pytest plugin: per test id, the ``sql/*.sql`` names opened during its setup and call, and its duration."""

    def __init__(self, sql_dir: Path):
        self.sql_dir = str(sql_dir.resolve())
        self.current: str | None = None
        self.opened: dict[str, set[str]] = {}
        self.durations: dict[str, float] = {}
        self.failed: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if event == "open" and self.current and args and isinstance(args[0], (str, os.PathLike)):
            path = os.path.abspath(os.fspath(args[0]))
            if path.startswith(self.sql_dir) and path.endswith(".sql"):
                self.opened.setdefault(self.current, set()).add(os.path.basename(path))

    def pytest_runtest_logstart(self, nodeid, location):
        self.current = nodeid

    def pytest_runtest_logreport(self, report):
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.failed.append(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):
        self.current = None


def map_tests(copy: Path) -> dict:
    """Run ``SQL_TEST_FILES`` once in ``copy`` (a child process) and return ``{"tests_by_file": {sql name: [test
    ids]}, "durations": {test id: s}}``.

    Raises:
        RuntimeError: a test of the clean run failed (a mutant could not be told from a broken test).
    """
    out = copy / "sql-map.json"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _enter_copy(copy)
            import pytest

            recorder = _OpenRecorder(copy / "sql")
            code = int(pytest.main(["-q", "--rootdir", str(copy), *pytest_extra_args(copy / "pyproject.toml"),
                                    *[t for t in SQL_TEST_FILES if (copy / t).exists()]], plugins=[recorder]))
            by_file: dict[str, list[str]] = {}
            for test, names in recorder.opened.items():
                for name in names:
                    by_file.setdefault(name, []).append(test)
            out.write_text(json.dumps({"tests_by_file": by_file, "durations": recorder.durations,
                                       "failed": recorder.failed, "exit_code": code}))
        finally:
            os._exit(0 if code in (0, 5) else 1)
    _, status = os.waitpid(pid, 0)
    if not out.exists():
        raise RuntimeError(f"the SQL test map run in {copy} ended without a result (status {status})")
    result = json.loads(out.read_text())
    if result["failed"]:
        raise RuntimeError(f"SQL test map: clean tests failed: {', '.join(result['failed'])}")
    return result


def run_worker(copy: Path, mutants: list[SqlMutant], tests_by_file: dict[str, list[str]],
               durations: dict[str, float], results: Path) -> None:
    """Test each of ``mutants`` in ``copy`` and append one JSON line per mutant to ``results``: ``identity``,
    ``status`` (``killed``, ``survived``, ``timeout``, ``no tests``), ``seconds``. The file under ``copy/sql`` is
    restored after each mutant. Runs in a process of its own (it changes directory and ``sys.path``)."""
    _enter_copy(copy)
    import duckdb  # noqa: F401  (imported once here, not once per mutant)
    import pytest

    import pipeline.definitions  # noqa: F401

    with open(results, "a", encoding="utf-8") as sink:
        for mutant in mutants:
            target = copy / "sql" / mutant.file
            original = target.read_text(encoding="utf-8")
            tests = tests_by_file.get(mutant.file, [])
            began = time.monotonic()
            if not tests:
                status = "no tests"
            else:
                target.write_text(mutant.apply(original), encoding="utf-8")
                try:
                    status = _run_forked(tests, TIMEOUT_FLOOR_S + TIMEOUT_FACTOR * sum(durations.get(t, 1.0)
                                                                                       for t in tests), pytest)
                finally:
                    target.write_text(original, encoding="utf-8")
            sink.write(json.dumps({"identity": mutant.identity, "status": status,
                                   "seconds": round(time.monotonic() - began, 2)}) + "\n")
            sink.flush()


def _run_forked(tests: list[str], timeout_s: float, pytest) -> str:
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = int(pytest.main(["-x", "-q", *pytest_extra_args(), *tests]))
        except BaseException:
            code = 3
        os._exit(code)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.05)
    code = os.waitstatus_to_exitcode(status)
    return "survived" if code == 0 else "killed"


def load_results(path: Path) -> dict[str, dict]:
    """``{identity: result line}`` from a worker's results file (the last line of an identity wins)."""
    out: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["identity"]] = row
    return out


def describe(mutant: SqlMutant) -> dict:
    """The mutant as a JSON-able dict, with its identity."""
    return {**asdict(mutant), "identity": mutant.identity}
