"""``python -m tests.mutation``: mutation testing of the rule modules and the SQL, and the survivors report.

Runs, side by side, mutmut over the files of ``[tool.mutmut] only_mutate`` (one ``mutmut run "<module>.*"`` per
module, so each finished module's results are kept even if a later one is stopped) and the SQL mutants of
``tests/mutation/sql_mutants.py``, then regenerates ``tests/MUTANTS.md`` (``tests/mutation/report.py``) and prints
the score of every module. Options:

- ``--workers N`` (default 2): processes in all; with both parts running, the SQL runner takes ``N // 2`` (at least
  one) and mutmut the rest (at least one); once the SQL runner is done, each further module gets all ``N``.
- ``--only PATTERN`` (repeatable): only the Python modules / SQL files whose path contains PATTERN
  (``--only spline.py --only run_metrics.sql``), in the order given.
- ``--no-python`` / ``--no-sql``: leave that part out; ``--report-only``: run nothing, regenerate the report.
- ``--survivors``: run again only the stored survivors (of the selected modules and SQL files), e.g. after adding
  the tests that kill them; a module's date stays that of its last full run.

Exit status 0 when every module run or reported is measured, scores at least 90 % and has a reason for every
survivor; 1 otherwise (each failing module is printed). Run it under ``nice -n 10`` on a shared machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import threading
from pathlib import Path

from tests.mutation import report
from tests.mutation import sql_mutants as sm

ROOT = report.ROOT


def _selected(items: list[str], patterns: list[str] | None) -> list[str]:
    if not patterns:
        return items
    out = []
    for pattern in patterns:
        out += [item for item in items if pattern in item and item not in out]
    return out


def run_python(modules: list[str], workers, log) -> None:
    """``mutmut run --max-children <workers()> "<dotted module>.*"`` for each of ``modules``, one after another
    (the report is regenerated after each); ``workers`` is called before each module, so the processes the SQL
    runner frees go to the next module. Raises RuntimeError naming the module when mutmut exits non-zero."""
    mutmut = Path(sys.executable).with_name("mutmut")
    for module in modules:
        dotted = module.removesuffix(".py").replace("/", ".")
        children = workers()
        log(f"mutmut: {module} ({children} process{'es' if children > 1 else ''})")
        done = subprocess.run([str(mutmut), "run", "--max-children", str(children), f"{dotted}.*"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tail = "\n".join(line for line in done.stdout.replace("\r", "\n").splitlines()[-5:] if line.strip())
        if done.returncode != 0:
            raise RuntimeError(f"mutmut run on {module} exited {done.returncode}:\n{tail}")
        scores = {score.module: score for score in report.regenerate(write=True)}
        log(f"mutmut: {module} done: {report.summary_lines([scores[module]])[0].strip()}")


def run_python_survivors(modules: list[str], workers, log) -> None:
    """``mutmut run`` once on the stored survivors of ``modules`` (by name: mutmut reruns a named mutant), e.g.
    after adding the tests that kill them: those of ``mutants/``, or, for a module with none there, those of the
    committed results when they were measured on the same source. Raises RuntimeError when mutmut exits
    non-zero."""
    from mutmut.stats import status_by_exit_code

    names = []
    stored = report.load_results()
    for module in modules:
        meta = ROOT / "mutants" / f"{module}.meta"
        found = []
        if meta.exists():
            codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
            found = [n for n, code in codes.items() if status_by_exit_code[code] in report.SURVIVING]
        entry = stored.get(module)
        if not found and entry and entry.get("source") == report.source_digest(ROOT / module):
            # no survivor in mutants/ (a fresh clone, or results reset): the committed ones, of this same source
            dotted = module.removesuffix(".py").replace("/", ".")
            found = [f"{dotted}.{s['name']}" for s in entry.get("survivors", [])]
        names += found
    if not names:
        log("mutmut: no stored survivor to run again")
        return
    log(f"mutmut: {len(names)} stored survivors again")
    done = subprocess.run([str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(workers()),
                           *names], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"mutmut run on the survivors exited {done.returncode}")


def run_sql(files: list[str], workers: int, log, survivors_only: bool = False) -> None:
    """The SQL mutants of ``files`` (names under ``sql/``) over ``workers`` worker processes, each in its own copy
    of the checkout; stores ``{"results": {identity: result}, "dates": {file: ISO date}}`` in
    ``mutants-sql/results.json`` (results of other files kept). With ``survivors_only``, only the mutants whose
    stored result is surviving run again (the files' dates stay those of their last full run)."""
    mutants = sm.all_mutants(files)
    if survivors_only:
        stored = json.loads(report.SQL_RESULTS.read_text()).get("results", {}) if report.SQL_RESULTS.exists() else {}
        mutants = [m for m in mutants if stored.get(m.identity, {}).get("status") in report.SURVIVING]
        if not mutants:
            log("sql: no stored survivor to run again")
            return
    copies = [sm.prepare_copy(n) for n in range(workers)]
    log(f"sql: mapping tests to SQL files ({len(mutants)} mutants of {len(files)} files)")
    mapping = sm.map_tests(copies[0])
    tests_by_file, slow = sm.fast_tests(mapping)
    if slow:
        log(f"sql: not run per mutant (clean run over {sm.SLOW_TEST_S:g} s): {', '.join(slow)}")
    mapping = {**mapping, "tests_by_file": tests_by_file}
    shards = [mutants[n::workers] for n in range(workers)]
    plan = sm.WORK_DIR / "plan.json"
    plan.write_text(json.dumps({"mapping": mapping, "shards": [[sm.describe(m) for m in s] for s in shards]}))
    outs = [sm.WORK_DIR / f"results-{n}.jsonl" for n in range(workers)]
    for out in outs:
        out.unlink(missing_ok=True)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.mutation.sql_worker", str(n)], cwd=ROOT)
             for n in range(workers)]
    try:
        codes = [p.wait() for p in procs]
    finally:  # what the workers wrote is kept, also when they are stopped
        merge_sql_results(mutants, outs, None if survivors_only else files)
    if any(codes):
        raise RuntimeError(f"a SQL mutation worker failed (exit codes {codes})")
    log("sql: done")


