"""What the optimiser is told of a trial the scheduler stopped: a guess of its last epoch, a
design for issue 58 (item 5), different in kind from a stopping rule (FrontStop) in that it
changes what the optimiser learns from, not which trials stop.

Under stopping-type MOASHA most trials end at a rung and reach the optimiser PRUNED: Optuna's
TPE puts a pruned trial below the complete ones whatever its values (``_split_trials``), so it
learns where trials look good at epochs 1-3 (on the lab's MNIST table, TPE with MOASHA ended
worse than TPE without it). BOHB fits its model on the highest budget it has data for; here a
stopped trial is told COMPLETE with its costs as measured and its first objective at its rung
value plus the median gain that the finished trials made from that epoch to their last (a
learning-curve model fitted to the search's own finished curves, one number per epoch). Until
:data:`MIN_FINISHED` trials have finished from that epoch it is told PRUNED, as now. The
reported front is unchanged: a guess is told to the optimiser only, never counted as finished.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["MIN_FINISHED", "FinalGuess"]

#: Finished trials the guess needs at an epoch before it is told.
MIN_FINISHED = 5


class FinalGuess:
    """The median gain of finished trials from each epoch to their last, by epoch."""

    def __init__(self) -> None:
        self.gains: dict[int, list[float]] = {}

    def finished(self, curve: Sequence[float]) -> None:
        """A trial that trained its whole schedule: its first objective after each epoch."""
        for epoch, value in enumerate(curve[:-1], start=1):
            self.gains.setdefault(epoch, []).append(curve[-1] - value)

    def guess(self, epoch: int, value: float) -> float | None:
        """The last-epoch value of a trial stopped after ``epoch`` at ``value`` (None: fewer
        than :data:`MIN_FINISHED` finished trials to guess from)."""
        gains = self.gains.get(epoch, [])
        if len(gains) < MIN_FINISHED:
            return None
        return value + statistics.median(gains)
