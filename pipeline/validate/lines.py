"""Lines, sweeps and repeats: which runs the dashboard would show (docs/metrics.md "Latest run per line").

A **line** is one serving configuration at one sequence length: model, ISL/OSL, GPU, framework, precision,
spec-decoding method and the whole topology (TP/PP/PCP/EP and DP attention for a single node; for a
disaggregated deployment also multinode, the prefill TP/EP/DP attention and workers, the decode workers and the
prefill/decode GPU counts). ``line_id`` gives a run its line.

A **sweep** is one launch of a line over its concurrencies. ``sweep_ids`` names it: the workflow run id in an
InferenceX ``run_url`` (``gha:<id>``), else a ``sweep_id`` metadata key (``sweep:<value>``), else the run date
(``date:YYYY-MM-DD``: every run of the line on that day is one sweep) or ``undated``. The file's benchmark start
time is deliberately not a sweep id: vLLM writes one file per concurrency, each with its own start, so it would
split every sweep into one-concurrency sweeps and keep only the last.

The **latest rule** (``run_lineage``, over the ids ``line_and_sweep_ids`` gives): a line's newest sweep wins, by ``sweep_order_key`` (the newest run date
among the sweep's runs, undated oldest; then ``gha`` > ``sweep`` > ``date``; then the id, numerically when it is
a number). Every concurrency of that sweep is kept; concurrencies of older sweeps are not stitched in. Older
sweeps' runs are superseded (``superseded_by`` names the sweep that came right after theirs, so a new sweep
changes only the rows of the one it replaces) and never reach a frontier. Same line,
same sweep, same ``conc``: a **repeat** (``repeat_group``, ``repeat_n``), averaged on the frontier.

This module lives in the validate stage because the duplicate rule (``pipeline.validate.rules``) needs the line
too: a duplicate is the same measurement on the same line and ``conc``; the metrics, frontiers and comparisons
stages import it from here.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Mapping, Sequence

import pyarrow as pa

# Columns the line key reads (RUN_SCHEMA names).
LINE_COLUMNS = ("model", "isl", "osl", "hw", "framework", "precision", "spec_decoding", "tp", "pp", "pcp", "ep",
                "dp_attention", "disagg", "is_multinode", "prefill_tp", "prefill_ep", "prefill_dp_attention",
                "prefill_num_workers", "decode_num_workers", "num_prefill_gpu", "num_decode_gpu", "benchmark_type",
                "kv_offload")
# Columns the sweep id and order read.
SWEEP_COLUMNS = ("run_url", "sweep_id", "run_date")
LINEAGE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("line_id", pa.string()),
    ("sweep_id", pa.string()),
    ("superseded_by", pa.string()),
    ("repeat_group", pa.string()),
    ("repeat_n", pa.int32()),
    ("current", pa.bool_()),
])
_WORKFLOW_RUN = re.compile(r"/actions/runs/(\d+)")
_KIND_RANK = {"undated": 0, "date": 1, "sweep": 2, "gha": 3}


def _flag(value: object) -> str:
    return "true" if value else "false"


def line_id(run: Mapping[str, Any]) -> str:
    """The line of one run (``LINE_COLUMNS``), as a readable id, e.g.
    ``dsr1|1024/1024|mi355x|sglang|fp4|spec=none|tp=4,ep=1,dpa=false`` or, disaggregated,
    ``…|disagg,multinode=true|prefill:tp=8,ep=8,dpa=true,workers=1,gpus=8|decode:tp=8,ep=1,dpa=false,workers=4,gpus=32``.

    Absent values that have a meaning are read as it (PP, PCP, EP 1; DP attention, disagg, multinode false), so a
    raw engine file and the InferenceX row made from it land on one line. Single-node rows ignore the
    ``prefill_*`` and worker columns (the export repeats the decode topology there). An agentic-trace run's line
    reads ``agentic`` where the ISL/OSL stands, plus its KV-cache offload (``kv=lmcache``) when it has one: a
    fixed-sequence line's id is unchanged.
    """
    agentic = run.get("benchmark_type") == "agentic_traces"
    sequence = "agentic" if agentic else f"{run.get('isl')}/{run.get('osl')}"
    offload = f"|kv={run['kv_offload']}" if run.get("kv_offload") not in (None, "", "none") else ""
    head = (f"{run.get('model')}|{sequence}|{run.get('hw')}|{run.get('framework')}|"
            f"{run.get('precision')}|spec={run.get('spec_decoding')}{offload}")
    extra = "".join(f",{name}={run[name]}" for name in ("pp", "pcp") if run.get(name) not in (None, 1))
    decode = f"tp={run.get('tp')},ep={run.get('ep') or 1},dpa={_flag(run.get('dp_attention'))}{extra}"
    if not run.get("disagg"):
        return f"{head}|{decode}"
    prefill = (f"tp={run.get('prefill_tp')},ep={run.get('prefill_ep') or 1},"
               f"dpa={_flag(run.get('prefill_dp_attention'))},workers={run.get('prefill_num_workers')},"
               f"gpus={run.get('num_prefill_gpu')}")
    return (f"{head}|disagg,multinode={_flag(run.get('is_multinode'))}|prefill:{prefill}|"
            f"decode:{decode},workers={run.get('decode_num_workers')},gpus={run.get('num_decode_gpu')}")


def sweep_id(run: Mapping[str, Any]) -> str:
    """The sweep of one run (``SWEEP_COLUMNS``): ``gha:<workflow run id>`` from an InferenceX ``run_url``
    (``…/actions/runs/<id>/…``), ``url:<run_url>`` for another URL, ``sweep:<sweep_id>`` from the metadata key,
    else ``date:<run_date>`` or ``undated``."""
    url = run.get("run_url")
    if url:
        found = _WORKFLOW_RUN.search(url)
        return f"gha:{found.group(1)}" if found else f"sweep:{url}"
    if run.get("sweep_id"):
        return f"sweep:{run['sweep_id']}"
    return "undated" if run.get("run_date") is None else f"date:{run['run_date'].isoformat()}"


def sweep_order_key(sweep_date: date | None, sweep: str) -> tuple:
    """Sort key of a sweep, larger = newer: the newest run date among its runs (undated oldest), then the kind of
    id (``gha`` > ``sweep`` > ``date`` > ``undated``), then the id, numerically when it is a number."""
    kind, _, value = sweep.partition(":")
    return (sweep_date.toordinal() if sweep_date is not None else -1, _KIND_RANK[kind],
            value.isdigit(), int(value) if value.isdigit() else 0, value)


def line_and_sweep_ids(runs: pa.Table) -> tuple[list[str], list[str]]:
    """``line_id`` and ``sweep_id`` of every row of ``runs`` (``RUN_SCHEMA`` columns; absent ones read as null)."""
    def ids(names: Sequence[str], make) -> list[str]:
        # many runs share a line (and a sweep): each distinct value tuple is formatted once (an Arrow column has
        # one Python type, so equal tuples are the same values)
        columns = [runs[name].to_pylist() if name in runs.column_names else [None] * runs.num_rows for name in names]
        made: dict[tuple, str] = {}
        out = []
        for values in zip(*columns):
            found = made.get(values)
            if found is None:
                found = made[values] = make(dict(zip(names, values)))
            out.append(found)
        return out

    return ids(LINE_COLUMNS, line_id), ids(SWEEP_COLUMNS, sweep_id)


def run_lineage(runs: pa.Table | Sequence[Mapping[str, Any]], as_of: date | None = None) -> pa.Table:
    """Supersession and repeats of every run (``LINEAGE_SCHEMA``, one row per input row, in order): the latest
    rule of this module's docstring.

    Args:
        runs: rows with ``run_id``, ``conc``, ``run_date``, ``line_id`` and ``sweep_id`` (as ``line_id`` and
            ``sweep_id`` give them; ``run_metrics`` carries both). Several rows may share a ``run_id`` (one per
            price book): they count once.
        as_of: see the runs as they stood that day: runs dated later are not visible (``current`` false, no
            ``superseded_by``); undated runs are always visible (nothing says they came later).
    Returns:
        ``line_id``, ``sweep_id`` as given; ``superseded_by``: the line's next newer visible sweep after this
        run's own (null when the run is current or not visible; a chain of them leads to the current sweep); ``repeat_group`` =
        ``<line_id>|<sweep_id>|conc=<conc>`` and ``repeat_n`` = distinct runs in it (1 when alone; counted among
        visible runs); ``current``: visible and not superseded.
    Raises:
        ValueError: ``line_id`` or ``sweep_id`` is null (the lineage was never computed for that row).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    run_ids, concs, dates = (table[name].to_pylist() for name in ("run_id", "conc", "run_date"))
    lines, sweeps = table["line_id"].to_pylist(), table["sweep_id"].to_pylist()
    if None in lines or None in sweeps:
        raise ValueError("run_lineage: a row without line_id or sweep_id (compute them with line_and_sweep_ids)")
    visible = [as_of is None or day is None or day <= as_of for day in dates]
    sweep_date: dict[tuple[str, str], date | None] = {}
    members: dict[tuple[str, str, Any], set] = {}
    for run, conc, day, line, sweep, seen in zip(run_ids, concs, dates, lines, sweeps, visible):
        if not seen:
            continue
        known = sweep_date.get((line, sweep))
        if (line, sweep) not in sweep_date or (day is not None and (known is None or day > known)):
            sweep_date[(line, sweep)] = day
        members.setdefault((line, sweep, conc), set()).add(run)
    # each line's visible sweeps, oldest first: a sweep is superseded by the one right after it
    ordered: dict[str, list[tuple[tuple, str]]] = {}
    for (line, sweep), day in sweep_date.items():
        ordered.setdefault(line, []).append((sweep_order_key(day, sweep), sweep))
    successor: dict[tuple[str, str], str | None] = {}
    for line, keyed in ordered.items():
        keyed.sort()
        for (_, sweep), (_, after) in zip(keyed, [*keyed[1:], (None, None)]):
            successor[(line, sweep)] = after
    superseded, groups, counts, current = [], [], [], []
    for conc, line, sweep, seen in zip(concs, lines, sweeps, visible):
        after = successor[(line, sweep)] if seen else None
        superseded.append(after)
        current.append(seen and after is None)
        groups.append(f"{line}|{sweep}|conc={conc}")
        counts.append(len(members[(line, sweep, conc)]) if seen else 1)
    return pa.table({"run_id": run_ids, "line_id": lines, "sweep_id": sweeps, "superseded_by": superseded,
                     "repeat_group": groups, "repeat_n": counts, "current": current}, schema=LINEAGE_SCHEMA)


