"""Time the commands people wait for and name each target met or NOT met: the README command, the CLI end to
end beside the benchmark's asset work, a nightly batch, a one-partition backfill, a sensor-launched run and a
sensor tick under the date-folder layout (docs/performance.md has the figures and the machine state).

    python benchmarks/cli.py --quick          # the README command on the sample + a nightly batch onto 10k (~2 min)
    python benchmarks/cli.py                  # + the CLI at 100k beside its asset work (and that benchmark's
                                              #   nightly batch onto 100k), a backfill and a sensor run (10k),
                                              #   the date-folder tick onto 100k
    python benchmarks/cli.py --million        # + the CLI and the date-folder tick onto 1M (tens of minutes)
    python benchmarks/cli.py --tests          # + README's test command, once (minutes; alone: --tests --no-runs)
    python benchmarks/cli.py --only tick-1m   # only the named targets (repeatable; names in TARGETS)
    python benchmarks/cli.py --only scale-100k --only scale-1m   # README's table rows: benchmarks/run.py three
                                              #   times at each scale (1M: about half an hour a run)

Targets:
- README command (``python -m pipeline run`` on the sample, no ``DAGSTER_HOME``) <= 5 s wall, cold (a fresh
  checkout: no warehouse, no marts, no parse cache, no ``__pycache__`` of ``pipeline/``) and warm (the same
  command again), three times each: median (min-max);
- ``python -m pipeline run`` end to end (report included) on a generated folder <= 1.3x the benchmark's asset
  work on the same folder (``benchmarks/run.py``'s full refresh + asset checks + HTML report, cold cache both);
- a nightly batch of 2,000 runs <= 2 s of asset work (``benchmarks/run.py``'s batch: the tick and the run's
  assets), onto 10k (three times) and onto 100k (once, the run beside which the CLI is timed);
- the README command's peak resident set (the largest of one process: a run or its GX suite process), printed
  without a target;
- a one-partition backfill (``dagster asset materialize --partition``, the README's selection, with the run
  config ``execution: {config: {in_process: true}}``) and a run the sensor launches (``dg.execute_job`` of
  ``refresh_all`` for the tick's date with the request's run config, as the daemon starts it, which asks for the
  same) <= 1.5x their step work: the run's wall (run start to end, the instance's record) against the sum of
  its steps' own times (STEP_START to STEP_SUCCESS), both on ``DAGSTER_HOME``'s instance with the code
  location's executor (``pipeline/defs/jobs.py``) and pools (``dagster.yaml``);
- a sensor tick that finds a night of 2,000 runs in a new date folder, with ``PIPELINE_RAW_LAYOUT=date-folders``,
  <= 3 s (the target is for 1M; 100k is printed as the smaller case);
- README's performance table, one scale a target (``scale-100k``, ``scale-1m``): ``benchmarks/run.py`` three
  times, its full refresh <= 15 s per 100,000 runs, peak RSS <= 2 GiB, nightly batch <= 2 s, each as median
  (min-max) beside the asset checks, the HTML report and DuckDB's scan of the same files;
- README's test command (its pytest part, read from README's "Tests" block and run in this checkout's venv)
  <= 150 s wall on the 2-core machine, once (``--tests``; the run's own summary line is printed beside it).

Each figure is measured three times where the target says so (``--repeat``); the machine's load average is
printed with it, since on a shared machine a busy minute moves every figure.
"""

from __future__ import annotations


