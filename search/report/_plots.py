"""The report's figures, drawn with matplotlib's object API (Agg canvas, no pyplot state).

Each function returns a :class:`~matplotlib.figure.Figure`; the report saves it as PNG. Using
``Figure`` directly keeps the caller's pyplot backend and global state untouched. The scatters
draw a :class:`~search.report._scatter.Scatter`, the same panel the HTML draws with plotly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from objectives.pepr import normalize as normalize_cost
from search.pareto import usable, values
from search.report._scatter import Scatter
from search.report._style import FEASIBLE, FRONT, INFEASIBLE, KNEE, LIMIT

__all__ = [
    "accuracy_vs",
    "disagreement_heatmap",
    "hypervolume_curve",
    "learning_curves",
    "objective_matrix",
    "pepr_isoclines",
]


#: How each marker of :class:`~search.report._scatter.Group` is drawn by matplotlib.
_MARKERS = {
    "dot": {"marker": "o", "s": 22, "zorder": 3},
    "cross": {"marker": "x", "s": 26, "zorder": 2},
    "tri": {"marker": "1", "s": 40, "zorder": 2},
    "ring": {"marker": "o", "s": 60, "zorder": 4, "linewidths": 1.2},
    "star": {"marker": "*", "s": 260, "zorder": 5, "edgecolors": "black"},
}


def _draw(ax: Axes, panel: Scatter) -> None:
    """A panel's points, legend labels (with how many lie below the axis), limits and scales."""
    for group in panel.groups:
        style: dict[str, Any] = dict(_MARKERS[group.marker])
        if group.marker == "ring":
            style.update(facecolors="none", edgecolors=group.colour)
        else:
            style["c"] = group.colour
        hidden = panel.hidden.get(group.label)
        label = group.label + (f" [{hidden} below the axis]" if hidden else "")
        ax.scatter(*panel.points[group.rows].T, label=label, **style)
    for limit in panel.limits:
        line = ax.axvline if limit.axis == "x" else ax.axhline
        line(limit.value, c=LIMIT, ls="--", lw=1.0, zorder=1, label=limit.label)
    if np.isfinite(panel.y_floor):
        ax.set_ylim(bottom=panel.y_floor)
    for axis, log in zip(("x", "y"), panel.log, strict=True):
        if log:
            getattr(ax, f"set_{axis}scale")("log")
    ax.grid(alpha=0.3)


def accuracy_vs(
    panel: Scatter, stair: np.ndarray, *, unit: str, direction: str = "minimize"
) -> Figure:
    """Performance (``panel.y``) against one indicator with the front's staircase.

    ``direction`` is the indicator's (throughput is maximised), which orients the staircase.
    """
    fig = Figure(figsize=(6.4, 4.6), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    _draw(ax, panel)
    if len(stair):
        ax.step(*stair.T, where="post" if direction == "minimize" else "pre", c=FRONT, lw=1.2)
    ax.set_xlabel(f"{panel.x} [{unit}]")
    ax.set_ylabel(panel.y)
    ax.set_title(f"{panel.y} vs {panel.x}")
    ax.legend(loc="lower right", fontsize=7)
    return fig


def objective_matrix(panels: Sequence[tuple[int, int, Scatter]]) -> Figure:
    """Every pair of objectives (lower triangle), the multi-objective front ringed in each;
    one legend for all (in the empty upper triangle when there is one)."""
    k = max(row for row, _, _ in panels) + 1
    fig = Figure(figsize=(1.0 + 3.4 * k, 0.6 + 3.0 * k), dpi=100, layout="constrained")
    axes = fig.subplots(k, k, squeeze=False)
    for row in range(k):
        for col in range(row + 1, k):
            axes[row][col].set_visible(False)
    legend: dict[str, Any] = {}
    for row, col, panel in panels:
        ax = axes[row][col]
        _draw(ax, panel)
        ax.set_xlabel(panel.x if row == k - 1 else "")
        ax.set_ylabel(panel.y if col == 0 else "")
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label.split(" [")[0], handle)
    if k > 1:
        fig.legend(list(legend.values()), list(legend.keys()), loc="upper right", fontsize=8)
    else:
        axes[0][0].legend(legend.values(), legend.keys(), fontsize=7)
    return fig


