"""Many seeds of several replayed searches on one curve table, read as the lab's figures.

Every arm runs on the same seeds and the same simulated time (``horizon_s``); a baseline arm
(FIFO, every trial trained to the end) sets each seed's target: its hypervolume at the
horizon. Per arm and seed the comparison reads

- ``reach``: the first second the arm's hypervolume reaches the target, over the horizon (the
  share of FIFO's time it needed; infinite when it never did within the horizon);
- ``regret`` at 25, 50 and 100 % of the horizon: the hypervolume of the table's true front
  (every recorded configuration's final values) minus the arm's at that moment.

Hypervolumes count the trials that completed their full schedule, feasible ones only, on the
table's bounds (:meth:`CurveTable.bounds`), so every arm and seed is measured on one scale.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from search.lab._replay import ReplaySpec, replay
from search.lab._stats import clock_ties, paired_p, summarise
from search.lab._table import CurveTable
from search.pareto import hypervolume
from spaces import ConfigError

__all__ = ["FRACTIONS", "Arm", "Comparison", "Run", "hv_at", "hv_curve", "reach_time"]

#: The moments (shares of the horizon) at which regret is read.
FRACTIONS = (0.25, 0.5, 1.0)

#: ``(second a trial completed, its final objective values, feasible)``.
Completed = list[tuple[float, list[float], bool]]


def hv_curve(
    completed: Completed, table: CurveTable, bounds: dict[str, tuple[float, float]]
) -> list[tuple[float, float]]:
    """``(second, hypervolume)`` after each completed trial, on ``bounds`` by objective."""
    out: list[tuple[float, float]] = []
    points: list[list[float]] = []
    feasible: list[bool] = []
    for second, values, ok in sorted(completed, key=lambda c: c[0]):
        points.append(values)
        feasible.append(ok)
        value = hypervolume(np.array(points), table.directions, bounds=bounds, names=table.names,
                            feasible=feasible)  # fmt: skip
        out.append((second, value.value))
    return out


def hv_at(curve: list[tuple[float, float]], second: float) -> float:
    """The hypervolume a curve had reached at ``second`` (0 before its first point)."""
    return max((hv for t, hv in curve if t <= second), default=0.0)


def reach_time(curve: list[tuple[float, float]], target: float) -> float:
    """The first second the curve reaches ``target`` (inf: never)."""
    return next((t for t, hv in curve if hv >= target - 1e-12), math.inf)


@dataclass
class Run:
    """One arm on one seed."""

    arm: str
    seed: int
    completed: Completed
    counts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Arm:
    """A replayed npas search (``spec``) or any other producer of completed trials
    (``run(table, seed, horizon_s) -> Run``: a peer's scheduler through its own simulator)."""

    label: str
    spec: ReplaySpec | None = None
    run: Callable[[CurveTable, int, float], Run] | None = None


def replayed(table: CurveTable, arm: Arm, seed: int, horizon_s: float) -> Run:
    """One arm on one seed: its spec replayed, or its own ``run``."""
    if arm.run is not None:
        return arm.run(table, seed, horizon_s)
    assert arm.spec is not None
    result = replay(table, arm.spec, seed=seed, horizon_s=horizon_s)
    counts = {"started": result.started, "completed": len(result.completed),
              "stopped": result.stopped, "paused": result.paused, "promoted": result.promoted,
              "epochs": result.epochs, "decision_s": result.decision_s,
              "reused": result.reused}  # fmt: skip
    return Run(arm.label, seed, result.completed, counts)


#: The most seeds a comparison runs (each replays every arm once; ``search replay`` runs 20):
#: the runs of every seed are held in memory until the figures are read.
MAX_SEEDS = 10_000


def usable_jobs(jobs: int) -> int:
    """``jobs`` but at most the CPU cores this process may run on (its affinity): replays
    are pure computation, so more processes than cores only contend for them."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return max(1, min(jobs, cores))


@dataclass
class Comparison:
    """Every arm's runs on the same seeds and horizon, and the figures read from them."""

    table: CurveTable
    baseline: str
    horizon_s: float
    runs: dict[str, list[Run]]
    _curves: dict[str, list[list[tuple[float, float]]]] = field(default_factory=dict, repr=False)

    @classmethod
    def run(
        cls,
        table: CurveTable,
        arms: Sequence[Arm],
        *,
        seeds: Iterable[int],
        horizon_s: float,
        jobs: int = 1,
        progress: Callable[[Run], None] | None = None,
    ) -> Comparison:
        """Runs every arm on every seed (the first arm is the baseline), ``jobs`` at once (at
        most :func:`usable_jobs`).

        Raises:
            ConfigError: more than :data:`MAX_SEEDS` seeds, or a table with no feasible row
                to measure hypervolumes on (refused before any replay).
        """
        seeds = list(itertools.islice(seeds, MAX_SEEDS + 1))
        if len(seeds) > MAX_SEEDS:
            raise ConfigError(f"more than {MAX_SEEDS:,} seeds; allowed: 1 to {MAX_SEEDS:,}")
        table.bounds()  # the scale of every figure: none, nothing to compare
        jobs = usable_jobs(jobs)
        work = [(arm, seed) for seed in seeds for arm in arms]
        runs: dict[str, list[Run]] = {arm.label: [] for arm in arms}
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as pool:
                done: Iterable[Run] = pool.map(_call, [(table, a, s, horizon_s) for a, s in work])
                for run in done:
                    runs[run.arm].append(run)
                    if progress is not None:
                        progress(run)
        else:
            for arm, seed in work:
                run = replayed(table, arm, seed, horizon_s)
                runs[run.arm].append(run)
                if progress is not None:
                    progress(run)
        return cls(table, arms[0].label, horizon_s, runs)

    def curves(self, arm: str) -> list[list[tuple[float, float]]]:
        """Per seed, the arm's hypervolume after each completed trial (computed once)."""
        if arm not in self._curves:
            bounds = self.table.bounds()
            self._curves[arm] = [hv_curve(r.completed, self.table, bounds) for r in self.runs[arm]]
        return self._curves[arm]

    def true_front_hv(self) -> float:
        """The hypervolume of every recorded configuration's final values (the best any
        search on this table can end with)."""
        return hypervolume(self.table.final_values(), self.table.directions,
                           bounds=self.table.bounds(), names=self.table.names,
                           feasible=self.table.feasible()).value  # fmt: skip

    def targets(self) -> list[float]:
        """Per seed: the baseline's hypervolume at the horizon."""
        return [hv_at(curve, self.horizon_s) for curve in self.curves(self.baseline)]

    def reach(self, arm: str) -> list[float]:
        """Per seed: the arm's time to the baseline's final hypervolume, over the horizon."""
        return [
            reach_time(curve, target) / self.horizon_s if target > 0 else math.inf
            for curve, target in zip(self.curves(arm), self.targets(), strict=True)
        ]

    def regret(self, arm: str, fraction: float) -> list[float]:
        """Per seed: the true front's hypervolume minus the arm's at ``fraction`` of the time."""
        best = self.true_front_hv()
        return [best - hv_at(curve, fraction * self.horizon_s) for curve in self.curves(arm)]

    def summary(self, arm: str) -> dict[str, Any]:
        """The arm's figures: reach ratio and regrets (:class:`Summary` each) and mean counts."""
        counts: dict[str, float] = {}
        for run in self.runs[arm]:
            for key, value in run.counts.items():
                counts[key] = counts.get(key, 0.0) + value / len(self.runs[arm])
        out: dict[str, Any] = {"reach": summarise(self.reach(arm)), "counts": counts}
        for fraction in FRACTIONS:
            out[f"regret@{fraction:g}"] = summarise(self.regret(arm, fraction))
        return out

    def paired(self, a: str, b: str, figure: str = "reach") -> float:
        """Wilcoxon p-value of arm ``a`` against ``b`` on one figure, paired by seed; the
        reaches of replays that made the same decisions are a tie within their decision
        clocks' difference (:func:`clock_ties`)."""
        if figure == "reach":
            clock = clock_ties([r.counts for r in self.runs[a]],
                               [r.counts for r in self.runs[b]], self.horizon_s)  # fmt: skip
            return paired_p(self.reach(a), self.reach(b), clock)
        fraction = float(figure.removeprefix("regret@"))
        return paired_p(self.regret(a, fraction), self.regret(b, fraction))


def _call(args: tuple[CurveTable, Arm, int, float]) -> Run:
    return replayed(*args)


