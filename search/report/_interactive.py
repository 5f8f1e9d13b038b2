"""The report's interactive figures, drawn with plotly for ``report.html``.

Scatter plots use SVG traces (no WebGL), so they draw in any browser; only the parallel
coordinates need WebGL (plotly has no other parcoords). Every point's hover names its trial,
family and state; the marks match the PNGs of :mod:`search.report._plots` (both take their
colours from ``_style``): infeasible and stopped-early trials grey, the front ringed in red,
the selected trial starred, constraint limits dashed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from optuna.distributions import BaseDistribution, CategoricalDistribution
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from search.config import Constraint
from search.pareto._frame import PARAMS_PREFIX, format_value, usable, values
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
    "Marks",
    "importance_bars",
    "learning_curves",
    "objective_matrix",
    "parallel_coordinates",
    "trade_off",
    "validation_vs_test",
]

_TEMPLATE = "plotly_white"
#: Family colours: plotly's D3 palette without the red and grey that mark the front and the
#: infeasible trials.
_PALETTE = [c for c in qualitative.D3 if c.lower() not in (FRONT, "#7f7f7f")]


@dataclass(frozen=True)
class Marks:
    """What every scatter marks, worked out once by the report.

    Attributes:
        family: The family of each trial, aligned with the frame.
        knee: The selected trial's number, or None.
        constraints: The study's constraints (a line where one bounds an axis's metric).
        performance: The metric whose gated trials (never trained, recorded as 0) would
            squash its axis: that axis starts just under the worst feasible trial.
    """

    family: pd.Series
    knee: int | None
    constraints: tuple[Constraint, ...] = ()
    performance: str = "accuracy"

    def colours(self) -> dict[str, str]:
        """Family → colour, in a stable (sorted) order."""
        names = sorted(set(self.family))
        return {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}


def _hover(rows: pd.DataFrame, family: pd.Series, x: str, y: str) -> list[str]:
    text = []
    for index, row in rows.iterrows():
        state = "" if row["feasible"] else "infeasible"
        if row["state"] == "PRUNED":
            state = "stopped early"
        reason = row.get("infeasible_reason")
        if isinstance(reason, str):
            state += f": {reason}"
        head = f"trial {int(row['number'])} · {family[index]}" + (f" · {state}" if state else "")
        text.append(f"{head}<br>{x} = {format_value(row[x])}<br>{y} = {format_value(row[y])}")
    return text


def _add_points(
    fig: go.Figure,
    frame: pd.DataFrame,
    x: str,
    y: str,
    marks: Marks,
    *,
    on_front: pd.Series | None,
    cell: tuple[int, int] | None = None,
    legend: bool = True,
) -> None:
    """The trials on ``x`` × ``y``: feasible by family, infeasible and stopped early grey, the
    front ringed, the knee starred, constraint limits dashed; ``cell`` = (row, col) of a
    subplot."""
    at = {"row": cell[0], "col": cell[1]} if cell else {}
    finite = np.isfinite(values(frame, [x, y])).all(axis=1)
    done = frame["state"] == "COMPLETE"
    feasible = done & frame["feasible"]
    family = marks.family[frame.index]
    groups = [(f, feasible & (family == f), {"color": c}) for f, c in marks.colours().items()]
    groups += [
        ("infeasible", done & ~frame["feasible"], {"color": INFEASIBLE, "symbol": "x"}),
        ("stopped early", frame["state"] == "PRUNED", {"color": INFEASIBLE, "symbol": "y-down"}),
    ]
    if on_front is not None:
        ring = {"color": "rgba(0,0,0,0)", "size": 14, "line": {"color": FRONT, "width": 2}}
        groups.append(("front", on_front, ring))
    star = {"color": KNEE, "symbol": "star", "size": 18, "line": {"color": "black", "width": 1}}
    knee = feasible & frame["number"].eq(marks.knee)
    groups.append((f"selected (trial {marks.knee})", knee, star))
    for name, mask, style in groups:
        rows = frame[mask.to_numpy(dtype=bool) & finite]
        if rows.empty:
            continue
        style = {"size": 8, "line": {"width": 0.5, "color": "white"}, **style}
        if style.get("symbol") in ("x", "y-down"):
            style["line"] = {"width": 1.5, "color": INFEASIBLE}
        fig.add_trace(
            go.Scatter(
                x=rows[x], y=rows[y], mode="markers", name=name, marker=style,
                hovertext=_hover(rows, marks.family, x, y), hoverinfo="text",
                legendgroup=name, showlegend=legend,
            ),
            **at,
        )  # fmt: skip
    for c in marks.constraints:
        # a shape's label, unlike an annotation, does not stretch the autorange to fit its text
        line = {"line_dash": "dash", "line_color": LIMIT, "line_width": 1}
        label = {"text": f"limit {c}", "font": {"size": 10, "color": LIMIT}}
        if c.indicator == x:
            fig.add_vline(x=c.value, **line, label={**label, "textposition": "end"}, **at)
        if c.indicator == y:
            fig.add_hline(y=c.value, **line, label={**label, "textposition": "end"}, **at)
    _scale_axes(fig, frame, x, y, marks, at)


def _scale_axes(
    fig: go.Figure, frame: pd.DataFrame, x: str, y: str, marks: Marks, at: dict[str, int]
) -> None:
    """Log axes for values spanning more than 50×; the performance axis starts under the worst
    feasible trial (double-click the plot to see the gated ones below)."""
    for axis, name in (("x", x), ("y", y)):
        column = values(frame, [name])[:, 0]
        column = column[np.isfinite(column)]
        update = getattr(fig, f"update_{axis}axes")
        if log_scale(column):
            update(type="log", **at)
        elif name == marks.performance and column.size:
            low = feasible_floor(values(frame[usable(frame, [name])], [name])[:, 0])
            high = column.max()
            if np.isfinite(low) and high > low:
                update(range=[low, high + 0.05 * (high - low)], **at)


def _layout(fig: go.Figure, *, title: str, height: int, top: int = 50) -> go.Figure:
    fig.update_layout(
        template=_TEMPLATE,
        title={"text": title, "font": {"size": 14}},
        height=height,
        margin={"l": 60, "r": 60, "t": top, "b": 50},
        legend={"font": {"size": 10}, "orientation": "h", "yanchor": "top", "y": -0.2},
    )
    return fig


def trade_off(
    frame: pd.DataFrame,
    x: str,
    y: str,
    marks: Marks,
    *,
    front: Sequence[int],
    direction: str,
    unit: str,
) -> go.Figure:
    """``y`` (the performance) against one indicator ``x``, with the 2-D front's staircase.

    ``direction`` is ``x``'s (throughput is maximised), which orients the staircase.
    """
    fig = go.Figure()
    on_front = (frame["state"] == "COMPLETE") & frame["number"].isin(front)
    fp = values(frame[on_front], [x, y])
    fp = fp[np.argsort(fp[:, 0])]
    if len(fp):
        shape = "hv" if direction == "minimize" else "vh"
        fig.add_trace(
            go.Scatter(x=fp[:, 0], y=fp[:, 1], mode="lines", line_shape=shape,
                       line={"color": FRONT, "width": 1.2}, hoverinfo="skip", showlegend=False)
        )  # fmt: skip
    _add_points(fig, frame, x, y, marks, on_front=on_front)
    fig.update_xaxes(title_text=f"{x} [{unit}]" if unit else x)
    fig.update_yaxes(title_text=y)
    return _layout(fig, title=f"{y} vs {x}", height=420)


def objective_matrix(
    frame: pd.DataFrame, names: Sequence[str], marks: Marks, *, on_front: pd.Series
) -> go.Figure:
    """Every pair of objectives (lower triangle; x axes shared down each column, so a zoom
    carries over), the multi-objective front ringed in each panel.

    The y axes are not shared along rows: plotly.js then autoranges the lower rows as if they
    were empty.
    """
    k = max(len(names) - 1, 1)
    fig = make_subplots(
        rows=k, cols=k, shared_xaxes="columns", horizontal_spacing=0.06, vertical_spacing=0.05
    )
    for row in range(k):
        for col in range(k):
            if col > row:
                fig.update_xaxes(visible=False, row=row + 1, col=col + 1)
                fig.update_yaxes(visible=False, row=row + 1, col=col + 1)
                continue
            x, y = names[col], names[row + 1]
            cell = (row + 1, col + 1)
            _add_points(fig, frame, x, y, marks, on_front=on_front, cell=cell, legend=not row)
            if row == k - 1:
                fig.update_xaxes(title_text=x, row=cell[0], col=cell[1])
            if col == 0:
                fig.update_yaxes(title_text=y, row=cell[0], col=cell[1])
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
    dims += [_axis(p, rows[PARAMS_PREFIX + p], d) for p, d in space.items()]
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
                marker_color=_PALETTE[i % len(_PALETTE)],
                hovertemplate=f"{objective}: %{{y}} %{{x:.3f}}<extra></extra>",
            )
        )  # fmt: skip
    fig.update_layout(barmode="group", yaxis={"autorange": "reversed"})
    fig.update_xaxes(title_text="importance (fANOVA, share of the variance)", range=[0, 1])
    height = 140 + 22 * len(table) * max(len(table.columns) - 1, 1)
    _layout(fig, title="Parameter importance per objective", height=height)
    return fig.update_layout(legend={"orientation": "v", "y": 1, "yanchor": "top"})


def validation_vs_test(frame: pd.DataFrame, marks: Marks, *, on_front: pd.Series) -> go.Figure:
    """Validation against test accuracy of the front's trials; on the dashed diagonal they are
    equal, below it the validation set flattered the trial."""
    front = frame[on_front]
    fig = go.Figure()
    pts = values(front, ["accuracy", "test_accuracy"])
    pts = pts[np.isfinite(pts).all(axis=1)]
    if len(pts):
        lo, hi = float(pts.min()), float(pts.max())
        fig.add_trace(
            go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", hoverinfo="skip",
                       line={"color": LIMIT, "dash": "dash", "width": 1}, name="test = validation")
        )  # fmt: skip
    _add_points(fig, front, "accuracy", "test_accuracy", marks, on_front=None)
    fig.update_xaxes(title_text="validation accuracy (what the search saw)")
    fig.update_yaxes(title_text="test accuracy", scaleanchor="x", scaleratio=1)
    return _layout(fig, title="Validation vs test accuracy of the front", height=420)


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
