"""Command line for people who do not open the Dagster UI.

    python -m pipeline run                 materialize every asset, stage by stage, with a progress bar
    python -m pipeline compare …           print one comparison table for two sides and chosen targets
    python -m pipeline report              rebuild the static HTML report from the warehouse
    python -m pipeline sample              regenerate data/sample from its fixed seed

Paths come from PIPELINE_RAW_DIR, PIPELINE_OUT_DIR, PIPELINE_DB_PATH (README).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.io.storage import read_mart
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

# The stages, in dependency order; each is one Dagster run over these assets and their checks.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reference", ("reference/gpu_reference", "reference/price_books")),
    ("ingest", ("raw/benchmark_runs",)),
    ("validate", ("validated/benchmark_runs", "validated/quarantine", "validated/ingest_ledger")),
    ("metrics", ("metrics/run_power", "metrics/run_metrics")),
    ("frontiers", ("frontiers/pareto_frontiers",)),
    ("comparisons", ("marts/comparisons", "marts/trends")),
    ("report", ("marts/report",)),
)


def _instance():
    import dagster as dg

    return dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()


def _progress(done: int, total: int, label: str, seconds: float) -> str:
    width = 24
    filled = round(width * done / total)
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {label:<12} {seconds:5.1f} s"


def materialize_all(instance, run_config: dict | None = None, on_stage=None) -> list:
    """Materialize every asset, stage by stage (``STAGES``), over every run-date partition of PIPELINE_RAW_DIR.

    Partitions are registered first (one per run date found, plus ``undated``); stages with partitioned assets
    run as one single-run backfill over the whole range. Stops after a failed stage or a failed blocking check.

    Args:
        instance: the Dagster instance (ephemeral, or DAGSTER_HOME's).
        run_config: passed to every stage run (e.g. logger level, price-book overrides).
        on_stage: called as ``on_stage(index, label, seconds, result)`` after each stage.
    Returns:
        The ``ExecuteInProcessResult`` of every stage that ran.
    """
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.defs.partitions import (
        RUN_DATE_PARTITIONS,
        all_partitions_tags,
        discover_partition_keys,
        register_partitions,
    )
    from pipeline.io.paths import env_path, parse_cache_dir

    definitions = defs()
    job = definitions.resolve_job_def("refresh_all")
    register_partitions(instance, discover_partition_keys(env_path("PIPELINE_RAW_DIR"), parse_cache_dir()))
    graph = definitions.resolve_asset_graph()
    results = []
    for index, (label, keys) in enumerate(STAGES, start=1):
        asset_keys = [dg.AssetKey.from_user_string(k) for k in keys]
        partitioned = any(graph.get(k).partitions_def == RUN_DATE_PARTITIONS for k in asset_keys)
        stage_started = time.perf_counter()
        result = job.execute_in_process(
            instance=instance, run_config=run_config or {}, raise_on_error=False, asset_selection=asset_keys,
            tags=all_partitions_tags(instance) if partitioned else None,
        )
        results.append(result)
        if on_stage:
            on_stage(index, label, time.perf_counter() - stage_started, result)
        blocking = [e for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
                    and not e.event_specific_data.passed and e.event_specific_data.severity.value == "ERROR"]
        if not result.success or blocking:
            break
    return results


def _run(args: argparse.Namespace) -> int:
    from pipeline.io.paths import env_path

    started = time.perf_counter()
    # CRITICAL keeps the terminal for the progress bar and the one-line causes printed below; every event,
    # tracebacks included, is still in the run's log.
    run_config = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
                  "ops": {"raw__benchmark_runs": {"config": {"allow_shrink": bool(getattr(args, "allow_shrink", False))}}}}
    try:
        results = materialize_all(_instance(), run_config, on_stage=lambda i, label, seconds, _: print(
            _progress(i, len(STAGES), label, seconds), flush=True))
    except (FileNotFoundError, PermissionError) as exc:  # the raw folder is missing or cannot be listed
        print(f"pipeline stopped before any stage, nothing published: {exc}", file=sys.stderr)
        return 1
    evaluations = [e.event_specific_data for r in results for e in r.all_events
                   if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    blocking = [ev for ev in evaluations if not ev.passed and ev.severity.value == "ERROR"]
    if not results[-1].success or blocking or len(results) < len(STAGES):
        for event in results[-1].all_events:
            if event.is_step_failure:
                print(f"{event.step_key}: {_root_cause(event.event_specific_data.error)}", file=sys.stderr)
        for ev in blocking:
            print(f"BLOCKING check failed: {ev.asset_key.to_user_string()} {ev.check_name}", file=sys.stderr)
        why = "downstream numbers would be wrong" if blocking else "nothing after it was published"
        print(f"pipeline stopped in stage {STAGES[len(results) - 1][0]} after "
              f"{time.perf_counter() - started:.1f} s: {why}", file=sys.stderr)
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


def _root_cause(error) -> str:
    """The first line of the innermost error Dagster wrapped (the user code's own message, e.g. "raw folder … is
    empty"), not Dagster's "Error occurred while executing op …" wrapper."""
    while error.cause is not None:
        error = error.cause
    lines = error.message.strip().splitlines()
    if not lines:
        return error.cls_name or "unknown error"
    return lines[-1].split(": ", 1)[1] if lines[-1].split(": ", 1)[0].endswith(error.cls_name or "\0") else lines[-1]


def _report(_: argparse.Namespace) -> int:
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.io.paths import env_path

    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=_instance(), raise_on_error=False, asset_selection=[dg.AssetKey(["marts", "report"])],
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
    if not result.success:
        print("report failed: materialize the pipeline first (python -m pipeline run)", file=sys.stderr)
        return 1
    print(Path(env_path("PIPELINE_OUT_DIR")) / "report" / "index.html")
    return 0


def _side(text: str) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if any(len(p) != 2 for p in pairs):
        raise argparse.ArgumentTypeError(f"expected key=value[,key=value…], got {text!r}")
    return {k.strip(): v.strip().lower() for k, v in pairs}


def _compare(args: argparse.Namespace) -> int:
    from pipeline.comparisons.compare import compare
    from pipeline.frontiers.points import build_frontiers, frontiers_by_side
    from pipeline.frontiers.sides import POOLED, Side, make_comparison
    from pipeline.io.paths import env_path

    out_dir = Path(env_path("PIPELINE_OUT_DIR"))
    try:
        runs = [r for r in read_mart(out_dir, "runs").to_pylist() if r["price_book"] == args.price_book]
    except FileNotFoundError:
        print(f"no runs mart in {out_dir}: run `python -m pipeline run` first", file=sys.stderr)
        return 1
    base = {"model": args.model, "isl": args.isl, "osl": args.osl}
    sides = []
    for given in (args.a, args.b):
        keys = {**base, "spec_decoding": POOLED, "framework": POOLED, **given}
        unknown = set(keys) - {"model", "isl", "osl", "hw", "precision", "spec_decoding", "framework"}
        if unknown or "hw" not in keys or "precision" not in keys:
            print(f"a side needs hw= and precision= (and may set spec_decoding=, framework=); got {given}",
                  file=sys.stderr)
            return 1
        sides.append(Side(keys["model"], int(keys["isl"]), int(keys["osl"]), keys["hw"], keys["precision"],
                          keys["spec_decoding"], keys["framework"]))
    a, b = sides
    differs = [k for k in ("spec_decoding", "framework", "hw", "precision") if getattr(a, k) != getattr(b, k)]
    kind = {"spec_decoding": "spec_decoding", "framework": "framework", "hw": "hardware",
            "precision": "precision"}[differs[0]] if differs else "hardware"

    comparison = make_comparison(kind, a, b)
    table = build_frontiers(runs, [a, b], include_off_nominal=args.include_off_nominal)
    by_side = frontiers_by_side(table.to_pylist())
    missing = [s.side_id for s in (a, b) if s.side_id not in by_side]
    if missing:
        print(f"no runs for side(s): {', '.join(missing)}", file=sys.stderr)
        return 1
    rows = compare(comparison, by_side, targets=args.targets)
    print(format_comparison(rows, rows[0]["comparison_id"]))
    return 0


def summary(out_dir: Path, raw_dir: Path) -> str:
    """Counts from the marts and one comparison table, as printed after ``run``."""
    runs = read_mart(out_dir, "runs")
    quarantine = pq.read_table(out_dir / "quarantine.parquet")
    comparisons = pq.read_table(out_dir / "comparisons.parquet")
    ids = comparisons.column("comparison_id").to_pylist()
    reasons = Counter(quarantine.column("reason_code").to_pylist())
    not_runs = {code: n for code, n in reasons.items() if code.startswith("not_a_run_log:")}
    rejected = {code: n for code, n in reasons.items() if code not in not_runs}
    lines = [
        f"raw logs:        {raw_dir}",
        f"marts:           {out_dir}/{{quarantine,frontiers,comparisons,ingest_ledger}}.parquet, "
        f"runs/ and trends/ (<model>/<run_date>/)",
        f"runs accepted:   {runs.num_rows}",
        f"quarantined:     {sum(rejected.values())} rows {_by_reason(rejected)}",
        f"not run logs:    {sum(not_runs.values())} files recorded in quarantine {_by_reason(not_runs)}",
        f"comparisons:     {len(set(ids))} ({comparisons.num_rows} rows)",
    ]
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


def format_comparison(rows: list[dict], comparison_id: str) -> str:
    """One comparison as a terminal table: per target, both sides' throughput, cost, tok/s/MW, concurrency, the
    measured frontier points bracketing the target, and under a cell that is clamped or sparse its ``cell_note``."""
    from pipeline.comparisons.compare import headline

    mine = [r for r in rows if r["comparison_id"] == comparison_id]
    first = mine[0]
    header = (f"{first['title']}  ({first['model']}, ISL/OSL {first['isl']}/{first['osl']}; band "
              f"{first['band_display_min']}–{first['band_display_max']} tok/s/user)")
    out = [header]
    for row in mine[:2]:
        if row["excluded_runs"]:
            out.append(f"{'':>8} {row['side_label']}: {row['excluded_runs']} run(s) left off the frontier "
                       "(measured ISL/OSL more than 10 % off nominal)")
    out.append(f"{'target':>8} {'side':<10} {'tok/s/GPU':>10} {'$/M tok':>8} {'tok/s/MW':>11} {'conc':>7}"
               f" {'measured tok/s/MW':>18} {'measured points':>16}")
    for row in mine:
        measured = "—" if row["measured_tok_s_per_mw"] is None else f"{row['measured_tok_s_per_mw']:,.0f}"
        lo, hi = row["bracket_lo_intvty"], row["bracket_hi_intvty"]
        bracket = f"{'—' if lo is None else f'{lo:.1f}'}–{'—' if hi is None else f'{hi:.1f}'}"
        out.append(
            f"{row['target_intvty']:>8.0f} {row['side_label']:<10} {row['tput_per_gpu']:>10.1f} "
            f"{row['cost_per_mtok_hyperscaler']:>8.3f} {row['tok_s_per_mw']:>11,.0f} {row['concurrency']:>7.1f}"
            f" {measured:>18} {bracket:>16}"
        )
        if row["cell_note"]:
            out.append(f"{'':>8} not measured at the target: {row['cell_note']}")
        if row["side"] == "b" and row["target_index"] == len({r["target_index"] for r in mine}) and row["cross_engine"]:
            out.append(f"{'':>8} caveat: spec-decoding points come from engines whose acceptance rates are not "
                       "defined the same way (cross_engine)")
        if row["side"] == "b":
            out.append(f"{'':>8} at {row['target_intvty']:.0f} tok/s/user ({row['band_phrase']}): {headline(row)}")
    return "\n".join(out)


def _sample(_: argparse.Namespace) -> int:
    from pipeline.ingest.sample_data import main as generate

    generate()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialize every asset over PIPELINE_RAW_DIR and print a summary")
    run.add_argument("--allow-shrink", action="store_true",
                     help="accept a scan with over 20%% fewer runs than the last one (logs removed on purpose); "
                          "without it such a run stops before publishing")
    run.set_defaults(func=_run)
    cmp = sub.add_parser("compare", help="print one comparison table for two sides at chosen targets",
                         description="Example: python -m pipeline compare --model dsr1 --isl 1024 --osl 1024 "
                                     "--a hw=mi355x,precision=fp4,spec_decoding=mtp "
                                     "--b hw=mi355x,precision=fp4,spec_decoding=none --targets 40 55 70")
    cmp.add_argument("--model", required=True)
    cmp.add_argument("--isl", type=int, required=True)
    cmp.add_argument("--osl", type=int, required=True)
    cmp.add_argument("--a", type=_side, required=True, help="side a: hw=…,precision=…[,spec_decoding=…][,framework=…]")
    cmp.add_argument("--b", type=_side, required=True, help="side b, same form")
    cmp.add_argument("--targets", type=float, nargs="+", help="tok/s/user (default: the band's 25/50/75 %%)")
    cmp.add_argument("--price-book", default=DEFAULT_PRICE_BOOK)
    cmp.add_argument("--include-off-nominal", action="store_true",
                     help="keep runs whose measured ISL/OSL is more than 10%% off nominal on the frontiers")
    cmp.set_defaults(func=_compare)
    sub.add_parser("report", help="rebuild the HTML report from the warehouse").set_defaults(func=_report)
    sub.add_parser("sample", help="regenerate data/sample from its fixed seed").set_defaults(func=_sample)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