def pepr_isoclines(
    frame: pd.DataFrame,
    indicators: Sequence[str],
    *,
    performance: str = "accuracy",
    columns: int = 3,
) -> Figure:
    """PePR isoclines ``P = c (1 + R)`` in the performance × normalised-cost plane.

    One panel per indicator; R is min–max normalised over the feasible trials (0 when the
    indicator is constant). Along an isocline every trial has the same PePR ``c``; the grey
    ones are evenly spaced between the worst and best trial, the dashed one passes through
    the PePR argmax (starred).
    """
    n = max(len(indicators), 1)
    cols = min(columns, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(4.2 * cols, 3.6 * rows), dpi=100, layout="constrained")
    r_grid = np.linspace(0.0, 1.0, 50)
    for i, name in enumerate(indicators):
        ax = fig.add_subplot(rows, cols, i + 1)
        sub = frame[usable(frame, [performance, name])]
        pts = values(sub, [performance, name])
        if not len(pts):
            ax.set_title(f"{name}: no feasible trial")
            continue
        p = np.clip(pts[:, 0], 0.0, 1.0)
        r = normalize_cost(np.maximum(pts[:, 1], 0.0), "minmax")
        score = p / (1.0 + r)
        for c in np.linspace(score.min(), score.max(), 8)[:-1]:
            ax.plot(r_grid, c * (1.0 + r_grid), c="#bbbbbb", lw=0.8, zorder=1)
        ax.plot(
            r_grid,
            score.max() * (1.0 + r_grid),
            c=FRONT,
            lw=1.0,
            ls="--",
            zorder=2,
            label=f"PePR = {score.max():.3f}",
        )
        sc = ax.scatter(r, p, c=score, cmap="viridis", s=22, zorder=3)
        best = int(np.argmax(score))
        ax.scatter(r[best], p[best], marker="*", s=220, c=KNEE, edgecolors="black", zorder=4)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(max(0.0, p.min() - 0.1), min(1.0, p.max() + 0.05) + 1e-3)
        ax.set_xlabel(f"normalised {name} (R)")
        ax.set_ylabel(performance)
        ax.set_title(f"PePR_{name}", fontsize=10)
        ax.legend(loc="lower right", fontsize=7)
        fig.colorbar(sc, ax=ax, label="PePR", shrink=0.8)
    return fig


def hypervolume_curve(history: pd.DataFrame, *, caption: str) -> Figure:
    """Hypervolume of the feasible front after each completed trial."""
    fig = Figure(figsize=(6.0, 3.6), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(1, len(history) + 1)
    ax.step(x, history["hypervolume"].to_numpy(), where="post", c=FEASIBLE)
    ax.scatter(x, history["hypervolume"].to_numpy(), c=FEASIBLE, s=12)
    ax.set_xlabel("completed trials (completion order)")
    ax.set_ylabel("hypervolume (normalised)")
    ax.set_title(caption, fontsize=9)
    ax.grid(alpha=0.3)
    return fig


def learning_curves(curves: Sequence[tuple[int, bool, list[dict]]], *, metric: str) -> Figure:
    """Validation ``metric`` per epoch of every trial: fully trained ones in colour, those a
    scheduler stopped in grey with a cross where they stopped."""
    fig = Figure(figsize=(6.4, 3.8), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    for _, complete, curve in curves:
        epochs = [p["epoch"] for p in curve]
        scores = [p.get(metric, np.nan) for p in curve]
        if complete:
            ax.plot(epochs, scores, c=FEASIBLE, alpha=0.6, lw=1.2)
        else:
            ax.plot(epochs, scores, c=INFEASIBLE, alpha=0.6, lw=1.0)
            ax.scatter(epochs[-1:], scores[-1:], marker="x", c=INFEASIBLE, s=18)
    ax.plot([], [], c=FEASIBLE, label="trained to the end")
    ax.plot([], [], c=INFEASIBLE, label="stopped early (x: where)")
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"validation {metric}")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def _heatmap(fig: Figure, ax: Axes, table: pd.DataFrame, *, title: str, vmin: float) -> None:
    data = table.to_numpy(dtype=float)
    masked = np.ma.masked_invalid(data)
    cmap = "RdBu_r" if vmin < 0 else "viridis"
    im = ax.imshow(masked, vmin=vmin, vmax=1.0, cmap=cmap)
    ax.set_facecolor("#dddddd")
    labels = list(table.columns)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for (i, j), v in np.ndenumerate(data):
        ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)


def disagreement_heatmap(tau: pd.DataFrame, overlap: pd.DataFrame) -> Figure:
    """Kendall τ (left) and Pareto-set Jaccard overlap (right) between cost indicators."""
    k = max(len(tau), 1)
    size = 2.0 + 0.55 * k
    fig = Figure(figsize=(2 * size + 1.5, size), dpi=100, layout="constrained")
    _heatmap(fig, fig.add_subplot(1, 2, 1), tau, title="Kendall τ (as costs)", vmin=-1.0)
    _heatmap(
        fig, fig.add_subplot(1, 2, 2), overlap, title="Pareto-set overlap (Jaccard)", vmin=0.0
    )
    return fig
