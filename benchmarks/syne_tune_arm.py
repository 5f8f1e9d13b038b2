"""Syne Tune's own MOASHA (as shipped, and with its rank read correctly) and its random search
(FIFO) replayed on an npas curve table.

What it measures: the completed trials (when each ended on the simulated clock, its final
objective values, whether it is feasible) of Syne Tune 0.16's ``MOASHA`` and of its random
search under FIFO, run through Syne Tune's simulator backend on the same recorded curves that
:func:`search.lab.replay` replays npas's schedulers on. The result has the shape of
``ReplayResult.completed``, so the lab's hypervolume-against-time statistics compare Syne Tune's
arm with npas's on one table, one clock and one worker count. A benchmark dependency only: npas
never imports ``syne_tune``.

How the blackbox is built: Syne Tune samples configurations from a flat space (no conditions),
so the table's space (``table.config["space"]``) is turned into Syne Tune domains (``choice``,
``randint``/``lograndint``, ``uniform``/``loguniform``; fixed dimensions left out), and a sampled
configuration (its active dimensions) is answered by the row npas's replay would give it:
``search.lab.NearestRow`` with ``fresh``, the nearest recorded row in the space's own box that
no earlier configuration of the tuning was given. This keeps the sampling distribution over
rows that of sampling the real space (a categorical "row index" would draw every row equally
often), maps a point to a row by the rule npas's arms use (an earlier version used Syne Tune's
1-NN surrogate, whose standardised, one-hot metric could pick another row, and which answered
many configurations with one row), and trains no recorded curve twice within one replay.

Per epoch the blackbox returns each objective (a maximised one negated as ``neg_<name>``:
0.16's MOASHA has one ``do_minimize`` for all metrics), ``elapsed_time`` (the epochs' cumulative
``seconds``, the table's start cost ``CurveTable.start_s`` added to the first and its
final measurement ``end_s`` to the last, as npas's replay charges them) and ``row`` (which
recorded row answered; its final values and feasibility are read from the table). Infeasible
rows are kept with their values.

Clock: Syne Tune's simulator advances by the tuner's sleep step while all workers are busy and,
as shipped, by all real time spent outside the backend. The step is set well under an epoch
(the recorded epochs last tenths of a second, Syne Tune's default step is 5 s), and only the
scheduler's own calls are charged (``charge_decisions``), in CPU time, as npas's replay charges
its searcher's and scheduler's: at such a step the tuner loop's own time would otherwise dominate.
Communication delays of the simulator are 0 (the record's seconds are the whole cost).

The rank fix (``moasha-fixed``): Syne Tune 0.16's MOASHA ranks a rung with
``NonDominatedPriority``, whose ``priority_unsafe`` returns ``nondominated_sort``'s result
(``non_dominated_priority.py`` 146: the items' *indices, best first*), and ASHA's rung reads
that array as each item's priority (``asha.py`` 258-267: ``ranks[-1]``, the new trial's, is the
index of the item sorted last, not the new trial's own rank). A new trial that dominates every
recorded one is stopped whenever the worst item's index is high, i.e. at random. The fixed arm
passes :class:`RankedPriority`, the same sort with its order turned into ranks (three lines);
``moasha`` keeps 0.16's behaviour, so the difference the bug makes is measured beside it. Both
sample at random (Syne Tune's MOASHA has no other searcher).

Run: ``python benchmarks/syne_tune_arm.py TABLE.json.gz`` → a smoke run of each arm.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from syne_tune import StoppingCriterion, Tuner
from syne_tune.backend.simulator_backend.simulator_backend import SimulatorConfig
from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
from syne_tune.backend.simulator_backend.time_keeper import SimulatedTimeKeeper
from syne_tune.blackbox_repository import UserBlackboxBackend
from syne_tune.blackbox_repository.blackbox import Blackbox
from syne_tune.config_space import (
    Domain,
    choice,
    lograndint,
    loguniform,
    randint,
    uniform,
)
from syne_tune.optimizer.scheduler import TrialScheduler
from syne_tune.optimizer.schedulers.multiobjective.moasha import MOASHA
from syne_tune.optimizer.schedulers.multiobjective.multiobjective_priority import (
    NonDominatedPriority,
)
from syne_tune.optimizer.schedulers.single_fidelity_scheduler import SingleFidelityScheduler
from syne_tune.tuner_logger import TunerLogger

from search.lab import CurveRow, CurveTable, NearestRow
from spaces import Categorical, Fixed, Float, Int, Space

__all__ = ["SCHEDULERS", "RankedPriority", "run_syne_tune"]

#: ``moasha``: 0.16's MOASHA as shipped; ``moasha-fixed``: with :class:`RankedPriority`;
#: ``random``: its random search under FIFO.
SCHEDULERS = ("moasha", "moasha-fixed", "random")
EPOCH = "epoch"
ELAPSED = "elapsed_time"
ROW = "row"
#: Methods of a scheduler whose CPU time is charged to the simulated clock.
_CHARGED = ("suggest", "on_trial_add", "on_trial_result", "on_trial_complete",
            "on_trial_remove", "on_trial_error")  # fmt: skip


def run_syne_tune(table: CurveTable, **options: Any) -> list[tuple[float, list[float], bool]]:
    """Runs Syne Tune's scheduler on ``table`` (``options``: :func:`tune`'s).

    Returns:
        ``(second it ended, its final objective values, feasible)`` of each trial that trained
        all R epochs by ``horizon_s``, in the order they ended (``ReplayResult.completed``'s
        shape).
    """
    return completed(table, tune(table, **options), options["horizon_s"])


def tune(
    table: CurveTable,
    *,
    scheduler: str,
    seed: int,
    workers: int,
    horizon_s: float,
    grace_epochs: int = 1,
    reduction_factor: float = 3,
    charge_decisions: bool = True,
) -> pd.DataFrame:
    """Every result the tuner received (one row per trial and epoch): Syne Tune's results
    dataframe (``trial_id``, ``epoch``, the metrics, ``row``, ``st_tuner_time``, ...).

    Args:
        table: The recorded curves.
        scheduler: ``"moasha"`` (Syne Tune's MOASHA, stopping at rungs ``grace_epochs *
            reduction_factor**k`` up to R), ``"moasha-fixed"`` (the same, its rank read
            correctly: :class:`RankedPriority`) or ``"random"`` (its random search, FIFO: every
            trial to R).
        seed: Seeds Syne Tune's sampling (NumPy's global generator, which its samplers use;
            restored afterwards).
        workers: Trials run at once.
        horizon_s: Simulated seconds; a trial that would end later is not counted.
        charge_decisions: Charge the scheduler's CPU time to the clock (False: deterministic).
    """
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler {scheduler!r}; allowed: {SCHEDULERS}")
    blackbox = TableBlackbox(table)
    backend = UserBlackboxBackend(
        blackbox=blackbox,
        elapsed_time_attr=ELAPSED,
        seed=0,  # the table has one seed
        simulator_config=SimulatorConfig(0.0, 0.0, 0.0, 0.0, 0.0),
        tuner_sleep_time=_step(table, horizon_s),
    )
    backend._time_keeper = _SimulatedOnly()  # real time outside the backend is not charged
    callback = SimulatorCallback()
    with _quiet(), _seeded(seed), tempfile.TemporaryDirectory(prefix="npas-st-") as tmp:
        sched = _scheduler(blackbox, scheduler, seed, grace_epochs, reduction_factor)
        if charge_decisions:
            _charge(sched, backend.time_keeper)
        tuner = Tuner(
            trial_backend=backend,
            scheduler=sched,
            stop_criterion=StoppingCriterion(max_wallclock_time=horizon_s),
            n_workers=workers,
            sleep_time=0,
            callbacks=[callback],
            results_update_interval=1e9,  # written once, at the end (writes are not charged)
            print_update_interval=1e9,
            tuner_name=f"npas-{scheduler}-{seed}",
            suffix_tuner_name=False,
            save_tuner=False,
            trial_backend_path=tmp,
            output_logger=_SilentLogger(),
        )
        tuner.tuner_path = Path(tmp) / tuner.name
        tuner.run()
        return callback.dataframe()


def completed(
    table: CurveTable, results: pd.DataFrame, horizon_s: float
) -> list[tuple[float, list[float], bool]]:
    """The trials of ``results`` that reported epoch R by ``horizon_s``, in the order they
    ended, with their recorded row's final values and feasibility."""
    if results.empty:
        return []
    last = results[(results[EPOCH] >= table.epochs) & (results["st_tuner_time"] <= horizon_s)]
    last = last.sort_values("st_tuner_time", kind="stable").drop_duplicates("trial_id")
    out = []
    for second, index in zip(last["st_tuner_time"], last[ROW], strict=True):
        row = table.rows[round(index)]
        out.append((float(second), [float(v) for v in row.values[-1]], row.feasible))
    return out