def main() -> None:
    """Run the targets the command line selects and print one table (module docstring)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the README command and a nightly batch onto 10k")
    parser.add_argument("--million", action="store_true", help="also the CLI and the date-folder tick onto 1M")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (default 3)")
    parser.add_argument("--tests", action="store_true", help="also README's test command, once")
    parser.add_argument("--no-runs", action="store_true", help="none of the pipeline's targets (with --tests)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-cli"), help="scratch folder")
    parser.add_argument("--only", action="append", choices=list(TARGETS),
                        help="only this target (repeatable); the other options then choose nothing")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.only:
        chosen = list(dict.fromkeys(args.only))
    else:
        runs = not args.no_runs
        chosen = ([*(["readme", "batch"] if runs else []),
                   *(["cli", "backfill", "tick"] if runs and not args.quick else []),
                   *(["tests"] if args.tests else []), *(["cli-1m", "tick-1m"] if runs and args.million else [])])
    verdicts: list[tuple[str, str, bool | None]] = []
    print(f"machine: {os.cpu_count()} cores, load average {_load()} at the start", flush=True)
    for name in chosen:
        verdicts += TARGETS[name](args.work, args.repeat)
    print(f"\ntargets (load average {_load()} at the end):")
    for name, value, met in verdicts:
        verdict = "" if met is None else "met" if met else "NOT met"
        print(f"  {name:<62} {value:<44} {verdict}")


# the imports every function below uses; heavy ones (Dagster, the pipeline) are imported inside the functions
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BATCH = 2_000
BATCH_DATE = "2027-01-15"  # after every date of the generated history (benchmarks/harness.py's)
# the README's backfill selection (README, "For the operator")
BACKFILL_SELECTION = ("metrics/gpu_reference,metrics/price_books,ingest/parsed_runs,ingest/parsed_requests,"
                      "validate/accepted_runs,metrics/run_power,metrics/run_metrics,metrics/run_slo")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _spread(values: list[float]) -> str:
    """``median (min-max)`` in seconds."""
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def _env(folder: Path, raw: Path | None = None, home: Path | None = None) -> dict[str, str]:
    """The environment of a CLI run whose warehouse, marts and parse cache live under ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_") and k != "DAGSTER_HOME"}
    env.update(PIPELINE_OUT_DIR=str(folder / "marts"), PIPELINE_DB_PATH=str(folder / "warehouse.duckdb"))
    if raw is not None:
        env["PIPELINE_RAW_DIR"] = str(raw)
    if home is not None:
        env["DAGSTER_HOME"] = str(home)
    return env


def _timed_cli(env: dict[str, str], *args: str) -> float:
    """Wall seconds of ``python -m pipeline <args>`` in ``env``.

    Raises:
        RuntimeError: the command failed (its stderr's last lines).
    """
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"python -m pipeline {' '.join(args)} exited {done.returncode}: "
                           f"{done.stderr.strip().splitlines()[-3:]}")
    return seconds


def readme_command(work: Path, repeat: int) -> list[tuple[str, str, bool]]:
    """The README's ``python -m pipeline run`` on the bundled sample, cold then warm, ``repeat`` times."""
    cold, warm = [], []
    for _ in range(repeat):
        folder = Path(tempfile.mkdtemp(dir=work, prefix="readme-"))
        for cache in (ROOT / "pipeline").rglob("__pycache__"):  # a fresh checkout has compiled nothing of its own
            shutil.rmtree(cache, ignore_errors=True)
        cold.append(_timed_cli(_env(folder), "run"))
        warm.append(_timed_cli(_env(folder), "run"))
        shutil.rmtree(folder)
        print(f"  README command: cold {cold[-1]:.2f} s, warm {warm[-1]:.2f} s (load {_load()})", flush=True)
    # the largest resident set of any one command so far (this process's children: each run and its GX process)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return [("README command on the sample, cold <= 5 s", _spread(cold), statistics.median(cold) <= 5),
            ("README command on the sample, warm <= 5 s", _spread(warm), statistics.median(warm) <= 5),
            ("README command on the sample, peak RSS of one process", f"{peak:,.0f} MiB", None)]


def readme_test_command() -> str:
    """The pytest part of README's test command: the last ``&&`` segment of the ``bash`` block under "## Tests"
    (the venv and install before it are this checkout's already).

    Raises:
        ValueError: README has no such block.
    """
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^## Tests\n+```bash\n(.+?)\n```", text, flags=re.M | re.S)
    if block is None:
        raise ValueError("README.md: no ```bash block right under '## Tests'")
    return block.group(1).strip().split("&&")[-1].strip()


def tests_command_timed() -> list[tuple[str, str, bool]]:
    """README's test command (``readme_test_command``) once in this checkout, wall seconds against 150 s."""
    import shlex

    command = readme_test_command()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_") and k != "DAGSTER_HOME"}
    started = time.perf_counter()
    done = subprocess.run(shlex.split(command), cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"  test command: {seconds:.0f} s, exit {done.returncode}: {summary} (load {_load()})", flush=True)
    return [(f"test command ({command}) <= 150 s", f"{seconds:.0f} s, exit {done.returncode}",
             seconds <= 150 and done.returncode == 0)]


