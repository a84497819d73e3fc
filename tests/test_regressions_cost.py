"""The change-point search's cost (``pipeline.comparisons.regressions.cumulative_l2_cost``): ruptures' ``CostL2``
from prefix sums. ruptures' own ``CostL2`` is the independent reference: the same ``Binseg`` search with each cost
must cut every seeded random series at the same points."""

import math

import numpy as np
import pytest
import ruptures
from ruptures.base import BaseCost
from ruptures.costs import CostL2, NotEnoughPoints

from pipeline.comparisons.regressions import change_points, cumulative_l2_cost, robust_noise


def _series(rng: np.random.Generator, kind: str) -> np.ndarray:
    """One random nightly series: 0–4 steps of N(0, 0.3) at random nights plus noise, at the levels the search
    sees (log of a few thousand tok/s/GPU, seconds, absolute failure rates, a level far from zero)."""
    n = int(rng.integers(5, 100))
    steps = np.zeros(n)
    for _ in range(int(rng.integers(0, 5))):
        steps[int(rng.integers(1, n)):] += rng.normal(0.0, 0.3)
    scale = rng.choice([0.001, 0.01, 0.05, 0.2])
    if kind == "log_throughput":
        return np.log(rng.uniform(50, 20_000)) + steps + rng.normal(0.0, scale, n)
    if kind == "seconds":
        return np.log(rng.uniform(0.005, 30.0)) + steps + rng.normal(0.0, scale, n)
    if kind == "far_from_zero":  # cancellation: sums of squares of ~1e4 with steps of ~0.3
        return 1e4 + steps + rng.normal(0.0, scale, n)
    return np.clip(0.05 + 0.1 * steps + rng.normal(0.0, scale / 4, n), 0.0, 1.0)  # a failure rate


def _cuts(x: np.ndarray, cost: BaseCost | None, min_size: int = 2, penalty: float = 4.0) -> list[int]:
    noise = max(robust_noise(x), 1e-3)
    algo = (ruptures.Binseg(model="l2", min_size=min_size, jump=1) if cost is None else
            ruptures.Binseg(custom_cost=cost, min_size=min_size, jump=1))
    return algo.fit(x.reshape(-1, 1)).predict(pen=penalty * noise * noise * math.log(x.size))


@pytest.mark.parametrize("kind", ["log_throughput", "seconds", "far_from_zero", "failure_rate"])
def test_the_same_change_points_as_ruptures_costl2_on_seeded_random_series(kind):
    rng = np.random.default_rng(20261127)
    cut_somewhere = 0
    for _ in range(200):
        x = _series(rng, kind)
        for min_size, penalty in ((2, 4.0), (2, 1.0), (3, 4.0)):
            if x.size < 2 * min_size:
                continue
            reference = _cuts(x, None, min_size, penalty)
            assert _cuts(x, cumulative_l2_cost(), min_size, penalty) == reference, (kind, x.tolist())
            cut_somewhere += len(reference) > 1
    assert cut_somewhere > 200  # the series do have change points to agree on, not only none


def test_every_segment_s_error_is_costl2_s():
    x = np.log(1000.0) + np.random.default_rng(5).normal(0.0, 0.03, 60)
    x[25:] += 0.2
    ours, reference = cumulative_l2_cost().fit(x.reshape(-1, 1)), CostL2().fit(x.reshape(-1, 1))
    for start in range(60):
        for end in range(start + 1, 61):
            assert ours.error(start, end) == pytest.approx(reference.error(start, end), rel=1e-9, abs=1e-12)
    with pytest.raises(NotEnoughPoints):
        ours.error(7, 7)


def test_binseg_keeps_the_cost_and_the_search_never_calls_numpy_var(monkeypatch):
    # Binseg silently falls back to its own l2 cost when custom_cost is not a BaseCost
    assert ruptures.Binseg(custom_cost=(cost := cumulative_l2_cost())).cost is cost

    def refuse(self, start, end):
        raise AssertionError("CostL2.error called: the search recomputes each segment's variance")

    monkeypatch.setattr(CostL2, "error", refuse)
    x = np.r_[np.full(15, 1.0), np.full(15, 1.5)] + np.random.default_rng(3).normal(0.0, 0.02, 30)
    assert change_points(x, robust_noise(x), 2, 4.0) == [15]


def test_a_signal_of_two_columns_is_refused():
    with pytest.raises(ValueError, match="one column"):
        cumulative_l2_cost().fit(np.zeros((10, 2)))


def test_where_the_cuts_differ_the_split_was_an_exact_tie():
    """An isolated failure in a flat failure-rate series ties two cuts exactly in real arithmetic (either side of
    it): ``CostL2`` breaks the tie by ``numpy.var``'s rounding, the prefix sums by theirs, so the cuts can differ
    there (and the searches part from that split on). Each split of such a series either picks the same cut with
    both costs, or two cuts whose ``CostL2`` gains are equal within rounding."""
    rng = np.random.default_rng(11)
    splits = ties = 0
    for _ in range(300):
        n = int(rng.integers(6, 60))
        x = np.zeros(n)
        spikes = int(rng.integers(1, 4))
        x[rng.integers(0, n, spikes)] = rng.choice([0.25, 0.5, 1.0], spikes)
        reference = ruptures.Binseg(model="l2", min_size=2, jump=1).fit(x.reshape(-1, 1))
        ours = ruptures.Binseg(custom_cost=cumulative_l2_cost(), min_size=2, jump=1).fit(x.reshape(-1, 1))
        l2 = CostL2().fit(x.reshape(-1, 1))
        bounds = [0, *_cuts(x, None)]
        for start, end in {(0, n), *zip(bounds, bounds[1:])}:
            (cut, gain), (our_cut, _) = reference.single_bkp(start, end), ours.single_bkp(start, end)
            splits += 1
            if our_cut != cut:
                ties += gain > 1e-9  # a flat segment's gains are all 0: which cut is moot
                our_gain = l2.error(start, end) - l2.error(start, our_cut) - l2.error(our_cut, end)
                assert our_gain == pytest.approx(gain, rel=1e-12, abs=1e-15), (x.tolist(), start, end)
    assert ties > 0, splits  # such ties exist: the cuts of these series are not always CostL2's
