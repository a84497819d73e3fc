"""The line series of the regressions (``line_series``, column work) against a reference built in the plainest way:
for every date a line ran, ``run_lineage(as_of=that date)`` says which of its runs are current, and each point is
numpy's mean and standard deviation of the current sweep's runs at one concurrency. ``repeat_stats`` gives numpy's
bits, so the mart's values do not move."""

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pytest

from pipeline.comparisons import regressions
from pipeline.comparisons.regressions import (
    DetectionSettings,
    JudgedSeries,
    MetricRule,
    Series,
    detect,
    line_series,
    line_series_by_metric,
    repeat_stats,
)
from pipeline.validate.lines import run_lineage

METRICS = ("tput_per_gpu", "p99_ttft_s", "median_tpot_s")  # the last one null on every run: no series


def test_repeat_stats_are_numpy_s_mean_and_std_bit_for_bit():
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 20, 3000)  # groups of 8 or more too: numpy sums those pairwise
    values = rng.normal(1000.0, 40.0, counts.sum()) * rng.choice([1.0, 1e-3, 1e5], counts.sum())
    means, sds = repeat_stats(values, counts)
    start = 0
    for g, n in enumerate(counts.tolist()):
        chunk = values[start:start + n]
        assert means[g] == np.mean(chunk), (n, chunk.tolist())
        assert (math.isnan(sds[g]) if n == 1 else sds[g] == np.std(chunk, ddof=1)), (n, chunk.tolist())
        start += n


def _history(seed: int) -> pa.Table:
    """Three lines over 12 nights: repeats at two concurrencies (one run without), nights with two sweeps of a line
    (the newer one current), a sweep whose runs arrive over two nights, a re-run attempt replacing its first
    attempt, null and NaN values, run URLs on some runs only, and undated runs (left out)."""
    rng = np.random.default_rng(seed)
    rows, run = [], 0
    start = dt.date(2026, 3, 1)
    for night in range(12):
        day = start + dt.timedelta(days=night)
        for line in ("L1", "L2", "L3"):
            if rng.random() < 0.2:
                continue  # the line did not run that night
            sweeps = [f"date:{day}"]
            if rng.random() < 0.25:
                sweeps.append(f"gha:{900 + night}")  # a second sweep the same night: newer by kind
            if rng.random() < 0.2:
                sweeps.append(f"gha:{900 + night}/attempt/2")  # its re-run replaces the first attempt
            if line == "L3" and night in (4, 5):
                sweeps = ["sweep:77"]  # one sweep whose runs arrive over two nights
            for sweep in sweeps:
                for conc in (4, 16, None):
                    for _ in range(int(rng.integers(1, 4))):
                        run += 1
                        tput = float(rng.normal(1000.0 if night < 7 else 850.0, 20.0))
                        rows.append({
                            "run_id": f"r{run}", "line_id": line, "sweep_id": sweep, "run_date": day, "conc": conc,
                            "model": "dsr1", "isl": 1024, "osl": 1024, "hw": "h200", "precision": "fp8",
                            "spec_decoding": "none", "framework": line.lower(), "benchmark_type": "fixed_seq",
                            "run_url": rng.choice(["", None, f"https://example.invalid/{run}"]),
                            "source_file": f"{line}/{sweep}/{run}.json",
                            "tput_per_gpu": (None if rng.random() < 0.1 else math.nan if rng.random() < 0.05
                                             else tput),
                            "p99_ttft_s": float(rng.uniform(0.1, 2.0)), "median_tpot_s": None})
    rows.append({**rows[0], "run_id": "undated", "run_date": None, "sweep_id": "undated:x"})
    table = pa.Table.from_pylist(rows)
    at = table.schema.get_field_index("median_tpot_s")
    return table.set_column(at, "median_tpot_s", pa.nulls(table.num_rows, pa.float64()))


