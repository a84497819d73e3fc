"""Shared fixtures: paths to the bundled sample and the real logs, the sample pipeline run once per session
(``sample_run``, read-only; ``sample_run_copy`` for tests that change it), and a helper that runs the whole
Dagster job against a temporary warehouse and mart folder (``run_pipeline``, for other folders or run configs),
and a headless Chromium for each browser test (``browser``).

In CI (``CI=true``) the suite refuses to start without the real-log folder (``REAL_LOGS``), Chromium or PostgreSQL's server
binaries, so the tests that need them cannot skip unnoticed; locally those tests skip with the reason."""

import compileall
import glob
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from pipeline.io.storage import read_mart

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "data" / "sample"


def checkout_root(start: Path = REPO) -> Path:
    """The git checkout the tests belong to: ``start`` or its nearest ancestor holding ``.git`` (``start`` itself
    when none does). Mutation runs execute the tests from a copy inside the checkout (mutmut's ``mutants/``, the SQL
    runner's ``mutants/sql-workers/<n>/``, tests/mutation/README.md), and the real-log folder sits beside the
    checkout, not beside the copy."""
    return next((folder for folder in (start, *start.parents) if (folder / ".git").exists()), start)


REAL_LOGS = checkout_root().parent / "shared" / "real-logs"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# headless Chromium in a container: no sandbox, GPU or background traffic (no request may leave localhost)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
POSTGRES_INITDB = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def missing_in_ci() -> list[str]:
    """What the skipping tests need and this machine lacks: the real logs, Chromium, PostgreSQL's server."""
    missing = []
    if not REAL_LOGS.is_dir():
        missing.append(f"real logs ({REAL_LOGS}: clone with ../shared beside the repo)")
    if CHROMIUM is None:
        missing.append("chromium (apt-get install chromium)")
    if not POSTGRES_INITDB:
        missing.append("PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb: apt-get install postgresql)")
    return missing


def pytest_sessionstart(session):
    """In CI a test that would skip for want of these is a failure: stop before any test, in one line. Then
    compile the package's (and the benchmarks') bytecode once, for the child Python processes the tests start."""
    if os.environ.get("CI", "").lower() == "true" and (missing := missing_in_ci()):
        pytest.exit(f"CI=true but missing: {'; '.join(missing)}", returncode=1)
    # Many tests start child interpreters (`python -m pipeline`, the Dagster CLI, Dagster's step and run workers).
    # Where the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE set), each child
    # would compile the whole package again; compiled here once, they read it (a changed source recompiles).
    # Once per session: in the controlling process, before xdist starts its workers (an xdist worker has
    # `workerinput`).
    if not hasattr(session.config, "workerinput"):
        for package in ("pipeline", "benchmarks"):
            compileall.compile_dir(REPO / package, quiet=1)


# The fixtures that run the whole Dagster job (seconds each). mutmut runs its selected tests once per mutant, so a
# test needing one of these would cost seconds per mutant; it is left out of mutmut's runs (recognised by the
# MUTANT_UNDER_TEST it sets) and still runs in the suite. The SQL mutant runner names its tests itself
# (tests/mutation/sql_mutants.py).
WHOLE_PIPELINE_FIXTURES = frozenset({"run_pipeline", "sample_run", "sample_run_copy", "sample_run_two_books",
                                     "sample_rerun", "_sample_session_run", "_two_books_session_run",
                                     # module fixtures of a test file that run the whole job themselves; mutmut
                                     # maps every function the job calls to their tests, so each mutant of any
                                     # rule module would run them again
                                     "honest", "slo_run", "_good_night"})


def in_mutation_run() -> bool:
    """Whether this pytest session runs under mutmut (which sets MUTANT_UNDER_TEST in every pytest it starts)."""
    return bool(os.environ.get("MUTANT_UNDER_TEST"))


def pytest_collection_modifyitems(config, items):
    """In a mutation run, deselect the tests that request a ``WHOLE_PIPELINE_FIXTURES`` fixture (too slow to run
    once per mutant). In a worker of a work-stealing session (``-n N``, ``pytest_xdist_make_scheduler``), order the
    tests into the workers' first blocks (``long_first``). Otherwise change nothing."""
    if in_mutation_run():
        keep, slow = [], []
        for item in items:
            (slow if WHOLE_PIPELINE_FIXTURES & set(getattr(item, "fixturenames", ())) else keep).append(item)
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = keep
        return
    workerinput = getattr(config, "workerinput", {})
    if workerinput.get(WORKSTEAL_INPUT) and workerinput.get("workercount", 1) > 1:
        items[:] = long_first(items, workerinput["workercount"])


