"""Accuracy of regression detection on synthetic nightly histories: recall per step size and false alarms per 100
series × 60 dates, for the pipeline's method (``pipeline.comparisons.regressions.find_changes``) and the PyTorch
benchmark HUD's rule side by side. Prints a Markdown table (docs/regressions.md holds its output).

    python benchmarks/regressions.py                      # 200 series per row, CV 3 % (measured), seed 38
    python benchmarks/regressions.py --cv 0.01 --series 100
    python benchmarks/regressions.py --measure-noise /tmp/regr.duckdb   # the CV of a real history's warehouse

Each series is 60 nightly points of tok/s/GPU: a level of 1000 times exp(N(0, CV)) noise per run (the mean of
``--repeats`` runs per night). A step series has its level multiplied by (1 + step) from a random night k on,
k uniform over the nights that leave ``min_points_before`` nights before and ``min_points_after`` after it. Both
methods run every night on the history so far, as the nightly pipeline does, and announce a regression once: a
later night that finds the same change (first bad night within ``MATCH_POINTS`` of one already announced) does
not announce it again.

- recall: share of step series whose step was announced with a first bad night within ``MATCH_POINTS`` of k
  (``exact``: on k itself); ``nights``: median nights from k to the announcement, k included (2 = the morning
  after the second bad night);
- false alarms: regressions announced on the no-step series, per 100 series × 60 dates (and the ones on step
  series away from the step, in the same unit).

The HUD rule (PyTorch's benchmark dashboard): a night violates when tok/s/GPU < 0.8 × the median of the
previous 3 nights; two violations in a row at the end of the history are a regression (first bad night: the
first of them), announced once per run of violations.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.comparisons.regressions import (  # noqa: E402
    MATCH_POINTS,
    DetectionSettings,
    find_changes,
    load_metric_rules,
)

DATES = 60
STEPS = (-0.05, -0.10, -0.20)
# CV of tok/s/GPU measured on the real history (--measure-noise over the real logs' warehouse; docs/regressions.md)
MEASURED_CV = 0.03
HUD_RATIO = 0.8  # throughput: a violation below 0.80 × the baseline
HUD_BASELINE = 3  # baseline: median of the previous 3 nights


@dataclass
class Outcome:
    """Counts of one (method, step) row: ``series``, ``found`` (step announced near k), ``exact`` (on k),
    ``nights`` (announcement delays of the found ones), ``false_alarms`` (announcements away from a step)."""

    series: int = 0
    found: int = 0
    exact: int = 0
    false_alarms: int = 0

    def __post_init__(self) -> None:
        self.nights: list[int] = []


def synthetic_series(rng: np.random.Generator, cv: float, step: float, repeats: int,
                     settings: DetectionSettings) -> tuple[np.ndarray, np.ndarray, int | None]:
    """(values, repeat standard deviations, step night or None): ``DATES`` nightly means of ``repeats`` runs."""
    k = None
    level = np.full(DATES, 1000.0)
    if step:
        k = int(rng.integers(settings.min_points_before, DATES - settings.min_points_after + 1))
        level[k:] *= 1 + step
    runs = level[:, None] * np.exp(rng.normal(0.0, cv, (DATES, repeats)))
    sd = runs.std(axis=1, ddof=1) if repeats > 1 else np.full(DATES, np.nan)
    return runs.mean(axis=1), sd, k


def nightly_method(values: np.ndarray, sd: np.ndarray, repeats: int, settings: DetectionSettings) -> list[tuple[int, int]]:
    """(first bad night, night announced) of every regression the pipeline's method announces, running every
    night on the history so far."""
    rule = load_metric_rules()[("line", "tput_per_gpu")]
    announced: list[tuple[int, int]] = []
    counts = np.full(values.size, repeats)
    for night in range(settings.min_points_before + settings.min_points_after, values.size + 1):
        for change in find_changes(values[:night], rule, settings, sd[:night], counts[:night]):
            if change.magnitude >= 0:
                continue
            if not any(abs(change.index - first) <= MATCH_POINTS for first, _ in announced):
                announced.append((change.index, night - 1))
    return announced


def nightly_hud(values: np.ndarray) -> list[tuple[int, int]]:
    """(first bad night, night announced) of every regression the HUD rule announces, night by night."""
    violates = np.zeros(values.size, dtype=bool)
    for i in range(HUD_BASELINE, values.size):
        violates[i] = values[i] < HUD_RATIO * np.median(values[i - HUD_BASELINE:i])
    announced: list[tuple[int, int]] = []
    for night in range(1, values.size):
        if violates[night] and violates[night - 1] and not (night >= 2 and violates[night - 2]):
            announced.append((night - 1, night))
    return announced


def evaluate(cv: float = MEASURED_CV, series: int = 200, repeats: int = 1, seed: int = 38,
             steps: tuple[float, ...] = (0.0, *STEPS), settings: DetectionSettings = DetectionSettings()
             ) -> dict[tuple[str, float], Outcome]:
    """{(method, step): Outcome} for method ``changepoint`` (the pipeline's) and ``hud``, ``series`` series per
    step (0.0 = no step), from one seeded generator (the same series for both methods)."""
    rng = np.random.default_rng(seed)
    results = {(m, s): Outcome() for m in ("changepoint", "hud") for s in steps}
    for step in steps:
        for _ in range(series):
            values, sd, k = synthetic_series(rng, cv, step, repeats, settings)
            for method, announced in (("changepoint", nightly_method(values, sd, repeats, settings)),
                                      ("hud", nightly_hud(values))):
                out = results[(method, step)]
                out.series += 1
                hit = None if k is None else next((a for a in announced if abs(a[0] - k) <= MATCH_POINTS), None)
                if hit is not None:
                    out.found += 1
                    out.exact += hit[0] == k
                    out.nights.append(hit[1] - k + 1)
                out.false_alarms += len(announced) - (hit is not None)
    return results


def table(results: dict[tuple[str, float], Outcome]) -> str:
    """The Markdown table of ``evaluate``'s results: one row per (method, step)."""
    lines = ["| method | step | series | recall | exact date | median nights to alert | false alarms / 100 series × 60 dates |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (method, step), out in sorted(results.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        label = "none" if step == 0 else f"{step:+.0%}"
        recall = "—" if step == 0 else f"{out.found / out.series:.1%}"
        exact = "—" if step == 0 else f"{out.exact / out.series:.1%}"
        nights = f"{np.median(out.nights):.0f}" if out.nights else "—"
        alarms = 100 * out.false_alarms / out.series * 60 / DATES
        lines.append(f"| {method} | {label} | {out.series} | {recall} | {exact} | {nights} | {alarms:.2f} |")
    return "\n".join(lines)


def measure_noise(warehouse: Path) -> str:
    """The noise of a real history (a warehouse after ``python -m pipeline run`` over the real logs): the robust
    CV of tok/s/GPU from consecutive dates of every frontier series of ``trends`` (1.4826 × median |log ratio| /
    √2: a real change moves one ratio only) and the within-night CV of repeat groups (runs of one line, sweep
    and concurrency), as text."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as conn:
        ratios = [r[0] for r in conn.execute("""
            select ln(tput_per_gpu / lag(tput_per_gpu) over w) from trends where tput_per_gpu is not null
            window w as (partition by price_book, model, isl, osl, hw, framework, precision, spec_decoding,
                         benchmark_type, x_intvty_stat order by run_date)
            qualify lag(tput_per_gpu) over w is not null""").fetchall()]
        repeats = conn.execute("""
            select count(*), avg(cv) from (select stddev_samp(tput_per_gpu) / avg(tput_per_gpu) as cv
            from run_metrics group by price_book, repeat_group having count(*) > 1)""").fetchone()
    ratios = np.asarray(ratios, float)
    cv = 1.4826 * np.median(np.abs(ratios)) / math.sqrt(2) if ratios.size else float("nan")
    return (f"frontier series, consecutive dates: {ratios.size} pairs, robust CV {cv:.2%} "
            f"(|log ratio| median {np.median(np.abs(ratios)) if ratios.size else float('nan'):.4f})\n"
            f"repeat groups (same line, sweep, conc): {repeats[0]}"
            + (f", mean CV {repeats[1]:.2%}" if repeats[0] else " (the history has none)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cv", type=float, default=MEASURED_CV, help="noise per run (coefficient of variation)")
    parser.add_argument("--series", type=int, default=200, help="series per row (each step, and no step)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per night (their mean is the night's point)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--max-p-value", type=float, default=DetectionSettings.max_p_value)
    parser.add_argument("--min-after", type=int, default=DetectionSettings.min_points_after)
    parser.add_argument("--penalty", type=float, default=DetectionSettings.penalty)
    parser.add_argument("--measure-noise", type=Path, metavar="WAREHOUSE",
                        help="print the noise measured on a real history's warehouse and exit")
    args = parser.parse_args(argv)
    if args.measure_noise:
        print(measure_noise(args.measure_noise))
        return 0
    settings = DetectionSettings(max_p_value=args.max_p_value, min_points_after=args.min_after, penalty=args.penalty)
    results = evaluate(args.cv, args.series, args.repeats, args.seed, settings=settings)
    print(f"CV {args.cv:.1%} per run, {args.repeats} run(s) per night, {DATES} nights, seed {args.seed}; "
          f"change-point settings: {settings}")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