def _reference(table: pa.Table) -> dict[tuple[str, str], list[tuple]]:
    """{(series id, metric): [(date, sweep, mean, sd or nan, n, link)]} from run_lineage as of each night."""
    rows = [r for r in table.to_pylist() if r["run_date"] is not None]
    dated = pa.Table.from_pylist(rows, schema=table.schema)
    points: dict[str, list[list]] = {}
    for day in sorted({r["run_date"] for r in rows}):
        current = run_lineage(dated, as_of=day)["current"].to_pylist()
        for line in sorted({r["line_id"] for r in rows if r["run_date"] == day}):
            mine = [i for i, r in enumerate(rows) if current[i] and r["line_id"] == line]
            sweep = rows[mine[0]]["sweep_id"]
            held = points.setdefault(line, [])
            if held and held[-1][1] == sweep:
                held[-1][2] = mine
            else:
                held.append([day, sweep, mine])
    out: dict[tuple[str, str], list[tuple]] = {}
    for line, held in points.items():
        for day, sweep, mine in held:
            for conc in sorted({rows[i]["conc"] for i in mine if rows[i]["conc"] is not None}):
                group = [rows[i] for i in mine if rows[i]["conc"] == conc]
                link = next((r["run_url"] for r in group if r["run_url"]), None) or group[0]["source_file"]
                for metric in METRICS:
                    vals = [r[metric] for r in group if r[metric] is not None and math.isfinite(r[metric])]
                    if vals:
                        sd = float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan
                        out.setdefault((f"{line}|conc={conc}", metric), []).append(
                            (day, sweep, float(np.mean(vals)), sd, len(vals), link))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_line_series_equal_the_reference_built_night_by_night(seed):
    table = _history(seed)
    got = line_series(table, METRICS)
    expected = _reference(table)
    assert [(s.series_id, s.metric) for s in got] == sorted(expected)
    for s in got:
        points = expected[(s.series_id, s.metric)]
        assert s.dates == [p[0] for p in points] and s.sweeps == [p[1] for p in points]
        assert s.values == pytest.approx([p[2] for p in points], rel=1e-12)
        assert s.repeat_sd == pytest.approx([p[3] for p in points], rel=1e-12, nan_ok=True)
        assert s.repeat_n == [p[4] for p in points] and s.links == [p[5] for p in points]
        assert s.keys["line_id"] == s.series_id.split("|")[0] and s.keys["conc"] == int(s.series_id.split("=")[1])
    # the history has what the rules are for: repeats, a sweep replaced the same night, points of two sweeps
    assert any(n > 1 for s in got for n in s.repeat_n)
    assert any(sweep.startswith("gha:") for s in got for sweep in s.sweeps)
    assert any(len(s.dates) >= 5 for s in got)


def test_one_batch_per_metric_with_values_in_the_order_asked_each_sorted_by_series_id():
    table = _history(1)
    expected = _reference(table)
    # not in name order; median TPOT is null on every run: no batch
    asked = ("tput_per_gpu", "median_tpot_s", "p99_ttft_s")
    batches = list(line_series_by_metric(table, asked))
    assert [{s.metric for s in batch} for batch in batches] == [{"tput_per_gpu"}, {"p99_ttft_s"}]
    for batch in batches:
        metric = batch[0].metric
        assert [s.series_id for s in batch] == sorted(sid for sid, m in expected if m == metric)
        for s in batch:
            assert s.values == pytest.approx([p[2] for p in expected[(s.series_id, metric)]], rel=1e-12)
            assert s.links == [p[5] for p in expected[(s.series_id, metric)]]
    assert list(line_series_by_metric(table.slice(0, 0), asked)) == []


def _stepped(series_id: str, metric: str, step_at: int, n: int = 12, short: bool = False) -> Series:
    """A line series of ``n`` nightly points at 1000 with a 20 % drop from ``step_at`` on (a point of noise on
    each side, so that the drop is far outside it); ``short``: only 3 points, too few to judge."""
    rng = np.random.default_rng(len(series_id) + step_at)
    values = [1000.0 * (0.8 if i >= step_at else 1.0) * (1 + 0.002 * rng.standard_normal()) for i in range(n)]
    values = values[:3] if short else values
    dates = [dt.date(2026, 7, 1) + dt.timedelta(days=i) for i in range(len(values))]
    line = series_id.split("|")[0]
    return Series("line", series_id, {"line_id": line, "conc": 8}, metric, dates, [f"date:{d}" for d in dates],
                  values, [math.nan] * len(values), [1] * len(values), [f"{line}/{i}.json" for i in range(len(values))])


def test_judging_batch_by_batch_finds_what_one_judgement_of_the_sorted_list_finds_in_its_order():
    rules = {("line", m): MetricRule("line", m, better, "relative", 0.05, 0.005)
             for m, better in (("tput_per_gpu", "higher"), ("p99_ttft_s", "lower"))}
    # batches as line_series_by_metric gives them: per metric, sorted by series id; the ids interleave across
    # metrics, so metric-major order is not the sorted (series id, metric) order
    ttft = [_stepped("A|conc=8", "p99_ttft_s", 6), _stepped("B|conc=8", "p99_ttft_s", 7)]
    tput = [_stepped("A|conc=8", "tput_per_gpu", 8), _stepped("B|conc=8", "tput_per_gpu", 5),
            _stepped("C|conc=8", "tput_per_gpu", 6, short=True)]
    judged = JudgedSeries(rules, DetectionSettings())
    for batch in (ttft, tput):
        judged.add(batch)
    judged.sort_found()
    one_list = sorted(ttft + tput, key=lambda s: (s.series_id, s.metric))
    expected = detect(one_list, rules, DetectionSettings())
    assert [(r["series_id"], r["metric"]) for r in expected] == [
        ("A|conc=8", "p99_ttft_s"), ("A|conc=8", "tput_per_gpu"), ("B|conc=8", "p99_ttft_s"),
        ("B|conc=8", "tput_per_gpu")]  # every long series' step, found once (C is too short to judge)
    assert judged.found == expected
    settings = DetectionSettings()
    assert (judged.series, judged.long_enough) == (5, 4)
    assert settings.min_points_before + settings.min_points_after > 3  # so C's 3 points cannot be judged


