"""Time each pipeline stage on N generated runs and print wall seconds, rows/s and peak RSS, beside DuckDB's own
``read_json`` over the same files as this machine's reference speed. Assets' work only: no Dagster start-up.

    python benchmarks/run.py --runs 10000            # generates /tmp/bench-raw-10000 first when missing
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate import generate  # noqa: E402
from pipeline.comparisons import (  # noqa: E402
    COMPARISON_SCHEMA, build_frontiers, compare, enumerate_comparisons, frontiers_by_side)
from pipeline.ingest import ingest_folder  # noqa: E402
from pipeline.paths import sql_text  # noqa: E402
from pipeline.power import POWER_SCHEMA  # noqa: E402
from pipeline.reference import build_price_books, load_gpu_reference  # noqa: E402
from pipeline.schema import RUN_SCHEMA  # noqa: E402
from pipeline.storage import write_parquet_atomic, write_table  # noqa: E402
from pipeline.validation import validate_runs  # noqa: E402


def peak_rss_mib() -> float:
    """Peak RSS of this process plus the largest parse worker's (workers are separate processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + child) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--raw", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-out"))
    args = parser.parse_args()
    raw = args.raw or Path(f"/tmp/bench-raw-{args.runs}")
    if not raw.exists():
        t = time.perf_counter()
        n = generate(args.runs, raw)
        print(f"generated {n} files in {time.perf_counter() - t:.1f} s (not timed below)")
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, float, int]] = []

    def stage(name: str, n_rows: int, seconds: float) -> None:
        rows.append((name, seconds, n_rows))
        print(f"{name:<28} {seconds:8.2f} s {n_rows / seconds if seconds else 0:12,.0f} rows/s "
              f"{peak_rss_mib():9,.0f} MiB peak", flush=True)

    print(f"{'stage':<28} {'wall':>10} {'rate':>19} {'peak RSS':>13}")
    files = [str(p) for p in raw.rglob("*.json*") if not p.name.endswith(".meta.json")]
    for path in raw.rglob("*"):  # warm the page cache once, so neither side below pays for cold reads
        if path.is_file():
            path.read_bytes()

    total_started = time.perf_counter()
    t = time.perf_counter()
    result = ingest_folder(raw)
    stage("parse + normalize", result.runs.num_rows, time.perf_counter() - t)

    t = time.perf_counter()
    known = load_gpu_reference().column("hw").to_pylist()
    accepted, rejected = validate_runs(result.runs.to_pylist(), known)
    validated = pa.Table.from_pylist(accepted, schema=RUN_SCHEMA)
    stage("validate (rules, duplicates)", result.runs.num_rows, time.perf_counter() - t)

    t = time.perf_counter()
    conn = duckdb.connect()
    write_table(conn, "validated_runs", validated)
    write_table(conn, "price_books", build_price_books(load_gpu_reference(), []))
    write_table(conn, "run_power", pa.Table.from_pylist([], schema=POWER_SCHEMA))
    conn.execute(sql_text("run_gpu_counts"))
    keys = sorted(set(validated.column("run_date_partition").to_pylist()))
    metrics = conn.sql(sql_text("run_metrics"), params={"partition_keys": keys}).to_arrow_table()
    stage("metrics SQL (DuckDB)", metrics.num_rows, time.perf_counter() - t)

    t = time.perf_counter()
    cols = ["run_id", "price_book", "price_book_version", "spec_metric_source", "measured_tok_s_per_mw",
            "source_file", "model", "isl", "osl", "hw", "precision", "spec_decoding", "framework", "conc",
            "median_intvty", "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu",
            "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud", "cost_per_mtok_rental", "tok_s_per_mw"]
    run_rows = metrics.select(cols).to_pylist()
    comparisons = enumerate_comparisons(run_rows)
    frontiers = build_frontiers(run_rows, [s for c in comparisons for s in (c.a, c.b)])
    stage("frontiers", metrics.num_rows, time.perf_counter() - t)

    t = time.perf_counter()
    by_side = frontiers_by_side(frontiers.to_pylist())
    comparison_rows = [r for c in comparisons for r in compare(c, by_side)]
    comparison_table = pa.Table.from_pylist(comparison_rows, schema=COMPARISON_SCHEMA)
    stage(f"comparisons ({len(comparisons)})", len(comparison_rows), time.perf_counter() - t)

    t = time.perf_counter()
    for name, table in (("runs", metrics), ("frontiers", frontiers), ("comparisons", comparison_table)):
        write_parquet_atomic(table, args.out / f"{name}.parquet")
    stage("parquet write", metrics.num_rows, time.perf_counter() - t)
    total = time.perf_counter() - total_started
    stage("TOTAL (assets, no Dagster)", result.runs.num_rows, total)
    # the reference last, so its memory does not count in the pipeline's peak above
    t = time.perf_counter()
    # read_json_objects parses every document without unifying the formats' schemas (read_json with
    # union_by_name over nested, mixed formats exhausts memory); json_extract forces each document to be parsed.
    ref = duckdb.execute(f"select count(*) from read_json_objects({files!r}, format = 'auto') "
                         f"where json_extract(json, '$.duration') is not null or true").fetchone()[0]
    stage("duckdb read_json (reference)", ref, time.perf_counter() - t)

    parse_rate = result.runs.num_rows / rows[0][1]
    ref_rate = ref / rows[-1][1]
    print(f"\nparse rate {parse_rate:,.0f} runs/s = {parse_rate / ref_rate:.0%} of DuckDB read_json "
          f"({ref_rate:,.0f} rows/s); targets: total ≤ 30 s and ≤ 2 GiB at 100k runs, parse ≥ 50 %")


if __name__ == "__main__":
    main()