def _raw(work: Path, runs: int, date_folders: bool = False) -> Path:
    """The generated folder of ``runs`` runs (``benchmarks/generate.py``) under ``work``, written when missing
    (its own copy: the nights added to it here must not land in a folder another benchmark is reading)."""
    from benchmarks.generate import generate

    raw = work / f"raw-{runs}{'-dated' if date_folders else ''}"
    if not raw.with_name(f"{raw.name}.generated.json").exists():
        print(f"  generating {runs:,} runs under {raw} (not timed)", flush=True)
        generate(runs, raw, date_folders=date_folders)
    return raw


def _benchmark(work: Path, runs: int, batch: int) -> dict:
    """``benchmarks/run.py --runs <runs> --batch <batch>`` in a process of its own; its summary."""
    summary = work / f"bench-{runs}.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--runs", str(runs), "--batch",
                           str(batch), "--raw", str(_raw(work, runs)), "--out", str(work / f"bench-out-{runs}"),
                           "--summary-json", str(summary)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"benchmarks/run.py --runs {runs} exited {done.returncode}: "
                           f"{done.stderr.strip().splitlines()[-3:]}")
    return json.loads(summary.read_text())


def nightly_batch(work: Path, runs: int, repeat: int) -> list[tuple[str, str, bool]]:
    """A nightly batch of ``BATCH`` runs onto ``runs`` (``benchmarks/run.py``'s batch row), ``repeat`` times."""
    seconds = []
    for _ in range(repeat):
        seconds.append(_benchmark(work, runs, BATCH)["batch_s"])
        print(f"  nightly batch of {BATCH:,} onto {runs:,}: {seconds[-1]:.2f} s (load {_load()})", flush=True)
    return [(f"nightly batch of {BATCH:,} onto {runs:,} <= 2 s of asset work", _spread(seconds),
             statistics.median(seconds) <= 2)]


def cli_beside_asset_work(work: Path, runs: int) -> list[tuple[str, str, bool]]:
    """``python -m pipeline run`` over the generated folder of ``runs`` runs (cold: fresh warehouse, marts and
    parse cache) beside the benchmark's full refresh + checks over the same folder, one after the other; the
    same benchmark run's nightly batch of ``BATCH`` runs onto that folder is the batch target's row at this size."""
    bench = _benchmark(work, runs, BATCH)
    asset_work = bench["full_s"] + bench["checks_s"] + bench["report_s"]  # the CLI's run draws the report too
    batch = [(f"nightly batch of {BATCH:,} onto {runs:,} <= 2 s of asset work (one run)", f"{bench['batch_s']:.2f} s",
              bench["batch_s"] <= 2)]
    folder = Path(tempfile.mkdtemp(dir=work, prefix=f"cli-{runs}-"))
    cli = _timed_cli(_env(folder, _raw(work, runs)), "run")
    shutil.rmtree(folder)
    print(f"  CLI onto {runs:,}: {cli:.1f} s; asset work {asset_work:.1f} s (load {_load()})", flush=True)
    return [(f"python -m pipeline run onto {runs:,} <= 1.3x asset work",
             f"{cli:.1f} s vs {asset_work:.1f} s = {cli / asset_work:.2f}x", cli <= 1.3 * asset_work), *batch]


def _run_times(instance, run_id: str) -> tuple[float, float]:
    """(the run's wall: start to end in its record, the sum of its steps' own times), seconds."""
    import dagster as dg

    record = instance.get_run_record_by_id(run_id)
    started: dict[str, float] = {}
    steps = 0.0
    for entry in instance.all_logs(run_id, of_type={dg.DagsterEventType.STEP_START,
                                                    dg.DagsterEventType.STEP_SUCCESS}):
        key = entry.dagster_event.step_key
        if entry.dagster_event.event_type == dg.DagsterEventType.STEP_START:
            started[key] = entry.timestamp
        elif key in started:
            steps += entry.timestamp - started.pop(key)
    return record.end_time - record.start_time, steps


