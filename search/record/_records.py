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
:func:`metrics_of` reads both.

Reading a trial back is :func:`read_trial` (:func:`read_study` for all of a study's): one
:class:`TrialRecord` with its state, parameters, values, metrics, conditions, constraint
violations, feasibility and why not, epochs and error. The frame, the front, the export and the
report read that record, so what a stored trial means is decided here only.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import optuna

from search.record._schema import Metric, OptunaAttr, StudyAttr, TrialAttr
from spaces import is_int

__all__ = [
    "StudyRecords",
    "TrialRecord",
    "conditions_of",
    "constraints_of",
    "curve_of",
    "metric_attrs",
    "metrics_of",
    "plain",
    "read_study",
    "read_trial",
    "record_metrics",
    "value_names",
]


def plain(value: Any) -> Any:
    """A number or string as it is, None as NaN and a list or dict as JSON text: how a metric
    is stored (optuna-dashboard sorts and filters on an attribute only when every trial's is a
    number) and how every table, CSV and JSON output shows one."""
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
        if key.startswith(Metric.CONDITION_PREFIX) and key not in shared:
            new[key] = value
        elif not key.startswith(Metric.CONDITION_PREFIX) or shared[key] != value:
            trial[TrialAttr.METRIC_PREFIX + key] = plain(value)
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
    return {k: v for k, v in study.user_attrs.items() if k.startswith(Metric.CONDITION_PREFIX)}


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
    found = dict(attrs.get(TrialAttr.LEGACY_METRICS) or {})
    found.update(
        (k[len(TrialAttr.METRIC_PREFIX) :], v)
        for k, v in attrs.items()
        if k.startswith(TrialAttr.METRIC_PREFIX)
    )
    if found:
        for key, value in (conditions or {}).items():
            found.setdefault(key, value)
    return found


# -- reading: one stored trial → one record -----------------------------------------------------


@dataclass(frozen=True)
class TrialRecord:
    """One stored trial as every reader sees it (the frame, the front, export, the report).

    Attributes:
        number: The trial's number.
        state: Its Optuna state name (``COMPLETE``, ``PRUNED``, ``FAIL``, ``RUNNING``, ...).
        params: The sampled parameters.
        values: The objective values Optuna holds (None for an unfinished or failed trial).
        metrics: Every metric it recorded (the ``run_trial`` dict), its conditions apart;
            each a number, a string or NaN (a list or dict as JSON text: :func:`plain`).
        conditions: The ``cond_*`` conditions it was measured under: the study's, unless it
            recorded its own (same cell rule as ``metrics``).
        violations: Constraint expression → its violation (≤ 0 met, > 0 by how much it was
            missed), in the search's order; only the constraints the trial could evaluate.
        feasible: Completed and within every constraint.
        why_infeasible: Why a completed or refused trial is not feasible (None otherwise).
        epochs: Epochs it trained (its learning curve's last, else its ``epochs`` metric);
            None when it recorded neither.
        curve: Its learning curve, one dict per epoch (``epoch``, ``accuracy``, ...); empty
            when it reported none.
        error: Why it failed (None unless it did).
        stopped: Why the scheduler stopped it before its last epoch (None unless it did).
        decisions: The scheduler's decisions on it, rung by rung, in order (``rung``,
            ``outcome``, ``rank``, ``n``, ``top``, ...); empty when none was made.
        artifact: Where its saved model is (None when it saved none).
        datetime_complete: When it ended.
        narrowed_from: The trial whose refused point it is, narrowed until the screen passed
            it (``repair``); None for a point the optimiser proposed.
        start: Which point of the config's ``start`` list it trains (0-based); None for a
            point the optimiser proposed.
        config: Its trial config as it ran (the stored dict; None for a trial npas did not
            record).
    """

    number: int
    state: str
    params: dict[str, Any]
    values: tuple[float, ...] | None
    metrics: dict[str, Any]
    conditions: dict[str, Any]
    violations: dict[str, float]
    feasible: bool
    why_infeasible: str | None
    epochs: int | None
    curve: tuple[dict[str, Any], ...]
    error: str | None
    stopped: str | None
    decisions: tuple[dict[str, Any], ...]
    artifact: str | None
    datetime_complete: datetime | None
    narrowed_from: int | None = None
    start: int | None = None
    config: dict[str, Any] | None = None

    @property
    def violated(self) -> dict[str, float]:
        """The constraints it missed, with by how much (> 0)."""
        return {text: v for text, v in self.violations.items() if v > 0}

    @property
    def refused(self) -> bool:
        """Stopped before training because a cheap indicator broke a constraint."""
        return Metric.REFUSED in self.metrics


@dataclass(frozen=True)
class StudyRecords:
    """What a study holds once for all its trials, and its trials' records."""

    constraints: tuple[str, ...]
    conditions: dict[str, Any]
    trials: tuple[TrialRecord, ...]


def constraints_of(study: optuna.Study) -> tuple[str, ...]:
    """The search's constraint expressions, in its order (``params <= 5000``, ...)."""
    return tuple(str(c) for c in study.user_attrs.get(TrialAttr.CONSTRAINTS) or [])


def value_names(study: optuna.Study) -> list[str]:
    """The names of a study's Optuna values: its metric names, else ``values_<i>``."""
    return list(study.metric_names or [f"values_{i}" for i in range(len(study.directions))])


def read_study(study: optuna.Study) -> StudyRecords:
    """Every trial of ``study`` as a :class:`TrialRecord`, in trial-number order (the study's
    attributes are read once). A study npas did not record (no stored objectives: one made
    with Optuna alone) has its trials' values read as metrics under :func:`value_names`."""
    constraints = constraints_of(study)
    conditions = conditions_of(study)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    names = () if study.user_attrs.get(StudyAttr.OBJECTIVES) else value_names(study)
    return StudyRecords(
        constraints,
        {k: plain(v) for k, v in conditions.items()},
        tuple(read_trial(t, conditions, constraints, values_as=names) for t in trials),
    )


def curve_of(trial: optuna.trial.FrozenTrial) -> list[dict[str, Any]]:
    """A trial's learning curve as stored, keeping only its well-formed points: dicts whose
    ``epoch`` is a whole number >= 1 (``3`` or ``3.0``; a damaged ``curve`` attribute, edited
    or written by other code, reads as the points that are whole, or none, never an error)."""
    stored = trial.user_attrs.get(TrialAttr.CURVE)
    if not isinstance(stored, list):
        return []
    return [p for p in stored if isinstance(p, dict) and _whole_epoch(p.get("epoch"))]


def _whole_epoch(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return math.isfinite(value) and float(value).is_integer() and float(value) >= 1


def read_trial(
    trial: optuna.trial.FrozenTrial,
    conditions: Mapping[str, Any] | None = None,
    constraints: Sequence[str] = (),
    *,
    values_as: Sequence[str] = (),
) -> TrialRecord:
    """One stored trial as a :class:`TrialRecord`.

    Args:
        trial: The trial.
        conditions: :func:`conditions_of` its study; None: only those the trial holds.
        constraints: :func:`constraints_of` its study (names its violations).
        values_as: Names under which its Optuna values are metrics where it recorded none of
            that name (a study made with Optuna alone: :func:`value_names`).
    """
    found = metrics_of(trial, conditions)
    if trial.values is not None and len(values_as) == len(trial.values):
        for name, value in zip(values_as, trial.values, strict=True):
            found.setdefault(name, value)
    metrics = {k: plain(v) for k, v in found.items() if not k.startswith(Metric.CONDITION_PREFIX)}
    own = {k: plain(v) for k, v in found.items() if k.startswith(Metric.CONDITION_PREFIX)}
    complete = trial.state == optuna.trial.TrialState.COMPLETE
    violations = _violations(trial, metrics, constraints)
    feasible = complete and _feasible(trial, metrics, violations)
    error = trial.user_attrs.get(TrialAttr.ERROR) or trial.system_attrs.get(OptunaAttr.FAIL_REASON)
    curve = tuple(curve_of(trial))
    decisions = trial.user_attrs.get(TrialAttr.DECISIONS)
    stopped = trial.user_attrs.get(TrialAttr.STOPPED)
    narrowed = trial.user_attrs.get(TrialAttr.NARROWED)
    start = trial.user_attrs.get(TrialAttr.START)
    config = trial.user_attrs.get(TrialAttr.CONFIG)
    return TrialRecord(
        number=trial.number,
        state=trial.state.name,
        params=dict(trial.params),
        values=None if trial.values is None else tuple(float(v) for v in trial.values),
        metrics=metrics,
        conditions=own,
        violations=violations,
        feasible=feasible,
        why_infeasible=_why_infeasible(complete, feasible, metrics, violations),
        epochs=_epochs(curve, metrics),
        curve=curve,
        error=None if error is None else str(error),
        stopped=None if stopped is None else str(stopped),
        decisions=tuple(d for d in decisions if isinstance(d, dict))
        if isinstance(decisions, list)
        else (),
        artifact=trial.user_attrs.get(TrialAttr.ARTIFACT) or found.get(Metric.ARTIFACT),
        datetime_complete=trial.datetime_complete,
        narrowed_from=narrowed if is_int(narrowed, 0) else None,
        start=start if is_int(start, 0) else None,
        config=config if isinstance(config, dict) else None,
    )


def _violations(
    trial: optuna.trial.FrozenTrial, metrics: Mapping[str, Any], constraints: Sequence[str]
) -> dict[str, float]:
    """Violation per constraint: the trial's stored list (the search's order, then
    ``feasible``), else the ``constraint_<i>`` metrics ``run_trial`` reported."""
    stored = trial.user_attrs.get(TrialAttr.CONSTRAINTS) or []
    out: dict[str, float] = {}
    for i, text in enumerate(constraints):
        value = stored[i] if len(stored) > len(constraints) else metrics.get(f"constraint_{i}")
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[text] = float(value)
    return out


def _feasible(
    trial: optuna.trial.FrozenTrial, metrics: Mapping[str, Any], violations: Mapping[str, float]
) -> bool:
    """The trial's verdict (user attr), else the flag it reported, else its violations."""
    if TrialAttr.FEASIBLE in trial.user_attrs:
        return bool(trial.user_attrs[TrialAttr.FEASIBLE])
    if Metric.FEASIBLE in metrics:
        return bool(metrics[Metric.FEASIBLE])
    return all(v <= 0 for v in violations.values())


def _why_infeasible(
    complete: bool, feasible: bool, metrics: Mapping[str, Any], violations: Mapping[str, float]
) -> str | None:
    if Metric.REFUSED in metrics:
        return str(metrics[Metric.REFUSED])
    if not complete or feasible:
        return None
    missed = [f"{text} (by {v:.4g})" for text, v in violations.items() if v > 0]
    return "violates " + ", ".join(missed) if missed else "the trial reported itself infeasible"


def _epochs(curve: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any]) -> int | None:
    epochs = [p["epoch"] for p in curve if "epoch" in p]
    if epochs:
        return int(max(epochs))
    reported = metrics.get("epochs")
    if isinstance(reported, numbers.Real) and math.isfinite(reported):
        return int(float(reported))
    return None
