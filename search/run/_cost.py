"""The search's own cost: time, energy and CO2 spent by a launch's trials, against its limits.

No trial starts once starting one would pass a limit (its expected cost is the mean of the
trials this launch has seen end); the trials in flight finish. A trial's energy is what
``run_trial`` metered around the whole trial (training and measurement, ``trial_energy_j``);
a trial stopped early by the scheduler has no meter reading, so its energy is estimated from
its training time at the mean power of the trials that ended with one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from objectives import co2_grams
from search.config import LimitsConfig

__all__ = ["SearchCost"]


class SearchCost:
    """What a launch has spent, and whether its limits allow another trial.

    Args:
        limits: The search's limits (None fields: no limit).
        clock: Seconds (``time.monotonic``).
    """

    def __init__(
        self, limits: LimitsConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._started = clock()
        self.energy_j = 0.0
        self.sources: set[str] = set()
        self._metered_j = 0.0
        self._metered_s = 0.0
        self._trials = 0
        self._seconds = 0.0  # the ended trials' own durations, summed
        #: The limit (``time``, ``energy_j``, ``co2_g``) :meth:`exhausted` last found spent.
        self.exhausted_by: str | None = None

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._started

    @property
    def co2_g(self) -> float:
        return co2_grams(self.energy_j)

    def add(self, metrics: Mapping[str, Any] | None) -> None:
        """Counts one ended trial (its metrics, or its last learning-curve point)."""
        self._trials += 1
        metrics = metrics or {}
        joules = _number(metrics.get("trial_energy_j"))
        seconds = _number(metrics.get("trial_time_s"))
        self._seconds += seconds or _number(metrics.get("train_time_s")) or 0.0
        if joules is not None:
            self.energy_j += joules
            self.sources.add(str(metrics.get("energy_source", "estimate")))
            if seconds:
                self._metered_j += joules
                self._metered_s += seconds
            return
        trained = _number(metrics.get("train_time_s"))
        if trained and self._metered_s > 0:
            self.energy_j += trained * self._metered_j / self._metered_s

    def exhausted(self) -> str | None:
        """Why no further trial may start, or None."""
        n = max(self._trials, 1)
        limits = (
            ("time", self.limits.time, self.elapsed_s, self._seconds / n, "s"),
            ("energy_j", self.limits.energy_j, self.energy_j, self.energy_j / n, "J"),
            ("co2_g", self.limits.co2_g, self.co2_g, self.co2_g / n, "g"),
        )
        for name, limit, spent, each, unit in limits:
            if limit is not None and spent + (each if self._trials else 0.0) > limit:
                self.exhausted_by = name
                return (
                    f"the {name} limit ({limit:g} {unit}) would be passed by another trial "
                    f"({spent:.4g} {unit} spent, about {each:.4g} {unit} a trial)"
                )
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
