"""Lines, sweeps and repeats: which runs the dashboard would show (docs/metrics.md "Latest run per line").

A **line** is one serving configuration at one sequence length: model, ISL/OSL, GPU, framework, precision,
spec-decoding method and the whole topology (TP/PP/PCP/EP and DP attention for a single node; for a
disaggregated deployment also multinode, the prefill TP/EP/DP attention and workers, the decode workers and the
prefill/decode GPU counts). ``line_id`` gives a run its line.

A **sweep** is one launch of a line over its concurrencies. ``sweep_ids`` names it: the workflow run id in an
InferenceX ``run_url`` (``gha:<id>``; a re-run's attempt k ≥ 2 is a sweep of its own, ``gha:<id>/attempt/<k>``,
newer than the earlier attempts), else a ``sweep_id`` metadata key (``sweep:<value>``), else the run date
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
from datetime import date, timedelta
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
_WORKFLOW_RUN = re.compile(r"/actions/runs/(\d+)(?:/attempts/(\d+))?")
# a gha sweep id's value: the workflow run id, and the attempt when a re-run (attempt 2 or later) made it
_GHA_VALUE = re.compile(r"(\d+)(?:/attempt/(\d+))?")
_KIND_RANK = {"undated": 0, "date": 1, "sweep": 2, "gha": 3}
_EPOCH = date(1970, 1, 1)
_UNDATED = np.iinfo(np.int64).min  # a sweep date older than every date


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
    (``…/actions/runs/<id>/…``; ``gha:<id>/attempt/<k>`` for ``…/attempts/<k>`` with k ≥ 2, a re-run of that
    workflow run, which replaces its earlier attempts on every line, as InferenceX-app's ``latest_workflow_runs``
    keeps only the highest attempt: ``run_lineage``), ``sweep:<run_url>`` for another URL, ``sweep:<sweep_id>``
    from the metadata key, else ``date:<run_date>`` or ``undated``."""
    url = run.get("run_url")
    if url:
        found = _WORKFLOW_RUN.search(url)
        if not found:
            return f"sweep:{url}"
        attempt = int(found.group(2) or 1)
        return f"gha:{found.group(1)}" if attempt <= 1 else f"gha:{found.group(1)}/attempt/{attempt}"
    if run.get("sweep_id"):
        return f"sweep:{run['sweep_id']}"
    return "undated" if run.get("run_date") is None else f"date:{run['run_date'].isoformat()}"


def workflow_attempt(sweep: str) -> tuple[int, int] | None:
    """(workflow run id, attempt) of a ``gha`` sweep id (``gha:<id>`` is attempt 1), None for other sweeps."""
    kind, _, value = sweep.partition(":")
    found = _GHA_VALUE.fullmatch(value) if kind == "gha" else None
    return None if found is None else (int(found.group(1)), int(found.group(2) or 1))


def _lower_attempts(sweep_ids: Sequence[str]) -> dict[str, str]:
    """Of the distinct ``sweep_ids``, each ``gha`` sweep of a workflow run that has a higher attempt among them →
    that highest attempt's sweep id. InferenceX-app reads benchmarks through ``latest_workflow_runs``, the highest
    ``run_attempt`` of each GitHub run id, so a lower attempt's runs are not shown at all, on any line."""
    attempts = {sweep: workflow_attempt(sweep) for sweep in sweep_ids}
    highest: dict[int, tuple[int, str]] = {}
    for sweep, found in attempts.items():
        if found is not None and found[1] > highest.get(found[0], (-1, ""))[0]:  # attempt 0 is an attempt too
            highest[found[0]] = (found[1], sweep)
    return {sweep: highest[found[0]][1] for sweep, found in attempts.items()
            if found is not None and found[1] < highest[found[0]][0]}