# Scheduling under `-n N` (README's test command runs `-n 2`). xdist's default `load` hands each worker long runs of
# consecutive tests, so where the few tests that take most of the time land is an accident of their file names: two
# of them on one worker, or one started last, leave the other worker idle at the end. Work stealing (xdist's
# `worksteal`) gives worker i the i-th of N contiguous blocks of the collection and lets an idle worker take the
# back half of another's remaining tests; `long_first` puts the tests marked `long` (pyproject's marker) at the front
# of those blocks, dealt round-robin by tier, so each worker starts on its share of them and only short tests are
# left to steal at the end.

# the key of xdist's workerinput telling a worker that the controller schedules by work stealing (a worker's own
# config says dist "no", whatever the controller's is)
WORKSTEAL_INPUT = "inference_frontier_worksteal"


def _steals(config) -> bool:
    """Whether this controller schedules by work stealing: xdist's default distribution (``load``) or
    ``--dist worksteal``; any other ``--dist`` is left to xdist."""
    return config.getvalue("dist") in ("load", "worksteal")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """(controller) xdist's work-stealing scheduler when ``_steals``, the distribution ``long_first`` orders the
    collection for; else None (xdist's own choice)."""
    if _steals(config):
        from xdist.scheduler import WorkStealingScheduling

        return WorkStealingScheduling(config, log)
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(controller) Tell each worker, through its ``workerinput``, whether the session schedules by work stealing,
    so its ``pytest_collection_modifyitems`` orders the collection for it."""
    node.workerinput[WORKSTEAL_INPUT] = _steals(node.config)


def long_tier(item) -> int | None:
    """The tier of a test marked ``@pytest.mark.long(tier)``, None when unmarked. Tier 1: the first test each worker
    runs; tier 2: the next; ``long`` without an argument is tier 3. Tiers pair a test that mostly waits on the
    processes it starts (the README's Dagster commands, the PostgreSQL run) with one that computes in the worker,
    so the two workers' first tests do not both leave a core idle."""
    mark = item.get_closest_marker("long")
    if mark is None:
        return None
    return int(mark.args[0]) if mark.args else 3


def long_first(items: list, workers: int) -> list:
    """``items`` reordered for ``workers`` work-stealing workers: the collection is cut into the blocks xdist's
    ``WorkStealingScheduling`` gives them (block i: ``len(remaining) // (workers - i)`` items, in order); each block
    starts with its share of the ``long`` tests, dealt to the blocks round-robin by tier (ties: collection order),
    and is filled up with the other tests in collection order. A ``long`` test that uses a module-scoped fixture
    takes its whole module along (the fixture is then set up once, not once here and once where the rest of the
    module runs). The same items, each once; deterministic, so every worker collects the same order (xdist
    requires it)."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    marked = sorted((item for item in items if long_tier(item) is not None), key=long_tier)
    heads: list[list] = [[] for _ in range(workers)]
    taken: set[int] = set()
    dealt = 0
    for item in marked:
        if id(item) in taken:
            continue
        unit = [item]
        if _uses_module_fixture(item):
            unit += [other for other in modules[item.nodeid.split("::")[0]] if id(other) not in taken | {id(item)}]
        taken.update(map(id, unit))
        heads[dealt % workers].extend(unit)
        dealt += 1
    rest = [item for item in items if id(item) not in taken]
    ordered, remaining = [], len(items)
    for block, head in enumerate(heads):
        size = remaining // (workers - block)
        fill = max(0, size - len(head))
        ordered += head + rest[:fill]
        rest = rest[fill:]
        remaining -= len(head) + fill
    return ordered + rest


def _uses_module_fixture(item) -> bool:
    """Whether the test requests a module-scoped fixture (directly or through another fixture)."""
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(defs and defs[-1].scope == "module" for defs in definitions.values())


@pytest.fixture
def browser():
    """Headless Chromium (Debian's ``chromium``, driven by Playwright) for one test, closed when it ends. Skips the
    test when Chromium is missing. Not shared between tests: a live Playwright keeps its event loop running in
    the test process's main thread, and Dagster runs (and anything calling ``asyncio.run``) in later tests of the
    same process would then run under it."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def real_logs() -> Path:
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real logs not found at {REAL_LOGS} (clone with ../shared beside the repo)")
    return REAL_LOGS


def load_json(path: Path):
    """The file's own numbers, read with the standard library (independent of our parsers)."""
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class PipelineRun:
    result: dg.ExecuteInProcessResult
    out_dir: Path
    db_path: Path

    def mart(self, name: str):
        return read_mart(self.out_dir, name)

    def check_results(self) -> dict[str, bool]:
        return {
            e.event_specific_data.check_name: e.event_specific_data.passed
            for e in self.result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        }


@pytest.fixture
def run_pipeline(tmp_path, monkeypatch):
    """Callable: materialize everything over ``raw_dir`` (all stages, all partitions) with a tmp DuckDB and marts."""

    def run(raw_dir: Path, run_config: dict | None = None, instance: dg.DagsterInstance | None = None) -> PipelineRun:
        out_dir, db_path = tmp_path / "marts", tmp_path / "warehouse.duckdb"
        monkeypatch.setenv("PIPELINE_RAW_DIR", str(raw_dir))
        monkeypatch.setenv("PIPELINE_OUT_DIR", str(out_dir))
        monkeypatch.setenv("PIPELINE_DB_PATH", str(db_path))
        from pipeline.__main__ import materialize_all

        return PipelineRun(materialize_all(instance or dg.DagsterInstance.ephemeral(), run_config), out_dir, db_path)

    return run


def _materialize_sample(out_dir: Path, db_path: Path, run_config: dict | None = None) -> PipelineRun:
    from pipeline.__main__ import materialize_all

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIPELINE_RAW_DIR", str(SAMPLE_DIR))
        mp.setenv("PIPELINE_OUT_DIR", str(out_dir))
        mp.setenv("PIPELINE_DB_PATH", str(db_path))
        result = materialize_all(dg.DagsterInstance.ephemeral(), run_config)
    return PipelineRun(result, out_dir, db_path)


# The report's charts for the Dagster UI, which a run on a throwaway instance leaves out unless asked
# (pipeline.__main__.with_report_config): the shared sample run draws them, for the tests of what the UI shows.
UI_CHARTS_CONFIG = {"ops": {"comparisons__report": {"config": {"ui_charts": True}}}}


@pytest.fixture(scope="session")
def _sample_session_run(tmp_path_factory) -> PipelineRun:
    tmp = tmp_path_factory.mktemp("sample-run")
    return _materialize_sample(tmp / "marts", tmp / "warehouse.duckdb", UI_CHARTS_CONFIG)


def _stamps(run: PipelineRun) -> dict[str, tuple[int, int]]:
    files = [p for p in run.out_dir.rglob("*") if p.is_file()] + [run.db_path]
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in files}


@pytest.fixture
def sample_run(_sample_session_run, monkeypatch) -> PipelineRun:
    """The bundled sample through the whole pipeline, run once per session and shared: read it, never change it
    (the test fails if its marts or warehouse changed). ``PIPELINE_*`` point at it for the test, as after
    ``run_pipeline(SAMPLE_DIR)``. Tests that change marts or the warehouse take ``sample_run_copy``."""
    yield from _read_only(_sample_session_run, monkeypatch, "the shared sample run (use sample_run_copy)")


def _read_only(run: PipelineRun, monkeypatch, what: str):
    """Point ``PIPELINE_*`` at a shared session run for one test, and fail the test if it changed the run's marts
    or warehouse."""
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(SAMPLE_DIR))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(run.out_dir))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(run.db_path))
    before = _stamps(run)
    yield run
    assert _stamps(run) == before, f"a test changed {what}"


