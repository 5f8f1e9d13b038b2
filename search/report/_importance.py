"""Which sampled parameters matter for each objective: Optuna's fANOVA importance evaluator,
one objective at a time (``target=lambda t: t.values[i]``), on the feasible trials only.

Infeasible trials are left out because their objective values are not a trained model's (a
gated trial records accuracy 0), and would make whatever decides feasibility look important.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import BaseDistribution
from optuna.importance import FanovaImportanceEvaluator, get_param_importances
from optuna.search_space import intersection_search_space
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial

__all__ = ["MIN_TRIALS", "Importances", "param_importances", "shared_space"]

#: Fewest feasible trials fANOVA is run on: its random forest on fewer says nothing reliable.
MIN_TRIALS = 8


@dataclass(frozen=True)
class Importances:
    """Parameter importances per objective, or why there are none.

    Attributes:
        table: ``parameter`` then one column per ranked objective (shares summing to 1), most
            important parameter first; None when nothing could be ranked.
        notes: Sentences for the report: what was computed on what, and what was left out.
    """

    table: pd.DataFrame | None
    notes: list[str]


def shared_space(trials: Sequence[FrozenTrial]) -> dict[str, BaseDistribution]:
    """The parameters every trial sampled from one same distribution, less single-valued ones
    (Optuna's intersection search space, which its evaluators use too)."""
    space = intersection_search_space(list(trials)) if trials else {}
    return {name: dist for name, dist in space.items() if not dist.single()}


def _study_of(trials: Sequence[FrozenTrial], directions: Sequence[str]) -> optuna.Study:
    """An in-memory study holding ``trials``, created without Optuna's info log line."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(directions=[StudyDirection[d.upper()] for d in directions])
    finally:
        optuna.logging.set_verbosity(verbosity)
    study.add_trials(trials)
    return study


def param_importances(
    trials: Sequence[FrozenTrial], objectives: Sequence[tuple[str, str]], *, seed: int = 0
) -> Importances:
    """fANOVA importances of the parameters in :func:`shared_space` for each objective.

    Args:
        trials: The feasible completed trials (their ``values`` follow ``objectives``).
        objectives: ``(name, direction)`` per objective.
        seed: Seeds fANOVA's random forest, so a report is reproducible.
    """
    n = len(trials)
    if n < MIN_TRIALS:
        return Importances(
            None,
            [
                f"No parameter importance: it needs at least {MIN_TRIALS} feasible completed "
                f"trials (fANOVA fits a random forest on them); this study has {n}."
            ],
        )
    space = shared_space(trials)
    if not space:
        return Importances(
            None,
            [
                f"No parameter importance: no parameter was sampled by all {n} feasible "
                "trials with more than one possible value."
            ],
        )
    study = _study_of(trials, [d for _, d in objectives])
    columns: dict[str, dict[str, float]] = {}
    constant = []
    for i, (name, _) in enumerate(objectives):
        target = np.array([t.values[i] for t in trials], dtype=float)
        if np.ptp(target) == 0:
            constant.append(name)
            continue
        columns[name] = get_param_importances(
            study,
            evaluator=FanovaImportanceEvaluator(seed=seed),
            params=list(space),
            target=_value(i),
        )
    notes = [
        f"fANOVA (Optuna's FanovaImportanceEvaluator, seed {seed}) on the {n} feasible "
        "trial(s), one objective at a time: each parameter's share of the variance of that "
        "objective (each column sums to 1). Parameters: those every feasible trial sampled "
        f"({', '.join(space)})."
    ]
    if constant:
        notes.append(f"Constant over the feasible trials, so not ranked: {', '.join(constant)}.")
    if not columns:
        return Importances(None, notes)
    table = pd.DataFrame(columns).reindex(list(space)).fillna(0.0)
    table = table.sort_values(next(iter(columns)), ascending=False, kind="stable")
    return Importances(table.reset_index(names="parameter"), notes)


def _value(i: int) -> Callable[[FrozenTrial], float]:
    """A trial's ``i``-th objective value (fANOVA's target)."""
    return lambda trial: trial.values[i]
