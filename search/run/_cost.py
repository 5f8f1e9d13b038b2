"""The search's own cost: time, energy and CO2 spent by a launch's trials, against its limits.

No trial starts once starting one would pass a limit; the trials in flight finish. Energy and
CO2 add up over trials, so a trial's expected share of them is the mean of the trials this
launch has seen end. Time is the wall clock, which the trials in flight pass if they run
longer than expected: a trial may start only if one as long as the :data:`TIME_QUANTILE` of
the ended trials' durations ends within the limit. With the mean (8 s on a GPU machine's 16
workers) trials of up to 20 s could start at 88 s of a 96 s search, and cross-validated ones
report once, at their end, so no epoch stops them: they ran into the finalists' time
(``benchmarks/results/gpu_check.md``, runs 4-6). A trial's energy is what
``run_trial`` metered around the whole trial (training and measurement, ``trial_energy_j``);
a trial stopped early by the scheduler has no meter reading, so its energy is estimated from
its training time at the mean power of the trials that ended with one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from objectives import co2_grams
from search.config import LimitsConfig

__all__ = ["TIME_QUANTILE", "SearchCost"]

#: The quantile of the ended trials' durations that another trial is expected to take (an
#: observed duration: at least this share of them took no longer).
TIME_QUANTILE = 0.9


class SearchCost:
    """What a launch has spent, and whether its limits allow another trial.

    Args:
        limits: The search's limits (None fields: no limit).
        clock: Seconds (``time.monotonic``).
        started: When the launch started, on ``clock`` (None: now). The time limit is the
            launch's wall clock: Ray's start-up counts (about 15 s on a 16-core machine, which
            the finalists lost while it was not: ``benchmarks/results/gpu_check.md``, run 5).
    """

    def __init__(
        self,
        limits: LimitsConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        started: float | None = None,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._started = clock() if started is None else started
        self.energy_j = 0.0
        self.sources: set[str] = set()
        self._metered_j = 0.0
        self._metered_s = 0.0
        self._trials = 0
        self._durations: list[float] = []  # the ended trials' own durations
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
        self._durations.append(seconds or _number(metrics.get("train_time_s")) or 0.0)
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
            ("time", self.limits.time, self.elapsed_s, self._expected_s(), "s"),
            ("energy_j", self.limits.energy_j, self.energy_j, self.energy_j / n, "J"),
            ("co2_g", self.limits.co2_g, self.co2_g, self.co2_g / n, "g"),
        )
        for name, limit, spent, each, unit in limits:
            if limit is not None and spent + (each if self._trials else 0.0) > limit:
                self.exhausted_by = name
                return (
                    f"the {name} limit ({limit:g} {unit}) would be passed by another trial "
                    f"({spent:.4g} {unit} spent, about {each:.4g} {unit} a trial"
                    f"{self._which(name)})"
                )
        return None

    def _expected_s(self) -> float:
        """The wall time another trial is expected to take (0 before any ended)."""
        if not self._durations:
            return 0.0
        return float(np.quantile(self._durations, TIME_QUANTILE, method="higher"))

    def _which(self, name: str) -> str:
        """How a limit's cost of a trial was estimated, for the refusal's words."""
        if name == "time":
            share = f"{TIME_QUANTILE:.0%}"
            return f"; at least {share} of the {self._trials} trials ended took no longer"
        return f"; the mean of the {self._trials} trials ended"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
