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
from optuna.search_space import intersection_search_space
from optuna.trial import FrozenTrial, TrialState

from search._compat import forget_generations, storage_of, trial_id_of, with_constraints
from search.record import EpochPoint, TrialSystemAttr, epoch_values, set_metric_names

__all__ = ["EPOCH_ATTR", "RungView", "view_epoch"]

_TOLD = (TrialState.COMPLETE, TrialState.PRUNED)
#: The system attribute of a trial whose point was proposed from a view: the epoch modelled.
EPOCH_ATTR = TrialSystemAttr.MODELLED_EPOCH


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
        # The view kept from one ask to the next while it models the same epoch of the same
        # study: (epoch, view, numbers of its trials not finished there, the view's own study
        # attributes when it was made). Its finished trials cannot change, so an ask adds the
        # new trials and brings the others up to date, where building it anew copied every
        # trial of the study at every ask.
        self._kept: tuple[int, optuna.Study, set[int], set[str]] | None = None
        # The study read (its storage and name) and its finished trials' curves by number:
        # forgotten when another study is read, so that no trial of one is taken for another.
        self._read: tuple[Any, str] | None = None
        self._points: dict[int, dict[int, EpochPoint]] = {}
        # The storage of the study last handed to the inner sampler (the study or a view).
        self._handed: Any = None

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        view = self._view_of(study, trial)
        space = self.inner.infer_relative_search_space(view, _in(view, trial))
        if view is study:
            return space
        # Optuna's samplers intersect the search space incrementally, taking a trial once
        # finished as final; in a view a trial seen pruned is seen complete once the epoch
        # modelled goes down, so a parameter the intersection kept may be missing from a
        # complete trial (NSGA-II's crossover then failed with a KeyError). Only what every
        # complete trial has is kept (never more than the sampler's own space).
        complete = view.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        exact = intersection_search_space(complete)
        return {name: dist for name, dist in space.items() if exact.get(name) == dist}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        view = self._view_of(study, trial)
        mirrored = _in(view, trial)
        try:
            params = self.inner.sample_relative(view, mirrored, search_space)
        except ValueError:
            if view is study or not _short_of_parents(self.inner, view, mirrored):
                raise
            params = {}  # at random this once, as a GA's first generation is
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
        if self._view is None or self._view[0] != trial.number or not self._reads(study):
            self._view = (trial.number, self._build(study))
            if self.epoch is not None:  # which fidelity this proposal learned from
                _set_system_attr(study, trial, EPOCH_ATTR, self.epoch)
            handed = storage_of(self._view[1])
            if handed is not self._handed:  # another study: its trials are not the cached ones
                forget_generations(self.inner)
                self._handed = handed
        return self._view[1]

    def _build(self, study: optuna.Study) -> optuna.Study:
        trials = study.get_trials(deepcopy=False)
        if not self._reads(study):
            self._read = (storage_of(study), study.study_name)
            self._points, self._kept = {}, None
        points = [self._points_of(t) for t in trials]
        told = [t.state in _TOLD for t in trials]  # what the sampler ranks
        reached = [max(p) for p, ok in zip(points, told, strict=True) if p and ok]
        self.epoch = view_epoch(reached, sum(told))
        if self.epoch is None:
            self._kept = None
            return study
        kept = self._kept
        if kept is None or kept[0] != self.epoch:
            view = optuna.create_study(
                storage=optuna.storages.InMemoryStorage(),
                directions=study.directions,
                study_name=study.study_name,
            )
            if study.metric_names is not None:
                set_metric_names(view, study.metric_names)
            made = set(storage_of(view).get_study_system_attrs(_study_id(view)))
            kept = self._kept = (self.epoch, view, set(), made)
        else:
            _forget_study_attrs(kept[1], kept[3])
        _, view, unfinished, _ = kept
        # a new Study on the kept storage: a Study caches its trials for samplers
        # (``use_cache``) until its own ask or tell, which a view never has
        view = optuna.load_study(study_name=view.study_name, storage=storage_of(view),
                                 sampler=_QUIET)  # fmt: skip
        for number in sorted(unfinished):
            now = _at(trials[number], points[number], self.epoch)
            _update(view, number, now)
            if now.state.is_finished():
                unfinished.discard(number)
        start = len(view.get_trials(deepcopy=False))
        new = [_at(t, p, self.epoch) for t, p in zip(trials[start:], points[start:], strict=True)]
        # an unfinished trial's intermediate values are left out (no sampler reads them),
        # so that one seen finished at the epoch later has none, as when added then
        new = [t if t.state.is_finished() else _bare(t, intermediate_values={}) for t in new]
        view.add_trials(new)
        unfinished.update(start + i for i, t in enumerate(new) if not t.state.is_finished())
        return view

    def _reads(self, study: optuna.Study) -> bool:
        """Whether ``study`` is the one the cached curves and view were read from."""
        read = self._read
        return read is not None and read[0] is storage_of(study) and read[1] == study.study_name

    def _points_of(self, trial: FrozenTrial) -> dict[int, EpochPoint]:
        """The trial's curve (read once for a finished trial: it cannot change)."""
        if trial.number in self._points:
            return self._points[trial.number]
        points = epoch_values(trial, self.objectives)
        if trial.state.is_finished():
            self._points[trial.number] = points
        return points


