"""How a trial's metrics sit in the Optuna storage: one user attribute per metric, and the
measurement conditions once per study.

A trial's metrics (the ``run_trial`` dict) are the trial user attributes ``metric_<name>``:
plain numbers (a missing one, None, as NaN) or strings (``infeasible_reason``), so
optuna-dashboard's trial table sorts and filters on them and ``study.trials_dataframe()`` has
one column per metric (``user_attrs_metric_flops_infer``). The prefix keeps them apart from
the other trial attributes npas writes (``feasible``, ``constraints``, ``artifact``,
``error``, ...), some of which share a metric's name: ``feasible`` is both the trial's verdict
and the flag the trial reported.

A condition (``cond_*``: device, torch version, timer, ...) is the same for most trials of a
search, so it is a study user attribute under its own name, set by the first trial that
reports it; a trial whose value differs keeps its own as ``metric_cond_<...>``. Every trial
with metrics reads the study's conditions as its own unless it has one of that name.

Studies recorded before this layout hold one nested ``metrics`` attribute per trial;
:func:`metrics_of` reads both, so every reader goes through it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import optuna

__all__ = [
    "CONDITION_PREFIX",
    "METRIC_PREFIX",
    "conditions_of",
    "metric_attrs",
    "metrics_of",
    "record_metrics",
]

#: Prefix of a trial user attribute holding one metric.
METRIC_PREFIX = "metric_"
#: Prefix of a measurement condition (a metric, or a study user attribute).
CONDITION_PREFIX = "cond_"
#: The one nested user attribute of a trial recorded before :data:`METRIC_PREFIX`.
_LEGACY = "metrics"


def _attribute_value(value: Any) -> Any:
    """A number or string as it is, None as NaN and a list or dict as JSON text:
    optuna-dashboard sorts and filters on an attribute only when every trial's is a number."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, default=str)


def metric_attrs(
    metrics: Mapping[str, Any], shared: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """How a trial's metrics are stored, given the conditions its study holds (``shared``).

    Returns:
        The trial's user attributes, and the conditions new to the study.
    """
    trial: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for key, value in metrics.items():
        if key.startswith(CONDITION_PREFIX) and key not in shared:
            new[key] = value
        elif not key.startswith(CONDITION_PREFIX) or shared[key] != value:
            trial[METRIC_PREFIX + key] = _attribute_value(value)
    return trial, new


def record_metrics(trial: optuna.trial.Trial, metrics: Mapping[str, Any]) -> None:
    """Writes a running trial's metrics: one user attribute each, new conditions on the study."""
    attrs, new = metric_attrs(metrics, conditions_of(trial.study))
    for key, value in new.items():
        trial.study.set_user_attr(key, value)
    for key, value in attrs.items():
        trial.set_user_attr(key, value)


def conditions_of(study: optuna.Study) -> dict[str, Any]:
    """The measurement conditions recorded once for the whole study (one storage query)."""
    return {k: v for k, v in study.user_attrs.items() if k.startswith(CONDITION_PREFIX)}


def metrics_of(
    trial: optuna.trial.FrozenTrial, conditions: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A trial's metrics as ``run_trial`` returned them, from either layout.

    Args:
        trial: The trial.
        conditions: :func:`conditions_of` its study (read once for many trials); None: only
            the conditions the trial holds itself.

    Returns:
        Its metrics, then the study's conditions it does not override; empty when it recorded
        none (a failed or running trial).
    """
    attrs = trial.user_attrs
    found = dict(attrs.get(_LEGACY) or {})
    found.update(
        (k[len(METRIC_PREFIX) :], v) for k, v in attrs.items() if k.startswith(METRIC_PREFIX)
    )
    if found:
        for key, value in (conditions or {}).items():
            found.setdefault(key, value)
    return found
