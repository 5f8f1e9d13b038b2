"""Time limits on trials in flight, as a Ray Tune stopper (read at each epoch's report).

``limits.trial_timeout`` stops a trial whose training time (its curve's ``elapsed_s``, which
goes on across pauses and resumes) has reached the limit; ``limits.time`` stops every trial
in flight once the launch's wall clock has reached it, instead of waiting for the trials to
end. Either way the trial stops at an epoch, just after its checkpoint was reported, and the
reason is kept: the searcher records a timed-out trial as pruned with it, and leaves a trial
the search's time stopped RUNNING with its checkpoint (adjourned), for a relaunch to continue.

Once the search's time is spent and no trial has reported for longer than an epoch could
take (:data:`GRACE_S`, or three times the longest epoch seen), the whole search is ended
(:meth:`TrialLimits.stop_all`): every trial in flight would have reported by then, and a
stopped launch once waited on trials Ray Tune kept PAUSED, with nothing running, for 13
minutes past a 60-second limit.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ray.tune.stopper import Stopper

from search.config import LimitsConfig
from search.record import RayKey
from search.run._cost import SearchCost

__all__ = ["OUT_OF_TIME", "TrialLimits"]

#: The reason of a trial the search's time limit stopped in flight.
OUT_OF_TIME = "time limit"
#: The least silence after the search's time is spent that ends the search.
GRACE_S = 120.0


class TrialLimits(Stopper):
    """Stops trials past ``limits.trial_timeout`` or once ``limits.time`` is spent.

    Args:
        limits: The search's limits (None: none).
        cost: The launch's spend, whose clock started with the launch.
        adjourn: Whether the trials checkpoint, so that the search's time may stop them in
            flight (without checkpoints their epochs would be lost: they finish instead).
    """

    def __init__(self, limits: LimitsConfig, cost: SearchCost, *, adjourn: bool = True) -> None:
        self.limits, self.cost, self.adjourn = limits, cost, adjourn
        #: Ray trial id -> why it was stopped (a trial timeout, or :data:`OUT_OF_TIME`).
        self.why: dict[str, str] = {}
        self._trained: dict[str, float] = {}  # Ray trial id -> its training seconds so far
        self.longest_epoch_s = 0.0
        self._heard_at = 0.0  # the launch's clock at the last epoch reported
        #: Whether :meth:`stop_all` ended the search (its time spent, the trials silent).
        self.ended = False

    @property
    def out_of_time(self) -> bool:
        """Whether the search's time limit is spent (every trial in flight is stopped)."""
        return self.limits.time is not None and self.cost.elapsed_s >= self.limits.time

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if RayKey.CURVE not in result:  # a final result: the trial ends anyway
            return False
        trained = _trained_s(result)
        if trial_id in self._trained:
            self.longest_epoch_s = max(self.longest_epoch_s, trained - self._trained[trial_id])
        self._trained[trial_id] = trained
        self._heard_at = self.cost.elapsed_s
        if self.adjourn and self.out_of_time:
            self.why[trial_id] = OUT_OF_TIME
            return True
        limit = self.limits.trial_timeout
        if limit is not None and trained >= limit:
            self.why[trial_id] = f"trial timeout: {trained:.4g} s of training >= {limit:g} s"
            return True
        return False

    @property
    def ends_search(self) -> bool:
        """Whether the search's time limit ends it, with its trials adjourned: spent, or (what
        usually ends a search first) too near for another trial at the pace so far."""
        foreseen = self.cost.exhausted_by == "time"
        return self.adjourn and (self.out_of_time or foreseen)

    def adjourns(self, trial_id: str) -> bool:
        """Whether the search's time, not a trial timeout, stopped the Ray trial ``trial_id``
        in flight: it stays RUNNING for a relaunch to continue (when it has a checkpoint)."""
        spent = self.adjourn and self.out_of_time
        return spent and self.why.get(trial_id, OUT_OF_TIME) == OUT_OF_TIME

    def stop_all(self) -> bool:
        """Whether to end the whole search: its time is spent (trials adjourn) and no epoch
        was reported for longer than any trial in flight needs to reach its next one."""
        if not (self.adjourn and self.out_of_time) or self.limits.time is None:
            return False
        silent = self.cost.elapsed_s - max(self._heard_at, float(self.limits.time))
        self.ended = silent > max(GRACE_S, 3 * self.longest_epoch_s)
        return self.ended


def _trained_s(result: dict[str, Any]) -> float:
    """The trial's training seconds so far, across its pauses (0 when it did not say)."""
    try:
        seconds = float(json.loads(result[RayKey.CURVE]).get("elapsed_s", 0.0))
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) else 0.0
