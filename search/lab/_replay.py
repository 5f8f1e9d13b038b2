"""A search replayed on a simulated clock: the real searcher, optimiser and scheduler, with a
curve table standing in for training.

The driver plays Ray Tune's part without Ray, in the order Ray Tune's controller follows: while
a worker is free, the searcher is asked for a trial (:meth:`NpasSearcher.suggest`, which asks
the optimiser) and the scheduler picks the trial to run (``choose_trial_to_run``: a pending
trial, or a paused one it promotes); each epoch's result goes to the scheduler first, then,
unless the scheduler stops the trial, to the searcher; a trial that stops, ends or is stopped
while paused is completed on both as Ray Tune completes it.

A proposal is trained as the table's nearest recorded configuration not given to an earlier
proposal of the replay (:class:`NearestRow`, a 1-NN surrogate as Syne Tune's, without reuse):
the optimiser proposes in the whole space as in a real search, and what it is told is what
that configuration measured. Restricting the space to the
recorded points instead would hand the optimiser a different problem (a categorical space of a
few hundred points) from the one it solves in a search.

The clock charges what a worker would spend: each started trial the table's start cost
(:meth:`CurveTable.start_s`), each epoch its recorded seconds, each trial that trains its last
epoch the final measurement ``end_s``, each pause and each resume the table's measured
``pause_s`` and ``resume_s``; and the driver's own decisions (the searcher's
and the scheduler's calls) the CPU time they take here, since Ray Tune's driver makes them while
the workers wait for it. CPU time, not wall-clock: replays run side by side and beside other
work, and a TPE decision measured on a machine loaded 3.5 times over took 3.5 times as long,
which charged the arms that decide most (MOASHA's) for the load, not for their decisions.
The thread's CPU time, which costs 3.5 us to read here (the process's 11 us; a replay reads
it some 30,000 times).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import optuna
from ray.tune.schedulers import ASHAScheduler, TrialScheduler
from ray.tune.search import Searcher

from search.config import SchedulerConfig, complete, load_config
from search.lab._foresight import Foresight
from search.lab._frontstop import FrontStop
from search.lab._guess import FinalGuess
from search.lab._table import CurveRow, CurveTable
from search.record import RayKey
from search.run import NpasSearcher, OutcomeReader, bound_optimiser, constraint_keys
from search.schedulers import (
    GRACE_EPOCHS,
    REDUCTION_FACTOR,
    SCHEDULERS,
    PromotionMOASHA,
    attach,
)
from spaces import Categorical, ConfigError, Fixed, Space

if TYPE_CHECKING:
    from search.config import TrialConfig

__all__ = ["SCHEDULER_ARMS", "NearestRow", "ReplayResult", "ReplaySpec", "replay"]

#: What a replay's scheduler may be: npas's FIFO and MOASHA, Ray Tune's ASHA on the first
#: objective alone (the single-objective reference), the perfect-foresight bound
#: (:class:`search.lab._foresight.Foresight`) and a design under study
#: (:class:`search.lab._frontstop.FrontStop`).
SCHEDULER_ARMS = ("fifo", "moasha", "asha", "foresight", "frontstop")


@dataclass(frozen=True)
class ReplaySpec:
    """What one replay runs.

    Attributes:
        optimiser: A registered optimiser (``tpe``, ``nsga2``, ``random``, ...).
        scheduler: One of :data:`SCHEDULER_ARMS`.
        kind: MOASHA's type, ``stopping`` or ``promotion``.
        workers: Trials trained at once.
        grace_epochs: The first rung.
        reduction_factor: η.
        within_front: MOASHA's order inside a front (``search.schedulers._ranking.WITHIN_FRONT``).
        early_promotion: Promotion type only: promote the top ``ceil(n / η)`` of a rung.
        chance_from: The first epoch at which a trial at chance is stopped (None: the first
            rung).
        options: The optimiser's options (as ``algorithm.options``).
        guess_final: Tell the optimiser a stopped trial at a guess of its last epoch
            (:class:`search.lab._guess.FinalGuess`) instead of PRUNED.
        fresh: Each recorded row answers one proposal while rows are left
            (:class:`NearestRow`); False: every proposal its nearest row, however often given
            (on a table smaller than the trials a replay starts, ``fresh`` hands out every
            row, the poor ones too, as no optimiser would).
        near: With ``fresh``, a row not given yet answers only within the table's resolution
            (:class:`NearestRow`); beyond it, the nearest row, given or not.
        trust_rungs: Stopping MOASHA stops only at rungs the replay's own curves show to rank
            the next (``scheduler.trust_rungs``: :mod:`search.schedulers._rungtrust`).
        trust_by: With ``trust_rungs``, how a rung earns trust (``scheduler.trust_by``:
            ``search.config.TRUST_EVIDENCE``).
        oracle_rungs: The ladder's bound: the scheduler sees, at every rung, each trial's
            last-epoch values (a ranking every rung would give if it predicted perfectly),
            the optimiser what it sees under the same scheduler without it.
    """

    optimiser: str = "tpe"
    scheduler: str = "fifo"
    kind: str = "stopping"
    workers: int = 2
    grace_epochs: int = GRACE_EPOCHS
    reduction_factor: float = REDUCTION_FACTOR
    within_front: str = "crowding"
    early_promotion: bool = False
    chance_from: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    guess_final: bool = False
    fresh: bool = True
    near: bool = False
    trust_rungs: bool = False
    trust_by: str = "chain"
    oracle_rungs: bool = False


@dataclass
class ReplayResult:
    """What a replayed search did, on its simulated clock.

    Attributes:
        completed: ``(second, final objective values, feasible)`` of each trial that trained
            its full schedule, in the order they ended.
        started, stopped, paused, promoted: Counts of trials started and of rung decisions.
        epochs: Epochs trained in all.
        decision_s: CPU seconds of the searcher's and scheduler's calls (charged).
        horizon_s: The simulated time the replay ran to.
        ends: Per trial that ended: ``(epochs trained, "complete" or "stopped")``.
        study: The optimiser's in-memory study: every trial as the searcher recorded it.
        reused: Proposals answered by a row an earlier one was given (the table ran out).
    """

    spec: ReplaySpec
    seed: int
    horizon_s: float
    completed: list[tuple[float, list[float], bool]] = field(default_factory=list)
    started: int = 0
    stopped: int = 0
    paused: int = 0
    promoted: int = 0
    epochs: int = 0
    decision_s: float = 0.0
    ends: dict[str, tuple[int, str]] = field(default_factory=dict)
    study: optuna.Study | None = None
    reused: int = 0


class NearestRow:
    """Maps a search point to the table's nearest recorded configuration (1-NN).

    Points are compared in the space's own box: a numeric dimension scaled to ``[0, 1]`` (in
    the log where the space is logarithmic), a categorical one 0 when equal and 1 when not;
    a dimension inactive in a point takes its first valid value, as the space encodes it.

    ``fresh``: each row answers one point only (the nearest row not given yet), so that a
    replay does not train one recorded curve again and again where a real search would train
    new configurations (NSGA-II's seed 0 ran 374 trials on 165 rows of a 416-row table); once
    every row is given, the nearest answers again and :attr:`reused` counts it.

    ``near`` (with ``fresh``): a row not given yet answers only when it lies within the
    table's resolution of the point (:attr:`resolution`: the median distance from a row to its
    nearest other row); beyond it, the nearest row answers, given or not (counted in
    :attr:`reused`). Late in a TPE search on the 1,700-row waves table, the fresh rule handed
    proposals rows at twice the table's resolution (median distance 0.45 against 0.23), where
    a real search trains configurations close together.
    """

    def __init__(
        self, rows: list[CurveRow], space: Space, *, fresh: bool = False, near: bool = False
    ) -> None:
        self.rows = rows
        self.space = space
        self.fresh = fresh
        self.near = near
        self._given = np.zeros(len(rows), dtype=bool)
        #: Points answered by a row given before (``fresh``: the table ran out).
        self.reused = 0
        xl, xu = space.bounds()
        self._lo, self._span = xl, np.where(xu > xl, xu - xl, 1.0)
        free = [space[n] for n in space.names if not isinstance(space[n], Fixed)]
        self._categorical = np.array([isinstance(dim, Categorical) for dim in free])
        self._x = np.array([self._encode(row.point) for row in rows])
        self.resolution = self._resolution() if near else 0.0

    def _resolution(self) -> float:
        """The median distance (squared, as :meth:`index` compares) from a row to its nearest
        other row."""
        nearest = [np.delete(self._distances(x), i).min() for i, x in enumerate(self._x)]
        return float(np.median(nearest)) if len(nearest) > 0 else 0.0

    def _distances(self, x: np.ndarray) -> np.ndarray:
        diff = np.abs(self._x - x)
        diff[:, self._categorical] = (diff[:, self._categorical] > 1e-9).astype(float)
        return (diff**2).sum(axis=1)

    def _encode(self, point: dict[str, Any]) -> np.ndarray:
        whole = complete(self.space, point, {})  # fixed values are not among a trial's params
        return (self.space.encode(whole) - self._lo) / self._span

    def __call__(self, point: dict[str, Any]) -> CurveRow:
        return self.rows[self.index(point)]

    def index(self, point: dict[str, Any]) -> int:
        """The answering row's index (``fresh``: marked given)."""
        distance = self._distances(self._encode(point))
        if not self.fresh:
            return int(np.argmin(distance))
        fresh = np.where(self._given, np.inf, distance)
        found = int(np.argmin(fresh))
        if self._given.all() or (self.near and fresh[found] > self.resolution):
            nearest = int(np.argmin(distance))
            if self._given[nearest]:
                self.reused += 1
                return nearest
            found = nearest
        self._given[found] = True
        return found