def sweep_order_key(sweep_date: date | None, sweep: str) -> tuple:
    """Sort key of a sweep, larger = newer: the newest run date among its runs (undated oldest), then the kind of
    id (``gha`` > ``sweep`` > ``date`` > ``undated``), then the id, numerically when it is a number (a workflow
    run's attempts by attempt number: ``gha:<id>/attempt/2`` after ``gha:<id>``).

    Raises:
        ValueError: ``sweep`` does not start with one of those kinds and a colon (``sweep_id`` writes every id so;
            one without is not a sweep id, and ranking it as the oldest would let it lose to any sweep).
    """
    kind, _, value = sweep.partition(":")
    if kind not in _KIND_RANK:
        raise ValueError(f"sweep id {sweep!r} does not start with a known kind ({', '.join(_KIND_RANK)}) and ':'")
    workflow = workflow_attempt(sweep)
    number, attempt = workflow if workflow is not None else ((int(value) if value.isdigit() else 0), 1)
    return (sweep_date.toordinal() if sweep_date is not None else -1, _KIND_RANK[kind],
            workflow is not None or value.isdigit(), number, attempt, value)


def line_and_sweep_ids(runs: pa.Table) -> tuple[list[str], list[str]]:
    """``line_id`` and ``sweep_id`` of every row of ``runs`` (``RUN_SCHEMA`` columns; absent ones read as null)."""
    def ids(names: Sequence[str], make) -> list[str]:
        # many runs share a line (and a sweep): each distinct combination of values is formatted once
        present = [name for name in names if name in runs.column_names]
        if runs.num_rows == 0:
            return []
        codes = row_codes(runs, present)  # all 0 when none of the columns is present
        count = int(codes.max()) + 1
        # a table of no column lists no rows (pyarrow): its one combination is then all null
        distinct = runs.select(present).take(pa.array(first_rows(codes, count))).to_pylist() if present else [{}]
        made = [make({**dict.fromkeys(names), **values}) for values in distinct]
        return [made[code] for code in codes.tolist()]

    return ids(LINE_COLUMNS, line_id), ids(SWEEP_COLUMNS, sweep_id)


