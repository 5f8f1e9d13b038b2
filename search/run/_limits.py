"""Time limits on trials in flight, as a Ray Tune stopper (read at each epoch's report).

``limits.trial_timeout`` stops a trial whose training time (its curve's ``elapsed_s``, which
goes on across pauses and resumes) has reached the limit; ``limits.time`` stops every trial
in flight once the launch's wall clock has reached it, instead of waiting for the trials to
end. Either way the trial stops at an epoch, just after its checkpoint was reported, and the
reason is kept: the searcher records a timed-out trial as pruned with it, and leaves a trial
the search's time stopped RUNNING with its checkpoint (adjourned), for a relaunch to continue.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ray.tune.stopper import Stopper

from search.config._search import LimitsConfig
from search.run._cost import SearchCost
from search.run._trainable import CURVE_KEY

__all__ = ["OUT_OF_TIME", "TrialLimits"]

#: The reason of a trial the search's time limit stopped in flight.
OUT_OF_TIME = "time limit"


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

    @property
    def out_of_time(self) -> bool:
        """Whether the search's time limit is spent (every trial in flight is stopped)."""
        return self.limits.time is not None and self.cost.elapsed_s >= self.limits.time

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if CURVE_KEY not in result:  # a final result: the trial ends anyway
            return False
        if self.adjourn and self.out_of_time:
            self.why[trial_id] = OUT_OF_TIME
            return True
        limit = self.limits.trial_timeout
        trained = _trained_s(result)
        if limit is not None and trained >= limit:
            self.why[trial_id] = f"trial timeout: {trained:.4g} s of training >= {limit:g} s"
            return True
        return False

    def stop_all(self) -> bool:
        return False


def _trained_s(result: dict[str, Any]) -> float:
    """The trial's training seconds so far, across its pauses (0 when it did not say)."""
    try:
        seconds = float(json.loads(result[CURVE_KEY]).get("elapsed_s", 0.0))
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) else 0.0
