"""Frontier charts: throughput vs interactivity per side, with every run, the frontier curve and the targets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.frontiers.spline import interpolate

SIDE_COLORS = ("#d9480f", "#1c7ed6")


def frontier_chart(title: str, sides: Sequence[Mapping[str, Any]], targets: Sequence[float], path: Path,
                   x_label: str = "Interactivity (tok/s/user, median)") -> Path:
    """Draw one comparison's chart to ``path`` (PNG, 960×540).

    Args:
        title: chart title (the comparison's title).
        sides: per side, a mapping with ``label``, ``runs`` (list of (x_intvty, tput_per_gpu)) and
            ``frontier`` (list of (x_intvty, tput_per_gpu), ascending interactivity).
        targets: target interactivities (tok/s/user), drawn as dashed vertical lines.
        x_label: the x-axis title (agentic-trace sides: E2E-normalized interactivity).
    Returns:
        ``path``.
    """
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no GUI backend

    fig = Figure(figsize=(9.6, 5.4), dpi=100)
    ax = fig.subplots()
    for color, side in zip(SIDE_COLORS, sides):
        runs = np.asarray(side["runs"], dtype=float).reshape(-1, 2)
        ax.scatter(runs[:, 0], runs[:, 1], s=18, color=color, alpha=0.35, label=f"{side['label']} runs")
        frontier = np.asarray(side["frontier"], dtype=float).reshape(-1, 2)
        if len(frontier) > 1:
            grid = np.linspace(frontier[0, 0], frontier[-1, 0], 200)
            ax.plot(grid, interpolate(frontier[:, 0], frontier[:, 1], grid, clamp=False), color=color, lw=2,
                    label=f"{side['label']} frontier")
        ax.scatter(frontier[:, 0], frontier[:, 1], s=36, color=color, edgecolor="black", linewidth=0.5, zorder=3)
    for target in targets:
        ax.axvline(target, color="#495057", ls="--", lw=1)
        ax.annotate(f"{target:g}", (target, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom",
                    fontsize=9, color="#495057")
    ax.set_xlabel(x_label)
    ax.set_ylabel("Throughput (tok/s/GPU)")
    ax.set_title(title, pad=18)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
