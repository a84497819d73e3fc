"""The analyst's explorer page of the static report (``report/explorer.html``): pick a workload (model, ISL/OSL,
benchmark type), then any number of sides (GPU × precision × framework × spec decoding × disaggregated or not) and
overlay their Pareto frontiers on any per-GPU metric; for any two chosen sides, the matched-interactivity table and
sentences at typed targets; a trend chart of the chosen sides at a target over run dates with the regressions
mart's marks. Offline like the comparison pages: one HTML file with its data as JSON, the shared scripts in
``assets/``.

The pooled sides of the ``frontiers`` mart are those some comparison needs; the explorer needs every fully
specified side the runs have, so ``explorer_data`` builds them with the frontier stage's own functions
(``pipeline.frontiers.points.build_frontiers``: the latest-run rule, repeats averaged with their 95 % intervals,
the Pareto rule) and the day-by-day frontiers with the trend stage's (``pipeline.comparisons.trends.
trend_frontiers``). The page reads them with the pipeline's reading rules in ``static/frontier-rules.js``, the
script the comparison pages load (the table: ``compare.compare``'s cells; the trend: ``trends_at_target``'s rule).
A disaggregated side is built from the side's disaggregated runs only (the frontier functions run on those rows),
so an aggregated and a disaggregated deployment of one stack are two sides, never one frontier.

Runs given as ``unofficial`` (``python -m pipeline overlay``: a user's own files, checked by the pipeline's
library but never published) are drawn as points of their own, marked and listed as unofficial: they are on no
frontier, in no table and in no trend.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.comparisons.compare import GAP_RATIO, REPEAT_SPREAD_LIMIT, SPARSE_RATIO, TIE_RATIO
from pipeline.comparisons.plots import x_axis_label
from pipeline.comparisons.regressions import FRONTIER_GROUP
from pipeline.comparisons.trends import DEFAULT_TARGET_INTVTY, GROUP_KEYS, TREND_METRICS, trend_frontiers
from pipeline.frontiers.points import (
    FRONTIER_INPUT_COLUMNS,
    OPTIONAL_METRICS,
    PREFERRED_X_STAT,
    SPLINED_METRICS,
    build_frontiers,
)
from pipeline.frontiers.sides import Side
from pipeline.ingest.keys import framework_label, hw_label, precision_label, spec_label
from pipeline.ingest.schema import AGENTIC_TRACES, FIXED_SEQ
from pipeline.io.columns import SIDE_KEY
from pipeline.metrics.reference import PRICE_TIERS

EXPLORER_PAGE = "explorer.html"
EXPLORER_SCRIPT = "explorer.js"
# Each side's trend (its day-by-day frontiers) is a script of its own in this folder beside the page, loaded the
# first time the side is chosen: over a fleet's history they are nearly all of the page's bytes, and one page
# holding every side's would be too large to open.
EXPLORER_TRENDS_DIR = "explorer-trends"
# The y-axis choices: (column, label); a choice shows where some run of the report has the column. Costs come per
# tier and token type (all tokens, output, input) as run_metrics computes them (sql/run_metrics.sql).
Y_METRICS: tuple[tuple[str, str], ...] = (
    ("tput_per_gpu", "Throughput (tok/s/GPU)"),
    ("output_tput_per_gpu", "Output throughput (output tok/s/GPU)"),
    ("input_tput_per_gpu", "Input throughput (input tok/s/GPU)"),
    *((f"{kind}cost_per_mtok_{tier}", f"Cost ($/M {word}tokens, {tier})") for tier in PRICE_TIERS
      for kind, word in (("", ""), ("output_", "output "), ("input_", "input "))),
    ("tok_s_per_mw", "tok/s/MW (all-in power)"),
    ("measured_tok_s_per_mw", "tok/s/MW (measured telemetry)"),
    ("j_per_token", "J/token (all-in power)"),
    ("measured_j_per_token", "J/token (measured telemetry)"),
    ("median_ttft_s", "TTFT median (s)"),
    ("p90_ttft_s", "TTFT p90 (s)"),
    ("p99_ttft_s", "TTFT p99 (s)"),
    ("median_e2el_s", "E2E latency median (s)"),
    ("p90_e2el_s", "E2E latency p90 (s)"),
    ("p99_e2el_s", "E2E latency p99 (s)"),
)
# The x-axis choices: (column, label). ``x_intvty`` is the frontier's own axis (median interactivity, or
# E2E-normalized for agentic sides: the label says which); on it the frontier is drawn as its spline, on the others
# its points are joined in frontier order (each at its run's value).
X_AXES: tuple[tuple[str, str], ...] = (
    ("x_intvty", "Interactivity (tok/s/user, the frontier's axis)"),
    ("p90_intvty", "Interactivity p90 (tok/s/user, 1 / p90 TPOT)"),
    # each run's own value of the definition, null (not drawn) where a run has only the stand-in
    ("e2e_norm_intvty_p90", "E2E-normalized interactivity per run (tok/s/user, 1 / p90(E2EL/OSL) where the run "
                            "has it)"),
    ("conc", "Concurrency (requests in flight)"),
)
# Side keys beyond the workload, in the order a side's label names them.
SIDE_KEYS = ("hw", "precision", "framework", "spec_decoding", "disagg")
# The columns of a run the page reads (axes, metrics, hover text), besides the side's keys, where the runs have them.
RUN_COLUMNS = tuple(dict.fromkeys((*(c for c, _ in X_AXES), "median_intvty", *(c for c, _ in Y_METRICS))))
# The run_metrics columns explorer_data reads (those the table has): the frontier stage's inputs, the trend's,
# the hover text's configuration and RUN_COLUMNS.
INPUT_COLUMNS = tuple(dict.fromkeys((*FRONTIER_INPUT_COLUMNS, "run_date", "superseded_by", "disagg", "tp", "ep",
                                     "num_gpus", *RUN_COLUMNS)))
# The CSV of the explorer's table: the comparisons mart's columns of one cell, without those of a comparison of the
# report (its id, kind, title).
EXPLORER_CSV_COLUMNS = (
    "price_book", "price_book_version", "model", "isl", "osl", "side", "side_label", "side_id", "hw", "precision",
    "spec_decoding", "framework", "disagg", "benchmark_type", "target_index", "target_intvty", "evaluated_intvty",
    "target_clamped", "bracket_lo_intvty", "bracket_hi_intvty", "bracket_ratio", "bracket_lo_repeat_spread",
    "bracket_hi_repeat_spread", *SPLINED_METRICS, *OPTIONAL_METRICS, "implied_cost_per_mtok_hyperscaler",
    "sparse_frontier", "cell_basis", "cell_note", "tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi", "median_intvty_ci_lo",
    "median_intvty_ci_hi", *(f"cost_per_mtok_{t}_ci_{end}" for t in PRICE_TIERS for end in ("lo", "hi")),
    "difference_significant", "band_phrase", "cost_sentence", "tput_sentence")


def side_label(hw: str, precision: str, framework: str, spec: str, disagg: bool) -> str:
    """A fully specified side's label: "B200 FP4 SGLang MTP", plus " disagg" for a disaggregated deployment (the
    ingest keys' display labels, ``pipeline.ingest.keys``)."""
    return (f"{hw_label(hw)} {precision_label(precision)} {framework_label(framework)} "
            f"spec {spec_label(spec)}{' disagg' if disagg else ''}")


