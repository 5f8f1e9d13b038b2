"""The report's interactive figures, drawn with plotly for ``report.html``.

Scatter plots use SVG traces (no WebGL), so they draw in any browser; only the parallel
coordinates need WebGL (plotly has no other parcoords). A scatter draws a
:class:`~search.report._scatter.Scatter`, the same panel the PNG of :mod:`search.report._plots`
draws: the same groups, legend labels, limits and scales; here every point's hover also names
its trial, family and, for an infeasible one, the constraint it missed and by how much.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from optuna.distributions import BaseDistribution, CategoricalDistribution
from plotly.subplots import make_subplots

from search.pareto import usable
from search.record import Column
from search.report._scatter import PALETTE, Scatter
from search.report._style import FEASIBLE, FRONT, INFEASIBLE, LIMIT, log_scale

__all__ = [
    "importance_bars",
    "learning_curves",
    "objective_matrix",
    "parallel_coordinates",
    "trade_off",
]

_TEMPLATE = "plotly_white"

#: How each marker of :class:`~search.report._scatter.Group` is drawn by plotly.
_MARKERS: dict[str, dict[str, Any]] = {
    "dot": {"symbol": "circle"},
    "cross": {"symbol": "x"},
    "tri": {"symbol": "y-down"},
    "ring": {"size": 14},
    "star": {"symbol": "star", "size": 18, "line": {"color": "black", "width": 1}},
}


def _add_points(
    fig: go.Figure,
    panel: Scatter,
    *,
    cell: tuple[int, int] | None = None,
    legend: set[str] | None = None,
) -> None:
    """A panel's points (hover names each trial), its limits and axis scales; ``cell`` =
    (row, col) of a subplot; ``legend``: the labels already in the legend (of other panels),
    to which this panel's are added."""
    at = {"row": cell[0], "col": cell[1]} if cell else {}
    legend = set() if legend is None else legend
    for group in panel.groups:
        line = {"width": 0.5, "color": "white"}
        style: dict[str, Any] = {"size": 8, "color": group.colour, "line": line}
        style.update(_MARKERS[group.marker])
        if group.marker == "ring":
            style.update(color="rgba(0,0,0,0)", line={"color": group.colour, "width": 2})
        if group.marker in ("cross", "tri"):
            style["line"] = {"width": 1.5, "color": group.colour}
        rows = np.flatnonzero(group.rows)
        fig.add_trace(
            go.Scatter(
                x=panel.points[rows, 0], y=panel.points[rows, 1], mode="markers",
                name=group.label, marker=style, hovertext=[panel.hover[i] for i in rows],
                hoverinfo="text", legendgroup=group.label,
                showlegend=group.label not in legend,
            ),
            **at,
        )  # fmt: skip
        legend.add(group.label)
    for limit in panel.limits:
        # a shape's label, unlike an annotation, does not stretch the autorange to fit its text
        line = {"line_dash": "dash", "line_color": LIMIT, "line_width": 1}
        label = {"text": limit.label, "font": {"size": 10, "color": LIMIT}, "textposition": "end"}
        if limit.axis == "x":
            fig.add_vline(x=limit.value, **line, label=label, **at)
        else:
            fig.add_hline(y=limit.value, **line, label=label, **at)
        if limit.label not in legend:  # a shape has no legend entry: a line stands for it
            legend.add(limit.label)
            fig.add_trace(
                go.Scatter(x=[None], y=[None], mode="lines", name=limit.label,
                           line={"color": LIMIT, "dash": "dash", "width": 1},
                           legendgroup=limit.label, hoverinfo="skip"),
                **at,
            )  # fmt: skip
    _scale_axes(fig, panel, at)


def _scale_axes(fig: go.Figure, panel: Scatter, at: dict[str, int]) -> None:
    """Log axes for values spanning more than 50×; the performance axis starts under the worst
    feasible trial (double-click the plot to see the gated ones below)."""
    for i, axis in enumerate(("x", "y")):
        update = getattr(fig, f"update_{axis}axes")
        column = panel.points[:, i]
        column = column[np.isfinite(column)]
        if panel.log[i]:  # ticks labelled at the decades only (plotly put "2, 5" between)
            update(type="log", dtick=1, minor={"dtick": "D1", "showgrid": True}, **at)
        elif axis == "y" and np.isfinite(panel.y_floor) and column.size:
            high = column.max()
            if high > panel.y_floor:
                update(range=[panel.y_floor, high + 0.05 * (high - panel.y_floor)], **at)


def _layout(fig: go.Figure, *, title: str, height: int, top: int = 50) -> go.Figure:
    fig.update_layout(
        template=_TEMPLATE,
        title={"text": title, "font": {"size": 14}},
        height=height,
        margin={"l": 60, "r": 60, "t": top, "b": 50},
        legend={"font": {"size": 10}, "orientation": "h", "yanchor": "top", "y": -0.2},
    )
    return fig


def trade_off(panel: Scatter, stair: np.ndarray, *, direction: str, unit: str) -> go.Figure:
    """``panel.y`` (the performance) against one indicator, with the 2-D front's staircase.

    ``direction`` is the indicator's (throughput is maximised), which orients the staircase.
    """
    fig = go.Figure()
    if len(stair):
        shape = "hv" if direction == "minimize" else "vh"
        fig.add_trace(
            go.Scatter(x=stair[:, 0], y=stair[:, 1], mode="lines", line_shape=shape,
                       line={"color": FRONT, "width": 1.2}, hoverinfo="skip", showlegend=False)
        )  # fmt: skip
    _add_points(fig, panel)
    fig.update_xaxes(title_text=f"{panel.x} [{unit}]" if unit else panel.x)
    fig.update_yaxes(title_text=panel.y)
    return _layout(fig, title=f"{panel.y} vs {panel.x}", height=460)


