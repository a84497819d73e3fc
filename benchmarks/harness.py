"""The benchmark harness behind ``benchmarks/run.py`` (what it measures: that file's docstring)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
import uuid
import warnings
from pathlib import Path

import dagster as dg
import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate import Generated, generate  # noqa: E402
from benchmarks.memory import PeakMemory  # noqa: E402
from pipeline.defs.automation import FILES_KEY, SNAPSHOT_KEY, raw_dir_state  # noqa: E402
from pipeline.defs.comparisons.assets import comparisons  # noqa: E402
from pipeline.defs.comparisons.publish import PublishConfig, published_marts  # noqa: E402
from pipeline.defs.comparisons.regressions import RegressionConfig, no_new_regressions, regressions  # noqa: E402
from pipeline.defs.comparisons.report import ReportConfig, report, trends  # noqa: E402
from pipeline.defs.frontiers.assets import FrontierConfig, frontiers  # noqa: E402
from pipeline.defs.frontiers.checks import frontier_strictly_monotone  # noqa: E402
from pipeline.defs.ingest.assets import IngestConfig, raw_requests, raw_runs  # noqa: E402
from pipeline.defs.metrics.assets import run_metrics, run_power, run_slo  # noqa: E402
from pipeline.defs.metrics.checks import metrics_finite_and_positive  # noqa: E402
from pipeline.defs.metrics.reference import PriceBooksConfig, gpu_reference, price_books  # noqa: E402
from pipeline.defs.partitions import discover_partitions, register_partitions  # noqa: E402
from pipeline.defs.resources import (  # noqa: E402
    DEFAULT_MEMORY_LIMIT,
    GENERATION_TAG,
    SNAPSHOT_TAG,
    PipelinePaths,
    SharedWarehouse,
    Warehouse,
)
from pipeline.defs.validate.assets import quarantine, validated_runs  # noqa: E402
from pipeline.defs.validate.checks import every_file_accounted_for, quarantine_rows_explained  # noqa: E402
from pipeline.defs.validate.expectations import validated_runs_expectations  # noqa: E402
from pipeline.defs.validate.ledger import ingest_ledger  # noqa: E402
from pipeline.io.heap import frozen_heap  # noqa: E402
from pipeline.validate.suite_process import InProcessSuite  # noqa: E402

BATCH_DATE = "2027-01-15"  # after every date of the generated history
REPORT_ROW = "comparisons/report (HTML; not in TOTAL)"


# the process's peak plus its parse workers' and fork server's, sampled (benchmarks/memory.py says why not rusage)
MEMORY = PeakMemory()


class Table:
    """The printed table: one line per stage as it finishes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.step_mib: dict[str, float] = {}  # each timed row's step peak (own + children), MiB
        # "peak RSS": the whole run's so far (own + children); "step peak": this step's own + its children's
        print(f"{'stage':<44} {'wall':>9} {'rows':>9} {'rows/s':>11} {'peak RSS':>11} {'step peak':>11}")

    def row(self, name: str, n_rows: int, seconds: float, step_mib: float | None = None) -> None:
        self.seconds[name] = seconds
        if step_mib is not None:
            self.step_mib[name] = step_mib
        rate = f"{n_rows / seconds:,.0f}" if seconds else ""
        step = f"{step_mib:7,.0f} MiB" if step_mib is not None else ""
        print(f"{name:<44} {seconds:7.2f} s {n_rows:>9,} {rate:>11} {MEMORY.peak_mib():7,.0f} MiB {step:>11}",
              flush=True)

    def timed(self, name: str, fn, rows=None) -> float:
        MEMORY.next_step()  # what ran between the steps is a step of its own
        started = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - started
        step_mib = MEMORY.next_step()
        self.row(name, rows(result) if rows else 0, seconds, step_mib)
        return seconds


def _rows(result: dg.MaterializeResult) -> int:
    return int(result.metadata.get("dagster/row_count", 0))


