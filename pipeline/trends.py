"""Historical trends: for each frontier group and run date, the frontier's metrics at one target interactivity.

A frontier group is (model, isl, osl, hw, framework, precision, spec_decoding) — one serving stack — and one
``run_date``; its Pareto frontier is built from that day's runs alone. Values follow the trend rule of DESIGN.md
§4: monotone cubic interpolation inside the frontier's interactivity range, **null outside it** (no clamping, no
extrapolation), so a date whose runs never reached the target shows a gap, not a made-up number.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa

from pipeline.frontier import interpolate, pareto_frontier

DEFAULT_TARGET_INTVTY = 35.0
GROUP_KEYS = ("model", "isl", "osl", "hw", "framework", "precision", "spec_decoding")
TREND_METRICS = ("tput_per_gpu", "output_tput_per_gpu", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud",
                 "cost_per_mtok_rental", "tok_s_per_mw", "concurrency")

TREND_SCHEMA = pa.schema(
    [
        ("price_book", pa.string()),
        ("model", pa.string()),
        ("isl", pa.int32()),
        ("osl", pa.int32()),
        ("hw", pa.string()),
        ("framework", pa.string()),
        ("precision", pa.string()),
        ("spec_decoding", pa.string()),
        ("run_date", pa.date32()),
        ("target_intvty", pa.float64()),
        ("runs", pa.int32()),
        ("frontier_points", pa.int32()),
        ("frontier_intvty_min", pa.float64()),
        ("frontier_intvty_max", pa.float64()),
        ("in_range", pa.bool_()),
        *[(m, pa.float64()) for m in TREND_METRICS],
    ]
)


def build_trends(runs: Iterable[Mapping[str, Any]], target_intvty: float = DEFAULT_TARGET_INTVTY) -> pa.Table:
    """The trend mart (``TREND_SCHEMA``): one row per (price_book, frontier group, run_date).

    Args:
        runs: ``run_metrics`` rows with the group keys, ``run_date``, ``price_book``, ``median_intvty``, ``conc``
            and the trend metrics. Runs without a ``run_date`` have no place on a time axis and are left out.
        target_intvty: the interactivity to read every frontier at (tok/s/user).
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.get("run_date") is not None:
            groups[(run["price_book"], *(run[k] for k in GROUP_KEYS), run["run_date"])].append(run)
    rows = []
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        members = groups[key]
        x = np.array([r["median_intvty"] for r in members], dtype=float)
        idx = pareto_frontier(x, [r["tput_per_gpu"] for r in members])
        xs = x[idx]
        in_range = bool(xs[0] <= target_intvty <= xs[-1])
        values = dict.fromkeys(TREND_METRICS)
        for metric in TREND_METRICS if in_range else ():  # outside the frontier every value is null: no spline
            ys = [members[i]["conc" if metric == "concurrency" else metric] for i in idx]
            # a metric some frontier point lacks (e.g. output tok/s in an export row) is null, not bridged
            values[metric] = (interpolate(xs, ys, [target_intvty], clamp=False)[0]
                              if all(y is not None for y in ys) else None)
        rows.append({
            "price_book": key[0], **dict(zip(GROUP_KEYS, key[1:-1])), "run_date": key[-1],
            "target_intvty": float(target_intvty), "runs": len(members), "frontier_points": len(idx),
            "frontier_intvty_min": float(xs[0]), "frontier_intvty_max": float(xs[-1]), "in_range": in_range,
            **{m: (float(v) if in_range and v is not None else None) for m, v in values.items()},
        })
    return pa.Table.from_pylist(rows, schema=TREND_SCHEMA)
