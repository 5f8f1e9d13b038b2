"""pymoo algorithms as npas optimisers, driven ask/tell a generation at a time."""

from __future__ import annotations

import json
import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from pymoo.core.duplicate import DuplicateElimination

from search._directions import minimisation_signs
from search.optimisers._base import (
    OPTIMISERS,
    POPULATION_SIZE,
    Optimiser,
    Proposal,
    constraint_vector,
    point_of,
)
from spaces import Categorical, ConfigError, Fixed, Int, Space, is_int

__all__ = ["PymooOptimiser", "point_params"]


class PymooOptimiser(Optimiser):
    """A pymoo algorithm driven ask/tell on a mixed-variable problem, a generation at a time.

    The space is given to pymoo as mixed variables (:class:`_MixedEncoding`: choices as
    ``Choice``, unit-step ints as ``Integer``, the rest as ``Real``, log dimensions in the log)
    with pymoo's mixed-variable sampling and mating, so categorical values are crossed and
    mutated as categories, not as rounded reals. Duplicates are judged on decoded points
    (after rounding and conditions), against the generation and every point evaluated before:
    with real-valued operators on a mostly discrete space a quarter of NSGA-II's trials were
    repeats. When mating finds nothing new, fresh random points fill the generation; once the
    space is exhausted, repeats are allowed again.

    A generation is told to pymoo once every row has a result; a failed row gets the worst
    objective values seen so far and violates the feasibility constraint, so the generation
    completes and the point ranks last. Maximised objectives are negated (pymoo minimises).
    Once the first generation is told, the next one is bred as soon as every row of those in
    flight is handed out, from the population as last told (as a steady-state algorithm does):
    waiting for a generation's slowest trial would leave the other workers idle, and under a
    stopping scheduler that trial is the one trained to the end.

    Options: ``population_size`` (default :data:`POPULATION_SIZE`).
    """

    generational = True
    option_names = ("population_size",)

    def __init__(self, space: Space, directions: Sequence[str], **kwargs: Any) -> None:
        super().__init__(space, directions, **kwargs)
        size = self.options.get("population_size", POPULATION_SIZE)
        if not is_int(size, 2):
            raise ConfigError(
                f"optimiser option 'population_size' must be an int >= 2, got {size!r}"
            )
        self.population_size = size
        self._sign = np.array(minimisation_signs(self.directions))
        self._algorithm: Any = None
        self._problem: Any = None
        self._generations: list[_Generation] = []  # in flight, oldest first
        self._rows: dict[int, tuple[_Generation, int]] = {}  # trial number → its row
        self._worst: np.ndarray | None = None

    @abstractmethod
    def algorithm(self) -> Any:
        """A fresh pymoo algorithm for this search, built with :meth:`_mixed`'s operators."""

    def _mixed(self) -> dict[str, Any]:
        """pymoo's mixed-variable sampling and mating, with our duplicate elimination."""
        from pymoo.core.mixed import MixedVariableMating, MixedVariableSampling

        return {
            "sampling": MixedVariableSampling(),
            "mating": MixedVariableMating(eliminate_duplicates=self._seen),
            "eliminate_duplicates": self._seen,
        }

    def bind(self, study: optuna.Study) -> None:
        from pymoo.core.problem import Problem
        from pymoo.core.termination import NoTermination

        super().bind(study)
        self._encoding = _MixedEncoding(self.space)
        self._problem = Problem(
            vars=self._encoding.variables,
            n_obj=len(self.directions),
            n_ieq_constr=len(self.constraints),
        )
        self._seen = _DecodedDuplicates(self._encoding)
        self._rng = np.random.default_rng(self.seed)
        self._algorithm = self.algorithm()
        self._algorithm.setup(
            self._problem, termination=NoTermination(), seed=self.seed, verbose=False
        )
        self._generations, self._rows = [], {}
        self._resume()

    def _resume(self) -> None:
        """Tells pymoo the completed trials again, a population at a time, oldest first."""
        done = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        for start in range(0, len(done), self.population_size):
            chunk = done[start : start + self.population_size]
            X = np.array(
                [self._encoding.encode(point_of(self.space, t.params)) for t in chunk],
                dtype=object,
            )
            self._seen.archive.update(self._seen.key(x) for x in X)
            F = np.array([t.values for t in chunk], dtype=float) * self._sign
            G = np.array([constraint_vector(t, self.constraints) for t in chunk], dtype=float)
            self._algorithm.ask()  # advances pymoo's own bookkeeping; rows replaced below
            self._tell_population(X, F, G)

    def _tell_population(self, X: np.ndarray, F: np.ndarray, G: np.ndarray) -> None:
        """Tells pymoo one evaluated population (F in minimisation form)."""
        from pymoo.core.evaluator import Evaluator
        from pymoo.core.population import Population
        from pymoo.problems.static import StaticProblem

        self._note_worst(F)
        pop = Population.new(X=X)
        out: dict[str, np.ndarray] = {"F": F}
        if self.constraints:
            out["G"] = G
        Evaluator().eval(StaticProblem(self._problem, **out), pop)
        self._algorithm.tell(infills=pop)

    def _note_worst(self, F: np.ndarray) -> None:
        finite = F[np.isfinite(F).all(axis=1)]
        if finite.size:
            worst = finite.max(axis=0)
            self._worst = worst if self._worst is None else np.maximum(self._worst, worst)

    def _new_generation(self) -> _Generation | None:
        pop = self._ask_new()
        if pop is None:  # the space is exhausted: evaluate repeats rather than stall
            self._seen.active = False
            pop = self._ask_new()
            if pop is None:
                return None
        self._seen.archive.update(self._seen.key(x) for x in pop.get("X"))
        generation = _Generation(pop, len(self.directions), len(self.constraints))
        self._generations.append(generation)
        return generation

    def _ask_new(self) -> Any:
        """pymoo's next population; when its mating finds no new point, fresh random ones."""
        from pymoo.core.population import Population

        for _ in range(3):
            pop = self._algorithm.ask()
            if pop is not None and len(pop):
                return pop
        rows: dict[str, dict[str, Any]] = {}
        for _ in range(50 * self.population_size):
            x = self._encoding.encode(self.space.sample(self._rng))
            key = self._seen.key(x)
            if not (self._seen.active and key in self._seen.archive):
                rows.setdefault(key, x)
            if len(rows) == self.population_size:
                break
        return Population.new(X=np.array(list(rows.values()), dtype=object)) if rows else None

    def ask(self) -> Proposal | None:
        generation = next((g for g in self._generations if g.pending), None)
        if generation is None:
            if self._generations and not self._algorithm.is_initialized:
                return None  # pymoo breeds from a told population: the first one is out
            generation = self._new_generation()
            if generation is None:
                return None
        row = generation.pending.pop(0)
        point = self._encoding.decode(generation.pop[row].X)
        self.study.enqueue_trial(point_params(self.space, point), skip_if_exists=False)
        trial = self.study.ask()
        actual = self.space.suggest(trial)
        if actual != point:  # a trial someone else enqueued came first: evaluate that one
            generation.pop[row].set("X", self._encoding.encode(actual))
        self._rows[trial.number] = (generation, row)
        return Proposal(trial, actual)

    def tell(self, number: int, values: Sequence[float] | None, state: TrialState) -> None:
        if number not in self._rows:
            raise KeyError(f"trial {number} was not proposed by a generation in flight")
        generation, row = self._rows.pop(number)
        frozen = self.study.tell(number, None if values is None else list(values), state=state)
        if frozen.state == TrialState.COMPLETE:
            generation.F[row] = np.asarray(frozen.values, dtype=float)
            generation.G[row] = constraint_vector(frozen, self.constraints)
        else:
            generation.G[row] = 1.0  # a failed point violates every constraint (ranks last)
        generation.told[row] = True
        if generation.told.all():  # every row handed out and told
            self._generations.remove(generation)
            self._finish_generation(generation)

    def _finish_generation(self, generation: _Generation) -> None:
        F = generation.F * self._sign
        self._note_worst(F)
        failed = ~np.isfinite(F).all(axis=1)
        if failed.any():
            F[failed] = self._worst if self._worst is not None else 0.0
        self._tell_population(generation.pop.get("X"), F, generation.G)