#: Parents a crossover of npas's genetic samplers takes (Optuna's default, uniform crossover).
_CROSSOVER_PARENTS = 2


def _short_of_parents(sampler: BaseSampler, view: optuna.Study, trial: FrozenTrial) -> bool:
    """Whether a genetic sampler (NSGA-II, NSGA-III) would breed ``trial`` in the view from
    fewer parents than its crossover takes.

    A GA numbers its generations by the trials it saw complete, on the trials themselves; in a
    view a trial seen complete at one epoch is pruned at another (no better than chance there),
    so a generation can come to hold a single complete parent, and Optuna's parent selection
    then draws from an empty list (ValueError; NSGA-II under MOASHA, ``grace_epochs: 3``, lab
    seed 4). Optuna proposes at random when a generation has no parent at all; so does the view
    when it has too few to cross. Read after the sampler failed (its parents are then cached on
    the view), so that an ask that does not fail is the sampler's own, untouched.
    """
    parents_of = getattr(sampler, "get_parent_population", None)
    generation_of = getattr(sampler, "get_trial_generation", None)
    if parents_of is None or generation_of is None:
        return False
    return 0 < len(parents_of(view, generation_of(view, trial))) < _CROSSOVER_PARENTS


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
        system_attrs=with_constraints(trial.system_attrs, [violation]),
    )


def _forget_study_attrs(view: optuna.Study, made: set[str]) -> None:
    """Sets to None what samplers wrote on the view as a study since it was ``made`` with
    the keys given (NSGA-II caches a generation's parents there), as a view built anew would
    not have it: the parents are chosen again from the trials seen now. (Storages cannot
    delete a study attribute; samplers read a missing one as None.)"""
    storage = storage_of(view)
    study_id = _study_id(view)
    for key, value in storage.get_study_system_attrs(study_id).items():
        if key not in made and value is not None:
            storage.set_study_system_attr(study_id, key, None)


def _study_id(study: optuna.Study) -> int:
    return storage_of(study).get_study_id_from_name(study.study_name)


def _update(view: optuna.Study, number: int, now: FrozenTrial) -> None:
    """Brings the view's trial ``number``, not finished when it was added, up to ``now``
    (what it would be if added now) through the storage's public API: its new parameters,
    system attributes and intermediate values, then its state and values."""
    storage = storage_of(view)
    trial_id = trial_id_of(view, number)
    seen = storage.get_trial(trial_id)
    for name, value in now.params.items():
        if name not in seen.params:
            dist = now.distributions[name]
            storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
    for key, value in now.system_attrs.items():
        if seen.system_attrs.get(key, _MISSING) != value:
            storage.set_trial_system_attr(trial_id, key, value)
    for step, value in now.intermediate_values.items():
        if step not in seen.intermediate_values:
            storage.set_trial_intermediate_value(trial_id, step, value)
    if now.state != seen.state:
        storage.set_trial_state_values(trial_id, now.state, now.values)


_MISSING = object()
#: The sampler of a view as a Study (never asked: the inner sampler proposes).
_QUIET = optuna.samplers.RandomSampler()


def _in(view: optuna.Study, trial: FrozenTrial) -> FrozenTrial:
    """The view's copy of the trial being asked (where samplers write): the view holds every
    trial of the study, in order."""
    return view.get_trials(deepcopy=False)[trial.number]


def _set_system_attr(study: optuna.Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """Writes a system attribute of a trial being asked, as Optuna's samplers do (through the
    study's storage: Optuna has no public setter on a frozen trial)."""
    storage_of(study).set_trial_system_attr(trial_id_of(study, trial.number), key, value)
