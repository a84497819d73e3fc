"""The GX suite in a process of its own (``pipeline.validate.suite_process``): the same outcomes as in the caller's
process, the suite's errors raised in the caller, a process that went away named and replaced by the caller's own
run of the suite, and ``python -m pipeline run`` running the suite there when it may fork (in its own process
otherwise)."""

import _thread
import contextlib
import os
import shutil
import signal
import sys
import threading
from typing import Iterator

import duckdb
import pyarrow as pa
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.defs.validate import expectations as check_module
from pipeline.validate.expectations import duplicates_by_run_id
from pipeline.validate.suite_process import InProcessSuite, SuiteProcess, SuiteProcessGone


def _validated(run) -> tuple[pa.Table, list[str]]:
    with duckdb.connect(str(run.db_path), read_only=True) as conn:
        runs = conn.sql("select * from validated_runs").to_arrow_table()
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
    return runs, known_hw


def _with_defects(runs: pa.Table) -> pa.Table:
    """Row 0 copied at the end (a run_id twice, a duplicate run) and row 1 without a model."""
    runs = pa.concat_tables([runs, runs.slice(0, 1)])
    models = runs["model"].to_pylist()
    models[1] = None
    return runs.set_column(runs.schema.get_field_index("model"), "model", pa.array(models, pa.string()))


def test_the_suites_process_gives_the_outcomes_of_the_callers_process(sample_run):
    runs, known_hw = _validated(sample_run)
    bad = _with_defects(runs)
    duplicates = duplicates_by_run_id(bad)
    # two chunks, the copy of row 0 in its original's chunk (every copy of a run_id in one chunk, as run_suite asks)
    last = bad.num_rows - 1
    chunks = [pa.concat_tables([bad.slice(0, 30), bad.slice(last)]), bad.slice(30, last - 30)]
    here = InProcessSuite().run_suite(chunks, known_hw, duplicates)
    with SuiteProcess() as suite:
        assert suite.pid != os.getpid()
        there = suite.run_suite(iter(chunks), known_hw, duplicates)
        again = suite.run_suite([runs], known_hw, duplicates_by_run_id(runs))  # the process serves many requests
    assert there == here  # Outcome is a dataclass: every field, examples included
    failed = {o.name for o in there if not o.success}
    assert {"run_id_unique", "no_duplicate_runs", "model_present"} <= failed
    assert all(o.success for o in again), [o.name for o in again if not o.success]


def test_an_error_of_the_suite_is_raised_in_the_caller_and_the_process_keeps_serving(sample_run):
    runs, known_hw = _validated(sample_run)
    with SuiteProcess() as suite:
        with pytest.raises(ValueError, match="at least one chunk"):
            suite.run_suite([], known_hw, {})
        outcomes = suite.run_suite([runs], known_hw, duplicates_by_run_id(runs))
    assert outcomes and all(o.success for o in outcomes)