def merge_sql_results(mutants: list, outs: list[Path], dated_files: list[str] | None) -> None:
    """Store the worker results ``outs`` in ``mutants-sql/results.json``: the stored results of ``mutants`` are
    replaced by the new ones (a mutant without a new result has none, so its file reads "not measured"); the files
    ``dated_files`` get today's date."""
    stored = json.loads(report.SQL_RESULTS.read_text()) if report.SQL_RESULTS.exists() else {}
    results, dates = stored.get("results", {}), stored.get("dates", {})
    current = {m.identity for m in mutants}
    results = {k: v for k, v in results.items() if k not in current}
    for out in outs:
        results.update(sm.load_results(out))
    if dated_files:
        today = dt.datetime.now(dt.timezone.utc).date().isoformat()
        dates.update({name: today for name in dated_files})
    report.SQL_RESULTS.write_text(json.dumps({"results": results, "dates": dates}, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    """Run the parts asked for, regenerate the report, print the scores; the exit status (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", action="append")
    parser.add_argument("--no-python", action="store_true")
    parser.add_argument("--no-sql", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--survivors", action="store_true")
    args = parser.parse_args(argv)

    modules = _selected(report.mutmut_modules(), args.only)
    sql_files = [Path(p).name for p in _selected([f"sql/{p.name}" for p in sorted(sm.SQL_DIR.glob("*.sql"))],
                                                  args.only)]
    do_python = not (args.report_only or args.no_python) and bool(modules)
    do_sql = not (args.report_only or args.no_sql) and bool(sql_files)
    sql_workers = max(1, args.workers // 2) if do_python else max(1, args.workers)
    py_workers = max(1, args.workers - sql_workers) if do_sql else max(1, args.workers)

    lock = threading.Lock()

    def log(message: str) -> None:
        with lock:
            print(f"[{dt.datetime.now(dt.timezone.utc):%H:%M:%S}] {message}", flush=True)

    errors: list[str] = []

    def guarded(fn, *fn_args):
        try:
            fn(*fn_args)
        except Exception as exc:  # reported below, the other part keeps running
            errors.append(str(exc))

    threads = []
    sql_thread = threading.Thread(target=guarded, args=(run_sql, sql_files, sql_workers, log, args.survivors))

    def python_workers() -> int:
        return py_workers if sql_thread.is_alive() else max(1, args.workers)

    if do_sql:
        threads.append(sql_thread)
    if do_python:
        threads.append(threading.Thread(target=guarded, args=(
            run_python_survivors if args.survivors else run_python, modules, python_workers, log)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    scores = report.regenerate()
    print(f"Scores (written to {report.REPORT.relative_to(ROOT)}, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d}):")
    for line in report.summary_lines(scores):
        print(line)
    ran = set(modules if do_python else []) | {f"sql/{f}" for f in (sql_files if do_sql else [])}
    failing = []
    for score in scores:
        if score.module in ran and not score.is_measured:
            failing.append(f"{score.module}: not measured")
        if score.score is not None and score.score < report.PASS_SCORE:
            failing.append(f"{score.module}: {100 * score.score:.1f} % < 90 %")
        if score.missing_tests:
            failing.append(f"{score.module}: {len(score.missing_tests)} survivor(s) without a reason (missing tests)")
    for line in errors + failing:
        print(f"FAIL {line}")
    return 1 if errors or failing else 0


if __name__ == "__main__":
    sys.exit(main())
