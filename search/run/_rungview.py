"""What a sampler learns from a multi-fidelity search: every trial at one epoch.

Under a stopping scheduler most trials end PRUNED after an epoch or three, and only the few
that survive every rung are COMPLETE. Optuna's multi-objective TPE cannot read a PRUNED trial's
multi-objective curve, so it ranks all of them alike below the complete ones and learns from a
handful of points; GP ignores them; NSGA-II counts a generation in COMPLETE trials only, so it
stays in its random first generation until a population of trials has survived every rung.
BOHB's answer (Falkner et al. 2018) is to model the highest fidelity that
enough trials reached: :class:`RungView` hands the sampler a copy of the study in which each
trial that reached that epoch is COMPLETE with its values there (accuracy then, its cost
indicators) and the violation of the constraints it reported then, and each trial stopped
before it, or no better than chance there, is PRUNED (ranked below the others, as Optuna ranks
pruned trials). The storage is untouched: the view lives for one ``ask``.

The epoch is the highest one that at least ``spread`` times as many trials reached as the
sampler counts as good (Optuna's multi-objective TPE: the best tenth), and at least
``min_trials``: so the good group is drawn from trials compared at one fidelity. Before any
epoch has that many, the sampler sees the study as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from search._compat import storage_of, trial_id_of
from search.run._curves import EpochPoint, epoch_values
from search.run._study import set_metric_names
from search.run._trial_attrs import CONSTRAINTS_ATTR

__all__ = ["EPOCH_ATTR", "RungView", "view_epoch"]

_TOLD = (TrialState.COMPLETE, TrialState.PRUNED)
#: The system attribute of a trial whose point was proposed from a view: the epoch modelled.
EPOCH_ATTR = "npas:modelled_epoch"


def view_epoch(
    reached: Sequence[int],
    finished: int,
    *,
    good: float = 0.1,
    spread: int = 2,
    min_trials: int = 10,
) -> int | None:
    """The epoch to model: the highest that ``spread * ceil(good * finished)`` trials (and
    ``min_trials``) reached, given the last epoch each of the ``finished`` trials reached.

    None when no epoch was reached by that many.
    """
    needed = max(min_trials, spread * math.ceil(good * finished))
    ranked = sorted(reached, reverse=True)  # the needed-th furthest trial's epoch
    return ranked[needed - 1] if len(ranked) >= needed else None


class RungView(BaseSampler):
    """A sampler that sees each trial at the epoch :func:`view_epoch` picks (see module doc).

    Args:
        inner: The sampler proposing the points (TPE).
        objectives: The search's objective names, in the study's order.
    """

    def __init__(self, inner: BaseSampler, objectives: Sequence[str]) -> None:
        self.inner = inner
        self.objectives = list(objectives)
        self._view: tuple[int, optuna.Study] | None = None  # (trial number, view)
        #: The epoch the last view modelled (None: the study as it is).
        self.epoch: int | None = None

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        view = self._view_of(study, trial)
        return self.inner.infer_relative_search_space(view, _in(view, trial))

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        view = self._view_of(study, trial)
        mirrored = _in(view, trial)
        params = self.inner.sample_relative(view, mirrored, search_space)
        if view is study:
            return params
        # What the sampler wrote on the trial (TPE's constant liar shares its relative params
        # there with the trials asked next) belongs to the study.
        written = _in(view, trial).system_attrs  # read again: the sampler wrote there
        for key, value in written.items():
            if trial.system_attrs.get(key) != value:
                _set_system_attr(study, trial, key, value)
        return params

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        view = self._view_of(study, trial)
        return self.inner.sample_independent(
            view, _in(view, trial), param_name, param_distribution
        )

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()

    def _view_of(self, study: optuna.Study, trial: FrozenTrial) -> optuna.Study:
        """The view for the trial being asked (built at its first call)."""
        if self._view is None or self._view[0] != trial.number:
            self._view = (trial.number, self._build(study))
            if self.epoch is not None:  # which fidelity this proposal learned from
                _set_system_attr(study, trial, EPOCH_ATTR, self.epoch)
        return self._view[1]

    def _build(self, study: optuna.Study) -> optuna.Study:
        trials = study.get_trials(deepcopy=False)
        points = [epoch_values(t, self.objectives) for t in trials]
        told = [t.state in _TOLD for t in trials]  # what the sampler ranks
        reached = [max(p) for p, ok in zip(points, told, strict=True) if p and ok]
        self.epoch = view_epoch(reached, sum(told))
        if self.epoch is None:
            return study
        view = optuna.create_study(
            storage=optuna.storages.InMemoryStorage(),
            directions=study.directions,
            study_name=study.study_name,
        )
        if study.metric_names is not None:
            set_metric_names(view, study.metric_names)
        view.add_trials([_at(t, p, self.epoch) for t, p in zip(trials, points, strict=True)])
        return view


def _bare(trial: FrozenTrial, **changes: Any) -> FrozenTrial:
    """A copy of the trial without its user attributes (its curve, metrics, error), which no
    sampler reads: the view's storage deep-copies every trial added, and copying each trial's
    curve at each ``ask`` was half the decision time of a TPE search under MOASHA."""
    fields = {"state": trial.state, "values": trial.values, "params": trial.params,
              "distributions": trial.distributions, "system_attrs": trial.system_attrs,
              "intermediate_values": trial.intermediate_values}  # fmt: skip
    return optuna.trial.create_trial(**{**fields, **changes})


def _at(trial: FrozenTrial, points: dict[int, EpochPoint], epoch: int) -> FrozenTrial:
    """The trial as it was after ``epoch``: COMPLETE there if it finished that epoch (with
    finite values), PRUNED if it was no better than chance then (as the scheduler stops it),
    else as it is."""
    if trial.state not in _TOLD or epoch not in points:
        return _bare(trial)
    values, violation, at_chance = points[epoch]
    if not all(math.isfinite(v) for v in values):
        return _bare(trial)
    if at_chance:
        return _bare(trial, state=TrialState.PRUNED, values=None, intermediate_values={})
    return _bare(
        trial,
        state=TrialState.COMPLETE,
        values=values,
        intermediate_values={},
        system_attrs={**trial.system_attrs, CONSTRAINTS_ATTR: [violation]},
    )


def _in(view: optuna.Study, trial: FrozenTrial) -> FrozenTrial:
    """The view's copy of the trial being asked (where samplers write): the view holds every
    trial of the study, in order."""
    return view.get_trials(deepcopy=False)[trial.number]


def _set_system_attr(study: optuna.Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """Writes a system attribute of a trial being asked, as Optuna's samplers do (through the
    study's storage: Optuna has no public setter on a frozen trial)."""
    storage_of(study).set_trial_system_attr(trial_id_of(study, trial.number), key, value)