def test_a_suite_process_that_went_away_is_named_and_the_check_runs_the_suite_itself(sample_run, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    shutil.copy2(sample_run.db_path, db)
    runs, known_hw = _validated(sample_run)
    suite = SuiteProcess()
    try:
        os.kill(suite.pid, signal.SIGKILL)
        with pytest.raises(SuiteProcessGone, match=f"process {suite.pid} ended"):
            suite.run_suite([runs], known_hw, {})
        checks = list(check_module.validated_runs_expectations(warehouse=DuckDBResource(database=str(db)),
                                                               expectation_suite=suite))
    finally:
        suite.close()
    here = list(check_module.validated_runs_expectations(warehouse=DuckDBResource(database=str(db)),
                                                         expectation_suite=InProcessSuite()))
    assert [(c.check_name, c.passed) for c in checks] == [(c.check_name, c.passed) for c in here]
    assert all(c.passed for c in checks)
    engine = checks[0].metadata["engine"].value
    assert "its own process had ended" in engine, engine


@contextlib.contextmanager
def _another_python_thread() -> Iterator[None]:
    """A second Python thread runs while inside (started by ``_thread``, as execnet starts a pytest-xdist
    worker's, so ``threading`` does not list it), ending after."""
    started, release = threading.Event(), threading.Event()

    def wait() -> None:
        started.set()
        release.wait(300)

    _thread.start_new_thread(wait, ())
    assert started.wait(10)
    try:
        yield
    finally:
        release.set()


def _printed_by_a_fresh_interpreter(script: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """What ``script`` prints (stripped) when run by ``python -c`` in a new interpreter (one Python thread), with
    ``env`` as its environment (None: this process's).

    Raises:
        AssertionError: the script failed (its stderr is the message).
    """
    import subprocess

    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _sample_env(tmp_path) -> dict[str, str]:
    """The environment of a run on one sample folder copied under ``tmp_path``, with no Dagster home."""
    from conftest import SAMPLE_DIR

    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", tmp_path / "raw")
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(PIPELINE_RAW_DIR=str(tmp_path / "raw"), PIPELINE_OUT_DIR=str(tmp_path / "marts"),
               PIPELINE_DB_PATH=str(tmp_path / "w.duckdb"))
    return env


def test_python_m_pipeline_run_runs_the_suite_in_the_process_it_forked(tmp_path):
    """``python -m pipeline run`` (one Python thread when it starts) forks the suite's process first thing, and the
    checks' suite runs there, in a live process that is not the run's."""
    script = ("import os, sys\n"
              "from pipeline.__main__ import main\n"
              "from pipeline.validate import suite_process\n"
              "asked = []\n"
              "original = suite_process.SuiteProcess.run_suite\n"
              "def recorded(self, chunks, known_hw, duplicate_of):\n"
              "    asked.append((self.pid != os.getpid(), self._process.is_alive(), self.start_method))\n"
              "    return original(self, chunks, known_hw, duplicate_of)\n"
              "suite_process.SuiteProcess.run_suite = recorded\n"
              "code = main(['run'])\n"
              "print(code, asked)\n")
    printed = _printed_by_a_fresh_interpreter(script, env=_sample_env(tmp_path), timeout=300)
    assert printed.splitlines()[-1] == "0 [(True, True, 'fork')]", printed


def test_a_run_in_a_caller_with_another_python_thread_runs_the_suite_in_the_callers_process(tmp_path, monkeypatch):
    """``main(["run"])`` called from a process that runs another Python thread (a test worker's, an embedding
    service's) neither forks nor spawns: the checks' suite runs in the caller's process, once, and no suite
    process is started."""
    from pipeline.__main__ import main
    from pipeline.validate import suite_process

    for name, value in _sample_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    asked: list[int] = []
    original = suite_process.InProcessSuite.run_suite

    def recorded(self, chunks, known_hw, duplicate_of):
        asked.append(os.getpid())
        return original(self, chunks, known_hw, duplicate_of)

    def started_processes(*_args, **_kwargs):
        raise AssertionError("a suite process was started")

    monkeypatch.setattr(suite_process.InProcessSuite, "run_suite", recorded)
    monkeypatch.setattr(suite_process.SuiteProcess, "__init__", started_processes)
    with _another_python_thread():
        assert main(["run"]) == 0
    assert asked == [os.getpid()]


def test_the_suites_process_ends_when_its_caller_is_killed(tmp_path):
    """A caller killed with SIGKILL (as the kill tests do to a run) leaves no suite process behind: the process
    reads the end of the pipe and ends."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "suite.pid"
    script = ("import os, signal, time\n"
              "from pipeline.validate.suite_process import SuiteProcess\n"
              "suite = SuiteProcess()\n"
              f"open({str(pid_file)!r}, 'w').write(str(suite.pid))\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    caller = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert caller.returncode == -signal.SIGKILL
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 60  # the process first finishes importing Great Expectations, then reads the end
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split()[2] == "Z":  # ended, not yet reaped (its parent is gone: init reaps it)
                return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    raise AssertionError(f"suite process {child} still running 60 s after its caller was killed")


def test_an_answer_that_cannot_be_sent_is_raised_in_the_caller_as_a_runtime_error(monkeypatch):
    """An error (or a result) the pipe cannot pickle comes back as a RuntimeError naming it, and the process goes on
    serving (the forked process runs the monkeypatched suite: a fork copies the caller as it is)."""
    from pipeline.validate import expectations

    class Unpicklable(Exception):
        def __reduce__(self):
            raise TypeError("not picklable")

    calls = iter(["error", "result"])

    def fake_suite(chunks, known_hw, duplicate_of):
        list(chunks)
        if next(calls) == "error":
            raise Unpicklable("bad bound")
        return [lambda: None]  # a function cannot be pickled

    monkeypatch.setattr(expectations, "run_suite", fake_suite)
    table = pa.table({"run_id": ["a"]})
    with SuiteProcess(start_method="fork") as suite:
        with pytest.raises(RuntimeError, match="could not send its answer .*Unpicklable: bad bound"):
            suite.run_suite([table], [], {})
        with pytest.raises(RuntimeError, match="could not send its answer .*outcomes not sent"):
            suite.run_suite([table], [], {})


def test_the_suite_process_is_forked_only_by_a_caller_with_one_python_thread(sample_run):
    """A caller running another Python thread (``_another_python_thread``) that makes a ``SuiteProcess`` gets a
    spawned one, with the same outcomes as the caller's own process."""
    from pipeline.validate.suite_process import fork_safe_start_method

    runs, known_hw = _validated(sample_run)
    duplicates = duplicates_by_run_id(runs)
    with _another_python_thread():
        assert fork_safe_start_method() == "spawn"
        with SuiteProcess() as suite:
            assert suite.start_method == "spawn" and "by spawn" in suite.where
            spawned = suite.run_suite([runs], known_hw, duplicates)
    assert spawned == InProcessSuite().run_suite([runs], known_hw, duplicates)


def test_a_caller_with_one_python_thread_forks_the_suite_process(tmp_path):
    """``python -m pipeline run`` makes its ``SuiteProcess`` first thing: a fork (the process has no other Python
    thread then)."""
    assert _printed_by_a_fresh_interpreter("from pipeline.validate.suite_process import SuiteProcess\n"
                                           "with SuiteProcess() as suite:\n"
                                           "    print(suite.start_method)\n") == "fork"


def test_the_runs_suite_is_a_forked_process_in_a_caller_with_one_python_thread():
    """``suite_for_a_run`` in a fresh interpreter: a ``SuiteProcess`` made by fork."""
    assert _printed_by_a_fresh_interpreter(
        "from pipeline.validate.suite_process import suite_for_a_run\n"
        "with suite_for_a_run() as suite:\n"
        "    print(type(suite).__name__, suite.start_method, suite.pid is not None)\n") == "SuiteProcess fork True"


def test_the_runs_suite_is_in_the_callers_process_when_another_python_thread_runs():
    """``suite_for_a_run`` with a second Python thread running (started by ``_thread``, which ``threading`` does not
    list): the suite in the caller's process; closing it is harmless."""
    from pipeline.validate.suite_process import suite_for_a_run

    with _another_python_thread(), suite_for_a_run() as suite:
        assert type(suite) is InProcessSuite and suite.where == "in the check's own process"


def test_an_unknown_start_method_is_refused():
    with pytest.raises(ValueError, match="'forkserver' is not fork or spawn"):
        SuiteProcess(start_method="forkserver")
