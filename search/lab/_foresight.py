"""The perfect-foresight scheduler: the bound no early-stopping scheduler can beat with a given
optimiser on a curve table.

It knows each proposal's final values (the table's row the replay trains it as) and follows the
optimiser's own proposals: after a trial's first epoch it lets the trial finish if its final
values will be on the front, and stops it otherwise. "Will be on the front": feasible, weakly
dominated by no trial it has let finish, and strictly dominated by no point of the front its
own proposals end with. That front is found by a first pass of the same seed (which lets
finish what is on the front so far: :meth:`Foresight.ahead` hands it to the second), so the
bound does not pay for trials that a later proposal will dominate.

A stopped trial has paid what any scheduler pays to reject it, a start and one epoch
(rejecting before the first result is not something Ray Tune's schedulers can do), and the
optimiser is told its final values, as under FIFO: the proposals are the optimiser's own, not
bent by what the scheduler saw at an early epoch. On the same proposals its time to reach
FIFO's hypervolume is the floor under any scheduler's: one that decides on partial curves can
only stop fewer of the trials that will not count, or stop some that would. Across seeds it
is a floor in distribution, not seed by seed: with several workers the optimiser is asked at
other moments than under FIFO, so its proposals differ, and on a small table a seed's bound
can miss FIFO's hypervolume within the horizon.

The look-ahead is the first pass's front: with one worker (or any sampler that does not learn)
the second pass proposes the same points in the same order, sooner, so that front is its own;
with several workers a learning optimiser is asked at other moments and may propose otherwise,
and a trial stopped for a point the second pass never proposes costs it that point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from search.record import RayKey

__all__ = ["Foresight"]


class Foresight(FIFOScheduler):
    """Ray Tune's FIFO order, and a stop after epoch 1 of each trial that will not be on the
    front (see module doc). Reads the replay's trial (its ``row``: the recorded curve)."""

    def __init__(self, directions: list[str]) -> None:
        super().__init__()
        self.sign = np.array([1.0 if d == "minimize" else -1.0 for d in directions])
        #: Minimisation-form final values of every trial let finish.
        self.kept: list[np.ndarray] = []
        #: Minimisation-form points of the front the proposals end with (none: not known).
        self.front = np.empty((0, len(directions)))
        self.decided: set[str] = set()

    def ahead(self, rows: list[Any]) -> None:
        """Looks ahead: the feasible, non-dominated final values of ``rows`` (every trial a
        first pass of the same seed started) are the front a trial must not be dominated by."""
        points = np.array([np.asarray(r.values[-1], dtype=float) * self.sign for r in rows
                           if r.feasible and np.isfinite(r.values[-1]).all()])  # fmt: skip
        if points.size:
            keep = [not any(_strictly(q, p) for q in points) for p in points]
            self.front = points[keep]

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        if trial.trial_id in self.decided or result.get(RayKey.EPOCH) != 1:
            return TrialScheduler.CONTINUE
        self.decided.add(trial.trial_id)
        if not self.on_front(trial.row.values[-1], trial.row.feasible):
            return TrialScheduler.STOP
        self.kept.append(np.asarray(trial.row.values[-1], dtype=float) * self.sign)
        return TrialScheduler.CONTINUE

    def on_front(self, values: list[float], feasible: bool) -> bool:
        """Whether final ``values`` are feasible, weakly dominated by none let finish and
        strictly by no point of the front looked ahead to."""
        if not feasible or not np.isfinite(values).all():
            return False
        point = np.asarray(values, dtype=float) * self.sign
        if any(_strictly(q, point) for q in self.front):
            return False
        return not any(bool(np.all(kept <= point)) for kept in self.kept)

    def debug_string(self) -> str:
        return "Perfect foresight: trials not on the front stopped after one epoch."


def _strictly(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` dominates ``b`` (minimisation): no worse anywhere, better somewhere."""
    return bool(np.all(a <= b) and np.any(a < b))