def objective_matrix(panels: Sequence[tuple[int, int, Scatter]]) -> go.Figure:
    """Every pair of objectives (lower triangle; x axes shared down each column, so a zoom
    carries over), the multi-objective front ringed in each panel.

    The y axes are not shared along rows: plotly.js then autoranges the lower rows as if they
    were empty.
    """
    k = max(row for row, _, _ in panels) + 1
    fig = make_subplots(
        rows=k, cols=k, shared_xaxes="columns", horizontal_spacing=0.06, vertical_spacing=0.05
    )
    for row in range(k):
        for col in range(row + 1, k):
            fig.update_xaxes(visible=False, row=row + 1, col=col + 1)
            fig.update_yaxes(visible=False, row=row + 1, col=col + 1)
    names: list[str] = []
    legend: set[str] = set()
    for row, col, panel in panels:
        cell = (row + 1, col + 1)
        _add_points(fig, panel, cell=cell, legend=legend)
        if row == k - 1:
            fig.update_xaxes(title_text=panel.x, row=cell[0], col=cell[1])
            names.append(panel.x)
        if col == 0:
            fig.update_yaxes(title_text=panel.y, row=cell[0], col=cell[1])
    names.append(panels[-1][2].y)
    title = f"The front of {', '.join(names)}: every pair of objectives"
    return _layout(fig, title=title, height=120 + 300 * k)


def _axis(
    name: str, column: pd.Series, distribution: BaseDistribution | None
) -> dict[str, object]:
    """One parallel-coordinates axis: categories as ticks, log-sampled parameters as log10."""
    if isinstance(distribution, CategoricalDistribution):
        choices = list(distribution.choices)
        codes = [choices.index(v) for v in column]
        return {
            "label": name,
            "values": codes,
            "tickvals": list(range(len(choices))),
            "ticktext": [str(c) for c in choices],
        }
    data = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    if getattr(distribution, "log", False) or (distribution is None and log_scale(data)):
        return {"label": f"log10({name})", "values": np.log10(data)}
    return {"label": name, "values": data}


def parallel_coordinates(
    frame: pd.DataFrame,
    names: Sequence[str],
    space: dict[str, BaseDistribution],
    *,
    on_front: pd.Series,
) -> go.Figure:
    """The feasible trials as lines through every objective, then every parameter of
    ``space``; front trials red, drawn last. Drag along an axis to filter.

    Drawn with plotly directly: Optuna's ``plot_parallel_coordinate`` shows one objective per
    figure, and the trade-off needs them side by side.
    """
    rows = frame[usable(frame, list(names))]
    rows = rows.assign(_front=on_front[rows.index]).sort_values("_front", kind="stable")
    dims = [_axis(n, rows[n], None) for n in names]
    dims += [_axis(p, rows[Column.PARAMS_PREFIX + p], d) for p, d in space.items()]
    line = {
        "color": rows["_front"].astype(float),
        "colorscale": [[0.0, "#9ecae1"], [1.0, FRONT]],
        "cmin": 0.0,
        "cmax": 1.0,
    }
    fig = go.Figure(go.Parcoords(dimensions=dims, line=line))
    title = f"{len(rows)} feasible trial(s); front in red"
    return _layout(fig, title=title, height=460, top=100)


def importance_bars(table: pd.DataFrame) -> go.Figure:
    """Grouped bars: each parameter's importance (fraction of variance) for each objective;
    ``table`` has a ``parameter`` column and one column per objective."""
    fig = go.Figure()
    for i, objective in enumerate(c for c in table.columns if c != "parameter"):
        fig.add_trace(
            go.Bar(
                x=table[objective], y=table["parameter"], orientation="h", name=objective,
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate=f"{objective}: %{{y}} %{{x:.3f}}<extra></extra>",
            )
        )  # fmt: skip
    fig.update_layout(barmode="group", yaxis={"autorange": "reversed"})
    fig.update_xaxes(title_text="importance (fANOVA, share of the variance)", range=[0, 1])
    height = 140 + 22 * len(table) * max(len(table.columns) - 1, 1)
    _layout(fig, title="Parameter importance per objective", height=height)
    return fig.update_layout(legend={"orientation": "v", "y": 1, "yanchor": "top"})


def learning_curves(
    curves: Sequence[tuple[int, bool, list[dict]]], *, metric: str, family: dict[int, str]
) -> go.Figure:
    """Validation ``metric`` per epoch of every trial: fully trained ones in colour, those a
    scheduler stopped in grey with a cross where they stopped."""
    fig = go.Figure()
    shown: set[bool] = set()
    for number, complete, curve in curves:
        epochs = [p["epoch"] for p in curve]
        scores = [p.get(metric, np.nan) for p in curve]
        name = "trained to the end" if complete else "stopped early (x: where)"
        text = f"trial {number} · {family.get(number, '?')}"
        fig.add_trace(
            go.Scatter(
                x=epochs, y=scores, mode="lines+markers", name=name, legendgroup=name,
                showlegend=complete not in shown, hovertext=text,
                hovertemplate="%{hovertext}<br>epoch %{x}: %{y:.4f}<extra></extra>",
                line={"color": FEASIBLE if complete else INFEASIBLE, "width": 1.2},
                marker={
                    "size": [0] * (len(epochs) - 1) + [0 if complete else 9],
                    "symbol": "x", "color": INFEASIBLE,
                },
                opacity=0.7,
            )
        )  # fmt: skip
        shown.add(complete)
    fig.update_xaxes(title_text="epoch")
    fig.update_yaxes(title_text=f"validation {metric}")
    return _layout(fig, title="Learning curves", height=420)