def current_sweeps_by_date(runs: pa.Table, as_of_dates: Sequence[date]):
    """For each date of ``as_of_dates`` in ascending order, each line's current sweep as of that day: the same
    rule as ``run_lineage(runs, as_of=day)``, in one pass over the runs in date order (trends need it for every
    date; calling ``run_lineage`` per date would read the whole history once per date).

    Args:
        runs: rows with ``run_id``, ``run_date``, ``line_id`` and ``sweep_id``.
        as_of_dates: the days to report.
    Yields:
        (day, current): ``current`` maps each line visible that day to the row positions of its current sweep's
        visible runs. The mapping is rebuilt per day; consume it before the next one.
    """
    dates, lines, sweeps = (runs[name].to_pylist() for name in ("run_date", "line_id", "sweep_id"))
    order = sorted(range(len(dates)), key=lambda i: (dates[i] is not None, dates[i] or date.min))
    sweep_date: dict[tuple[str, str], date | None] = {}
    members: dict[tuple[str, str], list[int]] = {}
    newest: dict[str, tuple[tuple, str]] = {}
    at = 0
    for day in sorted(set(as_of_dates)):
        while at < len(order) and (dates[order[at]] is None or dates[order[at]] <= day):
            i = order[at]
            line, sweep, run_day = lines[i], sweeps[i], dates[i]
            known = sweep_date.get((line, sweep))
            if (line, sweep) not in sweep_date or (run_day is not None and (known is None or run_day > known)):
                sweep_date[(line, sweep)] = run_day
            members.setdefault((line, sweep), []).append(i)
            key = sweep_order_key(sweep_date[(line, sweep)], sweep)
            if line not in newest or key >= newest[line][0]:
                newest[line] = (key, sweep)
            at += 1
        yield day, {line: members[(line, sweep)] for line, (_, sweep) in newest.items()}
