"""The one Ray Tune searcher of npas: any :class:`search.optimisers.Optimiser` (Optuna
samplers and pymoo algorithms alike) asked and told through its own interface, every trial
recorded in the search's Optuna study.

It suggests and observes only: it works on the in-memory copy of the study
(``search.record._writer``) that the optimiser is bound to, and hands what it records there to
a :class:`Recorder` (the :class:`~search.run._recorder.StudyRecorder` of a launch, which
writes the storage; none in a replay, ``search.lab``). ``suggest`` returns None while
the optimiser has nothing to propose (a pymoo algorithm until its first generation is told;
Ray Tune asks again later). Nothing is saved with Ray: the study is the state, and a relaunch
resumes from it.

With a screen (``search.config.screen``: what ``run_trial`` would refuse before training,
told on the meta device), a proposal it refuses never reaches Ray Tune: it is recorded at once
as the refused trial it would have been (PRUNED at epoch 0, its reason and counts), marked
:attr:`TrialAttr.SCREENED`, the optimiser is told, and asked again: at most
:data:`SCREENED_PER_SUGGEST` times per ``suggest``. :data:`SCREENED_IN_A_ROW` refusals in a
row stop the search: its space hardly meets its constraints. With ``repair``, a refused
proposal is queued again with its widths narrowed until the screen passes it
(:mod:`search.run._narrowing`): the optimiser's next proposal, whatever the algorithm.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState
from ray.tune.search import Searcher

from search._compat import trial_id_of
from search.config import TrialConfig
from search.optimisers import Optimiser, point_params
from search.record import DISK_FULL, Metric, RayKey, TrialAttr, curve_of
from search.run._checkpoints import latest_checkpoint
from search.run._cost import SearchCost
from search.run._limits import OUT_OF_TIME, TrialLimits
from search.run._narrowing import narrowed
from search.run._outcome import OutcomeReader, record_outcome
from search.run._trainable import report_of
from search.schedulers import Gate

__all__ = [
    "SCREENED_IN_A_ROW",
    "SCREENED_PER_SUGGEST",
    "NpasSearcher",
    "Recorder",
    "ScreenFn",
    "TrialConfigFn",
]

#: ``(point, trial number) -> trial config`` (adds the artifact folder of that trial).
TrialConfigFn = Callable[[dict[str, Any], int], TrialConfig]
#: ``trial config -> the metrics of its refusal before training``, or None: it is sent to Ray.
ScreenFn = Callable[[TrialConfig], dict[str, Any] | None]
#: The most proposals one ``suggest`` screens out before it returns None (Ray asks again).
SCREENED_PER_SUGGEST = 50
#: Screened proposals in a row that stop the search.
SCREENED_IN_A_ROW = 1000
#: What a decision keeps (the Ray trial id and the trial number are known from the trial).
_DECISION_FIELDS = ("rung", "outcome", "rank", "n", "arrival", "top", "at_chance", "why")


class Recorder(Protocol):
    """Where the searcher's records go (:class:`search.run._recorder.StudyRecorder`)."""

    @property
    def failed(self) -> bool: ...

    def admit(self, trial: optuna.trial.FrozenTrial) -> bool: ...

    def adopt(self, number: int) -> bool: ...

    def write(self, write: Callable[[Any], None]) -> bool: ...


def _frozen(trial: optuna.trial.Trial) -> optuna.trial.FrozenTrial:
    """The trial as its (in-memory) study holds it now: trials are held in number order."""
    return trial.study.get_trials(deepcopy=False)[trial.number]


