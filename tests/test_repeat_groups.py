"""Repeats can never fail a run: a property test over seeded random histories of two sides, fixed-
sequence and agentic, whose repeat groups have one member, identical members (zero variance), near-identical or
far-apart members, and members of which only some carry a metric. Frontiers and the matched-interactivity
comparison are built from each; neither raises, and every interval they publish is a finite, ordered pair or
absent, never NaN or infinite."""

import math
import random

import pytest

from pipeline.comparisons.compare import compare
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import Comparison, Side

CASES = 300
COST_TIERS = ("hyperscaler", "neocloud", "rental")


def _member(rng, run_id, hw, agentic, conc, sweep, line, x, y, measured):
    cost = 1.48 / (y * 3600 / 1e6)
    return {"run_id": run_id, "price_book": "seed", "price_book_version": "v", "source_file": f"{run_id}.json",
            "model": "kimik2.5", "isl": None if agentic else 1024, "osl": None if agentic else 1024, "hw": hw,
            "precision": "fp4", "spec_decoding": "none", "framework": "vllm", "spec_metric_source": None,
            "conc": conc, "run_date": None, "line_id": line, "sweep_id": sweep,
            "benchmark_type": "agentic_traces" if agentic else "fixed_seq",
            # an agentic run has no median TPOT: its axis is E2E-normalized interactivity
            "median_intvty": None if agentic else x, "x_intvty": x,
            "x_intvty_stat": "e2e_norm_intvty_p90" if agentic else "median_intvty", "length_off_nominal": False,
            "tput_per_gpu": y, "output_tput_per_gpu": y / 2, "input_tput_per_gpu": y / 2,
            **{f"cost_per_mtok_{t}": cost for t in COST_TIERS},
            **{f"{d}_cost_per_mtok_{t}": 2 * cost for d in ("output", "input") for t in COST_TIERS},
            "tok_s_per_mw": y * 1000 / 2.65, "measured_tok_s_per_mw": measured}


def _side_runs(rng, hw, agentic, prefix):
    """One side's history: 1–3 sweeps of one line, 2–6 concurrencies, each a repeat group of 1–4 members."""
    runs = []
    for sweep in range(rng.randint(1, 3)):
        concs = sorted(rng.sample([1, 2, 4, 8, 16, 32, 64, 128], rng.randint(2, 6)))
        for conc in concs:
            x, y = 200.0 / conc ** 0.5 * rng.uniform(0.8, 1.2), 50.0 * conc ** 0.7 * rng.uniform(0.8, 1.2)
            shape = rng.choice(["one", "identical", "near", "far", "some_measured"])
            members = 1 if shape == "one" else rng.randint(2, 4)
            for k in range(members):
                jitter = {"one": 0.0, "identical": 0.0, "near": 1e-12, "far": 0.5, "some_measured": 0.05}[shape]
                scale = 1.0 + rng.uniform(-jitter, jitter)
                measured = (y * 300.0 if k % 2 == 0 else None) if shape == "some_measured" else None
                runs.append(_member(rng, f"{prefix}{sweep}c{conc}m{k}", hw, agentic, conc, f"sweep:{sweep}",
                                    f"{prefix}line", x * scale, y * scale, measured))
    return runs


def _finite_or_absent(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and math.isfinite(value))


@pytest.mark.parametrize("agentic", [False, True], ids=["fixed_seq", "agentic"])
def test_random_repeat_groups_never_fail_frontiers_or_comparisons(agentic):
    rng = random.Random(40 + agentic)
    stat = "e2e_norm_intvty_p90" if agentic else "median_intvty"
    kind = "agentic_traces" if agentic else "fixed_seq"
    a = Side("kimik2.5", None if agentic else 1024, None if agentic else 1024, "mi355x", "fp4", benchmark_type=kind)
    b = Side("kimik2.5", None if agentic else 1024, None if agentic else 1024, "b200", "fp4", benchmark_type=kind)
    comparison = Comparison("hardware", a, b, "MI355X", "B200")
    compared = 0
    for case in range(CASES):
        runs = _side_runs(rng, "mi355x", agentic, f"a{case}") + _side_runs(rng, "b200", agentic, f"b{case}")
        points = build_frontiers(runs, [a, b]).to_pylist()
        assert points and {p["x_intvty_stat"] for p in points} == {stat}
        for point in points:
            for column, value in point.items():
                if column.endswith(("_ci_lo", "_ci_hi")) or column == "repeat_spread":
                    assert _finite_or_absent(value), (case, column, value)
            for metric in ("tput_per_gpu", "median_intvty"):
                lo, hi = point.get(f"{metric}_ci_lo"), point.get(f"{metric}_ci_hi")
                assert (lo is None) == (hi is None) and (lo is None or lo <= hi), (case, metric, lo, hi)
        rows = compare(comparison, frontiers_by_side(points))
        compared += bool(rows)
        for row in rows:
            bad = {c: v for c, v in row.items() if isinstance(v, float) and not math.isfinite(v)}
            assert not bad, (case, bad)
    assert compared > CASES // 2  # most histories overlap in interactivity: the comparison path really ran