class _Point:
    """A replayed trial's config: its point (what the searcher records as ``trial_config``)."""

    def __init__(self, point: dict[str, Any]) -> None:
        self.point = point

    def to_dict(self) -> dict[str, Any]:
        return dict(self.point)


@dataclass(eq=False)
class _Trial:
    """What the scheduler sees of a trial (Ray Tune's ``Trial``: id, config, status)."""

    trial_id: str
    config: dict[str, Any]
    row: CurveRow
    status: str = "PENDING"
    epoch: int = 0


class _Driver:
    """Ray Tune's controller on a simulated clock (see module doc)."""

    def __init__(
        self, table: CurveTable, spec: ReplaySpec, seed: int, charge_decisions: bool
    ) -> None:
        config = replay_config(table, spec)
        self.table, self.spec = table, spec
        self.nearest = NearestRow(table.rows, config.space, fresh=spec.fresh, near=spec.near)
        study = optuna.create_study(directions=config.directions)
        optimiser = bound_optimiser(config, study, seed=seed, scheduler=spec.scheduler)
        self.searcher = NpasSearcher(
            optimiser,
            outcomes=OutcomeReader(config.objectives, constraint_keys(config)),
            # a stand-in: the searcher reads a trial config's to_dict() only
            trial_config=lambda point, number: cast("TrialConfig", _Point(point)),
        )
        self.scheduler = _scheduler(config, spec, table.epochs)
        attach(self.scheduler, self.searcher, slots=spec.workers, total=None)
        if isinstance(self.scheduler, PromotionMOASHA):  # its waits run on the simulated clock
            self.scheduler.clock = lambda: self.now
        self.guess = FinalGuess() if spec.guess_final else None
        self.charge = charge_decisions
        self.start_s = table.start_s()
        self.now = 0.0
        self.trials: dict[str, _Trial] = {}
        self.running = 0
        self.staged: list[_Trial] = []  # chosen while every worker was busy
        self.exhausted = False
        #: ``(second, order, trial id, what)``: an epoch ends, a trial's final measurement
        #: ends, or a pausing worker is free.
        self.events: list[tuple[float, int, str, str]] = []
        self._seq = itertools.count()
        self.result = ReplayResult(spec, seed, 0.0, study=optimiser.study)

    def timed(self, fn: Callable[..., Any], *args: Any) -> Any:
        began = time.thread_time()
        out = fn(*args)
        spent = time.thread_time() - began
        self.result.decision_s += spent
        if self.charge:
            self.now += spent
        return out

    # -- Ray Tune's controller, as the scheduler calls it ------------------------------------

    def get_trials(self) -> list[_Trial]:
        return list(self.trials.values())

    def stop_trial(self, trial: _Trial) -> None:
        """Ray Tune's ``stop_trial`` on a paused or pending trial."""
        if trial in self.staged:
            self.staged.remove(trial)
        if trial.status in ("PENDING", "PAUSED"):
            self.scheduler.on_trial_remove(self, trial)
            self.searcher.on_trial_complete(trial.trial_id)
            self.result.stopped += 1
            self.result.ends[trial.trial_id] = (trial.epoch, "stopped")
        trial.status = "TERMINATED"

    # -- the loop ----------------------------------------------------------------------------

    def run(self, horizon_s: float) -> ReplayResult:
        self.fill()
        while self.events:
            when, _, trial_id, what = heapq.heappop(self.events)
            if when > horizon_s:
                break
            self.now = max(self.now, when)
            trial = self.trials[trial_id]
            if what == "epoch":
                self.epoch_done(trial)
            elif what == "final":
                self.final(trial)
            else:  # its pause is saved: the worker is free
                self.running -= 1
            self.fill()
        self.result.horizon_s = horizon_s
        self.result.reused = self.nearest.reused
        if isinstance(self.scheduler, PromotionMOASHA):
            self.result.promoted = self.scheduler.n_promoted
        return self.result

    def fill(self) -> None:
        """One step of Ray Tune's controller: the scheduler is asked for the trial to run
        whether or not a worker is free (Ray Tune asks at every step, and stages what it
        gets: a promotion is decided as soon as it is due, and a promoted trial is seen
        running before it can pause again); staged trials, then new ones, start while
        workers are free."""
        if self.running >= self.spec.workers:
            self.stage(self.timed(self.scheduler.choose_trial_to_run, self))
        while self.running < self.spec.workers:
            if self.staged:
                self.start(self.staged[0])
                continue
            pending = any(t.status == "PENDING" for t in self.trials.values())
            if not pending and not self.exhausted:
                self.new_trial()
            trial = self.timed(self.scheduler.choose_trial_to_run, self)
            if trial is None:
                return
            self.start(trial)

    def stage(self, trial: _Trial | None) -> None:
        """A chosen trial waits for the next free worker (as Ray Tune stages it: PENDING)."""
        if trial is not None and trial not in self.staged:
            trial.status = "PENDING"
            self.staged.append(trial)

    def new_trial(self) -> None:
        trial_id = f"t{len(self.trials):05d}"
        config = self.timed(self.searcher.suggest, trial_id)
        if config == Searcher.FINISHED:
            self.exhausted = True
        elif config is not None:
            point = config[RayKey.TRIAL_CONFIG].point
            trial = _Trial(trial_id, {RayKey.NUMBER: config[RayKey.NUMBER]}, self.nearest(point))
            self.trials[trial_id] = trial
            self.timed(self.scheduler.on_trial_add, self, trial)

    def start(self, trial: _Trial) -> None:
        if trial.status not in ("PENDING", "PAUSED"):
            raise RuntimeError(f"replay: trial {trial.trial_id} chosen while {trial.status}")
        if trial in self.staged:
            self.staged.remove(trial)
        if trial.epoch > 0:  # a paused trial resumed from its checkpoint
            cost = float(self.table.overheads.get("resume_s", 0.0))
        else:
            cost = self.start_s
            self.result.started += 1
        trial.status = "RUNNING"
        self.running += 1
        self.schedule(trial, self.now + cost)

    def schedule(self, trial: _Trial, began: float) -> None:
        self.at(began + trial.row.seconds[trial.epoch], trial, "epoch")

    def at(self, when: float, trial: _Trial, what: str) -> None:
        heapq.heappush(self.events, (when, next(self._seq), trial.trial_id, what))

    def epoch_done(self, trial: _Trial) -> None:
        trial.epoch += 1
        self.result.epochs += 1
        result = _epoch_result(trial.row, trial.epoch, self.table.names)
        seen = _oracle_result(trial.row, result, self.table.names) if (
            self.spec.oracle_rungs) else result  # fmt: skip
        decision = self.timed(self.scheduler.on_trial_result, self, trial, seen)
        last = trial.epoch >= trial.row.epochs
        if decision == TrialScheduler.STOP and not last:
            if isinstance(self.scheduler, Foresight):  # the optimiser is told what FIFO tells
                result = _final_result(trial.row, self.table.names)
            self.end(trial, result, stopped=True)
            return
        # Ray Tune's ASHA stops a trial at its last epoch: it has trained all the same
        self.timed(self.searcher.on_trial_result, trial.trial_id, result)
        if last:  # its final measurement, then its final result
            self.at(self.now + float(self.table.overheads.get("end_s", 0.0)), trial, "final")
        elif decision == TrialScheduler.PAUSE:
            trial.status = "PAUSED"
            self.result.paused += 1
            self.at(self.now + float(self.table.overheads.get("pause_s", 0.0)), trial, "free")
        else:
            self.schedule(trial, self.now)

    def final(self, trial: _Trial) -> None:
        """A trial that trained its last epoch reports its measured metrics and ends."""
        final = _final_result(trial.row, self.table.names)
        self.timed(self.scheduler.on_trial_result, self, trial, final)
        self.end(trial, final, stopped=False)

    def end(self, trial: _Trial, result: dict[str, Any], *, stopped: bool) -> None:
        trial.status = "TERMINATED"
        self.running -= 1
        self.timed(self.scheduler.on_trial_complete, self, trial, result)
        told = self.timed(self.told, trial, result) if stopped else result
        self.timed(self.searcher.on_trial_complete, trial.trial_id, told)
        self.result.ends[trial.trial_id] = (trial.epoch, "stopped" if stopped else "complete")
        if stopped:
            self.result.stopped += 1
        else:
            row = trial.row
            self.result.completed.append((self.now, list(row.values[-1]), row.feasible))
            if self.guess is not None:
                self.guess.finished([values[0] for values in row.values])

    def told(self, trial: _Trial, result: dict[str, Any]) -> dict[str, Any]:
        """What the optimiser is told of a stopped trial: its rung result (PRUNED), or with
        ``guess_final`` its final result with the first objective guessed (COMPLETE)."""
        if self.guess is None:
            return result
        row, name = trial.row, self.table.names[0]
        guessed = self.guess.guess(trial.epoch, row.values[trial.epoch - 1][0])
        if guessed is None:
            return result
        final = _final_result(row, self.table.names)
        metrics = {**json.loads(final[RayKey.METRICS]), name: guessed}
        return {**final, name: guessed, RayKey.METRICS: json.dumps(metrics)}