# A second price book beside the default one: MI355X discounted in every tier ($/GPU-h).
OTHER_BOOK = "mi355x-discount"
TWO_BOOKS_CONFIG = {"ops": {"metrics__price_books": {"config": {"overrides": [
    {"price_book": OTHER_BOOK, "hw": "mi355x", "hyperscaler_usd_per_gpu_hour": 1.0, "neocloud_usd_per_gpu_hour": 1.2,
     "rental_usd_per_gpu_hour": 1.5}]}}}}


@pytest.fixture(scope="session")
def _two_books_session_run(tmp_path_factory) -> PipelineRun:
    tmp = tmp_path_factory.mktemp("sample-two-books")
    return _materialize_sample(tmp / "marts", tmp / "warehouse.duckdb", TWO_BOOKS_CONFIG)


@pytest.fixture
def sample_run_two_books(_two_books_session_run, monkeypatch) -> PipelineRun:
    """``sample_run`` with the second price book ``OTHER_BOOK`` (run config ``TWO_BOOKS_CONFIG``), run once per
    session and shared read-only the same way."""
    yield from _read_only(_two_books_session_run, monkeypatch, "the shared two-book sample run")


@pytest.fixture(scope="session")
def sample_rerun(_sample_session_run, tmp_path_factory) -> PipelineRun:
    """The sample run a second time over a copy of the shared run's warehouse, marts and parse cache (a fresh
    Dagster instance, as a second ``run_pipeline(SAMPLE_DIR)`` in the same folders), for the repeatability
    tests that compare the two."""
    tmp = tmp_path_factory.mktemp("sample-rerun")
    out_dir, db_path = _copy_run(_sample_session_run, tmp)
    return _materialize_sample(out_dir, db_path)