def explorer_side_id(side: Side, disagg: bool) -> str:
    """The explorer's id of a side: ``Side.side_id`` and ``|disagg=true`` or ``|disagg=false``."""
    return f"{side.side_id}|disagg={'true' if disagg else 'false'}"


def _disagg_column(table: pa.Table) -> pa.ChunkedArray | pa.Array:
    """``disagg`` of every row as a boolean without nulls (a null reads as aggregated, as ``pipeline.ingest.gpus``
    reads it); all False when the table has no such column."""
    if "disagg" not in table.column_names:
        return pa.array([False] * table.num_rows, pa.bool_())
    return pc.fill_null(table["disagg"], False)


def explorer_data(runs: pa.Table, default_book: str, regressions: Sequence[Mapping[str, Any]] = (),
                  unofficial: pa.Table | None = None, quarantined: Sequence[Mapping[str, Any]] = (),
                  trend_target: float = DEFAULT_TARGET_INTVTY,
                  trends: Mapping[bool, pa.Table] | None = None) -> dict[str, Any]:
    """What the explorer page's script reads (embedded as JSON, ``report.json_script``).

    Args:
        runs: ``run_metrics`` rows (the ``runs/`` mart's columns), every price book, superseded runs included (the
            trend needs the history, unless ``trends`` is given): ``FRONTIER_INPUT_COLUMNS``, ``run_date`` (date
            or null), ``superseded_by``, ``disagg`` (bool, null = aggregated, optional) and of ``RUN_COLUMNS`` those
            the runs have.
        default_book: the price book the page opens with (the first book in name order when no run has it).
        regressions: ``regressions`` mart rows (``REGRESSION_SCHEMA``); those of frontier series are drawn on the
            trend of the side of their frontier group (``FRONTIER_GROUP``), in their price book.
        unofficial: runs of the same shape to draw as unofficial points (``python -m pipeline overlay``), or None.
        quarantined: the unofficial files' quarantine rows (``source_file``, ``reason_code``, ``detail``), listed.
        trend_target: the trend chart's first target (tok/s/user).
        trends: ``trend_points`` of the history, when the caller built them (the report asset, from slices of the
            warehouse as the trends asset reads it, so ``runs`` need only hold the current runs); None builds them
            from ``runs``.
    Returns:
        A JSON-ready dict::

            {"default_book": str, "books": {book: version},
             "gap_ratio", "sparse_ratio", "repeat_spread_limit", "tie_ratio": float (compare.py's constants),
             "metrics": [splined metric names], "trend_metrics": [...], "trend_target": float,
             "y_metrics": [[column, label]], "x_axes": [[column, label]], "csv_columns": [...],
             "workloads": [{"key", "model", "isl", "osl", "benchmark_type", "x_intvty_stat", "label",
                            "x_label"}],
             "sides": [{"id", "workload", "hw", "precision", "framework", "spec_decoding", "disagg": bool,
                        "label", "side_id" (Side.side_id), "x_intvty_stat", "band": [min, max] (tok/s/user, every
                        current run of the side), "side_runs", "excluded_runs",
                        "frontier": {book: report.frontier_data(...) plus "axes": {column: [per point]} (the
                                     point's run's values of RUN_COLUMNS; x_intvty, conc and the splined metrics
                                     the frontier's own), "point_ci": {tput_per_gpu_ci_lo/hi,
                                     median_intvty_ci_lo/hi: [per point, null without repeats]} and "repeat_n":
                                     [per point]},
                        "runs": {book: {column: [per run]} (RUN_COLUMNS, "file", "date", "config")},
                        "trend": {book: [{"date": "YYYY-MM-DD", "x": [tok/s/user], "metrics": {TREND_METRICS
                                  name: [per point]}}]} (the day's frontier, trends.trend_frontiers),
                        "regressions": [{"price_book", "metric", "direction", "status", "first_bad_date",
                                         "change", "target_intvty"}]}],
             "unofficial": {book: {column: [per run] (RUN_COLUMNS, "file", "date", "config"), "workload": [...],
                                   "label": [...]}},
             "quarantined": [{"file", "reason", "detail"}]}

        Floats as the marts hold them (JSON keeps every bit); a missing value is null.
    Raises:
        ValueError: ``runs`` lacks a column of ``FRONTIER_INPUT_COLUMNS`` (``build_frontiers``, named).
    """
    from pipeline.comparisons.regressions import change_text
    from pipeline.comparisons.report import _date, _point_config, frontier_data

    books_present = sorted(set(runs["price_book"].to_pylist())) if runs.num_rows else []
    book = default_book if default_book in books_present or not books_present else books_present[0]
    versions = {}
    for name, version in zip(runs["price_book"].to_pylist(), runs["price_book_version"].to_pylist()):
        versions.setdefault(name, version)
    current = runs.filter(pc.is_null(runs["superseded_by"])) if "superseded_by" in runs.column_names else runs
    disagg = _disagg_column(current)
    present = [c for c in RUN_COLUMNS if c in runs.column_names]
    # the fully specified sides the current runs have, with whether they are disaggregated, and each one's runs
    found: dict[bool, set[Side]] = defaultdict(set)
    side_runs: dict[tuple[Side, bool], list[dict[str, Any]]] = defaultdict(list)
    for row, split in zip(current.to_pylist(), disagg.to_pylist()):
        side = Side(row["model"], row["isl"], row["osl"], row["hw"], row["precision"], row["spec_decoding"],
                    row["framework"], row["benchmark_type"] or FIXED_SEQ)
        found[bool(split)].add(side)
        side_runs[(side, bool(split))].append(row)
    dates = {f: d for f, d in zip(runs["source_file"].to_pylist(), runs["run_date"].to_pylist())}
    by_run = {(b, r): i for i, (b, r) in enumerate(zip(current["price_book"].to_pylist(),
                                                        current["run_id"].to_pylist()))}
    axes_values = {c: current[c].to_pylist() for c in present}
    frontier_rows: dict[tuple[str, bool], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for split, sides in found.items():
        table = current.filter(pc.equal(disagg, split))
        for row in build_frontiers(table.select(FRONTIER_INPUT_COLUMNS), sides).to_pylist():
            frontier_rows[(row["side_id"], split)][row["price_book"]].append(row)
    trends = _side_trends(trend_points(runs) if trends is None else trends)
    changes = _frontier_changes(regressions, change_text)
    workloads: dict[str, dict[str, Any]] = {}
    out_sides = []
    for split in sorted(found):
        for side in sorted(found[split], key=lambda s: s.side_id):
            by_book = frontier_rows.get((side.side_id, split))
            if not by_book:
                continue  # every run of the side left off (lengths off nominal): no frontier
            first = next(iter(by_book.values()))[0]
            agentic = side.benchmark_type == AGENTIC_TRACES
            stat = first["x_intvty_stat"]
            workload = _workload_key(side.model, side.isl, side.osl, side.benchmark_type, stat)
            other_axis = "" if stat == PREFERRED_X_STAT[side.benchmark_type] else f" · on {stat}"
            workloads.setdefault(workload, {
                "key": workload, "model": side.model, "isl": side.isl, "osl": side.osl,
                "benchmark_type": side.benchmark_type, "x_intvty_stat": stat,
                "label": f"{side.model} · " + ("agentic traces" if agentic else f"ISL/OSL {side.isl}/{side.osl}")
                         + other_axis,
                "x_label": x_axis_label(stat, agentic)})
            frontier = {}
            for name, pts in sorted(by_book.items()):
                pts = sorted(pts, key=lambda p: p["point_index"])
                data = frontier_data(pts, dates)
                rows = [by_run.get((name, p["run_id"])) for p in pts]
                data["axes"] = {c: [None if i is None else axes_values[c][i] for i in rows] for c in present}
                # the frontier's own values where it has them: repeats averaged, concurrency the point's
                data["axes"]["x_intvty"] = data["x"]
                data["axes"]["conc"] = [p["concurrency"] for p in pts]
                for m in SPLINED_METRICS + OPTIONAL_METRICS:
                    if m in data["axes"] and m != "concurrency":
                        data["axes"][m] = [p[m] for p in pts]
                data["point_ci"] = {c: [p.get(c) for p in pts] for c in (
                    "tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi", "median_intvty_ci_lo", "median_intvty_ci_hi")}
                data["repeat_n"] = [p.get("repeat_n") for p in pts]
                frontier[name] = data
            group = (*(getattr(side, key) for key in SIDE_KEY), first["x_intvty_stat"])  # as GROUP_KEYS
            out_sides.append({
                "id": explorer_side_id(side, split), "workload": workload, "hw": side.hw,
                "precision": side.precision, "framework": side.framework, "spec_decoding": side.spec_decoding,
                "disagg": split, "label": side_label(side.hw, side.precision, side.framework, side.spec_decoding,
                                                     split),
                "side_id": side.side_id, "x_intvty_stat": first["x_intvty_stat"],
                "band": [first["side_intvty_min"], first["side_intvty_max"]],
                "side_runs": first["side_runs"], "excluded_runs": first["excluded_runs"],
                "frontier": frontier,
                "runs": _run_columns(side_runs[(side, split)], present, _date, _point_config),
                "trend": trends.get((group, split), {}),
                "regressions": changes.get(group, []),
            })
    return {
        "default_book": book, "books": {b: versions[b] for b in books_present},
        "gap_ratio": GAP_RATIO, "sparse_ratio": SPARSE_RATIO, "repeat_spread_limit": REPEAT_SPREAD_LIMIT,
        "tie_ratio": TIE_RATIO, "metrics": list(SPLINED_METRICS + OPTIONAL_METRICS),
        "trend_metrics": list(TREND_METRICS), "trend_target": trend_target,
        "y_metrics": [[c, label] for c, label in Y_METRICS if c in present],
        "x_axes": [[c, label] for c, label in X_AXES if c in present and _has_values(runs, c)],
        "csv_columns": list(EXPLORER_CSV_COLUMNS),
        "workloads": sorted(workloads.values(), key=lambda w: w["key"]),
        "sides": out_sides,
        "unofficial": _unofficial(unofficial, present, _date, _point_config),
        "quarantined": [{"file": q.get("source_file"), "reason": q.get("reason_code"), "detail": q.get("detail")}
                        for q in quarantined],
    }


def _workload_key(model: str, isl: int | None, osl: int | None, benchmark_type: str | None,
                  stat: str | None) -> str:
    """A workload's key in the page: ``<model>|<isl>/<osl>`` or ``<model>|agentic_traces``, followed by
    ``|<x_intvty_stat>`` when the sides are drawn on another statistic than their benchmark type's own axis
    (``points.PREFERRED_X_STAT``: an agentic run on the stand-in, an LLMPerf run on E2E-normalized interactivity),
    so one chart never mixes two x-axis statistics (docs/metrics.md section 4a)."""
    kind = benchmark_type or FIXED_SEQ
    key = f"{model}|{isl}/{osl}" if kind == FIXED_SEQ else f"{model}|{kind}"
    return key if stat == PREFERRED_X_STAT.get(kind) else f"{key}|{stat}"


def _has_values(table: pa.Table, column: str) -> bool:
    """Whether ``column`` holds a non-null value in some row."""
    return table.num_rows > 0 and table[column].null_count < table.num_rows


def _run_columns(rows: Iterable[Mapping[str, Any]], present: Sequence[str], date,
                 config) -> dict[str, dict[str, list]]:
    """Runs (``run_metrics`` rows as dicts) per price book, column-wise: ``present`` columns (a non-finite
    float as null), ``file``, ``date`` (hover text) and ``config`` (``report._point_config``)."""
    out: dict[str, dict[str, list]] = {}
    for row in rows:
        cols = out.setdefault(row["price_book"], {c: [] for c in (*present, "file", "date", "config")})
        for c in present:
            value = row.get(c)
            cols[c].append(None if isinstance(value, float) and not math.isfinite(value) else value)
        cols["file"].append(row.get("source_file"))
        cols["date"].append(date(row.get("run_date")))
        cols["config"].append(config(row) + (" · left off the frontier (lengths off nominal)"
                                             if row.get("length_off_nominal") else ""))
    return out


def _unofficial(table: pa.Table | None, present: Sequence[str], date, config) -> dict[str, dict[str, list]]:
    """Unofficial runs per price book, column-wise as ``_run_columns`` plus ``workload`` (``_workload_key``) and
    ``label`` (the run's side label); {} without any."""
    if table is None or table.num_rows == 0:
        return {}
    out = _run_columns(table.to_pylist(), [c for c in present if c in table.column_names], date, config)
    disagg = _disagg_column(table).to_pylist()
    for i, row in enumerate(table.to_pylist()):
        cols = out[row["price_book"]]
        cols.setdefault("workload", []).append(_workload_key(row["model"], row["isl"], row["osl"],
                                                             row.get("benchmark_type"), row.get("x_intvty_stat")))
        cols.setdefault("label", []).append(side_label(row["hw"], row["precision"], row["framework"],
                                                       row["spec_decoding"], bool(disagg[i])))
    return out


# The run_metrics columns the day-by-day frontiers read (trends.trend_frontiers), as the trends asset reads them.
TREND_COLUMNS = ("price_book", "run_date", "run_id", "line_id", "sweep_id", "x_intvty", "median_intvty", "conc",
                 *GROUP_KEYS, *(m for m in TREND_METRICS if m != "concurrency"))


def trend_points(runs: pa.Table) -> dict[bool, pa.Table]:
    """Each frontier group's frontier day by day, split by ``disagg``: {disagg: ``trends.trend_frontiers`` of the
    runs that are dated and not off nominal (as the trends asset reads them) with that ``disagg``}, each table's
    columns ``trend_frontiers``' (a split with no run is absent).

    Args:
        runs: ``run_metrics`` rows with ``TREND_COLUMNS``, ``length_off_nominal`` and optionally ``disagg``
            (null = aggregated), the history included.
    """
    if runs.num_rows == 0 or "run_date" not in runs.column_names:
        return {}
    # as the trends asset's SQL reads them: a null length_off_nominal keeps a run off, as `not null` does
    dated = runs.filter(pc.and_(pc.is_valid(runs["run_date"]), pc.invert(runs["length_off_nominal"])))
    disagg = _disagg_column(dated)
    out = {}
    for split in (False, True):
        part = dated.filter(pc.equal(disagg, split)).select(list(TREND_COLUMNS))
        if part.num_rows:
            out[split] = trend_frontiers(part)
    return out


_TREND_ROWS_AT_ONCE = 50_000


def _side_trends(points: Mapping[bool, pa.Table]) -> dict[tuple[tuple, bool], dict[str, list[dict[str, Any]]]]:
    """``trend_points``' tables as the page reads them: {(group key ``GROUP_KEYS`` values, disagg): {price_book:
    [{"date", "x", "metrics"}]}}, dates in order."""
    out: dict[tuple[tuple, bool], dict[str, list[dict[str, Any]]]] = {}
    columns = [*GROUP_KEYS, "price_book", "run_date", "x_intvty", *TREND_METRICS]
    for split, table in points.items():
        days: dict[tuple, dict[str, Any]] = {}
        # a slice of rows as Python dicts at a time: a fleet's history holds a row per frontier point of every
        # day, and every one of them as a dict at once would set the report's peak memory
        rows = (row for batch in table.select(columns).to_batches(max_chunksize=_TREND_ROWS_AT_ONCE)
                for row in batch.to_pylist())
        for row in rows:
            group = tuple(row[k] for k in GROUP_KEYS)
            day = str(row["run_date"])
            entry = days.get((group, row["price_book"], day))
            if entry is None:
                entry = days[(group, row["price_book"], day)] = {"date": day, "x": [], "metrics": {
                    m: [] for m in TREND_METRICS}}
                out.setdefault((group, split), {}).setdefault(row["price_book"], []).append(entry)
            entry["x"].append(row["x_intvty"])
            for m in TREND_METRICS:
                entry["metrics"][m].append(row[m])
    return out


def _frontier_changes(rows: Iterable[Mapping[str, Any]], change_text) -> dict[tuple, list[dict[str, Any]]]:
    """The regressions mart's frontier-series rows by frontier group (``FRONTIER_GROUP`` values), as the trend
    chart marks them: price book, metric, direction, status, first bad date, the change in words
    (``regressions.change_text``) and the trend target they were found at."""
    out: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("series_kind") != "frontier":
            continue
        group = tuple(row.get(k) for k in FRONTIER_GROUP)
        out[group].append({"price_book": row["price_book"], "metric": row["metric"], "direction": row["direction"],
                           "status": row["status"], "first_bad_date": str(row["first_bad_date"]),
                           "change": change_text(row), "target_intvty": row.get("target_intvty")})
    return out


def explorer_page(data: Mapping[str, Any], title: str = "Explorer", unofficial_note: str = "") -> str:
    """The explorer's HTML: controls (workload, sides, axes and scales, price book and tier, the pair and targets
    of the table, the trend target), the frontier chart, the table and sentences, the trend chart, the exports,
    ``data`` as JSON (``report.json_script``) and the scripts (vendored Chart.js, ``frontier-rules.js``,
    ``explorer.js``) from ``assets/``. ``unofficial_note``: a paragraph shown under the title (the overlay says
    which folder its unofficial runs come from); every text passes ``report.html_text``."""
    from pipeline.comparisons.report import CHART_JS, RULES_JS, _document, html_text, json_script

    note = f"<p class='caveat' id='unofficial-note'>{html_text(unofficial_note)}</p>" if unofficial_note else ""
    quarantined = ""
    if data.get("quarantined"):
        items = "".join(f"<li><code>{html_text(q['file'])}</code>: {html_text(q['reason'])}"
                        f"{' — ' + html_text(q['detail']) if q.get('detail') else ''}</li>"
                        for q in data["quarantined"])
        quarantined = (f"<section id='quarantined'><h2>Files not drawn ({len(data['quarantined'])})</h2>"
                       f"<p class='sub'>Quarantined by the pipeline's checks, with the reason</p><ul>{items}</ul>"
                       "</section>")
    body = (
        f"<p><a href='index.html'>← all comparisons</a></p><h1>{html_text(title)}</h1>"
        "<p class='sub'>Overlay the Pareto frontiers of any sides of one workload; read any two at the same "
        "interactivity with the pipeline's rule.</p>"
        f"{note}"
        "<div id='controls' class='controls'>"
        "<label>Workload <select id='workload'></select></label>"
        "<label>Price book <select id='price-book'></select></label>"
        "<label>Cost tier <select id='cost-tier'></select></label>"
        "<label>y <select id='y-metric'></select></label>"
        "<label>x <select id='x-axis'></select></label>"
        "<label>y scale <select id='y-scale'><option value='linear'>linear</option>"
        "<option value='logarithmic'>log</option></select></label>"
        "<label>x scale <select id='x-scale'><option value='linear'>linear</option>"
        "<option value='logarithmic'>log</option></select></label>"
        "<label><input type='checkbox' id='show-runs' checked> runs</label>"
        "<label><input type='checkbox' id='show-errors' checked> 95 % intervals</label>"
        "</div>"
        "<fieldset id='side-picker' class='controls'><legend>Sides</legend>"
        "<label>Filter <input id='side-filter' type='search' placeholder='e.g. b200 fp4'></label> "
        "<button type='button' id='clear-sides'>Untick all</button><div id='side-list'></div></fieldset>"
        "<div class='controls'><button type='button' id='download-png'>Chart as PNG</button>"
        "<button type='button' id='download-csv'>Table as CSV</button>"
        "<button type='button' id='copy-link'>Link to this view</button><span id='link-text' class='hint'></span>"
        "</div>"
        "<div class='chart' id='explorer-chart-box'><canvas id='explorer-chart' role='img' "
        "aria-label='frontiers of the chosen sides'></canvas></div>"
        "<p id='chart-note' class='hint'></p>"
        "<h2>Matched interactivity</h2>"
        "<div class='controls'><label>Side A <select id='pair-a'></select></label>"
        "<label>Side B <select id='pair-b'></select></label>"
        + "".join(f"<label>Target {i} <input id='target-{i}' type='number' min='0' step='any'> tok/s/user</label>"
                  for i in (1, 2, 3))
        + "<button type='button' id='reset-targets'>Default targets</button></div>"
        "<div id='sentences' class='headline'><p id='sentence-1'></p><p id='sentence-2'></p><p id='sentence-3'></p>"
        "</div>"
        "<div class='scroll'><table id='explorer-table'></table></div>"
        "<p id='cell-notes' class='notes' hidden></p><ul id='target-sentences' class='sentences'></ul>"
        "<p class='hint'>Values between measured frontier points are read off a monotone cubic spline; a target "
        "outside a side's measured range is clamped to the nearest end of its frontier and said so, never "
        "extrapolated.</p>"
        "<h2>Trend over run dates</h2>"
        "<div class='controls'><label>Trend target <input id='trend-target' type='number' min='0' step='any'> "
        "tok/s/user</label></div>"
        "<div class='chart' id='trend-chart-box'><canvas id='trend-chart' role='img' "
        "aria-label='trend of the chosen sides over run dates'></canvas></div>"
        "<p id='trend-notes' class='notes' hidden></p>"
        "<p class='hint'>Each day's frontier (every line's latest sweep as of that day) read at the target inside "
        "its measured range; a day whose frontier does not reach the target is a gap, never clamped. Triangles "
        "mark the regressions mart's changes (found at its own trend target).</p>"
        f"{quarantined}{json_script('explorer-data', data)}"
        f"<script src='assets/{CHART_JS}'></script><script src='assets/{RULES_JS}'></script>"
        f"<script src='assets/{EXPLORER_SCRIPT}'></script>"
    )
    return _document(title, body)


def write_explorer(data: Mapping[str, Any], out_dir: Path, title: str = "Explorer",
                   unofficial_note: str = "") -> Path:
    """Write ``out_dir/explorer.html`` (``explorer_page``) and the scripts it loads into ``out_dir/assets/``;
    returns the page's path."""
    import shutil

    from pipeline.comparisons.report import CHART_JS, RULES_JS, STATIC_DIR, VENDOR_DIR

    assets = out_dir / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for source in (VENDOR_DIR / CHART_JS, STATIC_DIR / RULES_JS, STATIC_DIR / EXPLORER_SCRIPT):
        shutil.copyfile(source, assets / source.name)
    page_data, trend_scripts = split_trends(data)
    trends = out_dir / EXPLORER_TRENDS_DIR
    shutil.rmtree(trends, ignore_errors=True)  # a side gone since the last report leaves no file behind
    trends.mkdir(parents=True)
    for name, text in trend_scripts:
        (out_dir / name).write_text(text, encoding="utf-8")
    page = out_dir / EXPLORER_PAGE
    page.write_text(explorer_page(page_data, title, unofficial_note), encoding="utf-8")
    return page


def split_trends(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``explorer_data``'s dict with each side's ``trend`` moved to a script of its own (``EXPLORER_TRENDS_DIR``):
    (the page's data, [(script path relative to the page, script text)]).

    A side with a trend gets ``"trend_src": "explorer-trends/<n>.js"`` (n: its index in ``sides``) instead of
    ``"trend"``; the script calls ``window.__explorerTrendLoaded(n, <the trend>)`` (the page's script stores it
    and draws). A side without one keeps ``"trend": {}``. The trend is written as strict JSON (``json_text``:
    every float's bits, NaN refused with ``ValueError``), which is a JavaScript expression as it stands.
    """
    from pipeline.comparisons.report import json_text

    sides, scripts = [], []
    for n, side in enumerate(data["sides"]):
        trend = side.get("trend") or {}
        kept = {k: v for k, v in side.items() if k != "trend"}
        if trend:
            kept["trend_src"] = f"{EXPLORER_TRENDS_DIR}/{n}.js"
            scripts.append((kept["trend_src"], f"window.__explorerTrendLoaded({n}, {json_text(trend)});\n"))
        else:
            kept["trend"] = {}
        sides.append(kept)
    return {**data, "sides": sides}, scripts