def run_lineage(runs: pa.Table | Sequence[Mapping[str, Any]], as_of: date | None = None) -> pa.Table:
    """Supersession and repeats of every run (``LINEAGE_SCHEMA``, one row per input row, in order): the latest
    rule of this module's docstring.

    Column work: a line's sweeps and a repeat group are integer codes; the sweeps are ordered by one lexsort
    (line, sweep date, rank of the sweep id), where Python ranks only the distinct sweep ids by
    ``sweep_order_key`` (a fleet's lines share a few hundred), and names each distinct repeat group once.

    Args:
        runs: rows with ``run_id``, ``conc``, ``run_date``, ``line_id`` and ``sweep_id`` (as ``line_id`` and
            ``sweep_id`` give them; ``run_metrics`` carries both). Several rows may share a ``run_id`` (one per
            price book): they count once.
        as_of: see the runs as they stood that day: runs dated later are not visible (``current`` false, no
            ``superseded_by``); undated runs are always visible (nothing says they came later).
    Returns:
        ``line_id``, ``sweep_id`` as given; ``superseded_by``: the line's next newer visible sweep after this
        run's own (null when the run is current or not visible; a chain of them leads to the current sweep), or,
        for a run of a workflow run's lower attempt once a higher attempt of that workflow run is visible, the
        highest attempt's sweep id (that attempt replaces every line of the earlier one, and the earlier one
        plays no part in which sweep of a line is newest);
        ``repeat_group`` = ``<line_id>|<sweep_id>|conc=<conc>`` and ``repeat_n`` = distinct runs in it (1 when
        alone; counted among visible runs); ``current``: visible and not superseded.
    Raises:
        ValueError: ``line_id`` or ``sweep_id`` is null (the lineage was never computed for that row).
    """
    table = runs if isinstance(runs, pa.Table) else pa.Table.from_pylist(list(runs))
    if table["line_id"].null_count or table["sweep_id"].null_count:
        raise ValueError("run_lineage: a row without line_id or sweep_id (compute them with line_and_sweep_ids)")
    n = table.num_rows
    days = pc.cast(table["run_date"], pa.date32()).cast(pa.int32())
    dated = days.is_valid().to_numpy(zero_copy_only=False)
    day = pc.fill_null(days, 0).to_numpy().astype(np.int64)
    visible = np.ones(n, dtype=bool) if as_of is None else ~dated | (day <= (as_of - _EPOCH).days)
    # a workflow run's lower attempts, once a higher attempt of it is visible, are not there for the latest rule
    ids = table["sweep_id"].combine_chunks().dictionary_encode()
    id_names = ids.dictionary.to_pylist()
    seen_ids = np.bincount(ids.indices.to_numpy()[visible], minlength=len(id_names)) > 0
    replaced = _lower_attempts([name for name, shown in zip(id_names, seen_ids) if shown])
    dropped_by = np.array([replaced.get(name) for name in id_names], dtype=object)[ids.indices.to_numpy()]
    dropped = visible & (dropped_by != None)  # noqa: E711  (elementwise over an object array)
    visible = visible & ~dropped
    sweep = row_codes(table, ("line_id", "sweep_id"))
    group = row_codes(table, ("line_id", "sweep_id", "conc"))
    # a sweep's date: the newest date among its visible runs; undated when none of them has one
    newest = np.full(int(sweep.max(initial=-1)) + 1, _UNDATED)
    np.maximum.at(newest, sweep[visible & dated], day[visible & dated])
    seen = np.bincount(sweep[visible], minlength=newest.size) > 0
    first_row = first_rows(sweep, newest.size)
    successor = np.full(newest.size, None, dtype=object)
    shown = np.flatnonzero(seen)  # the sweeps with a visible run
    if shown.size:
        # sweep_order_key as columns: a line's sweeps sorted by their date (undated oldest), then by the rank
        # of their id among the few distinct ids (kind, numeric value, text: sweep_order_key without the date)
        at = pa.array(first_row[shown])
        line_of = table["line_id"].take(at).combine_chunks().dictionary_encode().indices.to_numpy()
        ids = table["sweep_id"].take(at).combine_chunks().dictionary_encode()
        id_of, id_names = ids.indices.to_numpy(), ids.dictionary.to_pylist()
        by_key = sorted(range(len(id_names)), key=lambda k: sweep_order_key(None, id_names[k])[1:])
        id_rank = np.empty(len(id_names), dtype=np.int64)
        id_rank[by_key] = np.arange(len(id_names))
        order = np.lexsort((id_rank[id_of], newest[shown], line_of))
        same_line = line_of[order[:-1]] == line_of[order[1:]]  # a sweep is superseded by the one right after it
        successor[shown[order[:-1][same_line]]] = np.array(id_names, dtype=object)[id_of[order[1:][same_line]]]
    # per row by Arrow take of the per-sweep values, never as Python lists of a string per row
    sweep_at = pa.array(sweep, pa.int64())
    superseded = pc.if_else(pa.array(visible), pa.array(successor.tolist(), pa.string()).take(sweep_at),
                            pa.array(np.where(dropped, dropped_by, None).tolist(), pa.string()))
    # distinct visible runs per repeat group
    groups = int(group.max(initial=-1)) + 1
    if pc.count_distinct(table["run_id"]).as_py() == n:  # one row per run (run_metrics' distinct rows)
        members = np.bincount(group[visible], minlength=groups)
    else:  # a run's rows of several price books count once
        run = row_codes(table, ("run_id",))
        width = int(run.max()) + 1  # rows here: a repeated run_id needs two
        pairs = np.unique(group[visible] * width + run[visible])
        members = np.bincount(pairs // width, minlength=groups)
    # f"{line_id}|{sweep_id}|conc={conc}" as column work (conc an integer; a null one reads "None", as Python)
    conc = pc.fill_null(pc.cast(table["conc"], pa.string()), "None")
    names = pc.binary_join_element_wise(table["line_id"], table["sweep_id"], pc.binary_join_element_wise(
        "conc", conc, "="), "|")
    return pa.table({"run_id": table["run_id"], "line_id": table["line_id"], "sweep_id": table["sweep_id"],
                     "superseded_by": superseded,
                     "repeat_group": names,
                     "repeat_n": pa.array(np.where(visible, members[group], 1), pa.int32()),  # dropped: 1
                     "current": pa.array(visible & pc.is_null(superseded).to_numpy(zero_copy_only=False))},
                    schema=LINEAGE_SCHEMA)


def current_sweeps_by_date(runs: pa.Table,
                           as_of_dates: Sequence[date]) -> Iterator[tuple[date, Mapping[str, list[int]]]]:
    """For each date of ``as_of_dates`` in ascending order, each line's current sweep as of that day: the same
    rule as ``run_lineage(runs, as_of=day)``, in one pass over the history (trends need it for every date;
    calling ``run_lineage`` per date would read the whole history once per date).

    Column work except for one step per (sweep, run date) the history holds, in date order: a sweep's order key
    only changes when a newer run date of it becomes visible, and a line's current sweep is the one with the
    largest key (keys of a line's sweeps never tie: they end with the sweep id). Once a higher attempt of a
    workflow run is visible, its lower attempts' sweeps leave every line (``run_lineage``'s rule). ``current`` is
    a live view of
    that state, so a day costs its new sweeps, not the history's lines.

    Args:
        runs: rows with ``run_date`` (date), ``line_id`` and ``sweep_id``.
        as_of_dates: the days to report.
    Yields:
        (day, current): ``current`` maps each line visible that day (iterated in sorted order) to the row
        positions of its current sweep's visible runs (undated ones first, then by date, then in table order). It
        changes as the pass moves on: read it before asking for the next day.
    """
    n = runs.num_rows
    days = pc.cast(runs["run_date"], pa.date32()).cast(pa.int32())
    dated = days.is_valid().to_numpy(zero_copy_only=False)
    # the day a row becomes visible: undated rows always are (before any date)
    visible_from = np.where(dated, pc.fill_null(days, 0).to_numpy().astype(np.int64), _UNDATED)
    sweep = row_codes(runs, ("line_id", "sweep_id"))
    # rows grouped by sweep, each sweep's rows in the order they become visible (ties: table order)
    by_sweep = np.lexsort((visible_from, sweep))
    sweeps = int(sweep.max(initial=-1)) + 1
    first = np.searchsorted(sweep[by_sweep], np.arange(sweeps))
    # one event per (sweep, day it gains runs): where that pair changes along by_sweep
    s_sorted, v_sorted = sweep[by_sweep], visible_from[by_sweep]
    new_event = np.ones(n, dtype=bool)
    new_event[1:] = (s_sorted[1:] != s_sorted[:-1]) | (v_sorted[1:] != v_sorted[:-1])
    starts = np.flatnonzero(new_event)
    sizes = np.diff(np.append(starts, n))
    event_order = np.argsort(v_sorted[starts])  # the state after a whole day is the same in any order of its events
    ev_sweep, ev_day, ev_size = (s_sorted[starts][event_order].tolist(), v_sorted[starts][event_order].tolist(),
                                 sizes[event_order].tolist())
    firsts = pa.array(first_rows(sweep, sweeps), pa.int64())
    line_of, sweep_of = runs["line_id"].take(firsts).to_pylist(), runs["sweep_id"].take(firsts).to_pylist()
    visible = np.zeros(sweeps, dtype=np.int64)  # each sweep's rows visible so far (a prefix of its by_sweep rows)
    newest: dict[str, tuple[tuple, int]] = {}  # line -> (key, sweep) of its current sweep
    keys: dict[str, dict[int, tuple]] = {}  # line -> its visible sweeps' keys, lower attempts left out
    attempt_of = [workflow_attempt(name) for name in sweep_of]
    highest: dict[int, int] = {}  # workflow run id -> its highest attempt visible so far
    by_workflow: dict[int, list[int]] = {}  # workflow run id -> its visible sweeps
    current = _CurrentSweeps(newest, by_sweep, first, visible)

    def settle(line: str) -> None:  # the line's current sweep: the largest key left (none: the line is not shown)
        if keys.get(line):
            s_best = max(keys[line], key=keys[line].__getitem__)
            newest[line] = (keys[line][s_best], s_best)
        else:
            newest.pop(line, None)

    at = 0
    for day in sorted(set(as_of_dates)):
        limit = (day - _EPOCH).days
        while at < len(ev_day) and ev_day[at] <= limit:
            s, from_day = ev_sweep[at], ev_day[at]
            visible[s] += ev_size[at]
            # a sweep's events are the days it gains runs, in day order (its undated runs first): each one brings
            # the sweep a newer date, so its key is that day's
            dated_day = None if from_day == _UNDATED else from_day
            key = sweep_order_key(None if dated_day is None else _EPOCH + timedelta(days=dated_day), sweep_of[s])
            workflow = attempt_of[s]
            if workflow is None or workflow[1] >= highest.get(workflow[0], 0):
                keys.setdefault(line_of[s], {})[s] = key
                held = newest.get(line_of[s])
                if held is None or key >= held[0]:
                    newest[line_of[s]] = (key, s)
            if workflow is not None and s not in by_workflow.setdefault(workflow[0], []):
                by_workflow[workflow[0]].append(s)
                if workflow[1] > highest.get(workflow[0], 0):
                    # a higher attempt: the workflow run's earlier attempts leave every line they were on
                    highest[workflow[0]] = workflow[1]
                    for earlier in by_workflow[workflow[0]]:
                        lower = attempt_of[earlier][1] < workflow[1]
                        if lower and keys.get(line_of[earlier], {}).pop(earlier, None):
                            settle(line_of[earlier])
            at += 1
        yield day, current


class _CurrentSweeps(Mapping):
    """Line → row positions of its current sweep's visible runs, read from ``current_sweeps_by_date``'s state."""

    def __init__(self, newest: dict[str, tuple[tuple, int]], by_sweep: np.ndarray, first: np.ndarray,
                 visible: np.ndarray):
        self._newest, self._by_sweep, self._first, self._visible = newest, by_sweep, first, visible

    def __getitem__(self, line: str) -> list[int]:
        s = self._newest[line][1]
        return self._by_sweep[self._first[s]:self._first[s] + self._visible[s]].tolist()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._newest))

    def __len__(self) -> int:
        return len(self._newest)