class TableBlackbox(Blackbox):
    """The table as a Syne Tune blackbox: each sampled configuration answered by the recorded
    row npas's replay would give it (:class:`search.lab.NearestRow`, fresh: the nearest row
    no earlier configuration of this tuning was given), so that Syne Tune's arms and npas's
    map a proposal to a curve by one rule."""

    def __init__(self, table: CurveTable) -> None:
        self.space = Space.from_dict(table.config["space"])
        self.free = [n for n in self.space.names if not isinstance(self.space[n], Fixed)]
        self.metrics = [
            name if direction == "minimize" else f"neg_{name}"
            for name, direction in table.objectives
        ]
        self.signs = [1.0 if d == "minimize" else -1.0 for d in table.directions]
        self.start_s = table.start_s()
        self.end_s = float(table.overheads.get("end_s", 0.0))
        epochs = table.epochs
        super().__init__(
            configuration_space={n: _domain(self.space[n]) for n in self.free},
            fidelity_space={EPOCH: randint(1, epochs)},
            objectives_names=[*self.metrics, ELAPSED, ROW],
        )
        self.nearest = NearestRow(table.rows, self.space, fresh=True)
        self._curves = np.array([self._curve(i, row) for i, row in enumerate(table.rows)])
        self._rows: dict[str, int] = {}  # a configuration (JSON) -> the row it was given
        self._fidelities = np.arange(1, epochs + 1)

    @property
    def fidelity_values(self) -> np.ndarray:
        return self._fidelities

    def point(self, config: dict[str, Any]) -> dict[str, Any]:
        """The configuration as a search point: its active dimensions only (Syne Tune samples
        every dimension; an inactive one must not move the point's row)."""
        active = {n: config[n] for n in self.free if n in config}
        return {n: v for n, v in active.items() if self.space.is_active(n, active)}

    def _curve(self, index: int, row: CurveRow) -> np.ndarray:
        """``(R, objectives + 2)``: signed objectives, cumulative seconds, the row's index."""
        values = np.asarray(row.values, dtype=float) * np.array(self.signs)
        elapsed = np.cumsum(row.seconds, dtype=float) + self.start_s
        elapsed[-1] += self.end_s  # the final measurement, paid by a trial that gets there
        return np.column_stack([values, elapsed, np.full(len(elapsed), float(index))])

    def _objective_function(
        self,
        configuration: dict[str, Any],
        fidelity: dict | None = None,
        seed: int | None = None,
    ) -> Any:
        point = self.point(configuration)
        key = json.dumps(point, sort_keys=True, default=str)
        if key not in self._rows:
            self._rows[key] = self.nearest.index(point)
        curve = self._curves[self._rows[key]]
        if fidelity is None:
            return curve
        values = curve[int(fidelity[EPOCH]) - 1]
        return dict(zip(self.objectives_names, values.tolist(), strict=True))


