"""A scheduler that stops a trial once what it can still reach is already beaten: a design for
issue 58 (item 5), different in kind from MOASHA's ranking of a rung.

MOASHA compares the trials that reached a rung with each other at that epoch, so a slow
starter ranks low where it starts (on the lab's MNIST table the rank correlation of epoch 1's
accuracy with the last epoch's is 0.59, epoch 3's 0.79, epoch 9's 0.94), and several trials of
the final front sat at chance after their first epoch. The front a search reports is made of
finished trials, and the perfect-foresight bound stops exactly the trials that will not join
it. :class:`FrontStop` asks that question with a model instead of knowledge: at each rung a
trial's last-epoch value of the first objective is predicted optimistically (its value there
plus the improvement that :data:`OPTIMISM` of the finished trials exceeded between that epoch
and their last), its other objectives are what it reports there (a cost fixed by its
architecture), and it is stopped when a finished feasible trial is at least as good on every
objective as that optimistic point. It stops nothing else: until :data:`MIN_FINISHED` trials
have finished, only a trial reporting a constraint violation (a cost over its limit, which
training does not change).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from search.record import RayKey
from search.schedulers import GRACE_EPOCHS, REDUCTION_FACTOR, milestones

__all__ = ["MIN_FINISHED", "OPTIMISM", "FrontStop"]

#: Finished trials the model needs before it stops a feasible trial.
MIN_FINISHED = 5
#: The share of finished trials whose improvement from a rung to their last epoch the
#: optimistic prediction matches: their 90th percentile.
OPTIMISM = 0.9


class FrontStop(FIFOScheduler):
    """FIFO's order, and a stop at a rung of each trial an optimistic prediction of its last
    epoch shows beaten by a finished one (see module doc).

    Args:
        objectives: ``(name, direction)`` of each objective, the first the one that training
            improves (accuracy), the others costs the trial reports from its first epoch.
        max_epochs: The trials' schedule.
    """

    def __init__(self, objectives: Sequence[tuple[str, str]], max_epochs: int) -> None:
        super().__init__()
        self.names = [name for name, _ in objectives]
        self.sign = np.array([1.0 if d == "minimize" else -1.0 for _, d in objectives])
        self.rungs = set(milestones(GRACE_EPOCHS, REDUCTION_FACTOR, max_epochs))
        self.curves: dict[str, dict[int, float]] = {}  # trial id -> epoch -> first objective
        #: Minimisation-form last-epoch values of the finished feasible trials.
        self.finished: list[np.ndarray] = []
        #: Each finished trial's first objective from each epoch to its last (minimisation
        #: form: negative when it improved), by epoch.
        self.gains: dict[int, list[float]] = {}

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        epoch = result.get(RayKey.EPOCH)
        if epoch is None or not all(name in result for name in self.names):
            return TrialScheduler.CONTINUE
        point = self.sign * np.array([float(result[name]) for name in self.names])
        self.curves.setdefault(trial.trial_id, {})[int(epoch)] = float(point[0])
        if int(epoch) not in self.rungs:
            return TrialScheduler.CONTINUE
        if float(result.get(RayKey.VIOLATION, 0.0)) > 0:
            return TrialScheduler.STOP
        return TrialScheduler.STOP if self.beaten(point, int(epoch)) else TrialScheduler.CONTINUE

    def beaten(self, point: np.ndarray, epoch: int) -> bool:
        """Whether a finished feasible trial weakly dominates ``point`` (minimisation form,
        the first objective at ``epoch``) with its first objective predicted optimistically."""
        gains = self.gains.get(epoch, [])
        if len(self.finished) < MIN_FINISHED or len(gains) < MIN_FINISHED:
            return False
        optimistic = point.copy()
        optimistic[0] += float(np.quantile(gains, 1.0 - OPTIMISM))
        return any(bool(np.all(done <= optimistic)) for done in self.finished)

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        curve = self.curves.pop(trial.trial_id, {})
        if RayKey.METRICS not in (result or {}) or not curve:
            return  # stopped at a rung, or failed: not a finished trial
        last = self.sign * np.array([float(result[name]) for name in self.names])
        for epoch, value in curve.items():
            self.gains.setdefault(epoch, []).append(float(last[0]) - value)
        feasible = bool(json.loads(result[RayKey.METRICS]).get("feasible", True))
        if feasible and np.isfinite(last).all():
            self.finished.append(last)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self.curves.pop(trial.trial_id, None)

    def debug_string(self) -> str:
        return "FrontStop: a trial stopped once a finished one beats its optimistic last epoch."