def first_appearance_numbers(keys: np.ndarray) -> np.ndarray:
    """Each row's key renumbered 0, 1, 2 … in order of the key's first appearance (int64, shape of ``keys``,
    1-D integers)."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def row_codes(table: pa.Table, names: Sequence[str]) -> np.ndarray:
    """One integer per row for its combination of the ``names`` columns (int64, 0 … distinct − 1, numbered in
    order of first appearance; a null is a value of its own): column work in place of a tuple per row."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    combined = np.zeros(table.num_rows, dtype=np.int64)
    span = 1  # combined < span
    for name in names:
        indices = pc.dictionary_encode(table[name].combine_chunks()).indices
        codes = pc.fill_null(indices, -1).to_numpy().astype(np.int64) + 1  # 0 is null
        radix = int(codes.max()) + 1
        if span * radix >= 2 ** 62:  # renumber densely before the product could overflow
            combined = np.unique(combined, return_inverse=True)[1].reshape(-1)
            span = int(combined.max()) + 1
        combined = combined * radix + codes
        span *= radix
    return first_appearance_numbers(combined)


def first_rows(codes: np.ndarray, count: int) -> np.ndarray:
    """The first row of each code 0 … count − 1 (``codes`` dense: every code occurs)."""
    first = np.full(count, codes.size, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(codes.size, dtype=np.int64))
    return first
