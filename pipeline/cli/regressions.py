"""``python -m pipeline regressions``: the regressions of the published ``regressions`` mart, with their numbers
before and after, for people who do not open the Dagster UI."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.comparisons.regressions import METRIC_LABELS, REGRESSION_SCHEMA, change_text, series_label
from pipeline.io.generations import published_dir


def read_regressions(out_dir: Path) -> list[dict] | None:
    """The rows of the published ``regressions.parquet`` (``published_dir``: one generation), or None when no run
    has published it."""
    path = published_dir(Path(out_dir)) / "regressions.parquet"
    return pq.read_table(path).cast(REGRESSION_SCHEMA).to_pylist() if path.is_file() else None


def select(rows: list[dict], since: dt.date | None = None, metrics: list[str] | None = None,
           improvements: bool = False, recovered: bool = False) -> list[dict]:
    """The rows to print: regressions (and improvements when asked) whose first bad date is ``since`` or later,
    of ``metrics`` when given, without recovered ones unless asked; newest first bad date first."""
    kept = [r for r in rows
            if (improvements or r["direction"] == "regression") and (recovered or r["status"] != "recovered")
            and (since is None or r["first_bad_date"] >= since) and (not metrics or r["metric"] in metrics)]
    return sorted(kept, key=lambda r: (-r["first_bad_date"].toordinal(), r["series_kind"] != "line",
                                       r["line_id"] or "", r["conc"] or 0, r["series_id"], r["metric"]))


def format_rows(rows: list[dict]) -> str:
    """Two lines per change: ``<first bad date>  <status> <direction>  <series>`` then ``  <metric>: before →
    after (change), p = …, last good <date>, runs …``."""
    lines = []
    for r in rows:
        lines.append(f"{r['first_bad_date']}  {r['status']:<9} {r['direction']:<11} {series_label(r)}")
        runs = " → ".join(x for x in (r["last_good_run"], r["first_bad_run"]) if x)
        lines.append(f"    {METRIC_LABELS.get(r['metric'], r['metric'])}: {change_text(r)}, p = {r['p_value']:.1g}, "
                     f"{r['before_points']} points before (last good {r['last_good_date']}), {r['after_points']} "
                     f"after{f'; runs {runs}' if runs else ''}")
    return "\n".join(lines)


def run_regressions(args, out_dir: Path) -> int:
    """Print the published regressions selected by ``args`` (``--since``, ``--metric``, ``--improvements``,
    ``--recovered``, ``--json``). Exit 0 printed (also when none match: one line says so), 1 no published
    ``regressions`` mart yet."""
    rows = read_regressions(out_dir)
    if rows is None:
        print(f"no regressions mart under {out_dir} yet: run the pipeline first (python -m pipeline run)",
              file=sys.stderr)
        return 1
    chosen = select(rows, args.since, args.metric, args.improvements, args.recovered)
    if args.json:
        print(json.dumps(chosen, default=str, indent=1))
        return 0
    if not chosen:
        what = "changes" if args.improvements else "regressions"
        print(f"no {'' if args.recovered else 'open '}{what}"
              f"{f' since {args.since}' if args.since else ''} in {len(rows)} rows of the regressions mart")
        return 0
    print(format_rows(chosen))
    return 0