def materialize(table: Table, label: str, instance: dg.DagsterInstance, keys: list[str], wh: Warehouse,
                paths: PipelinePaths, run_tags: dict[str, str] | None = None) -> float:
    """Every asset of the job ``refresh_all``, in dependency order, for partitions ``keys``, with the run tags a
    run requested by the sensor carries (``run_tags``); returns the total seconds without the HTML report. The
    report runs between the last mart and ``published_marts`` as in a run, timed in a row of its own
    (``REPORT_ROW``), so that the data work and the presentation stay apart."""
    # one generation for the whole set, published once at the end as a run's last step does (published_marts):
    # each asset publishing on its own would pay a copy of the mart tree per asset (~0.5 s each onto 1M runs)
    tags = {**(run_tags or {}), GENERATION_TAG: f"bench-{uuid.uuid4().hex[:12]}"}
    partitioned = dg.build_asset_context(instance=instance, partition_key_range=dg.PartitionKeyRange(keys[0], keys[-1]),
                                         run_tags=tags)
    whole = dg.build_asset_context(instance=instance, run_tags=tags)
    res = {"warehouse": wh, "paths": paths}
    steps = [
        ("ingest/parsed_runs", lambda: raw_runs(partitioned, config=IngestConfig(), **res)),
        ("ingest/parsed_requests", lambda: raw_requests(partitioned, **res)),
        ("validate/accepted_runs", lambda: validated_runs(partitioned, warehouse=wh)),
        ("validate/quarantine", lambda: quarantine(whole, **res)),
        ("validate/ingest_ledger", lambda: ingest_ledger(whole, **res)),
        ("metrics/run_power", lambda: run_power(partitioned, **res)),
        ("metrics/run_metrics (SQL) + runs/ mart", lambda: run_metrics(partitioned, **res)),
        ("metrics/run_slo (SQL) + run_slo/, requests/ marts", lambda: run_slo(partitioned, **res)),
        ("frontiers/pareto_frontiers", lambda: frontiers(whole, config=FrontierConfig(), **res)),
        ("comparisons/matched_comparisons", lambda: comparisons(whole, **res)),
        ("comparisons/trends + trends/ mart", lambda: trends(partitioned, **res)),
        ("comparisons/regressions", lambda: regressions(whole, config=RegressionConfig(), **res)),
    ]
    seconds = sum(table.timed(f"{label}{name}", fn, _rows) for name, fn in steps)
    # a CLI run on a throwaway instance draws no chart for the Dagster UI (pipeline.__main__.report_config)
    table.timed(f"{label}{REPORT_ROW}",
                lambda: report(whole, config=ReportConfig(ui_charts=False), **res), _rows)
    return seconds + table.timed(f"{label}comparisons/published_marts",
                                 lambda: published_marts(whole, config=PublishConfig(), **res), _rows)


def run_checks(table: Table, label: str, wh: Warehouse, paths: PipelinePaths) -> None:
    def all_checks():
        results = list(validated_runs_expectations(warehouse=wh, expectation_suite=InProcessSuite()))
        results += [every_file_accounted_for(warehouse=wh, paths=paths), quarantine_rows_explained(warehouse=wh),
                    metrics_finite_and_positive(warehouse=wh), frontier_strictly_monotone(warehouse=wh),
                    no_new_regressions(warehouse=wh)]
        # a warning check (a regression found in the generated history) is printed, not a harness failure
        failed = [r.check_name for r in results if not r.passed]
        if failed:
            print(f"  checks not passed: {failed}")
        return results

    table.timed(f"{label}asset checks (GX suite + SQL)", all_checks, len)


