"""The front of a study: which trials of its frame are non-dominated on some objectives, the
hypervolume after each trial, and the front table that ``search pareto`` and the report print
(conditions equal on every row are stated once above it: :func:`constant_conditions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna
import pandas as pd

from search.pareto._frame import (
    condition_columns,
    cost_indicators,
    direction_of,
    objectives_of,
    trials_frame,
    usable,
    values,
)
from search.pareto._front import HVResult, hypervolume_history, non_dominated
from search.record import Column
from spaces import ConfigError

__all__ = [
    "Front",
    "Objectives",
    "constant_conditions",
    "front_of",
    "front_rows",
    "front_table",
    "hypervolume_by_trial",
    "resolve_objectives",
    "why_empty",
]

#: Objectives as ``[(name, "minimize" | "maximize"), ...]``, or names whose direction is known.
Objectives = Sequence[tuple[str, str] | str]


def resolve_objectives(frame: pd.DataFrame, objectives: Objectives) -> tuple[tuple[str, str], ...]:
    """Validates objective names against the frame and fills in missing directions; a
    test-split metric (recorded only with ``report_test``) is refused: no front ranks on it."""
    from search.config import REPORTED_ONLY  # the indicator registry: torch

    if isinstance(objectives, str) or not objectives:
        raise ConfigError(
            f"objectives must be a non-empty list of names or (name, direction), got "
            f"{objectives!r}"
        )
    pairs = []
    for item in objectives:
        name, direction = (item, None) if isinstance(item, str) else tuple(item)
        if name in REPORTED_ONLY:
            raise ConfigError(
                f"objective {name!r} is measured on the test set, which no front or selection "
                "ranks on (search export reads it once, for the chosen model); use 'accuracy' "
                "(validation)"
            )
        if name not in frame.columns:
            if not (frame[Column.STATE] == "COMPLETE").any():
                raise ConfigError(f"{why_empty(frame, [name])}: nothing to compare yet")
            recorded = sorted(
                c for c in frame.columns if not str(c).startswith(Column.PARAMS_PREFIX)
            )
            raise ConfigError(f"objective {name!r} is not recorded; recorded: {recorded}")
        pairs.append((name, direction or direction_of(name)))
    return tuple(pairs)


@dataclass(frozen=True)
class Front:
    """The feasible Pareto front of a frame on some objectives.

    Attributes:
        objectives: The ``(name, direction)`` pairs sorted on.
        mask: Boolean Series aligned with the frame: True on the front.
        numbers: Trial numbers on the front, ascending.
        message: None, or why the front is empty (no completed or no feasible trial).
    """

    objectives: tuple[tuple[str, str], ...]
    mask: pd.Series
    numbers: list[int]
    message: str | None


def why_empty(frame: pd.DataFrame, names: list[str]) -> str:
    """Why no trial of ``frame`` can be compared on ``names``, in words."""
    complete = frame[Column.STATE] == "COMPLETE"
    if not complete.any():
        return f"no completed trial among {len(frame)} trial(s)"
    if not (complete & frame[Column.FEASIBLE]).any():
        return f"no feasible trial: all {int(complete.sum())} completed trial(s) are infeasible"
    return f"no feasible trial has finite values for {names}"


def front_of(frame: pd.DataFrame, objectives: Objectives) -> Front:
    """Non-dominated feasible trials of ``frame`` on ``objectives`` (any subset of metrics)."""
    pairs = resolve_objectives(frame, objectives)
    names = [n for n, _ in pairs]
    ok = usable(frame, names).to_numpy()
    mask = non_dominated(values(frame, names), [d for _, d in pairs], ok)
    series = pd.Series(mask, index=frame.index)
    numbers = sorted(int(n) for n in frame.loc[series, Column.NUMBER])
    return Front(pairs, series, numbers, None if numbers else why_empty(frame, names))


def hypervolume_by_trial(
    frame: pd.DataFrame,
    objectives: Objectives,
    *,
    bounds: Any = None,
    ref: Any = None,
) -> tuple[pd.DataFrame, HVResult]:
    """Hypervolume of the feasible front after each completed trial, in completion order.

    Bounds come from all feasible trials (unless given) and stay fixed, so the curve never
    decreases. Returns a frame with ``number``, ``datetime_complete``, ``hypervolume`` and the
    final :class:`HVResult`, which states the bounds and reference point.
    """
    pairs = resolve_objectives(frame, objectives)
    names = [n for n, _ in pairs]
    done = frame[frame[Column.STATE] == "COMPLETE"]
    order = [Column.DATETIME_COMPLETE, Column.NUMBER]
    done = done.sort_values(order, kind="stable", na_position="last")
    ok = usable(done, names).to_numpy()
    history, final = hypervolume_history(
        values(done, names), [d for _, d in pairs], feasible=ok, bounds=bounds, names=names,
        ref=ref,
    )
    table = done[[Column.NUMBER, Column.DATETIME_COMPLETE]].reset_index(drop=True)
    table["hypervolume"] = history
    return table, final


def front_rows(frame: pd.DataFrame, front: Front, indicators: Sequence[str]) -> pd.DataFrame:
    """The front's rows of ``frame``: number, objectives, validation accuracy, ``indicators``,
    the conditions they were measured under and the sampled parameters (``attrs["message"]``
    says why when it is empty). Never a test-split figure (``report_test``): the front is
    what a person chooses from."""
    names = [n for n, _ in front.objectives]
    extra = [c for c in ("accuracy",) if c in frame.columns and c not in names]
    shown = [i for i in indicators if i not in names]
    params = sorted(c for c in frame.columns if str(c).startswith(Column.PARAMS_PREFIX))
    columns = [Column.NUMBER, *names, *extra, *shown, *condition_columns(frame), *params]
    table = frame.loc[front.mask, columns].reset_index(drop=True)
    table.attrs["message"] = front.message
    return table


def front_table(
    study: optuna.Study, objectives: Sequence[tuple[str, str]] | None = None
) -> pd.DataFrame:
    """:func:`front_rows` of the study's feasible front with every indicator it recorded."""
    frame = trials_frame(study)
    front = front_of(frame, objectives or objectives_of(study))
    return front_rows(frame, front, cost_indicators(frame))


def constant_conditions(table: pd.DataFrame) -> dict[str, Any]:
    """The condition columns of a table with one value on every row (none for an empty table):
    a printed table states them once above it instead of repeating them."""
    if table.empty:
        return {}
    return {
        c: table[c].iloc[0]
        for c in condition_columns(table)
        if table[c].map(repr).nunique() == 1  # repr: lists and NaN compare too
    }
