"""The study as a table: one row per trial, each row one :class:`TrialRecord`.

Every later step (fronts, knees, the report, export, the progress view) reads this one frame,
and every row is read from the storage by :func:`search.record._records.read_trial`, so what a
trial recorded is interpreted in one place: its state, whether it met the constraints and why
not, every metric ``run_trial`` returned, its conditions and the sampled parameters. The
column names are :class:`search.record._schema.Column`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
import pandas as pd

from search._format import format_value
from search.record import (
    Column,
    Metric,
    StudyAttr,
    TrialRecord,
    read_study,
    recommendation_of,
    stored_objectives,
    value_names,
)

__all__ = [
    "condition_columns",
    "cost_indicators",
    "direction_of",
    "format_value",
    "frame_of",
    "objectives_of",
    "row_of",
    "trials_frame",
    "usable",
    "values",
]


def row_of(record: TrialRecord) -> dict[str, Any]:
    """A record as one row of the frame: the fixed columns, its metrics, its conditions, then
    ``params_<name>`` per sampled parameter."""
    row: dict[str, Any] = {
        Column.NUMBER: record.number,
        Column.STATE: record.state,
        Column.FEASIBLE: record.feasible,
        Column.WHY_INFEASIBLE: record.why_infeasible,
        Column.EPOCHS: record.epochs,
        Column.DATETIME_COMPLETE: record.datetime_complete,
        Column.ERROR: record.error,
    }
    for key, value in {**record.metrics, **record.conditions}.items():
        if key not in Column.FIXED:
            row[key] = value
    for name, value in record.params.items():
        row[Column.PARAMS_PREFIX + name] = value
    return row


def frame_of(records: Sequence[TrialRecord]) -> pd.DataFrame:
    """The frame of some trial records (see :func:`trials_frame`)."""
    rows = [row_of(r) for r in records]
    frame = pd.DataFrame(rows, columns=list(Column.FIXED)) if not rows else pd.DataFrame(rows)
    if rows:
        frame = frame.sort_values(Column.NUMBER, kind="stable").reset_index(drop=True)
    frame[Column.FEASIBLE] = frame[Column.FEASIBLE].astype(bool)
    # a count: 4, not 4.0; missing stays NA
    frame[Column.EPOCHS] = frame[Column.EPOCHS].astype("Int64")
    return frame


def trials_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial of ``study``, in trial-number order.

    Columns (:class:`search.record._schema.Column`): ``number``, ``state`` (Optuna state name),
    ``feasible`` (True only when the trial completed and met every constraint),
    ``why_infeasible`` (the constraints a completed or refused trial missed and by how much),
    ``epochs``, ``datetime_complete``, ``error`` (the failure message or None), then every
    metric of the trial and its measurement conditions (missing values are NaN; a list or dict
    is JSON text) and ``params_<name>`` for each sampled parameter. Its ``attrs`` hold the
    search's recommendation (:attr:`StudyAttr.RECOMMENDATION`, None without one), for the
    ``recommended`` selector.
    """
    frame = frame_of(read_study(study).trials)
    frame.attrs[StudyAttr.RECOMMENDATION] = recommendation_of(study)  # the selector reads it
    return frame


def objectives_of(study: optuna.Study) -> list[tuple[str, str]]:
    """The study's objectives as ``(name, direction)``, from its user attr or metric names."""
    stored = stored_objectives(study)
    if stored:
        return stored
    return [(n, d.name.lower()) for n, d in zip(value_names(study), study.directions, strict=True)]


def direction_of(name: str, objectives: Sequence[tuple[str, str]] | None = None) -> str:
    """Direction of a metric: the study's objective, else its natural one (test-set metrics
    included: a table reports them).

    Raises:
        ConfigError: a metric with no known direction.
    """
    from search.config import metric_direction  # loads the indicator registry

    for objective, direction in objectives or []:
        if objective == name:
            return direction
    return metric_direction(name, path="metric", reported=True)


def _numeric(column: pd.Series) -> pd.Series:
    return pd.to_numeric(column, errors="coerce").astype(float)


def condition_columns(frame: pd.DataFrame) -> list[str]:
    """Columns that say how the trials were measured, not what: ``energy_source`` (where the
    energy figures come from), then the ``cond_*`` conditions, sorted."""
    conditions = sorted(c for c in frame.columns if str(c).startswith(Metric.CONDITION_PREFIX))
    return [c for c in ("energy_source",) if c in frame.columns] + conditions


def cost_indicators(frame: pd.DataFrame) -> list[str]:
    """Registered indicators recorded with at least one finite value, in registry order."""
    from objectives import INDICATORS

    found = []
    for name in INDICATORS.names():
        if name in frame.columns and np.isfinite(_numeric(frame[name])).any():
            found.append(name)
    return found


def usable(frame: pd.DataFrame, columns: list[str], *, feasible_only: bool = True) -> pd.Series:
    """Rows that can be compared on ``columns``: completed, feasible, finite in each column."""
    ok = frame[Column.STATE] == "COMPLETE"
    if feasible_only:
        ok &= frame[Column.FEASIBLE].astype(bool)
    for column in columns:
        if column not in frame.columns:
            return pd.Series(False, index=frame.index)
        ok &= np.isfinite(_numeric(frame[column]))
    return ok


def values(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The columns as an ``(rows, columns)`` float array (non-numbers become NaN)."""
    if not columns:
        return np.empty((len(frame), 0))
    return np.column_stack([_numeric(frame[c]).to_numpy() for c in columns])
