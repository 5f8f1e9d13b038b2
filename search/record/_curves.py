"""A trial's learning curve as a multi-fidelity scheduler's rungs and a sampler's view see
it: per epoch, its objective vector, its constraint violation and whether it was at chance."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import optuna

from search.record._records import curve_of, metrics_of
from search.record._schema import TrialAttr

__all__ = ["EpochPoint", "epoch_values", "final_violation", "rung_history"]


def rung_history(
    study: optuna.Study, objectives: Sequence[str]
) -> list[tuple[dict[int, list[float]], float, set[int], int]]:
    """The learning curves of a study's trials as a scheduler's rungs see them: per epoch, the
    objective vector (see :func:`epoch_values`); the trial's constraint violation; the epochs
    at which it was no better than chance; its number."""
    out = []
    for trial in study.get_trials(deepcopy=False):
        points = epoch_values(trial, objectives)
        if points:
            vectors = {epoch: point.values for epoch, point in points.items()}
            at_chance = {epoch for epoch, point in points.items() if point.at_chance}
            out.append((vectors, final_violation(trial), at_chance, trial.number))
    return out


class EpochPoint(NamedTuple):
    """A trial after one epoch, as a scheduler's rung or a sampler's view ranks it."""

    values: list[float]
    violation: float
    at_chance: bool


def epoch_values(
    trial: optuna.trial.FrozenTrial, objectives: Sequence[str]
) -> dict[int, EpochPoint]:
    """A trial after each epoch of its learning curve: its objective vector (the curve's value
    where it has one: accuracy, loss; else the trial's recorded metric: the cost indicators,
    the same at every epoch), the violation the epoch reported (else the trial's final one)
    and whether it was no better than chance. Empty when the trial recorded no curve."""
    curve = curve_of(trial)
    if not curve:
        return {}
    metrics = metrics_of(trial)
    final = final_violation(trial)
    return {
        int(p["epoch"]): EpochPoint(
            [_number(p.get(n, metrics.get(n))) for n in objectives],
            _number(p.get("violation", final)),
            bool(p.get("at_chance")),
        )
        for p in curve
    }


def _number(value: object) -> float:
    """A stored value as a float; NaN where it is none (a damaged point reads as unknown)."""
    if isinstance(value, numbers.Real):
        return float(value)
    return math.nan


def final_violation(trial: optuna.trial.FrozenTrial) -> float:
    """The total violation of a trial's recorded constraints (0: met or none recorded)."""
    return sum(max(0.0, v) for v in (trial.user_attrs.get(TrialAttr.CONSTRAINTS) or []))