def _domain(dim: Any) -> Domain:
    """The Syne Tune domain that samples ``dim`` as npas's random sampler does."""
    if isinstance(dim, Categorical):
        return choice(list(dim.choices))
    if isinstance(dim, Int):
        if dim.step != 1:
            return choice(list(range(dim.low, dim.top + 1, dim.step)))
        return lograndint(dim.low, dim.top) if dim.log else randint(dim.low, dim.top)
    if isinstance(dim, Float):
        return loguniform(dim.low, dim.high) if dim.log else uniform(dim.low, dim.high)
    raise TypeError(f"no Syne Tune domain for {dim!r}")


def _scheduler(
    blackbox: TableBlackbox, name: str, seed: int, grace: int, reduction: float
) -> TrialScheduler:
    space = blackbox.configuration_space
    if name in ("moasha", "moasha-fixed"):
        priority = RankedPriority() if name == "moasha-fixed" else None  # None: 0.16's own
        return MOASHA(
            config_space=space, metrics=blackbox.metrics, do_minimize=True, time_attr=EPOCH,
            max_t=len(blackbox.fidelity_values), grace_period=grace,
            reduction_factor=reduction, random_seed=seed, multiobjective_priority=priority,
        )  # fmt: skip
    # baselines.RandomSearch asserts a single metric in 0.16 (its searcher is single-objective);
    # the scheduler's factory picks the multi-objective random searcher
    return SingleFidelityScheduler(
        config_space=space, metrics=blackbox.metrics, do_minimize=True,
        searcher="random_search", random_seed=seed,
    )  # fmt: skip