def backfill_and_sensor_run(work: Path, runs: int, repeat: int) -> list[tuple[str, str, bool]]:
    """A one-partition backfill and a sensor-launched run on a ``DAGSTER_HOME`` instance after a full CLI run
    over ``runs`` generated runs, ``repeat`` times each."""
    import dagster as dg

    from pipeline.defs.jobs import IN_PROCESS_RUN_CONFIG

    raw = _raw(work, runs)
    folder = Path(tempfile.mkdtemp(dir=work, prefix=f"runs-{runs}-"))
    home = folder / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = _env(folder, raw, home)
    _timed_cli(env, "run")  # registers every partition and fills the warehouse
    backfill, sensor = [], []
    date = "2024-01-01"  # a date of every generated history
    for _ in range(repeat):
        done = subprocess.run([str(Path(sys.executable).parent / "dagster"), "asset", "materialize", "-m",
                               "pipeline.definitions", "--partition", date, "--select", BACKFILL_SELECTION,
                               "--config-json", json.dumps(IN_PROCESS_RUN_CONFIG)],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"dagster asset materialize exited {done.returncode}: {done.stderr[-500:]}")
        with _environment(env):
            instance = dg.DagsterInstance.get()
            backfill.append(_run_times(instance, instance.get_runs(limit=1)[0].run_id))
    for night in range(repeat):
        batch_dir = raw / f"nightly-cli-{night}"
        _night(batch_dir, f"2027-02-{night + 1:02d}")
        try:
            with _environment(env):
                sensor.append(_sensor_run(dg.DagsterInstance.get(), f"2027-02-{night + 1:02d}"))
        finally:
            shutil.rmtree(batch_dir, ignore_errors=True)
    shutil.rmtree(folder)
    out = []
    for name, pairs in (("one-partition backfill", backfill), ("sensor-launched run", sensor)):
        ratios = [wall / steps for wall, steps in pairs]
        print(f"  {name}: " + ", ".join(f"{w:.1f} s / {s:.1f} s" for w, s in pairs) + f" (load {_load()})")
        out.append((f"{name} onto {runs:,} <= 1.5x its step work",
                    f"{statistics.median(w for w, _ in pairs):.1f} s vs {statistics.median(s for _, s in pairs):.1f}"
                    f" s: {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
                    statistics.median(ratios) <= 1.5))
    return out


