"""Ray Tune searchers that record every trial in the search's Optuna study.

- :class:`NpasOptunaSearch`: Ray Tune's ``OptunaSearch`` for the Optuna samplers, with what it
  lacks: the trial config and the outcome's user attributes and constraints are written on the
  trial (constraints before the tell, where the samplers read them), failures are recorded as
  FAIL with their message, and the Ray config carries the trial config of the point.
- :class:`OptimiserSearcher`: any :class:`search._optimisers.Optimiser` (the pymoo ones) as a
  Ray ``Searcher``; ``suggest`` returns None while a generation is still being evaluated.

- :class:`Progress`: the live progress view (a Ray Tune callback).

Both work on the in-memory copy of the study (``search._writer``) and hand each trial to the
:class:`~search._writer.StudyWriter` when it starts and when it ends, which records it in the
storage. Neither saves state with Ray: the study is the state, and a relaunch resumes from it.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from ray.tune import Callback
from ray.tune.search import Searcher
from ray.tune.search.optuna import OptunaSearch

from search._optimisers import Optimiser, OptunaOptimiser
from search._storage import Outcome, counts, outcome_of, record
from search._trainable import ERROR_KEY, METRICS_KEY
from search._writer import StorageWriteError, StudyWriter
from spaces._dsl import Space

__all__ = ["NpasOptunaSearch", "OptimiserSearcher", "Progress", "TrialConfigFn"]

#: ``(point, trial number) -> trial config`` (adds the artifact folder of that trial).
TrialConfigFn = Callable[[dict[str, Any], int], dict[str, Any]]


def _frozen(trial: optuna.trial.Trial) -> optuna.trial.FrozenTrial:
    return trial.study._storage.get_trial(trial._trial_id)


class _Recorder:
    """What both searchers do with a trial that starts and one that ends."""

    objectives: list[tuple[str, str]]
    constraints: list[str]
    writer: StudyWriter
    _make: TrialConfigFn

    def _start(self, trial: optuna.trial.Trial, point: dict[str, Any]) -> dict | str:
        """The Ray config of a new trial, recorded with its trial config right away.

        A trial that cannot be recorded is not run: the search stops (``FINISHED``) and
        ``launch`` raises the writer's error once the running trials are done.
        """
        trial_config = self._make(point, trial.number)
        trial.set_user_attr("trial_config", trial_config)
        try:
            self.writer.started(_frozen(trial))
        except StorageWriteError:
            return Searcher.FINISHED
        return {"number": trial.number, "trial_config": trial_config}

    def _finish(self, trial: optuna.trial.Trial) -> None:
        with contextlib.suppress(StorageWriteError):  # kept in writer.error, raised by launch
            self.writer.finished(_frozen(trial))

    def _outcome(self, trial: optuna.trial.Trial, result: dict | None, error: bool) -> Outcome:
        """The outcome of a Ray result, recorded on the trial (constraints before the tell)."""
        outcome = outcome_of(
            result, objectives=self.objectives, constraints=self.constraints, ray_error=error
        )
        record(trial, outcome)
        return outcome

    def save(self, checkpoint_path: str) -> None:
        """Nothing to save: the Optuna study holds the state (Ray calls this periodically)."""

    def restore(self, checkpoint_path: str) -> None:
        """Nothing to restore: relaunching resumes from the Optuna study."""


class NpasOptunaSearch(_Recorder, OptunaSearch):
    """Ray Tune's OptunaSearch on the search's study, recording npas's user attributes.

    Args:
        space: Sampled define-by-run (``space.suggest``).
        optimiser: The Optuna optimiser plug-in, whose sampler proposes the points.
        study_name: The study (search) name; the study must exist (``open_study``).
        storage: The storage object holding it.
        objectives: ``(name, direction)`` per objective (Ray's metric/mode lists).
        constraints: Constraint keys recorded on each trial (expressions, then ``feasible``).
        trial_config: Builds the trial config of a point.
        writer: Records each trial in the search's storage.
    """

    def __init__(
        self,
        *,
        space: Space,
        optimiser: OptunaOptimiser,
        study_name: str,
        storage: optuna.storages.BaseStorage,
        objectives: Sequence[tuple[str, str]],
        constraints: Sequence[str],
        trial_config: TrialConfigFn,
        writer: StudyWriter,
    ) -> None:
        self.objectives = list(objectives)
        self.constraints = list(constraints)
        self._make = trial_config
        self.writer = writer
        super().__init__(
            space=space.suggest,
            metric=[n for n, _ in objectives],
            mode=["min" if d == "minimize" else "max" for _, d in objectives],
            sampler=optimiser.sampler(),
            study_name=study_name,
            storage=storage,
        )

    def suggest(self, trial_id: str) -> dict | str | None:
        if self.writer.error is not None:
            return Searcher.FINISHED
        point = super().suggest(trial_id)
        return self._start(self._ot_trials[trial_id], point)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """One result per trial: nothing to do until it completes."""

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        trial = self._ot_trials[trial_id]
        outcome = self._outcome(trial, result, error)
        self._ot_study.tell(trial, outcome.values, state=outcome.state)
        self._completed_trials.add(trial_id)
        self._finish(trial)


class OptimiserSearcher(_Recorder, Searcher):
    """An npas optimiser plug-in (bound to the search's study) as a Ray Tune searcher.

    Args:
        optimiser: A bound optimiser; generational ones return None while a generation is
            pending, which Ray Tune takes as "ask again later".
        objectives: ``(name, direction)`` per objective.
        constraints: Constraint keys recorded on each trial.
        trial_config: Builds the trial config of a point.
        writer: Records each trial in the search's storage.
    """

    def __init__(
        self,
        optimiser: Optimiser,
        *,
        objectives: Sequence[tuple[str, str]],
        constraints: Sequence[str],
        trial_config: TrialConfigFn,
        writer: StudyWriter,
    ) -> None:
        super().__init__()  # no metric: our results always carry the objectives anyway
        self.optimiser = optimiser
        self.objectives = list(objectives)
        self.constraints = list(constraints)
        self._make = trial_config
        self.writer = writer
        self._live: dict[str, optuna.trial.Trial] = {}

    def suggest(self, trial_id: str) -> dict | str | None:
        if self.writer.error is not None:
            return Searcher.FINISHED
        proposal = self.optimiser.ask()
        if proposal is None:
            return None
        self._live[trial_id] = proposal.trial
        return self._start(proposal.trial, proposal.point)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        trial = self._live.pop(trial_id, None)
        if trial is None:  # a duplicate completion
            return
        outcome = self._outcome(trial, result, error)
        self.optimiser.tell(trial.number, outcome.values, outcome.state)
        self._finish(trial)


def _duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress(Callback):
    """The live progress view: one line per finished trial, then a summary, on stderr.

    Each line: trials done of the search's total (a resumed search's earlier trials included),
    running, failed, infeasible, the size of the current Pareto front of the feasible trials and
    its hypervolume (objectives normalised over the trials seen, reference point 1.1; see
    ``search.pareto.hypervolume``), then the time since launch and, with a total, an estimate
    of the time left at this launch's pace.

    Args:
        objectives: ``(name, direction)`` per objective.
        prior: The study as it was before this launch (its trials are counted too).
        total: The search's ``trials``.
        enabled: False prints nothing.
        clock: Seconds, for the elapsed time (``time.monotonic``).
    """

    def __init__(
        self,
        objectives: Sequence[tuple[str, str]],
        *,
        prior: optuna.Study | None = None,
        total: int | None = None,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.objectives = list(objectives)
        self.total = total
        self.enabled = enabled
        self.values: list[list[float]] = []
        self.feasible: list[bool] = []
        self.failed = 0
        for trial in prior.get_trials(deepcopy=False) if prior is not None else ():
            if trial.state == TrialState.COMPLETE:
                self.values.append(list(trial.values))
                self.feasible.append(bool(trial.user_attrs.get("feasible", True)))
            elif counts(trial):  # failed on its own (interrupted ones are re-run)
                self.failed += 1
        self._clock = clock
        self._started = clock()
        self._prior = len(self.values) + self.failed

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._add(trial.last_result or {})
        self._print([t for t in trials if t is not trial])

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.failed += 1
        self._print([t for t in trials if t is not trial])

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self.enabled:
            done = len(self.values) + self.failed
            word = "stopped" if self.total is not None and done < self.total else "finished"
            print(f"[npas] {word}: {self.line(trials)}", file=sys.stderr, flush=True)

    def _add(self, result: Mapping[str, Any]) -> None:
        if ERROR_KEY in result or METRICS_KEY not in result:
            self.failed += 1
            return
        values = [float(result.get(n, math.nan)) for n, _ in self.objectives]
        feasible = bool(json.loads(result[METRICS_KEY]).get("feasible", 1.0))
        self.values.append(values)
        self.feasible.append(feasible and bool(np.all(np.isfinite(values))))

    def line(self, trials: Sequence[Any] = ()) -> str:
        """The progress line for the trials seen so far."""
        from search.pareto import hypervolume, non_dominated

        running = sum(getattr(t, "status", "") == "RUNNING" for t in trials)
        done = len(self.values) + self.failed
        infeasible = len(self.feasible) - sum(self.feasible)
        of = "" if self.total is None else f"/{self.total}"
        text = f"{done}{of} done, {running} running, {self.failed} failed, {infeasible} infeasible"
        if any(self.feasible):
            directions = [d for _, d in self.objectives]
            values = np.array(self.values, dtype=float)
            front = int(non_dominated(values, directions, self.feasible).sum())
            hv = hypervolume(values, directions, feasible=self.feasible).value
            text += f", front {front}, hypervolume {hv:.4f}"
        return text + self._times(done)

    def _times(self, done: int) -> str:
        elapsed = self._clock() - self._started
        text = f"; {_duration(elapsed)} elapsed"
        finished_here = done - self._prior
        if self.total is not None and finished_here > 0 and done < self.total:
            text += f", ~{_duration(elapsed / finished_here * (self.total - done))} left"
        return text

    def _print(self, trials: Sequence[Any]) -> None:
        if self.enabled:
            print(f"[npas] {self.line(trials)}", file=sys.stderr, flush=True)
