"""What a scatter of trials shows, worked out once for both renderings: which trials are drawn
with which marker, what the legend calls each kind, the constraint limits, the front's
staircase, the axis scales and each point's hover text. :mod:`search.report._plots` draws it
with matplotlib (PNG), :mod:`search.report._interactive` with plotly (HTML); neither decides
anything a reader could see differently in the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from plotly.colors import qualitative

from search.config import Constraint
from search.pareto import format_value, usable, values
from search.record import Column, Metric
from search.report._style import FRONT, INFEASIBLE, KNEE, feasible_floor, log_scale

__all__ = ["PALETTE", "Group", "Limit", "Marks", "Scatter", "scatter", "staircase"]

#: Family colours: plotly's D3 palette without the red and grey that mark the front and the
#: infeasible trials.
PALETTE = [c for c in qualitative.D3 if c.lower() not in (FRONT, "#7f7f7f")]

#: Legend text of each kind of trial that is not a feasible one of a family; both renderings
#: use it, and the report's text refers to it.
INFEASIBLE_LABEL = "infeasible: trained, missed a constraint"
REFUSED_LABEL = "refused before training (a constraint on a cheap indicator)"
STOPPED_LABEL = "stopped early (at its last epoch's value)"
FRONT_LABEL = "on the Pareto front (ringed)"


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
        return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


@dataclass(frozen=True)
class Group:
    """One kind of point: its legend label, which rows, and how it is drawn.

    Attributes:
        label: The legend entry.
        rows: Boolean mask over the frame's rows (finite on both axes).
        marker: ``dot``, ``cross``, ``tri`` (stopped early), ``ring`` or ``star``.
        colour: Fill (a ring's edge) colour.
    """

    label: str
    rows: np.ndarray
    marker: str
    colour: str


@dataclass(frozen=True)
class Limit:
    """A constraint's bound on one axis, drawn dashed."""

    axis: str
    value: float
    label: str


@dataclass(frozen=True)
class Scatter:
    """One panel: ``y`` against ``x`` for every trial of a frame.

    Attributes:
        x: The x metric.
        y: The y metric.
        points: ``(rows, 2)`` values (NaN where a metric is missing).
        groups: The kinds of point, drawn in order (later ones on top); empty kinds left out.
        limits: The constraint limits on either axis.
        log: Log scale per axis (``x``, ``y``).
        y_floor: Lower y limit (just under the worst feasible trial when ``y`` is the
            performance); -inf for none.
        hover: One line per row: trial, family, why it is not feasible, the two values.
        hidden: Per group label, how many of its points lie below ``y_floor``.
    """

    x: str
    y: str
    points: np.ndarray
    groups: tuple[Group, ...]
    limits: tuple[Limit, ...]
    log: tuple[bool, bool]
    y_floor: float
    hover: tuple[str, ...]
    hidden: dict[str, int]


def _hover(frame: pd.DataFrame, family: pd.Series, x: str, y: str) -> tuple[str, ...]:
    text = []
    families = family.to_dict()
    for index, row in frame.iterrows():
        state = "" if row[Column.FEASIBLE] else "infeasible"
        if row[Column.STATE] == "PRUNED":
            state = "stopped early"
        reason = row.get(Column.WHY_INFEASIBLE)
        if isinstance(reason, str):
            state = f"infeasible: {reason}"
        head = f"trial {int(row[Column.NUMBER])} · {families[index]}" + (
            f" · {state}" if state else ""
        )
        text.append(f"{head}<br>{x} = {format_value(row[x])}<br>{y} = {format_value(row[y])}")
    return tuple(text)


def scatter(
    frame: pd.DataFrame, x: str, y: str, marks: Marks, *, on_front: pd.Series | None
) -> Scatter:
    """The panel of ``y`` against ``x``: feasible trials by family, trained infeasible ones
    (crosses), those refused before training and those stopped early (grey), the front ringed
    (when ``on_front`` is given), the selected trial starred, the constraint limits."""
    pts = values(frame, [x, y])
    finite = np.isfinite(pts).all(axis=1)
    done = (frame[Column.STATE] == "COMPLETE").to_numpy()
    feasible = done & frame[Column.FEASIBLE].to_numpy(dtype=bool)
    refused = (
        frame[Metric.REFUSED].notna().to_numpy()
        if Metric.REFUSED in frame
        else np.zeros(len(frame), dtype=bool)
    )
    family = marks.family[frame.index].to_numpy()
    kinds = [(f, feasible & (family == f), "dot", c) for f, c in marks.colours().items()]
    kinds += [
        (INFEASIBLE_LABEL, done & ~feasible & ~refused, "cross", INFEASIBLE),
        (REFUSED_LABEL, refused, "cross", "#c8c8c8"),
        (
            STOPPED_LABEL,
            (frame[Column.STATE] == "PRUNED").to_numpy() & ~refused,
            "tri",
            INFEASIBLE,
        ),
    ]
    if on_front is not None:
        kinds.append((FRONT_LABEL, on_front.to_numpy(dtype=bool), "ring", FRONT))
    knee = feasible & frame[Column.NUMBER].eq(-1 if marks.knee is None else marks.knee).to_numpy()
    kinds.append((f"selected (trial {marks.knee})", knee, "star", KNEE))
    groups = tuple(
        Group(label, rows & finite, marker, colour)
        for label, rows, marker, colour in kinds
        if (rows & finite).any()
    )
    limits = tuple(
        Limit(axis, c.value, f"limit {c} (dashed)")
        for c in marks.constraints
        for axis, name in (("x", x), ("y", y))
        if c.indicator == name
    )
    floor = -np.inf
    if y == marks.performance:
        floor = feasible_floor(values(frame[usable(frame, [y])], [y])[:, 0])
    hidden = {g.label: int((pts[g.rows, 1] < floor).sum()) for g in groups}
    return Scatter(
        x=x,
        y=y,
        points=pts,
        groups=groups,
        limits=limits,
        log=(log_scale(pts[:, 0]), log_scale(pts[:, 1])),
        y_floor=floor,
        hover=_hover(frame, marks.family, x, y),
        hidden={k: v for k, v in hidden.items() if v},
    )


def staircase(panel: Scatter, front: Sequence[int] | pd.Series, frame: pd.DataFrame) -> np.ndarray:
    """The front's points of a 2-D panel sorted along x: the attainment staircase (dominated
    trials lie below it and on its costly side)."""
    mask = front if isinstance(front, pd.Series) else frame[Column.NUMBER].isin(front)
    rows = (frame[Column.STATE] == "COMPLETE").to_numpy() & mask.to_numpy(dtype=bool)
    fp = panel.points[rows]
    fp = fp[np.isfinite(fp).all(axis=1)]
    return fp[np.argsort(fp[:, 0], kind="stable")]


def matrix(
    frame: pd.DataFrame, names: Sequence[str], marks: Marks, *, on_front: pd.Series
) -> list[tuple[int, int, Scatter]]:
    """Every pair of objectives as ``(row, column, panel)`` of a lower-triangular matrix:
    column ``c`` has ``names[c]`` on x, row ``r`` has ``names[r + 1]`` on y."""
    k = max(len(names) - 1, 1)
    return [
        (row, col, scatter(frame, names[col], names[row + 1], marks, on_front=on_front))
        for row in range(k)
        for col in range(row + 1)
    ]