class _Generation:
    """A pymoo population being evaluated: the rows not yet handed out, and the results."""

    def __init__(self, pop: Any, n_objectives: int, n_constraints: int) -> None:
        n = len(pop)
        self.pop = pop
        self.pending = list(range(n))
        self.F = np.full((n, n_objectives), np.nan)
        self.G = np.zeros((n, n_constraints))
        self.told = np.zeros(n, dtype=bool)


class _MixedEncoding:
    """A space as pymoo mixed variables, one per non-fixed dimension.

    Choices become ``Choice`` over their indices and unit-step linear ints ``Integer``; the
    others (floats, log or stepped ints) a ``Real`` on the space's real encoding
    (:meth:`spaces.Space.bounds`), which :meth:`spaces.Space.decode` rounds.
    """

    def __init__(self, space: Space) -> None:
        from pymoo.core.variable import Choice, Integer, Real

        self.space = space
        self.names = [n for n in space.names if not isinstance(space[n], Fixed)]
        self.variables: dict[str, Any] = {}
        for name, low, high in zip(self.names, *space.bounds(), strict=True):
            dim = space[name]
            if isinstance(dim, Categorical):
                self.variables[name] = Choice(options=list(range(len(dim.choices))))
            elif isinstance(dim, Int) and not dim.log and dim.step == 1:
                self.variables[name] = Integer(bounds=(dim.low, dim.top))
            else:
                self.variables[name] = Real(bounds=(float(low), float(high)))
        self._real = {n for n, v in self.variables.items() if isinstance(v, Real)}

    def decode(self, x: Mapping[str, Any]) -> dict[str, Any]:
        """The point of a pymoo individual's variables."""
        return self.space.decode([float(x[n]) for n in self.names])

    def encode(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The variables of a valid point."""
        values = self.space.encode(point)
        return {
            n: float(v) if n in self._real else round(float(v))
            for n, v in zip(self.names, values, strict=True)
        }


class _DecodedDuplicates(DuplicateElimination):
    """pymoo duplicate elimination on decoded points, against an archive of evaluated ones.

    pymoo's default compares real vectors, which differ where the points they decode to do
    not (rounded ints and choices, inactive conditional dimensions).
    """

    def __init__(self, encoding: _MixedEncoding) -> None:
        super().__init__()
        self.encoding = encoding
        self.archive: set[str] = set()
        self.active = True  # off once the space is exhausted: repeats are then allowed

    def key(self, x: dict[str, Any]) -> str:
        """The decoded point of a row, as a comparable string."""
        space = self.encoding.space
        return json.dumps(point_params(space, self.encoding.decode(x)), sort_keys=True)

    def _do(self, pop: Any, other: Any, is_duplicate: np.ndarray) -> np.ndarray:
        if not self.active:
            return is_duplicate
        seen = set(self.archive)
        if other is not None:
            seen.update(self.key(x) for x in other.get("X"))
        for i, x in enumerate(pop.get("X")):
            key = self.key(x)
            is_duplicate[i] = key in seen
            if other is None:
                seen.add(key)
        return is_duplicate


def point_params(space: Space, point: Mapping[str, Any]) -> dict[str, Any]:
    """The searched (non-``Fixed``) values of a point, as Optuna stores them."""
    free = set(space.names) - {n for n in space.names if space[n].kind == "fixed"}
    return {k: v for k, v in point.items() if k in free}


@OPTIMISERS.register("pymoo-nsga2")
class _PymooNSGA2(PymooOptimiser):
    """pymoo NSGA-II (rank and crowding survival)."""

    def algorithm(self) -> Any:
        from pymoo.algorithms.moo.nsga2 import NSGA2

        return NSGA2(pop_size=self.population_size, **self._mixed())


@OPTIMISERS.register("pymoo-smsemoa")
class _PymooSMSEMOA(PymooOptimiser):
    """pymoo SMS-EMOA (least hypervolume contribution survival)."""

    def algorithm(self) -> Any:
        from pymoo.algorithms.moo.sms import SMSEMOA

        return SMSEMOA(pop_size=self.population_size, **self._mixed())


@OPTIMISERS.register("pymoo-nsga3")
class _PymooNSGA3(PymooOptimiser):
    """pymoo NSGA-III; Das-Dennis reference directions, as many as the population allows."""

    def algorithm(self) -> Any:
        from pymoo.algorithms.moo.nsga3 import NSGA3
        from pymoo.util.ref_dirs import get_reference_directions

        m = len(self.directions)
        if m == 1:
            ref_dirs = np.ones((1, 1))
        else:
            partitions = 1
            while math.comb(partitions + m, m - 1) <= self.population_size:
                partitions += 1
            if math.comb(partitions + m - 1, m - 1) <= self.population_size:
                ref_dirs = get_reference_directions("das-dennis", m, n_partitions=partitions)
            else:  # more objectives than members: Riesz energy directions (slower to compute)
                seed = 0 if self.seed is None else self.seed
                ref_dirs = get_reference_directions("energy", m, self.population_size, seed=seed)
        return NSGA3(ref_dirs=ref_dirs, pop_size=self.population_size, **self._mixed())