def replay_config(table: CurveTable, spec: ReplaySpec) -> Any:
    """The recorded search's config with the replay's optimiser (the space, objectives and
    constraints are the table's)."""
    data = dict(table.config)
    if isinstance(data.get("dataset"), Mapping):  # a declared file the replay never reads
        from objectives import declare

        data["dataset"] = declare(data["dataset"], need_files=False)["name"]
    data["algorithm"] = {"name": spec.optimiser, "options": dict(spec.options)}
    data.pop("storage", None)
    try:
        return load_config(data)
    except ConfigError as err:
        raise ConfigError(f"the curve table {table.name!r}'s config: {err}") from None


def _scheduler(config: Any, spec: ReplaySpec, epochs: int) -> Any:
    """The replay's scheduler, built as a search builds it (``SCHEDULERS``) from the spec's
    options as the config's ``scheduler`` section; Ray Tune's ASHA, a lab arm only, here."""
    if spec.scheduler == "asha":
        name, direction = config.objectives[0]
        return ASHAScheduler(
            time_attr=RayKey.EPOCH, metric=name, mode=direction[:3], max_t=epochs,
            grace_period=spec.grace_epochs, reduction_factor=spec.reduction_factor,
        )  # fmt: skip
    if spec.scheduler == "foresight":
        return Foresight(list(config.directions))
    if spec.scheduler == "frontstop":
        return FrontStop(list(zip(config.objective_names, config.directions, strict=True)), epochs)
    if spec.scheduler not in ("fifo", "moasha"):
        raise ConfigError(f"replay scheduler {spec.scheduler!r}; allowed: {SCHEDULER_ARMS}")
    section = {"name": spec.scheduler, "type": spec.kind, "grace_epochs": spec.grace_epochs,
               "reduction_factor": spec.reduction_factor, "max_epochs": epochs,
               "front_order": spec.within_front, "early_promotion": spec.early_promotion,
               "chance_from": spec.chance_from, "trust_rungs": spec.trust_rungs,
               "trust_by": spec.trust_by}  # fmt: skip
    scheduler = SchedulerConfig.from_dict(section, "the replay's scheduler")
    return SCHEDULERS.get(spec.scheduler)(dataclasses.replace(config, scheduler=scheduler))


