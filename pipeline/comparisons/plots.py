"""Frontier charts: throughput vs interactivity per side, with every run, the frontier curve and the targets.

The title and side labels come from user-supplied run metadata; ``literal_text`` makes matplotlib draw them as
typed (no mathtext, no LaTeX), so ``$...$`` in a framework name neither renders as math nor fails the chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from pipeline.frontiers.spline import interpolate

if TYPE_CHECKING:
    from matplotlib.text import Text

SIDE_COLORS = ("#d9480f", "#1c7ed6")
# The x-axis title per statistic x_intvty holds (x_intvty_stat, sql/run_metrics.sql; docs/metrics.md section 4a):
# "E2E-normalized interactivity" only for the definition, never for the stand-in.
X_AXIS_LABELS = {
    "median_intvty": "Interactivity (tok/s/user, median)",
    "e2e_norm_intvty_p90": "E2E-normalized interactivity (tok/s/user, 1 / p90(E2EL/OSL))",
    "mean_osl_over_p90_e2el": ("mean OSL / p90 E2EL (tok/s/user; a stand-in, not the dashboard's E2E-normalized "
                               "interactivity)"),
}
# zlib level of the PNGs: 1 instead of Pillow's 6 draws a chart faster for a slightly larger file (flat colours
# compress well at any level)
PNG_COMPRESS_LEVEL = 1


def x_axis_label(stat: str | None, agentic: bool = False) -> str:
    """The x-axis title of a frontier whose ``x_intvty`` holds statistic ``stat`` (``x_intvty_stat``). Rows that
    do not name it (a mart written before the column existed): the median label for fixed-sequence sides, and for
    agentic ones a title that claims no statistic."""
    if stat in X_AXIS_LABELS:
        return X_AXIS_LABELS[stat]
    return "x_intvty (tok/s/user; statistic not recorded)" if agentic else X_AXIS_LABELS["median_intvty"]


def literal_text(*texts: Text) -> None:
    """Make matplotlib draw each text artist's string exactly as given: mathtext off (``parse_math=False``: ``$``
    and ``\\`` are ordinary characters) and LaTeX off (``usetex=False``, whatever ``text.usetex`` says)."""
    for text in texts:
        text.set_parse_math(False)
        text.set_usetex(False)


def frontier_chart(title: str, sides: Sequence[Mapping[str, Any]], targets: Sequence[float], path: Path,
                   x_label: str = "Interactivity (tok/s/user, median)", dpi: int = 100) -> Path:
    """Draw one comparison's chart to ``path`` (PNG, 9.6 × 5.4 inches: 960×540 pixels at the default ``dpi``).

    Args:
        title: chart title (the comparison's title).
        sides: per side, a mapping with ``label``, ``runs`` (list of (x_intvty, tput_per_gpu)) and
            ``frontier`` (list of (x_intvty, tput_per_gpu), ascending interactivity).
        targets: target interactivities (tok/s/user), drawn as dashed vertical lines.
        x_label: the x-axis title, ``x_axis_label`` of the statistic plotted.
        dpi: pixels per inch (the Dagster UI's charts use fewer than the default, to keep the metadata small).
    Returns:
        ``path``.
    """
    from matplotlib.figure import (
        Figure,  # no pyplot: no global figure state, no GUI backend
    )

    fig = Figure(figsize=(9.6, 5.4), dpi=dpi)
    ax = fig.subplots()
    # Legend entries are passed explicitly: matplotlib would drop an automatic entry whose label starts with "_".
    handles, labels = [], []
    for color, side in zip(SIDE_COLORS, sides):
        runs = np.asarray(side["runs"], dtype=float).reshape(-1, 2)
        handles.append(ax.scatter(runs[:, 0], runs[:, 1], s=18, color=color, alpha=0.35))
        labels.append(f"{side['label']} runs")
        frontier = np.asarray(side["frontier"], dtype=float).reshape(-1, 2)
        if len(frontier) > 1:
            grid = np.linspace(frontier[0, 0], frontier[-1, 0], 200)
            handles += ax.plot(grid, interpolate(frontier[:, 0], frontier[:, 1], grid, clamp=False), color=color,
                               lw=2)
            labels.append(f"{side['label']} frontier")
        ax.scatter(frontier[:, 0], frontier[:, 1], s=36, color=color, edgecolor="black", linewidth=0.5, zorder=3)
    for target in targets:
        ax.axvline(target, color="#495057", ls="--", lw=1)
        ax.annotate(f"{target:g}", (target, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                    fontsize=9, color="#495057")
    ax.set_xlabel(x_label)
    ax.set_ylabel("Throughput (tok/s/GPU)")
    ax.set_title(title, pad=18)
    ax.grid(alpha=0.3)
    legend = ax.legend(handles, labels, loc="upper right", fontsize=9)
    literal_text(ax.title, *legend.get_texts())
    # fixed margins, wide enough for 6-digit tick labels: tight_layout measured every text first (~30 % of a chart)
    fig.subplots_adjust(left=0.085, right=0.98, bottom=0.1, top=0.88)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    return path


def latency_cdf_chart(title: str, ttft_s: Sequence[float | None], tpot_s: Sequence[float | None], path: Path) -> Path:
    """Draw a run's per-request TTFT and TPOT empirical CDFs side by side to ``path`` (PNG, 640×240, ~20 KB).

    Args:
        title: the run's label (user-supplied metadata: drawn literally, ``literal_text``).
        ttft_s: per-request time to first token (s); None (errored requests) is left out.
        tpot_s: per-request time per output token (s), drawn in ms; None is left out.
    Returns:
        ``path``. The y-axis is the share of the plotted requests at or below x (step ``i / n``).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 2.4), dpi=100)
    axes = fig.subplots(1, 2)
    for ax, values, label, scale in ((axes[0], ttft_s, "TTFT (s)", 1.0), (axes[1], tpot_s, "TPOT (ms)", 1000.0)):
        data = np.sort(np.asarray([v for v in values if v is not None], dtype=float)) * scale
        if data.size:
            ax.step(data, np.arange(1, data.size + 1) / data.size, where="post", color=SIDE_COLORS[1], lw=1.5)
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("share of requests", fontsize=8)
    suptitle = fig.suptitle(title, fontsize=9)
    literal_text(suptitle)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
