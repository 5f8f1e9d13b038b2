"""How one trial's outcome is read from its Ray result and recorded on its Optuna trial.

Each trial: params = the sampled point, values = the objective values, user attrs
``trial_config`` (set when the trial starts), the ``run_trial`` dict as ``metric_<name>``
attributes (``search.record._records``: read them with ``metrics_of``), ``constraints``
(violation per constraint, ≤ 0 met), ``feasible``, ``artifact`` and, for a FAIL, ``error``. The
constraint values are also the system attribute ``constraints``, one list in the search's order
(expressions, then ``feasible``): where Optuna's samplers and ``study.best_trials`` read them
and optuna-dashboard shows them.

A trial's Ray result (``search.run._trainable.report_of``) is read back with :func:`outcome_of`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from search._compat import set_constraints
from search.record import DISK_FULL, Metric, RayKey, TrialAttr, disk_full, record_metrics
from search.run._trainable import is_number as _is_number

if TYPE_CHECKING:
    from search.run._deaths import WorkerDeaths

__all__ = ["Outcome", "OutcomeReader", "outcome_of", "record_outcome"]


@dataclass
class Outcome:
    """One trial's result, ready to record: state, values and the user attributes."""

    state: TrialState
    values: list[float] | None = None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    feasible: bool = False
    violations: dict[str, float] = field(default_factory=dict)
    #: The epoch a scheduler stopped a PRUNED trial after.
    pruned_at: int | None = None
    #: A FAIL because the disk was full: not counted, the trial runs again.
    disk_full: bool = False


@dataclass(frozen=True)
class OutcomeReader:
    """How a launch reads its trials' Ray results: what it searches for (its objectives and
    constraint keys), where Ray keeps the logs a dead trial's error names, and why Ray killed
    a worker (the memory monitor, :class:`~search.run._deaths.WorkerDeaths`), so the searcher
    only observes outcomes and never sees those side channels."""

    objectives: Sequence[tuple[str, str]]
    constraints: Sequence[str]
    logs: str = "the Ray folder of the run"
    deaths: WorkerDeaths | None = None

    def read(self, result: Mapping[str, Any] | None, *, error: bool) -> Outcome:
        """The outcome of a Ray trial that ended with ``result`` (``error``: Ray failed it)."""
        outcome = outcome_of(
            result,
            objectives=self.objectives,
            constraints=self.constraints,
            ray_error=error,
            logs=self.logs,
            cause=self.deaths.cause if self.deaths is not None else None,
        )
        if outcome.state == TrialState.FAIL and disk_full(outcome.error):
            outcome.error = f"{DISK_FULL}: {outcome.error}"
            outcome.disk_full = True
        return outcome


def outcome_of(
    result: Mapping[str, Any] | None,
    *,
    objectives: Sequence[tuple[str, str]],
    constraints: Sequence[str],
    ray_error: bool = False,
    logs: str = "the Ray folder of the run",
    cause: str | None = None,
) -> Outcome:
    """Reads a trial's Ray result (see :func:`report_of`) into an :class:`Outcome`; ``logs``
    is where Ray keeps the logs of a trial whose process died (named in its error), ``cause``
    why Ray killed that process, when known (its error then).

    A trained trial must report a finite value for every objective (otherwise it FAILs with a
    message saying which; an infeasible one missing some gets the worst value, ±inf). A trial
    refused before training (``infeasible_reason``) is PRUNED at epoch 0 with what it measured:
    samplers and optuna-dashboard treat it as not evaluated, and no value is made up.
    """
    result = result or {}
    if RayKey.ERROR in result:
        return Outcome(TrialState.FAIL, error=str(result[RayKey.ERROR]))
    if RayKey.METRICS not in result and RayKey.CURVE in result and not ray_error:
        point = json.loads(result[RayKey.CURVE])
        return Outcome(TrialState.PRUNED, metrics=point, pruned_at=int(result[RayKey.EPOCH]))
    if RayKey.METRICS not in result and cause is not None:
        return Outcome(TrialState.FAIL, error=cause)
    if RayKey.METRICS not in result:
        reason = "Ray Tune reported an error for this trial" if ray_error else "no result"
        return Outcome(
            TrialState.FAIL,
            error=f"{reason} (the trial process died; see the Ray logs under {logs})",
        )
    metrics = json.loads(result[RayKey.METRICS])
    feasible = bool(metrics.get(Metric.FEASIBLE, 1.0))
    violations = _violations(metrics, constraints, feasible)
    if Metric.REFUSED in metrics:  # refused before training: measured costs, no made-up values
        return Outcome(TrialState.PRUNED, None, metrics, None, False, violations, pruned_at=0)
    values = []
    for name, direction in objectives:
        value = metrics.get(name)
        if _is_number(value) and math.isfinite(float(value)):
            values.append(float(value))
        elif not feasible:
            values.append(math.inf if direction == "minimize" else -math.inf)
        else:
            return Outcome(
                TrialState.FAIL,
                metrics=metrics,
                error=f"objective {name!r} is missing or not finite in the trial's result "
                f"(got {value!r}); reported: {sorted(metrics)}",
            )
    return Outcome(TrialState.COMPLETE, values, metrics, None, feasible, violations)


def _violations(
    metrics: Mapping[str, Any], constraints: Sequence[str], feasible: bool
) -> dict[str, float]:
    """Violation per constraint expression (``constraint_<i>``), plus the feasibility flag."""
    out = {}
    for i, expression in enumerate(constraints):
        value = metrics.get(f"constraint_{i}", 0.0)
        value = float(value) if _is_number(value) else math.nan
        out[expression] = value if math.isfinite(value) else (0.0 if feasible else 1.0)
    out[Metric.FEASIBLE] = 0.0 if feasible else 1.0
    return out


def record_outcome(trial: optuna.trial.Trial, outcome: Outcome) -> None:
    """Writes an outcome's user attributes and constraints onto a running trial.

    Call it before telling the study: Optuna's samplers read the constraints during the tell.
    """
    if outcome.metrics is not None:
        record_metrics(trial, outcome.metrics)
        trial.set_user_attr(TrialAttr.ARTIFACT, outcome.metrics.get("artifact"))
    if outcome.state == TrialState.FAIL:
        trial.set_user_attr(TrialAttr.ERROR, outcome.error)
        trial.set_user_attr(Metric.FEASIBLE, False)
        return
    if outcome.state == TrialState.PRUNED:
        trial.set_user_attr(TrialAttr.PRUNED_AT, outcome.pruned_at)
        if outcome.metrics is not None and Metric.REFUSED in outcome.metrics:
            trial.set_user_attr(Metric.FEASIBLE, False)
            trial.set_user_attr(TrialAttr.CONSTRAINTS, list(outcome.violations.values()))
        return
    trial.set_user_attr(Metric.FEASIBLE, outcome.feasible)
    trial.set_user_attr(TrialAttr.CONSTRAINTS, list(outcome.violations.values()))
    # the same list, in the search's constraint order, where Optuna's samplers read it
    set_constraints(trial.study, trial.number, list(outcome.violations.values()))