def _copy_run(src: PipelineRun, dest: Path) -> tuple[Path, Path]:
    out_dir, db_path = dest / "marts", dest / "warehouse.duckdb"
    shutil.copytree(src.out_dir, out_dir, symlinks=True)  # relative links: current, runs -> current/runs
    shutil.copy2(src.db_path, db_path)
    cache = Path(f"{src.db_path}.parse_cache")
    if cache.is_dir():
        shutil.copytree(cache, Path(f"{db_path}.parse_cache"))
    return out_dir, db_path


@pytest.fixture
def sample_run_copy(_sample_session_run, tmp_path, monkeypatch) -> PipelineRun:
    """A private copy of the shared sample run (marts, warehouse, parse cache) at ``run_pipeline``'s paths under
    ``tmp_path``, for tests that change it; ``run_pipeline(SAMPLE_DIR)`` in the same test writes over it, as a
    second run in the same folders."""
    src = _sample_session_run
    out_dir, db_path = _copy_run(src, tmp_path)
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(SAMPLE_DIR))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(out_dir))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(db_path))
    return PipelineRun(src.result, out_dir, db_path)


def unrestricted(table):
    """The rows of a ``frontiers`` or ``comparisons`` mart built from every run (``slo = 'none'``), without the
    ``slo`` column: the rows these marts held before SLO-restricted rows were added beside them."""
    import pyarrow.compute as pc

    if "slo" not in table.column_names:
        return table
    return table.filter(pc.equal(table["slo"], "none")).drop_columns(["slo"])


def reference_knowing_models(raw: Path, dest: Path, active_params_b: float = 37.0) -> Path:
    """A copy of ``data/reference`` at ``dest`` whose ``model_active_params.csv`` also lists every model key a
    sidecar under ``raw`` states (normalized as ingest does) and the table lacks, at ``active_params_b`` billion activated parameters:
    how a user whose models the bundled table lacks makes them known (an unknown size is quarantined as
    ``unknown_model_size``). Point ``PIPELINE_REFERENCE_DIR`` at the returned folder."""
    import csv

    from pipeline.ingest.keys import normalize_model

    shutil.copytree(REPO / "data" / "reference", dest)
    with open(dest / "model_active_params.csv", encoding="utf-8", newline="") as handle:
        listed = {row["model"] for row in csv.DictReader(handle)}
    models = set()
    for sidecar in raw.rglob("*.meta.json"):
        value = json.loads(sidecar.read_text(encoding="utf-8")).get("model")
        if isinstance(value, str) and normalize_model(value):
            models.add(normalize_model(value))
    with open(dest / "model_active_params.csv", "a", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        for model in sorted(models - listed):
            writer.writerow([model, active_params_b, "a test's model"])
    return dest
