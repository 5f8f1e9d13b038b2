"""The report's figures, drawn with matplotlib's object API (Agg canvas, no pyplot state).

Each function returns a :class:`~matplotlib.figure.Figure`; the report saves it as PNG. Using
``Figure`` directly keeps the caller's pyplot backend and global state untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from objectives.pepr import normalize as normalize_cost
from search.config import Constraint
from search.pareto._frame import usable, values
from search.report._style import (
    FEASIBLE,
    FRONT,
    INFEASIBLE,
    KNEE,
    LIMIT,
    feasible_floor,
    log_scale,
)

__all__ = [
    "accuracy_vs",
    "disagreement_heatmap",
    "hypervolume_curve",
    "learning_curves",
    "objective_matrix",
    "pepr_isoclines",
]


def _limits(ax: Axes, constraints: Sequence[Constraint], x: str, y: str) -> None:
    """Each constraint on an axis's metric as a dashed line at its bound."""
    for c in constraints:
        if c.indicator == x:
            ax.axvline(c.value, c=LIMIT, ls="--", lw=1.0, zorder=1, label=f"limit {c}")
        if c.indicator == y:
            ax.axhline(c.value, c=LIMIT, ls="--", lw=1.0, zorder=1, label=f"limit {c}")


def _points(
    ax: Axes,
    frame: pd.DataFrame,
    x: str,
    y: str,
    *,
    on_front: pd.Series,
    knee: int | None,
    constraints: Sequence[Constraint],
    performance: str,
) -> np.ndarray:
    """Feasible and infeasible trials, those a scheduler stopped early (at their last epoch's
    accuracy: never on a front), rings on the front, the knee starred and the constraint
    limits, on ``x`` × ``y``. Returns the front's points (for a staircase)."""
    done = frame["state"] == "COMPLETE"
    pts = values(frame, [x, y])
    feas = (done & frame["feasible"]).to_numpy()
    infeas = (done & ~frame["feasible"]).to_numpy()
    stopped = (frame["state"] == "PRUNED").to_numpy()
    low = feasible_floor(pts[feas, 1]) if y == performance else -np.inf

    def below(rows: np.ndarray) -> str:
        hidden = int((pts[rows, 1] < low).sum())
        return f", {hidden} below the axis" if hidden else ""

    ax.scatter(*pts[infeas].T, marker="x", c=INFEASIBLE, label=f"infeasible{below(infeas)}",
               zorder=2)  # fmt: skip
    ax.scatter(*pts[feas].T, c=FEASIBLE, s=22, label="feasible", zorder=3)
    if stopped.any():
        ax.scatter(*pts[stopped].T, marker="1", c=INFEASIBLE, s=40, zorder=2,
                   label=f"stopped early (at its last epoch{below(stopped)})")  # fmt: skip
    fp = pts[on_front.to_numpy(dtype=bool)]
    if len(fp):
        ax.scatter(*fp.T, facecolors="none", edgecolors=FRONT, s=60, label="front", zorder=4)
    kp = pts[(frame["number"] == knee).to_numpy() & feas]
    if len(kp) and np.isfinite(kp[0]).all():
        ax.scatter(*kp[0], marker="*", s=260, c=KNEE, edgecolors="black", zorder=5,
                   label=f"selected (trial {knee})")  # fmt: skip
    _limits(ax, constraints, x, y)
    if np.isfinite(low):
        ax.set_ylim(bottom=low)
    for axis, column in (("x", pts[:, 0]), ("y", pts[:, 1])):
        if log_scale(column):
            getattr(ax, f"set_{axis}scale")("log")
    ax.grid(alpha=0.3)
    return fp


def accuracy_vs(
    frame: pd.DataFrame,
    indicator: str,
    *,
    unit: str,
    direction: str = "minimize",
    front: Sequence[int],
    knee: int | None,
    constraints: Sequence[Constraint] = (),
    performance: str = "accuracy",
) -> Figure:
    """Performance against one indicator (see :func:`_points`) with the front's staircase.

    ``direction`` is the indicator's (throughput is maximised), which orients the staircase.
    """
    fig = Figure(figsize=(6.0, 4.0), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    on_front = (frame["state"] == "COMPLETE") & frame["number"].isin(front)
    fp = _points(
        ax,
        frame,
        indicator,
        performance,
        on_front=on_front,
        knee=knee,
        constraints=constraints,
        performance=performance,
    )
    if len(fp):
        # the attainment staircase: dominated trials lie below and on the costly side
        fp = fp[np.argsort(fp[:, 0])]
        ax.step(*fp.T, where="post" if direction == "minimize" else "pre", c=FRONT, lw=1.2)
    ax.set_xlabel(f"{indicator} [{unit}]")
    ax.set_ylabel(performance)
    ax.set_title(f"{performance} vs {indicator}")
    ax.legend(loc="lower right", fontsize=8)
    return fig


def objective_matrix(
    frame: pd.DataFrame,
    names: Sequence[str],
    *,
    on_front: pd.Series,
    knee: int | None,
    constraints: Sequence[Constraint] = (),
    performance: str = "accuracy",
) -> Figure:
    """Every pair of objectives (lower triangle), the multi-objective front ringed in each."""
    k = max(len(names) - 1, 1)
    fig = Figure(figsize=(1.0 + 3.4 * k, 0.6 + 3.0 * k), dpi=100, layout="constrained")
    axes = fig.subplots(k, k, squeeze=False)
    for row in range(k):
        for col in range(k):
            ax = axes[row][col]
            if col > row:
                ax.set_visible(False)
                continue
            x, y = names[col], names[row + 1]
            _points(ax, frame, x, y, on_front=on_front, knee=knee, constraints=constraints,
                    performance=performance)  # fmt: skip
            ax.set_xlabel(x if row == k - 1 else "")
            ax.set_ylabel(y if col == 0 else "")
    if k > 1:  # in the empty upper triangle
        fig.legend(*axes[0][0].get_legend_handles_labels(), loc="upper right", fontsize=8)
    else:
        axes[0][0].legend(fontsize=8)
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
