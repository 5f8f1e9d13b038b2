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
from search.pareto._frame import usable, values

__all__ = ["accuracy_vs", "disagreement_heatmap", "hypervolume_curve", "pepr_isoclines"]

_FEASIBLE = "#1f77b4"
_INFEASIBLE = "#9a9a9a"
_FRONT = "#d62728"
_KNEE = "#ffbf00"


def _log_scale(x: np.ndarray) -> bool:
    """Log x when every value is positive and they span more than 50×."""
    x = x[np.isfinite(x)]
    return bool(x.size and x.min() > 0 and x.max() / x.min() > 50)


def _feasible_floor(perf: np.ndarray) -> float:
    """Lower y limit: just under the worst feasible trial, so gated trials (recorded with
    accuracy 0, never trained) do not squash the axis; -inf when nothing is feasible."""
    perf = perf[np.isfinite(perf)]
    if not perf.size:
        return -np.inf
    span = perf.max() - perf.min()
    return float(perf.min() - 0.08 * (span if span > 0 else max(abs(perf.min()), 1.0)))


def accuracy_vs(
    frame: pd.DataFrame,
    indicator: str,
    *,
    unit: str,
    direction: str = "minimize",
    front: Sequence[int],
    knee: int | None,
    performance: str = "accuracy",
) -> Figure:
    """Performance against one indicator: feasible and infeasible trials, the trials a
    scheduler stopped early (at their last epoch's accuracy: never on the front), the front,
    the knee.

    ``direction`` is the indicator's (throughput is maximised), which orients the front.
    """
    fig = Figure(figsize=(6.0, 4.0), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    done = frame[(frame["state"] == "COMPLETE")]
    pts = values(done, [indicator, performance])
    feas = done["feasible"].to_numpy(dtype=bool)
    low = _feasible_floor(pts[feas, 1])
    hidden = int((pts[~feas, 1] < low).sum())
    label = f"infeasible ({hidden} below the axis)" if hidden else "infeasible"
    ax.scatter(*pts[~feas].T, marker="x", c=_INFEASIBLE, label=label, zorder=2)
    ax.scatter(*pts[feas].T, c=_FEASIBLE, s=22, label="feasible", zorder=3)
    stopped = frame[frame["state"] == "PRUNED"]
    if indicator in stopped and performance in stopped and len(stopped):
        sp = values(stopped, [indicator, performance])
        below = int((sp[:, 1] < low).sum())
        note = f", {below} below the axis" if below else ""
        ax.scatter(*sp.T, marker="1", c=_INFEASIBLE, s=40, zorder=2,
                   label=f"stopped early (at its last epoch{note})")  # fmt: skip
    on_front = done["number"].isin(front).to_numpy()
    fp = pts[on_front]
    fp = fp[np.argsort(fp[:, 0])]
    if len(fp):
        # the attainment staircase: dominated trials lie below and on the costly side
        where = "post" if direction == "minimize" else "pre"
        ax.step(*fp.T, where=where, c=_FRONT, lw=1.2, zorder=4)
        ax.scatter(*fp.T, facecolors="none", edgecolors=_FRONT, s=60, label="front", zorder=4)
    if knee is not None and knee in set(done["number"]):
        kp = pts[done["number"].to_numpy() == knee][0]
        if np.isfinite(kp).all():
            ax.scatter(
                *kp,
                marker="*",
                s=260,
                c=_KNEE,
                edgecolors="black",
                zorder=5,
                label=f"selected (trial {knee})",
            )
    if np.isfinite(low):
        ax.set_ylim(bottom=low)
    if _log_scale(pts[:, 0]):
        ax.set_xscale("log")
    ax.set_xlabel(f"{indicator} [{unit}]")
    ax.set_ylabel(performance)
    ax.set_title(f"{performance} vs {indicator}")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
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
            c=_FRONT,
            lw=1.0,
            ls="--",
            zorder=2,
            label=f"PePR = {score.max():.3f}",
        )
        sc = ax.scatter(r, p, c=score, cmap="viridis", s=22, zorder=3)
        best = int(np.argmax(score))
        ax.scatter(r[best], p[best], marker="*", s=220, c=_KNEE, edgecolors="black", zorder=4)
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
    ax.step(x, history["hypervolume"].to_numpy(), where="post", c=_FEASIBLE)
    ax.scatter(x, history["hypervolume"].to_numpy(), c=_FEASIBLE, s=12)
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
            ax.plot(epochs, scores, c=_FEASIBLE, alpha=0.6, lw=1.2)
        else:
            ax.plot(epochs, scores, c=_INFEASIBLE, alpha=0.6, lw=1.0)
            ax.scatter(epochs[-1:], scores[-1:], marker="x", c=_INFEASIBLE, s=18)
    ax.plot([], [], c=_FEASIBLE, label="trained to the end")
    ax.plot([], [], c=_INFEASIBLE, label="stopped early (x: where)")
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