def test_frontier_series_one_point_per_date_a_shared_target_once_gaps_left_out():
    day = [dt.date(2026, 5, d) for d in range(1, 6)]
    group = {"model": "dsr1", "isl": 1024, "osl": 1024, "hw": "b200", "precision": "fp4", "spec_decoding": "mtp",
             "framework": "sglang", "benchmark_type": "fixed_seq", "x_intvty_stat": "median"}

    def row(book, when, target, comparison, tput, cost=1.0, **other):
        return {**group, **other, "price_book": book, "run_date": when, "target_intvty": target,
                "comparison_id": comparison, "tput_per_gpu": tput, "cost_per_mtok_hyperscaler": cost}

    rows = [  # out of date order, as a table may hold them
        row("seed", day[2], 50.0, "c1", 900.0), row("seed", day[0], 50.0, "c1", 1000.0),
        row("seed", day[0], 50.0, "c2", 1000.0),  # c2 shares the target: one point
        row("seed", day[1], 50.0, "c1", None, cost=None),  # no value that day: a gap
        row("seed", day[3], 50.0, "c1", math.inf), row("seed", day[3], 50.0, "c2", math.nan),
        row("seed", day[4], 50.0, "c1", 800.0),
        row("seed", None, 50.0, "c1", 1.0),  # undated: no place on the axis
        row("other", day[0], 50.0, "c1", 2000.0), row("seed", day[0], 37.5, "c3", 1100.0),
        row("seed", day[1], 50.0, "c1", 950.0, hw="h200"),
    ]
    table = pa.Table.from_pylist(rows)
    got = {(s.series_id, s.metric): s
           for batch in regressions.frontier_series_batches(table, ["tput_per_gpu"]) for s in batch}
    sid = "seed|dsr1|1024|1024|b200|fp4|mtp|sglang|fixed_seq|median|at=50"
    assert sorted(got) == sorted([(sid, "tput_per_gpu"), (sid.replace("at=50", "at=37.5"), "tput_per_gpu"),
                                  (sid.replace("seed|", "other|"), "tput_per_gpu"),
                                  (sid.replace("b200", "h200"), "tput_per_gpu")])
    s = got[(sid, "tput_per_gpu")]
    assert s.dates == [day[0], day[2], day[4]] and s.values == [1000.0, 900.0, 800.0]
    assert s.sweeps == [d.isoformat() for d in s.dates] and s.repeat_n == [1, 1, 1] and s.links == [None] * 3
    assert s.keys == {**{k: v for k, v in group.items() if k != "x_intvty_stat"}, "line_id": None, "conc": None,
                      "price_book": "seed", "target_intvty": 50.0}
    assert [x.series_id for x in regressions.frontier_series(table, ["tput_per_gpu"])] == sorted(
        x for x, _ in got)


def test_a_metric_with_no_value_on_any_date_gives_no_frontier_series():
    """Every trend row's value of a metric null or not finite (a hostile folder's frontiers that never reach a
    target): no series of that metric, the other metric's series as usual."""
    group = {"model": "dsr1", "isl": 1024, "osl": 1024, "hw": "b200", "precision": "fp4", "spec_decoding": "mtp",
             "framework": "sglang", "benchmark_type": "fixed_seq", "x_intvty_stat": "median"}
    rows = [{**group, "price_book": "seed", "run_date": dt.date(2026, 5, d), "target_intvty": 50.0,
             "comparison_id": "c1", "tput_per_gpu": 900.0 + d, "cost_per_mtok_hyperscaler": [None, math.nan][d % 2]}
            for d in (1, 2, 3)]
    table = pa.Table.from_pylist(rows, schema=pa.schema([*(pa.field(k, pa.int64() if k in ("isl", "osl")
                                                                     else pa.string()) for k in group),
                                                         ("price_book", pa.string()), ("run_date", pa.date32()),
                                                         ("target_intvty", pa.float64()),
                                                         ("comparison_id", pa.string()),
                                                         ("tput_per_gpu", pa.float64()),
                                                         ("cost_per_mtok_hyperscaler", pa.float64())]))
    got = regressions.frontier_series(table, ["tput_per_gpu", "cost_per_mtok_hyperscaler"])
    assert [(s.metric, s.values) for s in got] == [("tput_per_gpu", [901.0, 902.0, 903.0])]
