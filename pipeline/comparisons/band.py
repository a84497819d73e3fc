"""The interactivity band two sides share, its default targets and how a target is phrased (the seed pages'
rules): overlap of the two sides' interactivity ranges over all their runs, or their union when they do not
overlap; default targets at 25/50/75 % of the band, rounded half up; displayed as ceil(lo)–floor(hi).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

TARGET_FRACTIONS = (0.25, 0.5, 0.75)


def interactivity_band(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, bool]:
    """The band both sides cover: lo = max(min_a, min_b), hi = min(max_a, max_b); the union if lo ≥ hi.

    Args:
        a, b: median interactivity of every run of each side (tok/s/user), non-empty.
    Returns:
        (lo, hi, is_union), unrounded.
    Raises:
        ValueError: a side with no runs.
    """
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need runs for a band")
    a_min, a_max, b_min, b_max = float(np.min(a)), float(np.max(a)), float(np.min(b)), float(np.max(b))
    lo, hi = max(a_min, b_min), min(a_max, b_max)
    if lo >= hi:
        return min(a_min, b_min), max(a_max, b_max), True
    return lo, hi, False


def round_half_up(value: float) -> int:
    """Round to the nearest integer, .5 away from zero for positives (dashboard rounding, not banker's)."""
    return math.floor(value + 0.5)


def default_targets(lo: float, hi: float) -> list[int]:
    """round-half-up(lo + (hi − lo)·f) for f in 0.25, 0.5, 0.75 (tok/s/user)."""
    return [round_half_up(lo + (hi - lo) * f) for f in TARGET_FRACTIONS]


def displayed_band(lo: float, hi: float) -> tuple[int, int]:
    """The band as the page prints it: ceil(lo)–floor(hi)."""
    return math.ceil(lo), math.floor(hi)


def band_phrase(target: float, lo: float, hi: float) -> str:
    """Where a target sits in the displayed band: u < ⅓ "near the low end", u > ⅔ "toward the upper edge",
    else "around the middle"; u = (t − min)/(max − min) on the displayed (ceil/floor) band."""
    d_lo, d_hi = displayed_band(lo, hi)
    u = 0.5 if d_hi == d_lo else (target - d_lo) / (d_hi - d_lo)
    if u < 1 / 3:
        return "near the low end"
    if u > 2 / 3:
        return "toward the upper edge"
    return "around the middle"