class RankedPriority(NonDominatedPriority):
    """Syne Tune 0.16's non-dominated priority with its result read as it is: the sort's
    order (indices, best first) turned into each item's rank, which ASHA's rung expects."""

    def priority_unsafe(self, objectives: np.ndarray) -> np.ndarray:
        order = super().priority_unsafe(objectives)
        ranks = np.empty(len(order), dtype=int)
        ranks[order] = np.arange(len(order))
        return ranks


def _step(table: CurveTable, horizon_s: float) -> float:
    """The simulator's time step while all workers are busy: a tenth of the shortest epoch
    (a stop is noticed at most that late), at most 200,000 steps to the horizon."""
    epochs = [s for row in table.rows for s in row.seconds if s > 0]
    shortest = min(epochs) if epochs else 1.0
    return max(shortest / 10, horizon_s / 200_000)


def _charge(scheduler: TrialScheduler, keeper: SimulatedTimeKeeper) -> None:
    """Advances the simulated clock by the CPU time of each of the scheduler's calls (as npas's
    replay charges its own: other work on the machine does not slow one arm more)."""

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                keeper.advance(time.thread_time() - began)

        return call

    for name in _CHARGED:
        setattr(scheduler, name, timed(getattr(scheduler, name)))


class _SimulatedOnly(SimulatedTimeKeeper):
    """The simulator's clock without its charge for real time spent outside the backend."""

    def real_time_since_last_recent_exit(self) -> float:
        return 0.0


class _SilentLogger(TunerLogger):
    """Syne Tune's tuner output (``print_*``), none of it printed."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("print_"):
            return lambda *args, **kwargs: None
        return super().__getattribute__(name)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Syne Tune's logging and stray prints silenced, restored afterwards."""
    logger = logging.getLogger("syne_tune")
    level, propagate = logger.level, logger.propagate
    handler = logging.NullHandler()
    logger.addHandler(handler)
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """NumPy's global generator seeded (Syne Tune's samplers draw from it), then restored."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def _smoke(path: str) -> None:
    table = CurveTable.load(path)
    full = sum(table.trial_s(row) for row in table.rows)
    horizon = 0.3 * full / 2
    print(f"{table.describe()}; horizon {horizon:.1f} s, 2 workers, seed 0")
    for scheduler in SCHEDULERS:
        began = time.perf_counter()
        results = tune(table, scheduler=scheduler, seed=0, workers=2, horizon_s=horizon)
        done = completed(table, results, horizon)
        seen = results[results["st_tuner_time"] <= horizon]
        last = f"{done[-1][0]:.1f} s" if done else "-"
        print(
            f"{scheduler:>7}: {seen['trial_id'].nunique()} trials started, {len(seen)} epochs, "
            f"{len(done)} completed ({sum(ok for *_, ok in done)} feasible), last completed "
            f"at {last}; {time.perf_counter() - began:.1f} s wall"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/syne_tune_arm.py TABLE.json.gz")
    _smoke(sys.argv[1])
