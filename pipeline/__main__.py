"""Command line for people who do not open the Dagster UI.

    python -m pipeline run                 materialize every asset in one Dagster run, with a progress bar
    python -m pipeline compare --list      the sides the runs mart holds, with run counts
    python -m pipeline compare …           print one comparison table for two sides and chosen targets
    python -m pipeline report              rebuild the static HTML report from the warehouse
    python -m pipeline regressions         the regressions found in the history, before → after
    python -m pipeline overlay RAW_DIR     your own result files as unofficial points on the explorer page
    python -m pipeline partitions          register the raw logs' run dates on DAGSTER_HOME (before a backfill)
    python -m pipeline docs                regenerate docs/marts.md from pipeline/io/columns.py
    python -m pipeline sample              regenerate data/sample from its fixed seed

Paths come from PIPELINE_RAW_DIR, PIPELINE_OUT_DIR, PIPELINE_DB_PATH (README). Runs made here are recorded in
DAGSTER_HOME's instance when DAGSTER_HOME is set (and then show in the UI), else in a throwaway one.

Exit codes: 0 done; 1 a step failed, an input-loss or one-writer guard stopped the run, or a value the marts do
not have (the line says which and lists the valid ones); 2 a blocking check failed (run), or a malformed command
line.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import duckdb

from pipeline.io.storage import read_mart
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK, PRICE_TIERS

def _instance():
    from pipeline.cli.operator import dagster_instance

    return dagster_instance()


def _progress(done: int, total: int, label: str, seconds: float) -> str:
    width = 24
    filled = round(width * done / total)
    return f"[{'#' * filled}{'-' * (width - filled)}] {done:>2}/{total} {label:<60} {seconds:5.1f} s"


def materialize_all(instance, run_config: dict | None = None, on_step=None, on_failure=None, asset_selection=None,
                    expectation_suite=None):
    """Materialize every asset and run every check as one Dagster run of the job ``refresh_all``, over every
    run-date partition of PIPELINE_RAW_DIR.

    Partitions are registered first (one per run date found, plus ``undated``); the run is a single-run backfill
    over the whole range (partitioned and unpartitioned assets together). Dagster orders the steps and stops
    everything downstream of a failed step or a failed blocking check; ``comparisons/published_marts`` is last, so
    a run that stops publishes nothing (its staging folder is discarded here). Every step runs in this process
    on one open warehouse (``pipeline.defs.resources.SharedWarehouse``: opened at the first step, closed when the
    run ends; the run holds the warehouse's write lock throughout), except in a run of ``asset_selection``, whose
    steps open the warehouse per use.

    Args:
        instance: the Dagster instance (ephemeral, or DAGSTER_HOME's, where the run then shows in the UI).
        run_config: the run's config (e.g. logger level, price-book overrides, ``allow_shrink``). Unless it
            configures ``comparisons__report``, the report gets ``report_config(instance)`` (no charts for the
            Dagster UI on a throwaway instance).
        on_step: called as ``on_step(done, total, label, seconds)`` as each step ends (succeeded or failed):
            ``label`` is the asset key (``validate/accepted_runs``) or the check's name (``… (failed)`` for a
            failed step), ``seconds`` the wall time since the previous step ended.
        on_failure: called with the Dagster event of each failed step (``STEP_FAILURE``) and each failed blocking
            check (``ASSET_CHECK_EVALUATION``) as it happens, before ``on_step`` for that step.
        asset_selection: the asset keys to materialize (with their checks), e.g. the stages up to the metrics
            (``python -m pipeline overlay``); None = every asset. A subset never reaches
            ``comparisons/published_marts``, so it publishes nothing.
        expectation_suite: where the GX suite runs (``pipeline.validate.suite_process``), e.g. the
            ``SuiteProcess`` ``run`` started first thing; None = the check step's process. Not used with
            ``asset_selection`` (Dagster refuses a resource override there).
    Returns:
        The run's ``ExecuteInProcessResult``.
    Raises:
        FileNotFoundError, PermissionError: the raw folder is missing or cannot be listed (before any step).
    """
    from pipeline.definitions import defs
    from pipeline.io.heap import frozen_heap

    definitions = defs()
    with frozen_heap():  # the loaded modules and definitions are not walked by each collection of the run
        return _materialize(definitions, instance, run_config, on_step, on_failure, asset_selection,
                            expectation_suite)


def _materialize(definitions, instance, run_config, on_step, on_failure, asset_selection, expectation_suite):
    """``materialize_all``'s run of ``definitions``' job ``refresh_all`` (its arguments, its result)."""
    from pipeline.defs.partitions import (
        all_partitions_tags,
        discover_partitions,
        register_partitions,
        warehouse_run_dates,
    )
    from pipeline.defs.resources import GENERATION_TAG, SNAPSHOT_TAG, SUITE_RESOURCE, warehouse_resource
    from pipeline.io.generations import cli_generation_id, discard
    from pipeline.io.paths import env_path, parse_cache_dir

    job = definitions.resolve_job_def("refresh_all")
    keys, snapshot = discover_partitions(env_path("PIPELINE_RAW_DIR"), parse_cache_dir())
    # every date: the scan's, and those the warehouse still holds rows of (their runs moved or left)
    register_partitions(instance, sorted(set(keys) | set(warehouse_run_dates(env_path("PIPELINE_DB_PATH")))))
    labels = {a.node_def.name: _step_label(a) for a in definitions.resolve_asset_graph().assets_defs}
    total, done, last = len(job.graph.node_dict), 0, time.perf_counter()

    def step_ended(entry) -> None:  # Dagster calls this on each event of the run, in the run's thread
        nonlocal done, last
        event = entry.dagster_event
        if event is None:
            return
        if on_failure and (event.event_type_value == "STEP_FAILURE" or _failed_blocking(event)):
            on_failure(event)
        if on_step and event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
            done, now = done + 1, time.perf_counter()
            label = labels.get(event.step_key, event.step_key)
            on_step(done, total, f"{label} (failed)" if event.is_step_failure else label, now - last)
            last = now

    run_config = with_report_config(run_config, instance, asset_selection)
    run_id = str(uuid.uuid4())  # Dagster's run ids are UUID4 strings; known before the run starts
    instance.add_event_listener(run_id, step_ended)
    generation = cli_generation_id()
    result = job.execute_in_process(
        instance=instance, run_config=run_config, raise_on_error=False, run_id=run_id,
        **({"asset_selection": list(asset_selection)} if asset_selection is not None else {}),
        # the ingest reads the folder as the discovery just scanned it, from the parse cache (no second scan)
        tags={GENERATION_TAG: generation, **all_partitions_tags(instance),
              **({SNAPSHOT_TAG: snapshot} if snapshot else {})},
        # every step runs in this process: one open warehouse for the whole run (SharedWarehouse says why); a run
        # of selected assets keeps the per-use warehouse, as Dagster refuses a resource override on a selection
        **({"resources": {"warehouse": warehouse_resource(shared=True),
                          **({SUITE_RESOURCE: expectation_suite} if expectation_suite is not None else {})}}
           if asset_selection is None else {}),
    )
    if not result.success:
        discard(Path(env_path("PIPELINE_OUT_DIR")), generation)  # nothing of it is published
    return result


def _step_label(assets_def) -> str:
    """How the progress bar names a step: its asset key, else the check it runs (``check
    metrics/run_metrics:metrics_finite_and_positive``), else the number of checks and their asset."""
    if assets_def.keys:
        return ", ".join(sorted(key.to_user_string() for key in assets_def.keys))
    checks = sorted(assets_def.check_keys, key=lambda c: c.name)
    if len(checks) == 1:
        return f"check {checks[0].asset_key.to_user_string()}:{checks[0].name}"
    return f"{len(checks)} checks of {', '.join(sorted({c.asset_key.to_user_string() for c in checks}))}"


def _failed_blocking(event) -> bool:
    """Whether a Dagster event is the evaluation of a blocking (ERROR) check that failed."""
    return (event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed
            and event.event_specific_data.severity.value == "ERROR")


def failed_blocking_checks(result) -> list:
    """The ``AssetCheckEvaluation`` of every blocking (ERROR) check that failed in ``result``."""
    return [e.event_specific_data for e in result.all_events if _failed_blocking(e)]


def failure_line(event) -> str | None:
    """The one line ``run`` prints for a failure event: ``BLOCKING check failed: <asset> <check>`` for a failed
    blocking check, ``<step>: <root cause>`` for a failed step, None for the step failure a failed blocking check
    causes (the check's own line names it)."""
    if _failed_blocking(event):
        data = event.event_specific_data
        return f"BLOCKING check failed: {data.asset_key.to_user_string()} {data.check_name}"
    error = event.event_specific_data.error
    if "DagsterAssetCheckFailedError" in (error.cls_name or ""):
        return None
    return f"{event.step_key}: {_root_cause(error)}"


def unprinted_causes(events, printed: list[str]) -> list[str]:
    """The cause lines a stopped run still owes the user after its listener printed ``printed``: the
    ``failure_line`` of each step failure and failed blocking check the listener did not see (it runs on
    Dagster's event thread, which can lag the run's end), and, when no line at all names a cause, the root
    cause of the first step failure whatever its kind: a stopped run never ends without one.

    Args:
        events: the run's Dagster events (``ExecuteInProcessResult.all_events``), in order.
        printed: the lines already printed, in order.
    Returns:
        The lines to print, in order (possibly none).
    """
    owed: list[str] = []
    for event in events:
        line = failure_line(event) if event.is_step_failure or _failed_blocking(event) else None
        if line is not None and line not in printed and line not in owed:
            owed.append(line)
    failures = [e for e in events if e.is_step_failure]
    if not printed and not owed and failures:
        owed.append(f"{failures[0].step_key}: {_root_cause(failures[0].event_specific_data.error)}")
    return owed


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    # first thing, before this process opens a database or starts a thread: the GX suite's own process (forked,
    # when this process has no other Python thread), which imports Great Expectations on the other core while
    # this one loads the job and runs the first steps
    from pipeline.validate.suite_process import suite_for_a_run

    with suite_for_a_run() as suite:
        return _run_with(args, started, suite)


def _run_with(args: argparse.Namespace, started: float, suite) -> int:
    """``run``'s work, the GX suite running in ``suite`` (``pipeline.validate.suite_process.suite_for_a_run``)."""
    from pipeline.io.paths import env_path

    # CRITICAL keeps the terminal for the progress bar and the one-line causes printed below; every event,
    # tracebacks included, is still in the run's log.
    # the input-loss guards (the ingest's scan, the publish's accepted runs) and the one-writer guard, alike
    guards = {"allow_shrink": bool(getattr(args, "allow_shrink", False)),
              "switch_warehouse": bool(getattr(args, "switch_warehouse", False))}
    run_config = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
                  "ops": {"ingest__parsed_runs": {"config": guards},
                          "comparisons__published_marts": {"config": guards}}}
    from pipeline.defs.resources import check_warehouse
    from pipeline.io.paths import OutputLocationError, check_output_locations

    try:
        check_output_locations()
        instance = _instance()
        notice = check_warehouse(env_path("PIPELINE_DB_PATH"))
    except (OutputLocationError, duckdb.Error) as exc:
        print(f"pipeline not started: {(str(exc).strip().splitlines() or [type(exc).__name__])[0]}", file=sys.stderr)
        return 1
    if notice:
        print(notice, file=sys.stderr)
    printed: list[str] = []

    def failed(event) -> None:  # the cause as it happens, before the failed step's progress bar
        line = failure_line(event)
        if line is not None:
            print(line, file=sys.stderr, flush=True)
            printed.append(line)

    try:
        result = materialize_all(instance, run_config, on_step=lambda done, total, label, seconds: print(
            _progress(done, total, label, seconds), flush=True), on_failure=failed, expectation_suite=suite)
    except (FileNotFoundError, PermissionError) as exc:  # the raw folder is missing or cannot be listed
        print(f"pipeline stopped before any step, nothing published: {exc}", file=sys.stderr)
        return 1
    evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    blocking = failed_blocking_checks(result)
    if not result.success or blocking:
        failures = [e for e in result.all_events if e.is_step_failure]
        for line in unprinted_causes(result.all_events, printed):
            print(line, file=sys.stderr)
        where = f" at {failures[0].step_key}" if failures else ""
        why = "downstream numbers would be wrong" if blocking else "nothing after it was published"
        print(f"pipeline stopped{where} after {time.perf_counter() - started:.1f} s: {why}; the previous marts "
              "stay published", file=sys.stderr)
        return 2 if blocking else 1
    elapsed = time.perf_counter() - started
    out_dir = Path(env_path("PIPELINE_OUT_DIR"))
    print()
    print(summary(out_dir, Path(env_path("PIPELINE_RAW_DIR"))))
    failed = [ev for ev in evaluations if not ev.passed]
    print(f"\nchecks:          {len(evaluations) - len(failed)} of {len(evaluations)} passed")
    for ev in failed:
        print(f"  warning: {ev.asset_key.to_user_string()} {ev.check_name}", file=sys.stderr)
    print(f"report:          {out_dir / 'report' / 'index.html'}")
    print(f"wall time {elapsed:.1f} s; warehouse {env_path('PIPELINE_DB_PATH')}")
    return 0


def report_config(instance) -> dict:
    """Run config of ``comparisons/report`` for a CLI run on ``instance``: its charts for the Dagster UI
    (``ReportConfig.ui_charts``) are drawn only when the instance keeps the run (``DAGSTER_HOME`` set), since
    no UI ever shows a throwaway instance's metadata; the HTML report is the same either way."""
    return {"config": {"ui_charts": not instance.is_ephemeral}}


def with_report_config(run_config: dict | None, instance, asset_selection=None) -> dict:
    """``run_config`` (not changed) with ``report_config(instance)`` as the report's config when the run draws the
    report (every asset, or a selection holding ``comparisons/report``) and ``run_config`` does not configure
    it; Dagster refuses config for an op outside the selection, so a selection without the report gets none."""
    import dagster as dg

    run_config = dict(run_config or {})
    ops = dict(run_config.get("ops") or {})
    report_selected = asset_selection is None or dg.AssetKey(["comparisons", "report"]) in set(asset_selection)
    if report_selected and "comparisons__report" not in ops:
        ops["comparisons__report"] = report_config(instance)
    if ops:
        run_config["ops"] = ops
    return run_config


def _root_cause(error) -> str:
    """The first line of the innermost error Dagster wrapped (the user code's own message, e.g. "raw folder … is
    empty"), not Dagster's "Error occurred while executing op …" wrapper."""
    while error.cause is not None:
        error = error.cause
    lines = error.message.strip().splitlines()
    if not lines:
        return error.cls_name or "unknown error"
    # "module.ErrorClass: message", possibly followed by more lines (DuckDB's candidates, hints): the message
    head = next((line for line in lines if line.split(": ", 1)[0].endswith(error.cls_name or "\0")), lines[0])
    return head.split(": ", 1)[1] if head.split(": ", 1)[0].endswith(error.cls_name or "\0") else head


def _report(_: argparse.Namespace) -> int:
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.io.paths import OutputLocationError, env_path

    try:
        instance = _instance()
    except OutputLocationError as exc:
        print(f"report not started: {exc}", file=sys.stderr)
        return 1
    selection = [dg.AssetKey(["comparisons", "report"])]
    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=instance, raise_on_error=False, asset_selection=selection,
        run_config=with_report_config({"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}, instance,
                                      selection))
    if not result.success:
        causes = [_root_cause(e.event_specific_data.error) for e in result.all_events if e.is_step_failure]
        print(f"report failed ({'; '.join(causes) or 'see the run log'}): the warehouse lacks what the report "
              "reads; materialize the pipeline first (python -m pipeline run)", file=sys.stderr)
        return 1
    print(Path(env_path("PIPELINE_OUT_DIR")) / "report" / "index.html")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from pipeline.cli.compare import run_compare
    from pipeline.io.paths import env_path

    return run_compare(args, Path(env_path("PIPELINE_OUT_DIR")))


def _regressions(args: argparse.Namespace) -> int:
    from pipeline.cli.regressions import run_regressions
    from pipeline.io.paths import env_path

    return run_regressions(args, Path(env_path("PIPELINE_OUT_DIR")))


def _overlay(args: argparse.Namespace) -> int:
    from pipeline.cli.overlay import run_overlay
    from pipeline.io.paths import env_path

    return run_overlay(args, Path(env_path("PIPELINE_OUT_DIR")))


def summary(out_dir: Path, raw_dir: Path) -> str:
    """Counts from the marts and one comparison table, as printed after ``run``."""
    runs, quarantine, comparisons = (read_mart(out_dir, name) for name in ("runs", "quarantine", "comparisons"))
    slo_rows = read_mart(out_dir, "comparisons_slo").num_rows
    ids = comparisons.column("comparison_id").to_pylist()
    reasons = Counter(quarantine.column("reason_code").to_pylist())
    not_runs = {code: n for code, n in reasons.items() if code.startswith("not_a_run_log:")}
    rejected = {code: n for code, n in reasons.items() if code not in not_runs}
    lines = [
        f"raw logs:        {raw_dir}",
        f"marts:           {out_dir}/{{frontiers,comparisons}}{{,_slo}}.parquet, quarantine/, ingest_ledger/, "
        f"runs/, trends/, requests/, run_slo/ (<model>/<run_date>/)",
        f"runs accepted:   {_runs_line(runs)}",
        f"quarantined:     {sum(rejected.values())} rows {_by_reason(rejected)}",
        f"not run logs:    {sum(not_runs.values())} files recorded in quarantine {_by_reason(not_runs)}",
        f"comparisons:     {len(set(ids))} ({comparisons.num_rows} rows)",
    ]
    lines.append(f"with SLOs:       {slo_rows} rows restricted to runs meeting an SLO (comparisons_slo.parquet)")
    books = sorted(set(comparisons.column("price_book").to_pylist()))
    lines.append(f"price books:     {', '.join(books)}")
    default_rows = [r for r in comparisons.to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    if default_rows:
        lines += ["", format_comparison(default_rows, _showcase(default_rows))]
    return "\n".join(lines)


def _by_reason(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{code} {n}" for code, n in sorted(counts.items(), key=lambda kv: -kv[1])) + ")" if counts else ""


def _showcase(rows: list[dict]) -> str:
    """The seed pages' headline kind (spec decoding, MI355X first when present), else the first comparison."""
    spec = [r for r in rows if r["kind"] == "spec_decoding"]
    preferred = [r for r in spec if r["hw"] == "mi355x"] or spec or rows
    return preferred[0]["comparison_id"]


def _runs_line(runs) -> str:
    """Accepted runs counted once each (the mart has one row per run and price book), and the row count when a
    second price book makes them differ."""
    if runs.num_rows == 0 or "run_id" not in runs.column_names:  # an empty mart has no columns
        return "0"
    distinct = len(set(runs.column("run_id").to_pylist()))
    books = len(set(runs.column("price_book").to_pylist()))
    return f"{distinct}" if books <= 1 else f"{distinct} ({runs.num_rows} rows in runs/: one per run and price book, {books} books)"


def format_comparison(rows: list[dict], comparison_id: str, tier: str = "hyperscaler") -> str:
    """One comparison as a terminal table (``pipeline.cli.compare.format_comparison``)."""
    from pipeline.cli.compare import format_comparison as table

    return table(rows, comparison_id, tier)


def _sample(_: argparse.Namespace) -> int:
    from pipeline.ingest.sample_data import main as generate

    generate()
    return 0


def _partitions(args: argparse.Namespace) -> int:
    from pipeline.cli.operator import run_partitions

    return run_partitions(args)


def _docs(args: argparse.Namespace) -> int:
    from pipeline.cli.operator import run_docs

    return run_docs(args)


def date_argument(text: str):
    """A ``YYYY-MM-DD`` command-line value as a date (argparse reports a malformed one, exit 2)."""
    import datetime as dt

    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date YYYY-MM-DD: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m pipeline`` parser: every command and option has help text."""

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__, formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", help="materialize every asset over PIPELINE_RAW_DIR and print a summary", formatter_class=raw,
        description="Materialize every asset in one Dagster run, over every run date of PIPELINE_RAW_DIR; write the "
                    "marts to PIPELINE_OUT_DIR and print a summary.\nExit 0 done; 1 a step failed or an input-loss or "
                    "one-writer guard stopped it (previous marts untouched); 2 a blocking check failed.")
    run.add_argument("--allow-shrink", action="store_true",
                     help="accept a scan with over 20%% fewer runs than the last one, or a publish with over 20%% "
                          "fewer accepted runs than the last confirmed publish (logs, sidecars or GPUs removed on "
                          "purpose), and make this publish the baseline; without it such a run stops unpublished")
    run.add_argument("--switch-warehouse", action="store_true",
                     help="let this run's warehouse (PIPELINE_DB_PATH) publish into a mart folder another warehouse "
                          "published; without it such a run stops before any step's work")
    run.set_defaults(func=_run)
    cmp = sub.add_parser(
        "compare", help="list the sides with runs, or print one comparison of two sides at chosen targets",
        formatter_class=raw,
        description="Two sides of one model and ISL/OSL read at the same interactivity, from the runs mart.\n\n"
                    "  python -m pipeline compare --list\n"
                    "  python -m pipeline compare --model dsr1 --isl 1024 --osl 1024 \\\n"
                    "      --a hw=mi355x,precision=fp4,spec=mtp --b hw=mi355x,precision=fp4,spec=off --targets 40 55 70\n\n"
                    "Values pass the ingest aliases (nvfp4/mxfp4 -> fp4, off -> none, trt -> trtllm, mi355 -> mi355x); "
                    "an unknown one is answered with the valid ones.\nA target marked * is clamped to the side's "
                    "frontier end (not measured there), ~ is sparse.\nExit 0 printed; 1 a value or side the mart does "
                    "not have, the same side twice, or no mart yet; 2 a malformed command line.")
    cmp.add_argument("--list", action="store_true",
                     help="print the sides with runs (model, benchmark_type, isl/osl, hw, precision, spec_decoding, "
                          "framework, runs counted once each; agentic_traces sides have no isl/osl), narrowed by "
                          "--model/--isl/--osl when given")
    cmp.add_argument("--model", help="model key, e.g. dsr1 (see --list)")
    cmp.add_argument("--isl", type=int, help="nominal input sequence length in tokens, e.g. 1024")
    cmp.add_argument("--osl", type=int, help="nominal output sequence length in tokens, e.g. 1024")
    cmp.add_argument("--a", metavar="SIDE",
                     help="side a (the challenger): hw=…,precision=…[,spec_decoding=…][,framework=…]; spec= is short "
                          "for spec_decoding=; unset spec_decoding/framework pool every value (all)")
    cmp.add_argument("--b", metavar="SIDE", help="side b, same form; must differ from side a in at least one key")
    cmp.add_argument("--targets", type=float, nargs="+", metavar="TOK_S_USER",
                     help="interactivities to read both sides at, tok/s/user (default: the band's 25/50/75 %%); "
                          "a target outside a side's frontier is clamped and marked *")
    cmp.add_argument("--price-book", default=DEFAULT_PRICE_BOOK, metavar="NAME",
                     help=f"price book for costs and tok/s/MW (default {DEFAULT_PRICE_BOOK}; --list names the others)")
    cmp.add_argument("--tier", choices=PRICE_TIERS, default="hyperscaler",
                     help="price tier of the table's $/M tok column and cost sentence (default hyperscaler)")
    fmt = cmp.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true",
                     help="print the rows as JSON (comparisons mart columns; with --list, the sides)")
    fmt.add_argument("--csv", action="store_true",
                     help="print the rows as CSV with a header (comparisons mart columns; with --list, the sides)")
    cmp.add_argument("--include-off-nominal", action="store_true",
                     help="keep runs whose measured ISL/OSL is more than 10%% off nominal on the frontiers")
    cmp.set_defaults(func=_compare)
    sub.add_parser("report", help="rebuild the HTML report from the warehouse",
                   description="Rebuild <PIPELINE_OUT_DIR>/report/index.html from the warehouse. Exit 1 when it cannot be "
                               "built (materialize the pipeline first: python -m pipeline run).").set_defaults(func=_report)
    reg = sub.add_parser(
        "regressions", help="print the regressions found in the history, with the numbers before and after",
        formatter_class=raw,
        description="The regressions of the published regressions mart (comparisons/regressions), newest first bad "
                    "date first:\n\n  python -m pipeline regressions --since 2026-07-01 --metric tput_per_gpu\n\n"
                    "Exit 0 printed (also when none match); 1 no regressions mart yet.")
    reg.add_argument("--since", type=date_argument, metavar="YYYY-MM-DD",
                     help="only changes whose first bad date is this date or later")
    reg.add_argument("--metric", action="append", metavar="METRIC",
                     help="only this metric (repeatable): tput_per_gpu, median_tpot_s, p99_ttft_s, failure_rate, "
                          "cost_per_mtok_hyperscaler, tok_s_per_mw")
    reg.add_argument("--improvements", action="store_true", help="list improvements too")
    reg.add_argument("--recovered", action="store_true", help="list recovered changes too")
    reg.add_argument("--json", action="store_true", help="print the mart rows as JSON")
    reg.set_defaults(func=_regressions)
    ovl = sub.add_parser(
        "overlay", help="draw your own result files as unofficial points on the explorer page",
        formatter_class=raw,
        description="Check a folder of your own result files with the pipeline's rules, against a temporary "
                    "warehouse (the published marts and PIPELINE_DB_PATH are not written), and write an explorer "
                    "page over the published marts of PIPELINE_OUT_DIR with those runs as unofficial points and the "
                    "files it quarantined listed with their reasons:\n\n"
                    "  python -m pipeline overlay ~/my-results --out /tmp/overlay --no-open\n\n"
                    "Prints the page's path. Exit 0 written; 1 the folder or the published marts are missing, or no "
                    "run of the folder could be read; 2 a malformed command line.")
    ovl.add_argument("raw_dir", metavar="RAW_DIR", help="folder of result files, sidecars and runs.csv (recursive)")
    ovl.add_argument("--out", metavar="DIR", help="folder to write explorer.html and its assets/ into "
                                                 "(default: a new temporary folder)")
    ovl.add_argument("--no-open", action="store_true", help="do not open the page in the default browser")
    ovl.set_defaults(func=_overlay)
    sub.add_parser("partitions", help="register the raw logs' run dates as partitions on DAGSTER_HOME",
                   description="Add every run date found under PIPELINE_RAW_DIR (plus `undated`) to the run_date "
                               "partitions of DAGSTER_HOME's instance, so a partition backfill (UI or `dagster "
                               "asset materialize --partition`) works before the sensor has ticked. Exit 1 without "
                               "DAGSTER_HOME or without the raw folder.").set_defaults(func=_partitions)
    docs = sub.add_parser("docs", help="regenerate docs/marts.md from pipeline/io/columns.py",
                          description="Write docs/marts.md (every mart column with unit and meaning, and the glossary) "
                                      "from pipeline/io/columns.py, the source of the UI's column descriptions.")
    docs.add_argument("--check", action="store_true", help="exit 1 if docs/marts.md differs; write nothing")
    docs.set_defaults(func=_docs)
    sub.add_parser("sample", help="regenerate data/sample from its fixed seed",
                   description="Regenerate the synthetic logs under data/sample from their fixed seed "
                               "(byte-identical output).").set_defaults(func=_sample)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    try:
        code = main()
        # The command's work is done and its files are closed. Freezing the heap spares the interpreter's exit
        # its collections over the hundreds of thousands of objects Dagster, GX and the run leave behind; atexit
        # handlers and plain reference counting still run, and the OS frees the rest.
        gc.freeze()
        sys.exit(code)
    except BrokenPipeError:  # the reader of stdout left early (`compare --list | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        sys.exit(0)
