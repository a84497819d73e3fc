"""Run one asset of ``refresh_all`` alone on a copy of a warehouse a benchmark left, and print its wall time and this
process's peak resident set: what one step costs at a scale, without the hour a whole run onto 1M takes.

    python benchmarks/one_step.py report /tmp/bench-out-1m/warehouse.duckdb
    python benchmarks/one_step.py regressions /tmp/bench-out-1m/warehouse.duckdb --keep-copy /tmp/step-copy
    python benchmarks/one_step.py trends-night /tmp/bench-out-1m/warehouse.duckdb
    python benchmarks/one_step.py comparisons /tmp/bench-out-100k/warehouse.duckdb

The warehouse is copied first (the step writes its table and marts; the benchmark's own stays as it was) into
``--keep-copy`` or a temporary folder, marts under it. The step runs in this process, as ``benchmarks/run.py``
calls it (``benchmarks/harness.materialize``): the same ``SharedWarehouse`` with the pipeline's DuckDB
``memory_limit``, partitioned steps over every run date of the warehouse; ``trends-night`` is ``trends`` as a
nightly batch runs it (the newest run date only) after a night that moved the comparisons' targets (the stored
``trend_targets`` dropped first), so every date's stored frontiers are read again. The peak is this process's
``ru_maxrss``: the step's own peak plus what the imports hold (printed beside it).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("run_slo", "comparisons", "regressions", "report", "trends-night")


def main() -> None:
    """Parse the command line (module docstring), run the step, print one line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=STEPS)
    parser.add_argument("warehouse", type=Path, help="a benchmark's warehouse.duckdb (copied, not changed)")
    parser.add_argument("--keep-copy", type=Path, help="copy into this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    if not args.warehouse.is_file():
        parser.error(f"{args.warehouse}: no such warehouse file")
    work = args.keep_copy or Path(tempfile.mkdtemp(prefix="one-step-"))
    try:
        print(run_step(args.step, args.warehouse, work))
    finally:
        if args.keep_copy is None:
            shutil.rmtree(work, ignore_errors=True)


def run_step(step: str, warehouse: Path, work: Path) -> str:
    """Copy ``warehouse`` into ``work`` and run ``step`` (one of ``STEPS``) on the copy; the printed line: step,
    run dates, wall seconds, peak RSS (MiB) and the RSS before the step."""
    import dagster as dg

    from pipeline.defs.comparisons.assets import comparisons
    from pipeline.defs.comparisons.regressions import RegressionConfig, regressions
    from pipeline.defs.comparisons.report import TREND_TARGETS_TABLE, ReportConfig, report, trends
    from pipeline.defs.metrics.assets import run_slo
    from pipeline.defs.partitions import register_partitions
    from pipeline.defs.resources import DEFAULT_MEMORY_LIMIT, PipelinePaths, SharedWarehouse
    from pipeline.io.heap import frozen_heap

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(warehouse, work / "warehouse.duckdb")
    # the pipeline's own setting (pipeline.defs.resources.warehouse_resource), so a cap a user sets is measured
    memory_limit = os.environ.get("PIPELINE_DUCKDB_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT
    wh = SharedWarehouse(database=str(work / "warehouse.duckdb"), memory_limit=memory_limit)
    paths = PipelinePaths(raw_dir=str(work / "raw"), out_dir=str(work / "marts"), cache_dir=str(work / "cache"))
    instance = dg.DagsterInstance.ephemeral()
    with wh.get_connection() as conn:
        keys = [row[0] for row in conn.execute(
            "select distinct run_date_partition from validated_runs order by 1").fetchall()]
    register_partitions(instance, keys)
    partitioned = dg.build_asset_context(instance=instance,
                                         partition_key_range=dg.PartitionKeyRange(keys[0], keys[-1]))
    whole = dg.build_asset_context(instance=instance)
    if step == "trends-night":
        with wh.get_connection() as conn:
            conn.execute(f"drop table if exists {TREND_TARGETS_TABLE}")
    newest = dg.build_asset_context(instance=instance, partition_key=keys[-1])
    calls = {
        "trends-night": lambda: trends(newest, warehouse=wh, paths=paths),
        "run_slo": lambda: run_slo(partitioned, warehouse=wh, paths=paths),
        "comparisons": lambda: comparisons(whole, warehouse=wh, paths=paths),
        "regressions": lambda: regressions(whole, config=RegressionConfig(), warehouse=wh, paths=paths),
        "report": lambda: report(whole, config=ReportConfig(ui_charts=False), warehouse=wh, paths=paths),
    }
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    with frozen_heap():  # as `python -m pipeline run` runs its steps (pipeline.__main__.materialize_all)
        calls[step]()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"{step} alone over {len(keys)} run dates: {seconds:.1f} s, peak RSS {peak:,.0f} MiB "
            f"({before:,.0f} MiB before the step)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
