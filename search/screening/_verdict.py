"""What a trial's metrics say of its constraints, written one way for every trial: by
:func:`search.trial.run_trial` (trained or refused) and by the screen that refuses a proposal
before it becomes a trial (:mod:`search.screening._screen`), so both read back alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from objectives import INDICATORS
from search.config import Constraint
from search.record import Metric

__all__ = ["breach", "verdict"]


def breach(constraints: tuple[Constraint, ...], metrics: Mapping[str, Any]) -> str | None:
    """Why a trial is refused untrained: the constraints on analytic indicators (known before
    training) that ``metrics`` violate, as ``"violates params <= 1000, ..."``; None if none."""
    broken = [
        c
        for c in constraints
        if c.indicator in INDICATORS
        and INDICATORS.get(c.indicator).analytic
        and c.violation(metrics) > 0
    ]
    return "violates " + ", ".join(map(str, broken)) if broken else None


def verdict(
    metrics: dict[str, Any], constraints: tuple[Constraint, ...], reason: str | None = None
) -> dict[str, Any]:
    """Adds to ``metrics`` (and returns them) the refusal ``reason`` (:data:`Metric.REFUSED`:
    not trained, so no accuracy is made up), ``constraint_<i>`` for each constraint its
    metrics can evaluate, and :data:`Metric.FEASIBLE` (1.0: not refused and every evaluated
    constraint met)."""
    feasible = reason is None
    if not feasible:
        metrics[Metric.REFUSED] = reason
    for i, c in enumerate(constraints):
        if c.indicator in metrics:
            metrics[f"constraint_{i}"] = c.violation(metrics)
            feasible = feasible and metrics[f"constraint_{i}"] <= 0
    metrics[Metric.FEASIBLE] = 1.0 if feasible else 0.0
    return metrics