def main(description: str) -> None:
    """Run the benchmark with ``benchmarks/run.py``'s command line (``description``: its help text)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=2_000, help="runs in the nightly batch (0: skip)")
    parser.add_argument("--raw", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-out"))
    parser.add_argument("--summary-json", type=Path,
                        help="also write every row's seconds, the peak RSS and the step peak of each row it "
                             "covers here (benchmarks/cli.py reads it)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    raw = args.raw or Path(f"/tmp/bench-raw-{args.runs}")
    batch_dir = raw / f"nightly-{BATCH_DATE}"
    shutil.rmtree(batch_dir, ignore_errors=True)
    if not raw.exists():
        started = time.perf_counter()
        n = generate(args.runs, raw).files
        print(f"generated {n} files in {time.perf_counter() - started:.1f} s (not timed below)")
    written = Generated(**json.loads(raw.with_name(f"{raw.name}.generated.json").read_text()))
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    paths = PipelinePaths(raw_dir=str(raw), out_dir=str(args.out / "marts"), cache_dir=str(args.out / "parse_cache"))
    # the pipeline's own setting (pipeline.defs.resources.warehouse_resource), so a cap a user sets is measured
    memory_limit = os.environ.get("PIPELINE_DUCKDB_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT  # as the pipeline
    # one open warehouse through the whole benchmark, as `python -m pipeline run` holds one through its run
    wh = SharedWarehouse(database=str(args.out / "warehouse.duckdb"), memory_limit=memory_limit)
    instance = dg.DagsterInstance.ephemeral()
    for path in raw.rglob("*"):  # warm the page cache once, so neither side below pays for cold reads
        if path.is_file():
            path.read_bytes()
    context = dg.build_asset_context(instance=instance)
    gpu_reference(warehouse=wh)
    price_books(context, config=PriceBooksConfig(), warehouse=wh)

    # as `python -m pipeline run` runs its steps (pipeline.__main__.materialize_all): what was loaded before them is
    # left out of the garbage collector's passes until the runs are done
    frozen = contextlib.ExitStack()
    frozen.enter_context(frozen_heap())
    MEMORY.start()
    table = Table()
    started = time.perf_counter()
    discovered: list = []
    parse_s = table.timed("full: parse + normalize (no cache; partitions)", lambda: discovered.extend(
        discover_partitions(paths.raw_dir, paths.cache_dir)))
    keys, snapshot = register_partitions(instance, discovered[0]), discovered[1]
    # the run reads the folder as the discovery saw it, as `python -m pipeline run` and the schedule's runs do
    assets_s = materialize(table, "full: ", instance, keys, wh, paths,
                           run_tags={SNAPSHOT_TAG: snapshot} if snapshot else None)
    with wh.get_connection() as conn:
        n_runs = conn.execute("select count(*) from raw_runs").fetchone()[0]
        accepted = conn.execute("select count(distinct run_id) from run_metrics").fetchone()[0]
    table.row("full: TOTAL (parse + assets)", n_runs, parse_s + assets_s)
    print(f"  {written.files:,} files, {written.runs:,} run logs ({written.duplicates:,} byte copies): "
          f"{accepted:,} runs accepted of {written.distinct_runs:,} distinct")
    run_checks(table, "full: ", wh, paths)
    wall = time.perf_counter() - started

    pipeline_rss = (MEMORY.own_mib(), MEMORY.children_mib(), MEMORY.step_peak_mib())
    target_steps = dict(table.step_mib)  # the rows whose step peaks the peak target reads
    batch_s = None
    if args.batch:
        cache_dir = Path(paths.cache_dir)
        before: dict[str, str] = {}  # the sensor's last tick before the night: its first after the refresh
        table.timed("sensor tick, first after the refresh (not in the batch)",
                    lambda: before.update(raw_dir_state(raw, cache_dir)))
        table.timed("sensor tick, nothing new (not in the batch)", lambda: raw_dir_state(raw, cache_dir, before))
        generate(args.batch, batch_dir, seed=11, run_date=BATCH_DATE)
        batch_dir.with_name(f"{batch_dir.name}.generated.json").unlink()  # not beside the history's own
        state: dict[str, str] = {}
        sensor_s = table.timed("batch: sensor tick (finds the changed dates)",
                               lambda: state.update(raw_dir_state(raw, cache_dir, before)))
        changed = [k for k, v in state.items() if k not in (FILES_KEY, SNAPSHOT_KEY) and v != before.get(k)]
        register_partitions(instance, changed)
        # the run the sensor requests reads the folder as the tick saw it (pipeline/defs/automation.py)
        batch_s = sensor_s + materialize(table, f"batch {changed}: ", instance, changed, wh, paths,
                                         run_tags={SNAPSHOT_TAG: state[SNAPSHOT_KEY]} if SNAPSHOT_KEY in state else None)
        table.row(f"batch: TOTAL ({args.batch:,} runs onto {n_runs:,})", args.batch, batch_s)
        pipeline_rss = (MEMORY.own_mib(), MEMORY.children_mib(), MEMORY.step_peak_mib())
        target_steps = dict(table.step_mib)

    # the nightly schedule's run and the CLI's: every date again onto the same warehouse, the folder unchanged
    # (partition discovery looks every file up in the parse cache; no target, but a history-sized cost to watch).
    # Measured after the peak RSS the targets read, so its memory shows in its own rows only.
    again: list = []
    again_s = table.timed("again: partition discovery (parse cache)", lambda: again.extend(
        discover_partitions(paths.raw_dir, paths.cache_dir)))
    again_s += materialize(table, "again: ", instance, register_partitions(instance, again[0]), wh, paths,
                           run_tags={SNAPSHOT_TAG: again[1]} if again[1] else None)
    table.row("again: TOTAL (every date, nothing new)", n_runs + args.batch, again_s)
    frozen.close()
    wh.close()
    shutil.rmtree(batch_dir, ignore_errors=True)

    # listed only now: 1.35M paths onto 1M runs are ~0.2 GiB the pipeline never holds, which the peak RSS above
    # would otherwise count (the folder is as the full refresh read it: the batch's folder is gone)
    files = [str(p) for p in raw.rglob("*.json*") if not p.name.endswith(".meta.json")]
    started = time.perf_counter()
    # read_json_objects parses every document without unifying the formats' schemas (read_json with
    # union_by_name over nested, mixed formats exhausts memory); json_extract forces each document to be parsed.
    ref = duckdb.execute(f"select count(*) from read_json_objects({files!r}, format = 'auto') "
                         f"where json_extract(json, '$.duration') is not null or true").fetchone()[0]
    ref_s = time.perf_counter() - started
    table.row("reference: DuckDB read_json_objects", ref, ref_s)

    parse_rate, ref_rate = n_runs / parse_s, ref / ref_s
    print(f"\nparse + normalize {parse_rate:,.0f} runs/s = {parse_rate / ref_rate:.0%} of DuckDB's JSON reader "
          f"({ref_rate:,.0f} documents/s); full refresh incl. checks {wall:.1f} s.")
    # the targets: 15 s of full refresh per 100,000 runs (150 s at 1,000,000), 2 GiB whatever the scale, parse at
    # least half DuckDB's rate, a nightly batch of 2,000 runs in 2 s of asset work whatever the history
    full_target = 15 * max(args.runs, 100_000) / 100_000
    print(f"targets (this run: {args.runs:,} runs, batch {args.batch:,}; each also as a ratio to DuckDB's scan of "
          f"the same files, {ref_s:.2f} s):")
    verdicts = [
        (f"full refresh (parse + assets) <= {full_target:.0f} s", f"{parse_s + assets_s:.1f} s "
         f"({(parse_s + assets_s) / ref_s:.1f}x DuckDB)", parse_s + assets_s <= full_target),
        ("peak RSS <= 2 GiB (full refresh and batch)", f"{pipeline_rss[2]:,.0f} MiB", pipeline_rss[2] <= 2048),
        ("parse + normalize >= 50 % of DuckDB's rate", f"{parse_rate / ref_rate:.0%}", parse_rate >= ref_rate / 2),
    ]
    if batch_s is not None:
        verdicts.append((f"batch of {args.batch:,} runs <= 2 s", f"{batch_s:.1f} s ({batch_s / ref_s:.2f}x DuckDB)",
                         batch_s <= 2))
    for name, value, met in verdicts:
        print(f"  {name:<50} {value:>10}  {'met' if met else 'NOT met'}")
    if args.summary_json:
        args.summary_json.write_text(json.dumps({
            "runs": args.runs, "batch": args.batch, "rows": table.seconds, "full_s": parse_s + assets_s,
            "checks_s": table.seconds["full: asset checks (GX suite + SQL)"],
            "report_s": table.seconds[f"full: {REPORT_ROW}"], "batch_s": batch_s,
            "peak_mib": pipeline_rss[2], "step_peaks_mib": target_steps, "duckdb_scan_s": ref_s}, indent=1))
    print(f"  (peak RSS: the largest of any one step's own peak plus its children's; over the whole run this "
          f"process {pipeline_rss[0]:,.0f} MiB + its parse workers and fork server {pipeline_rss[1]:,.0f} MiB = "
          f"{pipeline_rss[0] + pipeline_rss[1]:,.0f} MiB, two peaks that need not coincide; DuckDB memory_limit "
          f"{memory_limit})")

