"""Command line: ``python -m pipeline run`` (materialize everything, print a summary) and
``python -m pipeline sample`` (regenerate ``data/sample`` from its fixed seed)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.reference import DEFAULT_PRICE_BOOK


def _run(_: argparse.Namespace) -> int:
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.paths import env_path

    started = time.perf_counter()
    job = defs().resolve_job_def("refresh_all")
    instance = dg.DagsterInstance.get() if _has_dagster_home() else dg.DagsterInstance.ephemeral()
    # INFO keeps the stage summaries and drops Dagster's per-step DEBUG events from the terminal.
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    result = job.execute_in_process(instance=instance, run_config=run_config, raise_on_error=False)
    elapsed = time.perf_counter() - started
    if not result.success:
        for event in result.all_events:
            if event.is_failure:
                print(event.message, file=sys.stderr)
        print(f"pipeline FAILED after {elapsed:.1f} s", file=sys.stderr)
        return 1
    evaluations = [
        e.event_specific_data  # AssetCheckEvaluation
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    out_dir = Path(env_path("PIPELINE_OUT_DIR"))
    print(summary(out_dir, Path(env_path("PIPELINE_RAW_DIR"))))
    failed = [ev for ev in evaluations if not ev.passed]
    blocking_failed = [ev for ev in failed if ev.severity.value == "ERROR"]
    print(f"\nchecks:          {len(evaluations) - len(failed)} of {len(evaluations)} passed")
    for ev in failed:
        print(f"  {'BLOCKING' if ev in blocking_failed else 'warning'}: {ev.asset_key.to_user_string()} "
              f"{ev.check_name}", file=sys.stderr)
    print(f"wall time {elapsed:.1f} s; warehouse {env_path('PIPELINE_DB_PATH')}")
    failed_checks = blocking_failed
    return 0 if not failed_checks else 2


def _has_dagster_home() -> bool:
    import os

    return bool(os.environ.get("DAGSTER_HOME"))


def summary(out_dir: Path, raw_dir: Path) -> str:
    """Counts from the marts and one comparison table, as printed after ``run``."""
    runs = pq.read_table(out_dir / "runs.parquet")
    quarantine = pq.read_table(out_dir / "quarantine.parquet")
    comparisons = pq.read_table(out_dir / "comparisons.parquet")
    ids = comparisons.column("comparison_id").to_pylist()
    reasons = Counter(quarantine.column("reason_code").to_pylist())
    not_runs = {code: n for code, n in reasons.items() if code.startswith("not_a_run_log:")}
    rejected = {code: n for code, n in reasons.items() if code not in not_runs}
    lines = [
        f"raw logs:        {raw_dir}",
        f"marts:           {out_dir}/{{runs,quarantine,frontiers,comparisons}}.parquet",
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
    """One comparison as a terminal table: per target, both sides' throughput, cost, tok/s/MW, concurrency."""
    mine = [r for r in rows if r["comparison_id"] == comparison_id]
    first = mine[0]
    header = (f"{first['title']}  ({first['model']}, ISL/OSL {first['isl']}/{first['osl']}; band "
              f"{first['band_display_min']}–{first['band_display_max']} tok/s/user)")
    out = [header, f"{'target':>8} {'side':<10} {'tok/s/GPU':>10} {'$/M tok':>8} {'tok/s/MW':>11} {'conc':>7}"
                   f" {'measured tok/s/MW':>18}"]
    for row in mine:
        measured = "—" if row["measured_tok_s_per_mw"] is None else f"{row['measured_tok_s_per_mw']:,.0f}"
        out.append(
            f"{row['target_intvty']:>8.0f} {row['side_label']:<10} {row['tput_per_gpu']:>10.1f} "
            f"{row['cost_per_mtok_hyperscaler']:>8.3f} {row['tok_s_per_mw']:>11,.0f} {row['concurrency']:>7.1f}"
            f" {measured:>18}"
        )
        if row["side"] == "b" and row["target_index"] == len({r["target_index"] for r in mine}) and row["cross_engine"]:
            out.append(f"{'':>8} caveat: spec-decoding points come from engines whose acceptance rates are not "
                       "defined the same way (cross_engine)")
        if row["side"] == "b":
            out.append(f"{'':>8} at {row['target_intvty']:.0f} tok/s/user ({row['band_phrase']}): "
                       f"{row['cost_sentence']}; {row['tput_sentence']}")
    return "\n".join(out)


def _sample(_: argparse.Namespace) -> int:
    from pipeline.sample_data import main as generate

    generate()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="materialize every asset over PIPELINE_RAW_DIR and print a summary").set_defaults(
        func=_run)
    sub.add_parser("sample", help="regenerate data/sample from its fixed seed").set_defaults(func=_sample)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