class NpasSearcher(Searcher):
    """A bound optimiser as a Ray Tune searcher that records every trial.

    Args:
        optimiser: An optimiser bound to the in-memory copy of the search's study.
        outcomes: Reads a trial's Ray result as its outcome (the search's objectives and
            constraint keys; why Ray killed a worker, where its logs are).
        trial_config: Builds the trial config of a point.
        recorder: Writes what the searcher records to the search's storage (None: nothing
            is written, as in a replay).
        limits: The launch's limits (None: none): no trial starts once their cost's budget is
            exhausted, and they stop trials in flight; a trial a trial timeout stopped is
            recorded PRUNED with the reason under :data:`TrialAttr.STOPPED`, and one left
            unfinished once the search's time is spent stays RUNNING with its checkpoint
            (adjourned: a relaunch continues it).
        resumes: Trials the storage holds RUNNING that a killed search left with a
            checkpoint, by number, with the checkpoint folder each resumes from (the launch
            chose its latest readable one): started before any new proposal, as the same
            trial (its curve and decisions go on).
        screen: Refuses a proposal before training (see the module's docstring; None: every
            proposal goes to Ray Tune).
        repair: Whether a refused proposal is queued again narrowed until the screen passes
            it (:func:`~search.run._narrowing.narrowed`), marked :data:`TrialAttr.NARROWED`.
    """

    def __init__(
        self,
        optimiser: Optimiser,
        *,
        outcomes: OutcomeReader,
        trial_config: TrialConfigFn,
        recorder: Recorder | None = None,
        limits: TrialLimits | None = None,
        resumes: Mapping[int, Path] | None = None,
        screen: ScreenFn | None = None,
        repair: bool = False,
    ) -> None:
        super().__init__()  # no metric: our results always carry the objectives anyway
        self.optimiser = optimiser
        self.outcomes = outcomes
        self._make = trial_config
        self.recorder = recorder
        self._live: dict[str, optuna.trial.Trial] = {}
        self._curves: dict[str, list[dict[str, Any]]] = {}
        #: Asked before each proposal whether a trial may start (None: always; Ray Tune's
        #: ``max_concurrent_trials`` limits them), told when the searcher stops; set by
        #: :func:`search.schedulers.attach`, with the scheduler it runs under.
        self.gate: Gate | None = None
        self.limits = limits
        self._resumes = list((resumes or {}).items())
        self._last: dict[str, dict] = {}  # trial id -> its last epoch's result
        #: Why the searcher stopped starting trials before Ray Tune's count (a budget).
        self.stopped: str | None = None
        #: Numbers of the trials this launch resumed from a killed search's checkpoints.
        self.resumed: list[int] = []
        #: Numbers of the trials left RUNNING with their checkpoints when time ran out.
        self.adjourned: list[int] = []
        self._adjourned_ids: set[str] = set()
        self._adjourning: set[str] = set()  # Ray trial ids the scheduler decided to adjourn
        #: Numbers of the trials that could not save their results on a full disk.
        self.full: list[int] = []
        self.screen = screen
        #: Numbers of the proposals the screen refused (recorded, never started).
        self.screened: list[int] = []
        self.repair = repair
        #: Numbers of the refused proposals queued again narrowed (the narrowed trial's
        #: :data:`TrialAttr.NARROWED` names it).
        self.narrowed: list[int] = []
        self._in_a_row: Counter[str] = Counter()  # what refused the refusals in a row
        self._row = 0

    # Ray's Searcher.suggest may return FINISHED (a str); its annotation leaves that out
    @property
    def cost(self) -> SearchCost | None:
        """The launch's spend, its limits' own (None without limits)."""
        return None if self.limits is None else self.limits.cost

    def suggest(self, trial_id: str) -> dict | str | None:  # type: ignore[override]
        """The Ray config of a new trial, recorded with its trial config right away.

        A trial that cannot be recorded is not run: the search stops (``FINISHED``) and
        ``launch`` raises the recorder's error once the running trials are done.
        """
        if self.recorder is not None and self.recorder.failed:
            return self._finished()
        if self.cost is not None and self.stopped is None:
            self.stopped = self.cost.exhausted()
        if self.stopped is not None:
            return self._finished()
        if self.gate is not None and not self.gate.may_start():
            return None
        if self._resumes:
            return self._resume(trial_id, *self._resumes.pop(0))
        for _ in range(SCREENED_PER_SUGGEST):
            proposal = self.optimiser.ask()
            if proposal is None:
                return None
            trial = proposal.trial
            trial_config = self._make(proposal.point, trial.number)
            trial.set_user_attr(TrialAttr.CONFIG, trial_config.to_dict())
            refused = None if self.screen is None else self.screen(trial_config)
            if refused is None:
                return self._start(trial_id, trial, trial_config)
            if not self._refuse(trial, refused) or self.stopped is not None:
                return self._finished()
            if self.repair and TrialAttr.NARROWED not in trial.user_attrs:
                self._narrow(trial.number, proposal.point, trial_config.family)
        return None  # many refused in one go: Ray Tune asks again

    def _start(self, trial_id: str, trial: optuna.trial.Trial, trial_config: TrialConfig
               ) -> dict | str:  # fmt: skip
        """The Ray config of a proposal to train, recorded first."""
        if self.recorder is not None and not self.recorder.admit(_frozen(trial)):
            return self._finished()
        self._row = 0
        self._in_a_row.clear()
        self._live[trial_id] = trial
        return {RayKey.NUMBER: trial.number, RayKey.TRIAL_CONFIG: trial_config}

    def _refuse(self, trial: optuna.trial.Trial, metrics: dict[str, Any]) -> bool:
        """Records a proposal the screen refused as the refused trial ``run_trial`` would have
        made of it (read back as its Ray result would be), tells the optimiser, and stops the
        search after :data:`SCREENED_IN_A_ROW` in a row; False if it could not be recorded."""
        trial.set_user_attr(TrialAttr.SCREENED, True)
        if self.recorder is not None and not self.recorder.admit(_frozen(trial)):
            return False
        names = [name for name, _ in self.outcomes.objectives]
        outcome = self.outcomes.read(report_of(metrics, names), error=False)
        record_outcome(trial, outcome)  # constraints before the tell: samplers read them there
        self.optimiser.tell(trial.number, outcome.values, outcome.state)
        self.screened.append(trial.number)
        self._row += 1
        self._in_a_row.update(_refusers(str(metrics[Metric.REFUSED])))
        if self._row >= SCREENED_IN_A_ROW:
            self.stopped = _hardly_met(self._row, self._in_a_row)
        frozen, attrs = _frozen(trial), trial.study.user_attrs
        return self._write(lambda writer: writer.finished(frozen, study_attrs=attrs))

    def _narrow(self, number: int, point: dict[str, Any], family: str) -> None:
        """Queues the refused proposal ``number`` narrowed until the screen passes it (the
        optimiser's next proposal, whatever the algorithm), when some narrowing does."""
        screen = self.screen
        assert screen is not None  # only a screened proposal is narrowed

        def fits(candidate: dict[str, Any]) -> bool:
            return screen(self._make(candidate, number)) is None

        space = self.optimiser.space
        repaired = narrowed(space, point, family, fits)
        if repaired is not None:
            params = point_params(space, repaired)
            self.optimiser.study.enqueue_trial(params, user_attrs={TrialAttr.NARROWED: number})
            self.narrowed.append(number)

    def _resume(self, trial_id: str, number: int, folder: Path) -> dict | str:
        """The Ray config that resumes trial ``number`` from checkpoint ``folder``."""
        study = self.optimiser.study
        frozen = study.trials[number]
        if self.recorder is not None and not self.recorder.adopt(number):
            return self._finished()
        self._live[trial_id] = optuna.trial.Trial(study, trial_id_of(study, number))
        self._curves[trial_id] = curve_of(frozen)
        self.resumed.append(number)
        trial_config = TrialConfig.from_dict(frozen.user_attrs[TrialAttr.CONFIG])
        resume = str(folder)
        return {RayKey.NUMBER: number, RayKey.TRIAL_CONFIG: trial_config, RayKey.RESUME: resume}

    def on_folder(self, trial_id: str, folder: str) -> str | None:
        """Ray Tune's folder of a trial that started: recorded once (its checkpoints). Returns
        the folder recorded before, where a relaunch resumed the trial from (else None)."""
        trial = self._live.get(trial_id)
        former = None if trial is None else trial.user_attrs.get(TrialAttr.RAY_TRIAL)
        if trial is None or former == folder:
            return None
        trial.set_user_attr(TrialAttr.RAY_TRIAL, folder)
        self._write(lambda writer: writer.user_attr(trial.number, TrialAttr.RAY_TRIAL, folder))
        return former

    def _finished(self) -> str:
        if self.gate is not None:  # told when the search's time ended it: paused trials adjourn
            timed = self.limits is not None and self.limits.ends_search
            self.gate.close(OUT_OF_TIME if timed else None)
        return Searcher.FINISHED

    def on_decision(self, decision: dict[str, Any]) -> None:
        """A scheduler's decision on a trial at a rung, kept in its user attribute
        :data:`TrialAttr.DECISIONS` and written to the storage at once."""
        trial = self._live.get(decision["trial_id"])
        if trial is None:
            return
        kept = {k: decision[k] for k in _DECISION_FIELDS if k in decision}
        if kept.get("outcome") == "adjourn":  # left unfinished when it ends (see _adjourn)
            self._adjourning.add(decision["trial_id"])
        log = trial.user_attrs.get(TrialAttr.DECISIONS, [])
        if log and _same_decision(log[-1], kept):  # decided again (a relaunch): logged once
            return
        log = [*log, kept]
        trial.set_user_attr(TrialAttr.DECISIONS, log)
        self._write(lambda writer: writer.user_attr(trial.number, TrialAttr.DECISIONS, log))

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """An epoch's report: one learning-curve point, written to the storage at once (the
        first objective's value as Optuna's intermediate value at step = epoch)."""
        trial = self._live.get(trial_id)
        if trial is None or RayKey.CURVE not in result:
            return
        point = json.loads(result[RayKey.CURVE])
        point["violation"] = float(result.get(RayKey.VIOLATION, 0.0))  # of what it knew then
        curve = self._curves.setdefault(trial_id, [])
        if curve and point["epoch"] <= curve[-1]["epoch"]:
            # seen already: a resumed trial reporting its checkpoint's epoch again (its last
            # result in this launch, until it trains on), a repeated result, or a trial
            # without checkpoints that a promotion restarted from its first epoch (its curve
            # and last result stay the first run's)
            self._last.setdefault(trial_id, result)
            return
        self._last[trial_id] = result
        curve.append(point)
        value = result.get(self.outcomes.objectives[0][0], math.nan)
        step = int(point["epoch"])
        # To the storage only: the optimiser's in-memory study keeps no curves (see
        # search.record._writer._without_curve).
        points = [_curve_point(p) for p in curve]
        self._write(lambda writer: writer.intermediate(trial.number, step, value, points))

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if trial_id not in self._live:  # a duplicate completion
            return
        if result is not None:  # a scheduler's stop comes with the epoch's result only here
            self.on_trial_result(trial_id, result)
        elif not error:  # a paused trial stopped: it ends at its last epoch
            result = self._last.get(trial_id)
        self._last.pop(trial_id, None)
        trial = self._live.pop(trial_id)
        outcome = self.outcomes.read(result, error=error)
        curve = self._curves.pop(trial_id, [])
        if outcome.state == TrialState.PRUNED and self._adjourn(trial_id, trial):
            return
        if outcome.disk_full:  # not counted: it runs again
            self.full.append(trial.number)
            self.stopped = self.stopped or f"{DISK_FULL} (no space left on device)"
        if curve:
            trial.set_user_attr(TrialAttr.CURVE, [_curve_point(p) for p in curve])
        why = None if self.limits is None else self.limits.why.get(trial_id)
        if outcome.state == TrialState.PRUNED and why is not None:
            trial.set_user_attr(TrialAttr.STOPPED, why)
        record_outcome(trial, outcome)  # constraints before the tell: samplers read them there
        if self.cost is not None:
            self.cost.add(outcome.metrics)
        if trial.number in self.resumed:  # proposed by a launch before: the study is told
            trial.study.tell(trial.number, outcome.values, state=outcome.state)
        else:
            self.optimiser.tell(trial.number, outcome.values, outcome.state)
        frozen, attrs = _frozen(trial), trial.study.user_attrs
        self._write(lambda writer: writer.finished(frozen, study_attrs=attrs))

    def _write(self, write: Callable[[Any], None]) -> bool:
        """Hands one write of the study to the recorder; False if it failed."""
        return self.recorder is None or self.recorder.write(write)

    def _adjourn(self, trial_id: str, trial: optuna.trial.Trial) -> bool:
        """Leaves a trial that the search's time stopped unfinished RUNNING (in flight, or
        paused at a rung and adjourned by the scheduler), when it has a checkpoint to go on
        from (its curve is in the storage already); True if it did."""
        adjourned = trial_id in self._adjourning
        if not adjourned and (self.limits is None or not self.limits.adjourns(trial_id)):
            return False
        if latest_checkpoint(trial) is None:
            return False
        self.adjourned.append(trial.number)
        self._adjourned_ids.add(trial_id)
        return True

    def is_adjourned(self, trial_id: str) -> bool:
        """Whether the Ray trial ``trial_id`` ended adjourned (not done: a relaunch goes on)."""
        return trial_id in self._adjourned_ids

    def save(self, checkpoint_path: str) -> None:
        """Nothing to save: the Optuna study holds the state (Ray calls this periodically)."""

    def restore(self, checkpoint_path: str) -> None:
        """Nothing to restore: relaunching resumes from the Optuna study."""


def _refusers(reason: str) -> list[str]:
    """What a refusal's reason blames: each constraint violated, or the budget."""
    if reason.startswith("violates "):
        return reason.removeprefix("violates ").split(", ")
    return ["the budget (Shapeshifting cannot meet it)"]


def _hardly_met(row: int, refusers: Counter[str]) -> str:
    """Why the search stopped after ``row`` screened proposals in a row."""
    (most, times), *_ = refusers.most_common(1)
    return (
        f"the screen refused the last {row:,} proposals before training: the space hardly "
        f"meets its constraints (most refused by {most}: {times:,} of them); narrow the space "
        "to what meets them, or loosen them"
    )


def _same_decision(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether ``now`` repeats ``before``: a trial a relaunch resumed at the rung where it
    was paused is decided there again, and pausing it again is no new decision."""
    return all(before.get(k) == now.get(k) for k in ("rung", "outcome"))


def _curve_point(point: dict[str, Any]) -> dict[str, Any]:
    """What a learning curve keeps of an epoch (the indicators are the trial's, once)."""
    keep = ("epoch", "accuracy", "val_loss", "train_time_s", "violation", "at_chance")
    return {k: point[k] for k in keep if k in point}
