"""The front of a study: which trials of its frame are non-dominated on some objectives, the
hypervolume after each trial, and the front table that ``search pareto`` and the report print
(conditions equal on every row are stated once above it: :func:`constant_conditions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
    "DUPLICATES",
    "Front",
    "Objectives",
    "constant_conditions",
    "duplicates",
    "front_of",
    "front_rows",
    "front_table",
    "hypervolume_by_trial",
    "resolve_objectives",
    "said_duplicates",
    "why_empty",
]

#: Objectives as ``[(name, "minimize" | "maximize"), ...]``, or names whose direction is known.
Objectives = Sequence[tuple[str, str] | str]
#: The front table's column counting the other trials a row stands for (same config, same
#: values); only in a table where some row stands for others.
DUPLICATES = "duplicates"


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

    Trials with the same config (sampled parameters) and the same objective values are one
    point of the front, not a tie: the first of them (the lowest number) is on it and stands
    for the others (``duplicates``).

    Attributes:
        objectives: The ``(name, direction)`` pairs sorted on.
        mask: Boolean Series aligned with the frame: True on the front.
        numbers: Trial numbers on the front, ascending.
        message: None, or why the front is empty (no completed or no feasible trial).
        duplicates: Front trial number → the numbers of the trials it stands for (same config,
            same values), for the front trials that stand for any.
    """

    objectives: tuple[tuple[str, str], ...]
    mask: pd.Series
    numbers: list[int]
    message: str | None
    duplicates: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def standing_for(self, number: int) -> str:
        """`` (and 65 duplicates: trials 4, 7, ...)`` for a trial that stands for others,
        else empty: what a reason or a caption adds."""
        return said_duplicates(self.duplicates.get(number, ()))


def why_empty(frame: pd.DataFrame, names: list[str]) -> str:
    """Why no trial of ``frame`` can be compared on ``names``, in words."""
    complete = frame[Column.STATE] == "COMPLETE"
    if not complete.any():
        return f"no completed trial among {len(frame)} trial(s)"
    if not (complete & frame[Column.FEASIBLE]).any():
        return f"no feasible trial: all {int(complete.sum())} completed trial(s) are infeasible"
    return f"no feasible trial has finite values for {names}"


def duplicates(frame: pd.DataFrame, names: Sequence[str]) -> dict[int, tuple[int, ...]]:
    """The rows of ``frame`` that repeat another: the first trial (lowest number) of each set
    with the same sampled parameters (``params_*``: the search's fixed values are the same
    for all) and the same ``names`` values → the numbers of the others, for the sets of more
    than one."""
    columns = [*sorted(c for c in frame.columns if str(c).startswith(Column.PARAMS_PREFIX)),
               *names]  # fmt: skip
    found: dict[tuple[str, ...], list[int]] = {}
    for number, *row in frame[[Column.NUMBER, *columns]].itertuples(index=False):
        found.setdefault(tuple(map(repr, row)), []).append(int(number))
    groups = (sorted(numbers) for numbers in found.values() if len(numbers) > 1)
    return {first: tuple(rest) for first, *rest in groups}


def said_duplicates(numbers: Sequence[int], shown: int = 5) -> str:
    """`` (and 65 duplicates: trials 4, 7, 9, 12, 15, ...)``; empty for none."""
    if not numbers:
        return ""
    listed = ", ".join(map(str, numbers[:shown])) + (", ..." if len(numbers) > shown else "")
    word = "duplicate" if len(numbers) == 1 else "duplicates"
    return f" (and {len(numbers)} {word}, same config and values: trial(s) {listed})"


def front_of(frame: pd.DataFrame, objectives: Objectives) -> Front:
    """Non-dominated feasible trials of ``frame`` on ``objectives`` (any subset of metrics),
    each set of duplicates (same config, same values) once."""
    pairs = resolve_objectives(frame, objectives)
    names = [n for n, _ in pairs]
    ok = usable(frame, names).to_numpy()
    mask = non_dominated(values(frame, names), [d for _, d in pairs], ok)
    repeats = duplicates(frame[mask], names)
    hidden = {n for rest in repeats.values() for n in rest}
    mask &= ~frame[Column.NUMBER].isin(list(hidden)).to_numpy()
    series = pd.Series(mask, index=frame.index)
    numbers = sorted(int(n) for n in frame.loc[series, Column.NUMBER])
    return Front(pairs, series, numbers, None if numbers else why_empty(frame, names), repeats)


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
    measured = _weights_beside_params([*names, *extra, *shown], names)
    columns = [Column.NUMBER, *measured, *condition_columns(frame), *params]
    table = frame.loc[front.mask, columns].reset_index(drop=True)
    if front.duplicates:
        counts = [len(front.duplicates.get(int(n), ())) for n in table[Column.NUMBER]]
        table.insert(1 + len(measured), DUPLICATES, counts)
    table.attrs["message"] = front.message
    return table


def _weights_beside_params(columns: list[str], objectives: list[str]) -> list[str]:
    """``weights`` (what the exported model holds) moved next to ``params`` (what trained):
    a Shapeshifted net's differ, by 5.5 times once (issue 59); objectives keep their order."""
    if "params" not in columns or "weights" not in columns or "weights" in objectives:
        return columns
    rest = [c for c in columns if c != "weights"]
    at = rest.index("params") + 1
    return [*rest[:at], "weights", *rest[at:]]


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