def _epoch_result(row: CurveRow, epoch: int, names: list[str]) -> dict[str, Any]:
    """What the trial reports after ``epoch`` (as ``search.run._trainable.epoch_report``)."""
    values = dict(zip(names, row.values[epoch - 1], strict=True))
    at_chance = epoch in row.at_chance
    point = {"epoch": epoch, **values, "at_chance": at_chance,
             "train_time_s": sum(row.seconds[:epoch])}  # fmt: skip
    return {
        **values,
        RayKey.EPOCH: epoch,
        RayKey.VIOLATION: row.violation,
        RayKey.AT_CHANCE: float(at_chance),
        RayKey.CURVE: json.dumps(point),
    }


def _oracle_result(row: CurveRow, result: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """An epoch's report with the trial's last-epoch values and chance in place of the
    epoch's (``ReplaySpec.oracle_rungs``)."""
    last = dict(zip(names, row.values[-1], strict=True))
    return {**result, **last, RayKey.AT_CHANCE: float(row.epochs in row.at_chance)}


def _final_result(row: CurveRow, names: list[str]) -> dict[str, Any]:
    """What the trial reports when it ends (as ``search.run._trainable.report_of``)."""
    metrics = {**row.metrics, **dict(zip(names, row.values[-1], strict=True))}
    return {**{n: metrics[n] for n in names}, RayKey.METRICS: json.dumps(metrics)}


def replay(
    table: CurveTable,
    spec: ReplaySpec,
    *,
    seed: int,
    horizon_s: float,
    charge_decisions: bool = True,
) -> ReplayResult:
    """Replays one search of ``spec`` on ``table`` up to ``horizon_s`` simulated seconds.

    Args:
        table: The curves to replay.
        spec: Optimiser, scheduler and workers.
        seed: Seeds the optimiser.
        horizon_s: Simulated seconds; what would end later is not counted.
        charge_decisions: Charge the searcher's and scheduler's CPU time to the clock (False:
            a deterministic replay, for tests).
    """
    if not (spec.workers >= 1 and math.isfinite(horizon_s) and horizon_s > 0):
        raise ConfigError(
            f"replay: workers {spec.workers!r} and horizon {horizon_s!r}; allowed: workers "
            ">= 1 and a finite horizon > 0 seconds"
        )
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a study per replay: no news
    try:
        if spec.scheduler != "foresight":
            return _Driver(table, spec, seed, charge_decisions).run(horizon_s)
        # the bound looks ahead to the front its own proposals end with: a first pass finds
        # it (letting finish what is on the front so far), the second stops every trial that
        # front dominates (the same seed proposes the same points, sooner)
        first = _Driver(table, spec, seed, charge_decisions)
        first.run(horizon_s)
        proposed = [t.row for t in first.trials.values() if t.status != "PENDING"]
        second = _Driver(table, spec, seed, charge_decisions)
        assert isinstance(second.scheduler, Foresight)
        second.scheduler.ahead(proposed)
        return second.run(horizon_s)
    finally:
        optuna.logging.set_verbosity(verbosity)
