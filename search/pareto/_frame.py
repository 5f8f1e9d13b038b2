"""The study as a table: one row per trial, read from the storage conventions in SEARCH.md.

Every later step (fronts, knees, the report, export, the progress view) reads this one frame,
so what a trial recorded is interpreted in one place: its state, whether it met the
constraints, every metric ``run_trial`` returned and the sampled parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
import pandas as pd

from search._format import format_value
from search.run._records import CONDITION_PREFIX, METRIC_PREFIX, conditions_of, metrics_of

__all__ = [
    "FIXED_COLUMNS",
    "condition_columns",
    "cost_indicators",
    "direction_of",
    "format_value",
    "objectives_of",
    "trials_frame",
    "usable",
    "values",
    "with_stored_names",
]

#: Columns every frame has, before the metrics and parameters.
FIXED_COLUMNS = ("number", "state", "feasible", "datetime_complete", "error")
#: Optuna's prefix of a sampled parameter's column (as in ``study.trials_dataframe()``).
PARAMS_PREFIX = "params_"


def _feasible(trial: optuna.trial.FrozenTrial, metrics: dict[str, Any]) -> bool:
    """Completed and within every constraint (user attr, else metrics, else violations)."""
    if trial.state != optuna.trial.TrialState.COMPLETE:
        return False
    attrs = trial.user_attrs
    if "feasible" in attrs:
        return bool(attrs["feasible"])
    if "feasible" in metrics:
        return bool(metrics["feasible"])
    return all(v <= 0 for v in attrs.get("constraints") or [])


def _error(trial: optuna.trial.FrozenTrial) -> str | None:
    error = trial.user_attrs.get("error") or trial.system_attrs.get("fail_reason")
    return None if error is None else str(error)


def _row(trial: optuna.trial.FrozenTrial, conditions: dict[str, Any]) -> dict[str, Any]:
    metrics = metrics_of(trial, conditions)
    row: dict[str, Any] = {
        "number": trial.number,
        "state": trial.state.name,
        "feasible": _feasible(trial, metrics),
        "datetime_complete": trial.datetime_complete,
        "error": _error(trial),
    }
    for key, value in metrics.items():
        if key not in FIXED_COLUMNS:
            row[key] = value
    for name, value in trial.params.items():
        row[PARAMS_PREFIX + name] = value
    return row


def trials_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial of ``study``, in trial-number order.

    Columns: ``number``, ``state`` (Optuna state name), ``feasible`` (True only when the trial
    completed and met every constraint), ``datetime_complete``, ``error`` (the failure message
    or None), then every metric of the trial, its measurement conditions included (read with
    ``search.run._records.metrics_of``; missing values are NaN; its own ``feasible`` flag is
    folded into the column above) and ``params_<name>`` for each sampled parameter.
    """
    conditions = conditions_of(study)
    rows = [_row(t, conditions) for t in study.get_trials(deepcopy=False)]
    frame = pd.DataFrame(rows, columns=list(FIXED_COLUMNS)) if not rows else pd.DataFrame(rows)
    if rows:
        frame = frame.sort_values("number", kind="stable").reset_index(drop=True)
    frame["feasible"] = frame["feasible"].astype(bool)
    return frame


def with_stored_names(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with each metric column (conditions included) named ``metric_<name>``, as a
    trial's own metrics are stored, for ``trials.csv``: no metric reads as one of Optuna's
    sampled parameters (the ``params`` indicator beside ``params_budget``)."""
    fixed = set(FIXED_COLUMNS)
    return frame.rename(
        columns={
            c: METRIC_PREFIX + c
            for c in frame.columns
            if c not in fixed and not str(c).startswith(PARAMS_PREFIX)
        }
    )


def objectives_of(study: optuna.Study) -> list[tuple[str, str]]:
    """The study's objectives as ``(name, direction)``, from its user attr or metric names."""
    stored = study.user_attrs.get("objectives")
    if stored:
        return [(str(name), str(direction)) for name, direction in stored]
    names = study.metric_names or [f"values_{i}" for i in range(len(study.directions))]
    return [(n, d.name.lower()) for n, d in zip(names, study.directions, strict=True)]


def direction_of(name: str, objectives: Sequence[tuple[str, str]] | None = None) -> str:
    """Direction of a metric: the study's objective, else its natural one (test-set metrics
    included: a table reports them).

    Raises:
        ConfigError: a metric with no known direction.
    """
    from search.config import metric_direction  # loads the indicator registry (torch)

    for objective, direction in objectives or []:
        if objective == name:
            return direction
    return metric_direction(name, path="metric", reported=True)


def _numeric(column: pd.Series) -> pd.Series:
    return pd.to_numeric(column, errors="coerce").astype(float)


def condition_columns(frame: pd.DataFrame) -> list[str]:
    """Columns that say how the trials were measured, not what: ``energy_source`` (where the
    energy figures come from), then the ``cond_*`` conditions, sorted."""
    conditions = sorted(c for c in frame.columns if str(c).startswith(CONDITION_PREFIX))
    return [c for c in ("energy_source",) if c in frame.columns] + conditions


def cost_indicators(frame: pd.DataFrame) -> list[str]:
    """Registered indicators recorded with at least one finite value, in registry order."""
    from objectives._indicators import INDICATORS  # torch: not for `search status`

    found = []
    for name in INDICATORS.names():
        if name in frame.columns and np.isfinite(_numeric(frame[name])).any():
            found.append(name)
    return found


def usable(frame: pd.DataFrame, columns: list[str], *, feasible_only: bool = True) -> pd.Series:
    """Rows that can be compared on ``columns``: completed, feasible, finite in each column."""
    ok = frame["state"] == "COMPLETE"
    if feasible_only:
        ok &= frame["feasible"].astype(bool)
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
