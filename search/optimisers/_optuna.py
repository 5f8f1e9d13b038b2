"""Optuna samplers as npas optimisers: the study holds all their state."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import optuna
from optuna.trial import TrialState

from search.optimisers._base import OPTIMISERS, POPULATION_SIZE, Optimiser, Proposal
from spaces import ConfigError

__all__ = ["OptunaOptimiser"]


class OptunaOptimiser(Optimiser):
    """An Optuna sampler proposing define-by-run; the study holds all its state.

    Constraints are read by the samplers from ``trial.constraints`` (set them before the tell).

    A sampler that learns from COMPLETE trials only (TPE, GP, NSGA-II/III: those with the
    option ``rung_view``) is shown every trial at one epoch under a stopping scheduler
    (``models_rungs``; ``rung_view: false`` turns that off). Left as Optuna has it, it learns
    from the few trials that survive every rung: MOTPE ranks all PRUNED trials alike below
    them, GP ignores PRUNED trials, and NSGA-II counts a generation in COMPLETE trials, so
    with one trial in ten completing it stayed in its random first generation through a whole
    5-minute search.
    """

    factory: ClassVar[Callable[..., optuna.samplers.BaseSampler]]
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "rung_view" not in self.option_names:
            return
        view = self.options.pop("rung_view", True)
        if not isinstance(view, bool):
            raise ConfigError(
                f"option 'rung_view' of optimiser {self.name!r}: got {view!r}; allowed: "
                "true or false"
            )
        self.models_rungs = view

    def sampler(self) -> optuna.samplers.BaseSampler:
        return type(self).factory(seed=self.seed, **{**self.defaults, **self.options})

    def ask(self) -> Proposal:
        trial = self.study.ask()
        return Proposal(trial, self.space.suggest(trial))

    def tell(self, number: int, values: Sequence[float] | None, state: TrialState) -> None:
        self.study.tell(number, None if values is None else list(values), state=state)


_LOCK_TYPE = type(threading.Lock())


class _Picklable:
    """A sampler that pickles with its thread locks: a copy gets locks of its own.

    Optuna 5.1's genetic samplers guard their generation cache with a lock, which pickle
    refuses; Ray Tune pickles the searcher, and with it the study's sampler, into its run
    folder when a search starts.
    """

    def __getstate__(self) -> dict[str, Any]:
        locks = [name for name, value in vars(self).items() if isinstance(value, _LOCK_TYPE)]
        return {**{n: v for n, v in vars(self).items() if n not in locks}, _LOCKS: locks}

    def __setstate__(self, state: dict[str, Any]) -> None:
        locks = state.pop(_LOCKS)
        self.__dict__.update(state, **{name: threading.Lock() for name in locks})


#: The key of a pickled sampler's state naming its locks (see :class:`_Picklable`).
_LOCKS = "npas_locks"


# Named as Optuna's: a genetic sampler keys the generation it writes on each trial by its
# class's name, so that a study recorded by either reads the same.
class NSGAIISampler(_Picklable, optuna.samplers.NSGAIISampler):
    """Optuna's NSGA-II sampler, picklable (see :class:`_Picklable`)."""


class NSGAIIISampler(_Picklable, optuna.samplers.NSGAIIISampler):
    """Optuna's NSGA-III sampler, picklable (see :class:`_Picklable`)."""


@OPTIMISERS.register("nsga2")
class _NSGA2(OptunaOptimiser):
    """Optuna's NSGA-II sampler (population :data:`POPULATION_SIZE` unless set)."""

    factory: ClassVar[Callable[..., optuna.samplers.BaseSampler]] = NSGAIISampler
    option_names: ClassVar[tuple[str, ...]] = (
        "population_size",
        "mutation_prob",
        "crossover_prob",
        "swapping_prob",
        "rung_view",
    )
    defaults: ClassVar[dict[str, Any]] = {"population_size": POPULATION_SIZE}


@OPTIMISERS.register("nsga3")
class _NSGA3(_NSGA2):
    """Optuna's NSGA-III sampler: NSGA-II's options and defaults, and reference points."""

    factory = NSGAIIISampler
    option_names = (*_NSGA2.option_names, "dividing_parameter")


@OPTIMISERS.register("tpe")
class _TPE(OptunaOptimiser):
    """Optuna's TPE (MOTPE for several objectives), multivariate and grouped for conditions."""

    factory = optuna.samplers.TPESampler
    option_names = (
        "n_startup_trials",
        "n_ei_candidates",
        "multivariate",
        "group",
        "constant_liar",
        "rung_view",
    )
    defaults: ClassVar[dict[str, Any]] = {"multivariate": True, "constant_liar": True}

    def sampler(self) -> optuna.samplers.BaseSampler:
        options = {**self.defaults, **self.options}
        options.setdefault("group", bool(options["multivariate"]))  # conditional spaces
        with warnings.catch_warnings():  # ``group`` is experimental in Optuna 5.0
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=self.seed, **options)


@OPTIMISERS.register("gp")
class _GP(OptunaOptimiser):
    """Optuna's Gaussian-process sampler (logEHVI for several objectives).

    Dimensions outside the intersection of every trial's space (conditional ones) are sampled
    at random: GP does not model dynamic spaces; the warning for each is turned off.
    """

    factory = optuna.samplers.GPSampler
    option_names = ("n_startup_trials", "deterministic_objective", "rung_view")
    defaults: ClassVar[dict[str, Any]] = {"warn_independent_sampling": False}


@OPTIMISERS.register("random")
class _Random(OptunaOptimiser):
    """Optuna's random sampler: the baseline every other optimiser must beat."""

    factory = optuna.samplers.RandomSampler
