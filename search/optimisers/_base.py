"""The optimiser interface: a small ask/tell ABC that Optuna samplers and pymoo algorithms
implement (one subclass each, as an Optuna sampler is one ``BaseSampler`` subclass).

An optimiser proposes points of a :class:`spaces.Space` and is told how they did. It never
evaluates anything itself, and every proposal is an Optuna trial of the study it is bound to,
so the storage holds the whole history whichever library proposed the point; binding to a
study that already has trials resumes from them (Optuna samplers read the study directly;
pymoo algorithms are told the completed trials again).

One trial's call order::

    opt = OPTIMISERS.get("nsga2")(space, ["maximize", "minimize"], seed=0)
    opt.bind(study)                      # the study records every trial; resumes its history
    proposal = opt.ask()                 # None: nothing to propose now (a first generation out)
    ... evaluate proposal.point elsewhere, record user attrs / constraints on proposal.trial ...
    opt.tell(proposal.trial.number, values_or_None, TrialState.COMPLETE, FAIL or PRUNED)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import optuna
from optuna.trial import TrialState

from search._directions import DIRECTIONS
from search.config import OPTIMISERS as _REGISTRY
from spaces import ConfigError, Registry, Space

__all__ = ["Optimiser", "Proposal", "constraint_vector", "point_of"]


class Proposal(NamedTuple):
    """A point to evaluate and the RUNNING Optuna trial that records it."""

    trial: optuna.trial.Trial
    point: dict[str, Any]


def point_of(space: Space, params: Mapping[str, Any]) -> dict[str, Any]:
    """The full point (``Fixed`` values included) of a stored trial's params."""
    return space.suggest(optuna.trial.FixedTrial(dict(params)))


def constraint_vector(trial: optuna.trial.FrozenTrial, keys: Sequence[str]) -> list[float]:
    """A trial's recorded constraint values in ``keys`` order (a missing one counts as met).

    npas records them as one list in key order (Optuna's first form, which Optuna names
    ``"0"``, ``"1"``, ... and optuna-dashboard reads); a value set by name is read too.
    """
    recorded = trial.constraints
    return [float(recorded.get(k, recorded.get(str(i), 0.0))) for i, k in enumerate(keys)]


#: Search algorithms by name (``algorithm.name`` in a config); each registers with
#: ``@OPTIMISERS.register(name)``.
OPTIMISERS: Registry[type[Optimiser]] = _REGISTRY
#: The population of the generational optimisers (NSGA-II, NSGA-III, SMS-EMOA) unless set.
POPULATION_SIZE = 16


class Optimiser(ABC):
    """Proposes points of a space; told results, it proposes better ones.

    Subclasses set the capability flags and implement :meth:`ask` and :meth:`tell`; state that
    matters for resuming is rebuilt from the study in :meth:`bind`, so nothing else is saved.

    Args:
        space: The search space.
        directions: ``"minimize"``/``"maximize"`` per objective.
        seed: Seed of the optimiser's random numbers (None: not reproducible).
        constraints: Names of the constraints recorded on each trial (``trial.constraints``
            keys, the :data:`FEASIBLE_KEY` included when used), in a fixed order.
        **options: Algorithm options from the config's ``optimiser`` section.
    """

    #: Handles more than one objective.
    multi_objective: ClassVar[bool] = True
    #: Proposes whole generations and learns from a generation once it is told in full.
    generational: ClassVar[bool] = False
    #: Its sampler models the trials a stopping scheduler cut short when shown each trial at
    #: the highest epoch enough trials reached (``search.schedulers._rungview``: BOHB's answer); an
    #: option may turn it off for one instance.
    models_rungs: bool = False
    #: Option names the constructor accepts (others raise ConfigError).
    option_names: ClassVar[tuple[str, ...]] = ()

    @property
    def name(self) -> str:
        """The registry name (``algorithm.name`` in a config)."""
        return OPTIMISERS.name_of(type(self))

    def __init__(
        self,
        space: Space,
        directions: Sequence[str],
        *,
        seed: int | None = None,
        constraints: Sequence[str] = (),
        **options: Any,
    ) -> None:
        bad = [d for d in directions if d not in DIRECTIONS]
        if not directions or bad:
            raise ConfigError(
                f"directions must be a non-empty list of {DIRECTIONS}, got {list(directions)!r}"
            )
        if len(directions) > 1 and not self.multi_objective:
            raise ConfigError(
                f"optimiser {self.name!r} handles one objective, got {len(directions)}"
            )
        unknown = sorted(set(options) - set(self.option_names))
        if unknown:
            raise ConfigError(
                f"option {unknown[0]!r} (value {options[unknown[0]]!r}) is not known to "
                f"optimiser {self.name!r}; allowed: {list(self.option_names)}"
            )
        self.space = space
        self.directions = list(directions)
        self.seed = seed
        self.constraints = list(constraints)
        self.options = dict(options)
        self._study: optuna.Study | None = None

    @property
    def study(self) -> optuna.Study:
        """The study this optimiser records into (after :meth:`bind`)."""
        if self._study is None:
            raise RuntimeError(f"{type(self).__name__}.bind(study) must be called before use")
        return self._study

    def sampler(self) -> optuna.samplers.BaseSampler:
        """The Optuna sampler the study is created with (a plain recorder by default)."""
        return optuna.samplers.RandomSampler(seed=self.seed)

    def bind(self, study: optuna.Study) -> None:
        """Attaches the study that records every trial and resumes from its history."""
        self._study = study

    @abstractmethod
    def ask(self) -> Proposal | None:
        """The next point to evaluate, or None when nothing can be proposed now."""

    @abstractmethod
    def tell(self, number: int, values: Sequence[float] | None, state: TrialState) -> None:
        """Reports the outcome of trial ``number``: values for COMPLETE, None for FAIL.

        Record user attributes and constraints on the trial before telling: samplers read
        them while the trial is told.
        """
