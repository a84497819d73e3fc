"""The latest-run rule written as a plain loop over rows, the way ``pipeline.validate.lines.run_lineage`` was before
it became column work: the reference the property test holds the column version to."""

from __future__ import annotations

from datetime import date
from typing import Any, Mapping, Sequence

import pyarrow as pa

from pipeline.validate.lines import LINEAGE_SCHEMA, sweep_order_key


def reference_lineage(runs: pa.Table | Sequence[Mapping[str, Any]], as_of: date | None = None) -> pa.Table:
    """``run_lineage`` as a loop over rows (its implementation before it became column work)."""
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