class _environment:
    """Set ``env`` in this process for the block (the pipeline's resources read their paths when a run starts)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.saved = env, dict(os.environ)

    def __enter__(self) -> None:
        os.environ.clear()
        os.environ.update(self.env)

    def __exit__(self, *exc) -> None:
        os.environ.clear()
        os.environ.update(self.saved)


def _night(folder: Path, date: str) -> None:
    """A night of ``BATCH`` // 10 generated runs on ``date`` under ``folder`` (a sensor run's size of work)."""
    from benchmarks.generate import generate

    generate(BATCH // 10, folder, seed=11, run_date=date)
    folder.with_name(f"{folder.name}.generated.json").unlink()  # not a file of the raw folder


def _sensor_run(instance, date: str) -> tuple[float, float]:
    """One tick of ``raw_logs_sensor`` on ``instance`` and the run it requests for the night ``date``, launched
    as the daemon does (``dg.execute_job`` of the reconstructable ``refresh_all`` with the request's run config
    and tags); (wall, steps). The tick's other requests (the previous night's folder, removed) are not run."""
    import dagster as dg

    from pipeline.definitions import defs, refresh_all_job
    from pipeline.defs.automation import raw_logs_sensor
    from pipeline.defs.resources import paths_resource

    # no cursor: the tick starts from the state the published marts were built from, as a sensor just enabled
    tick = raw_logs_sensor(dg.build_sensor_context(instance=instance, resources={"paths": paths_resource()}))
    if tick.dynamic_partitions_requests:
        for request in tick.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    (request,) = [r for r in tick.run_requests if r.partition_key == date]
    defs()  # loaded once here, as the daemon's code server holds it
    result = dg.execute_job(dg.reconstructable(refresh_all_job), instance=instance, run_config=request.run_config,
                            tags={**request.tags, "dagster/partition": request.partition_key})
    if not result.success:
        raise RuntimeError(f"the sensor's run for {request.partition_key} failed")
    return _run_times(instance, result.run_id)


def dated_tick(work: Path, runs: int, repeat: int) -> list[tuple[str, str, bool]]:
    """The sensor's tick finding a night of ``BATCH`` runs in a new date folder, onto ``runs`` runs generated in
    the date-folder layout, with the fast path (``raw_dir_state(dated_layout=True)``), ``repeat`` nights."""
    from benchmarks.generate import generate
    from pipeline.defs.automation import raw_dir_state
    from pipeline.defs.partitions import discover_partitions

    raw = _raw(work, runs, date_folders=True)
    cache = work / f"dated-cache-{runs}"
    shutil.rmtree(cache, ignore_errors=True)
    discover_partitions(str(raw), str(cache))  # the full refresh's parse (not timed)
    state = raw_dir_state(raw, cache)  # the first tick after it (a stat scan)
    seconds = []
    try:
        for night in range(repeat):
            generate(BATCH, raw / f"2027-03-{night + 1:02d}", seed=11 + night, run_date=f"2027-03-{night + 1:02d}")
            (raw / f"2027-03-{night + 1:02d}.generated.json").unlink()  # not a file of the raw folder
            started = time.perf_counter()
            state = raw_dir_state(raw, cache, state, dated_layout=True)
            seconds.append(time.perf_counter() - started)
            print(f"  date-folder tick onto {runs:,}: {seconds[-1]:.2f} s (load {_load()})", flush=True)
    finally:
        for night in range(repeat):
            shutil.rmtree(raw / f"2027-03-{night + 1:02d}", ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return [(f"sensor tick, {BATCH:,} runs in a new date folder onto {runs:,} <= 3 s", _spread(seconds),
             statistics.median(seconds) <= 3)]


def scale_rows(work: Path, runs: int, repeat: int) -> list[tuple[str, str, bool]]:
    """README's performance row for one scale: ``benchmarks/run.py --runs <runs> --batch 2000`` ``repeat`` times
    on one generated folder, each from an empty warehouse; the full refresh, the asset checks, the HTML report
    and the nightly batch as ``median (min-max)``, the largest step-wise peak RSS of any run with the row that
    reached it, and the median full refresh over the median DuckDB scan of the same files. Targets as ``benchmarks/run.py`` names them: full
    refresh <= 15 s per 100,000 runs, peak RSS <= 2 GiB, batch <= 2 s."""
    summaries = []
    for _ in range(repeat):
        summaries.append(_benchmark(work, runs, BATCH))
        last = summaries[-1]
        print(f"  onto {runs:,}: full {last['full_s']:.1f} s, checks {last['checks_s']:.1f} s, report "
              f"{last['report_s']:.1f} s, batch {last['batch_s']:.2f} s, peak {last['peak_mib']:,.0f} MiB, DuckDB "
              f"scan {last['duckdb_scan_s']:.2f} s (load {_load()})", flush=True)
    column = {key: [summary[key] for summary in summaries]
              for key in ("full_s", "checks_s", "report_s", "batch_s", "peak_mib", "duckdb_scan_s")}
    full_limit = 15 * runs / 100_000
    scan = statistics.median(column["duckdb_scan_s"])
    return [
        (f"full refresh of {runs:,} <= {full_limit:.0f} s",
         (f"{_spread(column['full_s'])}, {statistics.median(column['full_s']) / scan:.1f}x DuckDB's scan "
          f"({scan:.2f} s)"),
         statistics.median(column["full_s"]) <= full_limit),
        (f"asset checks of {runs:,}", _spread(column["checks_s"]), None),
        (f"HTML report of {runs:,}", _spread(column["report_s"]), None),
        (f"nightly batch of {BATCH:,} onto {runs:,} <= 2 s", _spread(column["batch_s"]),
         statistics.median(column["batch_s"]) <= 2),
        (f"peak RSS onto {runs:,} <= 2 GiB (step-wise, the largest of {repeat})",
         f"{max(column['peak_mib']):,.0f} MiB{_peak_step(summaries)}", max(column["peak_mib"]) <= 2048),
    ]


def _peak_step(summaries: list[dict]) -> str:
    """`` (<row>)``: the benchmark row whose step peak was the largest of all the runs' rows, or nothing for
    summaries written without their rows' peaks."""
    peaks = [(mib, row) for summary in summaries for row, mib in summary.get("step_peaks_mib", {}).items()]
    return f" ({max(peaks)[1]})" if peaks else ""


# Each target by name (``--only``): a function of (scratch folder, repeats) giving (target, figure, met) rows.
TARGETS = {
    "readme": readme_command,
    "batch": lambda work, repeat: nightly_batch(work, 10_000, repeat),
    "cli": lambda work, repeat: cli_beside_asset_work(work, 100_000),
    "backfill": lambda work, repeat: backfill_and_sensor_run(work, 10_000, repeat),
    "tick": lambda work, repeat: dated_tick(work, 100_000, repeat),
    "tests": lambda work, repeat: tests_command_timed(),
    "cli-1m": lambda work, repeat: cli_beside_asset_work(work, 1_000_000),
    "tick-1m": lambda work, repeat: dated_tick(work, 1_000_000, repeat),
    "scale-100k": lambda work, repeat: scale_rows(work, 100_000, repeat),
    "scale-1m": lambda work, repeat: scale_rows(work, 1_000_000, repeat),
}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
