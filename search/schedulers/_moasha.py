"""Multi-objective asynchronous successive halving (MOASHA) as a Ray Tune scheduler.

Ray Tune's ASHA ranks one metric, and Syne Tune's MOASHA (Schmucker et al. 2021) ranks by
non-dominated sorting but does not run on Ray. This is ASHA's stopping variant with the rung
ranking replaced by constrained domination (Deb): feasible trials first, by non-dominated
sorting over all objectives; then infeasible ones, by violation; then trials with a NaN,
infinite or missing objective. It reads only results, so it works with any searcher and on
any cluster.

A trial that reports itself at chance (``npas_at_chance``: the null model, a constant guess of
the most frequent class at no cost, is as good on every objective) is stopped at the rung and
ranked after every feasible trial that is not. Non-dominated sorting alone promotes it whenever
it is the cheapest at the rung (a boundary point of the first front): on MNIST a 311-parameter
net stuck at 11 % ran all 9 epochs that way, though no front can ever need it. With
``chance_from`` (``scheduler.chance_from``) a trial at chance at an earlier rung goes on instead,
ranked last there: a slow starter (at chance after its first epoch, good at its last) is not
stopped for where it started.

Two types (``scheduler.type``). :class:`MOASHA` is stopping-type: a trial outside the top of a
rung when it reaches it is stopped, and the first trials at a rung always go on (nothing is
ahead of them yet). :class:`PromotionMOASHA` is promotion-type ASHA (Li et al. 2020): a trial
pauses at every rung (Ray Tune checkpoints it and frees its worker), and a paused trial is
resumed from its checkpoint when it ranks in the top ``floor(n / η)`` of the ``n`` trials at
its rung, each trial promoted from a rung once; promotions come before new trials.

Ties inside a front are broken by NSGA-II crowding distance, not Syne Tune's epsilon-net.
When only one or two members of a front can be kept, crowding keeps the boundary points (best
on some objective, distance infinite) on equal terms, whereas the epsilon-net always starts
from the best point on one chosen objective and so favours it. Crowding is also scale-free
(ranges normalised per objective) and needs no starting objective or random start, so with the
remaining ties broken by the order trials reached the rung every decision is deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from search._directions import DIRECTIONS, minimisation_signs
from search.config import GRACE_EPOCHS, REDUCTION_FACTOR, WITHIN_FRONT
from search.record import RayKey
from search.schedulers._milestones import milestones
from search.schedulers._ranking import rank_order, top_k
from spaces import ConfigError, is_int

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


def _as_float(value: Any) -> float:
    """A reported value as a float; NaN when missing or not a number, so it ranks last."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _key(trial: Trial) -> Any:
    """A trial's key at the rungs: its study trial number (the same in every launch, so a
    trial a relaunch resumed is not entered twice), else Ray's trial id."""
    config = getattr(trial, "config", None) or {}
    return config.get(RayKey.NUMBER, trial.trial_id)




#: Trials at a rung, every one at chance with none of the search out of it by that epoch,
#: after which chance there stops no trial until one leaves it (:meth:`MOASHA._chance_stops`):
#: on MNIST, where 44 % of nets are at chance after their first epoch, eight in a row at a
#: rung happen about once in 700 rungs.
CHANCE_EVIDENCE = 8


def _chance_why(rung: int, chance_from: int) -> str:
    """Why a trial at chance at ``rung`` goes on."""
    if rung < chance_from:
        return f"at chance before epoch {chance_from} (scheduler.chance_from)"
    return (f"at chance, as every trial at the rung ({CHANCE_EVIDENCE} or more), and none of "
            f"the search has left chance by epoch {rung} yet")


class _Rung:
    """The trials recorded at one rung, in arrival order, kept as the arrays the ranking reads
    (grown in place, not rebuilt from every trial at every arrival), and their order, ranked
    once per arrival however often it is read."""

    def __init__(self, n_objectives: int, within: str) -> None:
        self.keys: list[Any] = []
        self.index: dict[Any, int] = {}
        self._within = within
        self._F = np.empty((8, n_objectives))
        self._violation = np.empty(8)
        self._chance = np.empty(8, bool)
        self._order: tuple[list[int], np.ndarray] | None = None
        #: Whether a trial recorded here left chance (finite values, not at chance): a
        #: witness here and at every later rung (:meth:`MOASHA._chance_stops`).
        self.witnessed = False

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: Any) -> bool:
        return key in self.index

    def add(self, key: Any, f: np.ndarray, violation: float, at_chance: bool) -> None:
        """Records a trial's result (one recorded before keeps its place, with the new one)."""
        n = self.index.get(key, len(self.keys))
        if n == len(self._violation):
            self._F = np.resize(self._F, (2 * n, self._F.shape[1]))
            self._violation, self._chance = np.resize(self._violation, 2 * n), np.resize(
                self._chance, 2 * n
            )
        self._F[n], self._violation[n], self._chance[n] = f, violation, at_chance
        self.witnessed = self.witnessed or (not at_chance and bool(np.isfinite(f).all()))
        if key not in self.index:
            self.index[key] = n
            self.keys.append(key)
        self._order = None

    def at_chance(self, key: Any) -> bool:
        return bool(self._chance[self.index[key]])

    def rank(self, key: Any) -> int:
        """The trial's place in the rung's order (0 best)."""
        return int(self._ranked()[1][self.index[key]])

    def top(self, k: int) -> list[Any]:
        """The keys of the best ``k``, best first."""
        if self._order is not None:
            return [self.keys[i] for i in self._order[0][:k]]
        n = len(self.keys)
        arrays = (self._F[:n], self._violation[:n], self._chance[:n])
        return [self.keys[i] for i in top_k(*arrays, k, self._within)]

    def _ranked(self) -> tuple[list[int], np.ndarray]:
        if self._order is None:
            n = len(self.keys)
            order = rank_order(self._F[:n], self._violation[:n], self._chance[:n], self._within)
            position = np.empty(n, int)
            position[order] = np.arange(n)
            self._order = (order, position)
        return self._order


class MOASHA(FIFOScheduler):
    """Stopping ASHA over several objectives and a constraint violation (see module doc).

    A trial reaching a rung is kept when at most ``n / rf`` of the ``n`` trials recorded there
    rank above it (the top ``floor(n / rf) + 1``) and it is not at chance, and stopped
    otherwise. A trial that reaches ``max_epochs`` goes on, so that it ends on its own and
    reports its final result (a full schedule is a complete trial, not a stopped one); one
    reporting beyond ``max_epochs`` is stopped.
    """

    def __init__(
        self,
        objectives: Sequence[tuple[str, str]],
        *,
        time_attr: str = "epoch",
        grace_epochs: int = GRACE_EPOCHS,
        reduction_factor: float = REDUCTION_FACTOR,
        max_epochs: int,
        violation_attr: str = RayKey.VIOLATION,
        chance_attr: str = RayKey.AT_CHANCE,
        within_front: str = "crowding",
        chance_from: int | None = None,
    ) -> None:
        _check(objectives, grace_epochs, reduction_factor, max_epochs)
        if within_front not in WITHIN_FRONT:
            raise ConfigError(f"MOASHA within_front: got {within_front!r}; allowed: "
                              f"{', '.join(WITHIN_FRONT)}")  # fmt: skip
        super().__init__()
        self._names = tuple(name for name, _ in objectives)
        # Minimisation throughout: negate maximised metrics.
        self._signs = np.array(minimisation_signs(d for _, d in objectives))
        self._time_attr = time_attr
        self._violation_attr = violation_attr
        self._chance_attr = chance_attr
        self._rf = float(reduction_factor)
        self._max_epochs = max_epochs
        self.rungs: tuple[int, ...] = milestones(grace_epochs, self._rf, max_epochs)
        #: The first epoch at which a trial at chance is stopped (earlier it goes on, ranked
        #: last at the rung); by default the first rung.
        self.chance_from = grace_epochs if chance_from is None else int(chance_from)
        # rung -> the trials (by :func:`_key`) recorded there: objective vectors as minimised,
        # violations, at chance, in arrival order.
        self._recorded: dict[int, _Rung] = {
            r: _Rung(len(self._names), within_front) for r in self.rungs
        }
        self._log: list[dict[str, Any]] = []
        self._n_history = 0
        self._n_stopped = 0
        #: Called with each decision as it is made (the search stores it in the study).
        self.on_decision: Callable[[dict[str, Any]], None] | None = None

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        """Accept and ignore Tune's single metric/mode: the objectives are given here, and the
        searcher is free to optimise whatever it likes."""
        return True

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        epoch = _as_float(result.get(self._time_attr))
        if math.isnan(epoch):
            return TrialScheduler.CONTINUE
        if epoch > self._max_epochs:
            self._n_stopped += 1
            return TrialScheduler.STOP
        f = self._vector([result.get(name) for name in self._names])
        violation = _as_float(result.get(self._violation_attr, 0.0))
        at_chance = _as_float(result.get(self._chance_attr, 0.0)) > 0
        key = _key(trial)
        for rung in self.rungs:
            if rung > epoch:
                break
            if key in self._recorded[rung]:
                continue
            kept, rank, n = self._enter(key, rung, f, violation, at_chance)
            outcome = "continue" if kept else "stop"
            why = {"why": _chance_why(rung, self.chance_from)} if at_chance and kept else {}
            self._decide(trial, rung, outcome, rank=rank, n=n, at_chance=at_chance, **why)
            if not kept:  # entered no higher rung: it would not have got there
                self._n_stopped += 1
                return TrialScheduler.STOP
        return TrialScheduler.CONTINUE

    def add_history(
        self,
        curve: Mapping[int, Sequence[float]],
        violation: float = 0.0,
        at_chance: Collection[int] = (),
        number: int | None = None,
        promoted: Collection[int] = (),
    ) -> None:
        """Record a trial seen before this scheduler existed (a resumed search): its objective
        vector at each epoch it reached (and the epochs it was at chance); it is entered at
        every rung it reached. Given its trial ``number``, the trial is the same one when it
        reports again (a relaunch resumed it from its checkpoint): a rung it is entered at
        is not entered twice. ``promoted``: the rungs it was promoted from (or went straight
        on from) before, which a relaunch does not decide again (promotion type only)."""
        for epoch, values in curve.items():
            if len(values) != len(self._names):
                raise ConfigError(
                    f"add_history curve[{epoch}]: got {len(values)} values; "
                    f"allowed: one per objective ({len(self._names)}: {list(self._names)})"
                )
        key = f"history-{self._n_history}" if number is None else number
        self._n_history += 1
        epochs = sorted(curve)
        for rung in self.rungs:
            reached = [e for e in epochs if e >= rung]  # the first result at the milestone
            if not reached:
                break
            vector = self._vector(curve[reached[0]])
            self._enter(key, rung, vector, _as_float(violation), reached[0] in at_chance)
        self._recorded_curve(key, curve)
        if number is not None:
            self._restore_promotions(number, promoted)

    def _recorded_curve(self, key: Any, curve: Mapping[int, Sequence[float]]) -> None:
        """A recorded trial's whole curve, for a scheduler that reads more than its rungs."""

    def _restore_promotions(self, number: int, promoted: Collection[int]) -> None:
        """A stopping scheduler pauses nothing, so it keeps no promotions."""

    def decisions(self) -> list[dict[str, Any]]:
        """Every rung decision so far (see :meth:`_decide`)."""
        return [dict(d) for d in self._log]

    def _decide(
        self,
        trial: Trial,
        rung: int,
        outcome: str,
        *,
        rank: int,
        n: int,
        at_chance: bool = False,
        why: str | None = None,
    ) -> None:
        """Logs a decision on ``trial`` at ``rung`` and hands it to ``on_decision``.

        A decision holds ``trial_id``, ``trial`` (the study's trial number, when the trial's
        config has it), ``rung``, ``outcome`` (``continue``, ``stop``, ``pause``,
        ``promote``, or ``adjourn``: paused when the search's time ran out), ``rank`` (0
        best) among ``n`` trials at the rung, ``arrival`` (the trial's place in the order
        trials reached the rung: those compared are the first ``n`` to arrive), ``top`` (how
        many the rung lets on now), ``at_chance``, and ``why`` when the rule alone does not
        say it.
        """
        config = getattr(trial, "config", None) or {}
        decision = {
            "trial_id": trial.trial_id,
            "trial": config.get(RayKey.NUMBER),
            "rung": rung,
            "outcome": outcome,
            "rank": rank,
            "n": n,
            "arrival": self._recorded[rung].index[_key(trial)],
            "top": self._top(n),
            "at_chance": at_chance,
        }
        if why is not None:
            decision["why"] = why
        self._log.append(decision)
        if self.on_decision is not None:
            self.on_decision(decision)

    def _top(self, n: int) -> int:
        """How many of ``n`` trials at a rung go on: those with at most ``n / rf`` ranked above
        (the top 1/η read at its boundary, as Syne Tune's ASHA reads it: a rank over n of at
        most 1/η). It keeps one more than ``ceil(n / rf)`` where rf divides n (two of a rung's
        first three), and ended lower than that quota in the lab's 50-seed run on MNIST
        (``docs/guides/replay.md``, "The quota read at its boundary")."""
        return math.floor(n / self._rf + 1e-9) + 1

    def debug_string(self) -> str:
        sizes = ", ".join(f"{r}: {len(self._recorded[r])}" for r in self.rungs)
        return f"Using MOASHA: num_stopped={self._n_stopped}; trials per rung {{{sizes}}}"

    def _vector(self, values: Sequence[Any]) -> np.ndarray:
        return np.array([_as_float(v) for v in values]) * self._signs

    def _enter(
        self, key: Any, rung: int, f: np.ndarray, violation: float, at_chance: bool = False
    ) -> tuple[bool, int, int]:
        """Record ``key`` at ``rung`` and rank it among all recorded there."""
        recorded = self._recorded[rung]
        recorded.add(key, f, violation, at_chance)
        rank, n = recorded.rank(key), len(recorded)
        if at_chance:
            return not self._chance_stops(rung), rank, n
        return rank < self._top(n), rank, n

    def _chance_stops(self, rung: int) -> bool:
        """Whether a trial at chance at ``rung`` is stopped: from ``chance_from`` on, unless
        the first :data:`CHANCE_EVIDENCE` trials recorded at the rung were all at chance and
        none of the search has left chance by that epoch since (at that rung or an earlier
        one). Then chance there says nothing about a trial (a rare class no net has found
        yet, a rung in the warm-up of a slow-starting data set): a table with one class in
        ten lost all 1,440 trials of a search at its first rung, at chance, and recommended
        nothing. The rule waits for that evidence: letting on the first trials at chance
        before any other had left chance changed MNIST's random-sampling replays in 20 of 50
        seeds, later more often than not; with it, 1 of 50 changed, and the reach was level
        (``docs/guides/replay.md``)."""
        if rung < self.chance_from or len(self._recorded[rung]) < CHANCE_EVIDENCE:
            return rung >= self.chance_from
        return any(self._recorded[r].witnessed for r in self.rungs if r <= rung)


#: Ray Tune's status of a trial whose pause is saved (its worker freed).
PAUSED = "PAUSED"
#: How long a promoted trial may stay PAUSED (Ray Tune not taking it) before it is stopped:
#: a pause being saved takes seconds; one that never ends would keep the search waiting.
STUCK_S = 120.0


class PromotionMOASHA(MOASHA):
    """Promotion-type MOASHA (see module doc): a trial pauses at each rung until it ranks in
    the top ``floor(n / η)`` there.

    Paused trials hold no worker and no concurrency slot: the search's searcher asks
    :meth:`may_start` before it proposes a trial (Ray Tune's ``max_concurrent_trials`` would
    count paused trials as running, as its HyperBand's paused trials hold their slots), so a
    new trial starts only when no paused trial can be promoted and fewer than ``slots``
    trials run, plus one waiting for a worker. A trial at chance at a rung is stopped: it
    can never be promoted there. When no trial runs and none will start (:meth:`close`, or
    ``total`` trials added), the paused trials that were never promoted are stopped,
    recorded as stopped at their rung. A promoted trial Ray Tune has not resumed after
    :data:`STUCK_S` is stopped too, so that the search cannot wait on it for ever.
    """

    def __init__(self, *args: Any, early: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Promote the top ``ceil(n / η)``, not ``floor``: a rung's first trial goes on at
        #: once (as under the stopping type), so the first trial completes after one
        #: schedule, not after ``η**k`` results at the first rung (promotion's cold start).
        self.early = early
        self.slots = 1
        self.total: int | None = None
        self._paused: dict[Any, tuple[Trial, int]] = {}  # key -> (trial, rung)
        # key -> (trial, rung, when) promoted but not yet taken by Ray Tune: a trial whose
        # pause is still being saved (its actor still alive) is not started when chosen, so it
        # is chosen again, for at most STUCK_S
        self._promoting: dict[Any, tuple[Trial, int, float]] = {}
        self.clock: Callable[[], float] = time.monotonic
        self._promoted: dict[int, set[Any]] = {r: set() for r in self.rungs}
        self._cache: dict[int, tuple[tuple[int, int, int], list[Any]]] = {}
        self._active: set[str] = set()  # Ray trial ids added, not paused, not ended
        self._seen: set[Any] = set()  # keys that reported in this launch
        self._added = 0
        self._closed = False
        self._closed_why: str | None = None
        self.n_paused = 0
        self.n_promoted = 0

    def _restore_promotions(self, number: int, promoted: Collection[int]) -> None:
        for rung in set(promoted) & set(self.rungs):
            self._promoted[rung].add(number)

    def limit(self, *, slots: int, total: int | None) -> None:
        """At most ``slots`` trials run at once; ``total`` trials are added in all (None:
        until :meth:`close`)."""
        self.slots, self.total = slots, total

    def close(self, why: str | None = None) -> None:
        """No trial will be added any more (the searcher stopped); ``why``: the search's time
        limit (:data:`~search.run._limits.OUT_OF_TIME`), when that stopped it, and the
        paused trials are then adjourned (a relaunch decides them again), not stopped."""
        self._closed = True
        self._closed_why = why

    def may_start(self) -> bool:
        """Whether a new trial may start now: no paused trial is due, and fewer than
        ``slots`` trials run plus one that waits for a worker.

        The one waiting is what keeps every slot busy when epochs are shorter than a worker's
        start-up: Ray Tune gives a pausing trial's worker to a waiting trial, and when the
        only one waiting is the trial whose new worker is starting, it stops that worker
        (so, with one trial waiting, the search ran one trial at a time).
        """
        return len(self._active) <= self.slots and self._due() is None

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        self._active.add(trial.trial_id)
        self._added += 1

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        epoch = _as_float(result.get(self._time_attr))
        if epoch > self._max_epochs:
            return super().on_trial_result(tune_controller, trial, result)
        key = _key(trial)
        first = key not in self._seen
        self._seen.add(key)
        if epoch not in self.rungs:  # between rungs (or NaN): no decision
            return TrialScheduler.CONTINUE
        rung = int(epoch)
        if key in self._recorded[rung]:
            if first and key not in self._promoted[rung]:
                # a relaunch resumed it from its checkpoint at this rung, where the search
                # before paused it: decided now, as if it had just arrived
                return self._arrived(trial, rung)
            return TrialScheduler.CONTINUE  # a repeated result
        f = self._vector([result.get(name) for name in self._names])
        violation = _as_float(result.get(self._violation_attr, 0.0))
        at_chance = _as_float(result.get(self._chance_attr, 0.0)) > 0
        self._enter(key, rung, f, violation, at_chance)
        return self._arrived(trial, rung)

    def _arrived(self, trial: Trial, rung: int) -> str:
        """The decision on a trial recorded at ``rung``: stop it (at chance), promote it (in
        the top now) or pause it."""
        key = _key(trial)
        rank, n = self._rank_of(key, rung)
        if self._recorded[rung].at_chance(key) and self._chance_stops(rung):
            self._decide(trial, rung, "stop", rank=rank, n=n, at_chance=True)
            self._n_stopped += 1
            return TrialScheduler.STOP
        if self._recorded[rung].at_chance(key):  # it goes on
            return self._promote(trial, rung, at_chance=True,
                                 why=_chance_why(rung, self.chance_from))  # fmt: skip
        if key in self._promotable(rung):
            return self._promote(trial, rung)
        self._paused[key] = (trial, rung)
        self._active.discard(trial.trial_id)
        self.n_paused += 1
        self._decide(trial, rung, "pause", rank=rank, n=n)
        return TrialScheduler.PAUSE

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        """A paused trial now due for promotion (once its pause is saved), else a pending
        trial; when nothing runs and nothing will start, the paused trials are stopped (so the
        search can end)."""
        for key, (trial, rung, when) in list(self._promoting.items()):
            if trial.status != PAUSED:  # Ray Tune took it: it is starting or running
                del self._promoting[key]
            elif self.clock() - when <= STUCK_S:  # its pause was still being saved: again
                return trial
            else:  # Ray Tune never took it (seen once, after a time limit): the search ends
                del self._promoting[key]
                self._active.discard(trial.trial_id)
                rank, n = self._rank_of(key, rung)
                self._decide(trial, rung, "stop", rank=rank, n=n,
                             why=f"Ray Tune did not resume it within {STUCK_S:g} s of its "
                             "promotion")  # fmt: skip
                self._n_stopped += 1
                tune_controller.stop_trial(trial)
        due = self._due(saved=True)
        if due is not None:
            trial, rung = self._paused.pop(due)
            self._active.add(trial.trial_id)
            self._promoting[due] = (trial, rung, self.clock())
            self._promote(trial, rung)
            return trial
        # the newest pending trial: an older one may have a worker starting for it, which
        # Ray Tune would stop if it gave that trial a free worker instead (see may_start)
        for trial in reversed(tune_controller.get_trials()):
            if trial.status == "PENDING":
                return trial
        if self._ended() and not self._active and self._paused and self._due() is None:
            for key in list(self._paused):
                trial, rung = self._paused.pop(key)
                rank, n = self._rank_of(key, rung)
                if self._closed_why is not None:  # the searcher adjourns it
                    self._decide(trial, rung, "adjourn", rank=rank, n=n, why=self._closed_why)
                else:
                    self._decide(trial, rung, "stop", rank=rank, n=n,
                                 why="the search ended before it could be promoted")  # fmt: skip
                    self._n_stopped += 1
                tune_controller.stop_trial(trial)
        return None

    def _promote(self, trial: Trial, rung: int, **details: Any) -> str:
        """Records ``trial`` promoted from ``rung`` (``details``: the decision's own) and
        returns Ray Tune's CONTINUE."""
        key = _key(trial)
        self._promoted[rung].add(key)
        self.n_promoted += 1
        rank, n = self._rank_of(key, rung)
        self._decide(trial, rung, "promote", rank=rank, n=n, **details)
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        self._forget(trial)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self._forget(trial)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._forget(trial)

    def debug_string(self) -> str:
        return (f"{super().debug_string()}; paused {len(self._paused)} now, "
                f"{self.n_paused} pauses, {self.n_promoted} promotions")  # fmt: skip

    def _forget(self, trial: Trial) -> None:
        self._active.discard(trial.trial_id)
        self._paused.pop(_key(trial), None)
        self._promoting.pop(_key(trial), None)

    def _ended(self) -> bool:
        return self._closed or (self.total is not None and self._added >= self.total)

    def _top(self, n: int) -> int:
        return math.ceil(n / self._rf) if self.early else math.floor(n / self._rf)

    def _quota(self, rung: int, n: int) -> int:
        """How many of the ``n`` trials recorded at ``rung`` may be promoted from it."""
        return self._top(n)

    def _promotable(self, rung: int) -> list[Any]:
        """The trials of ``rung`` in its quota's top (``floor(n / η)``), not at chance, not
        promoted from it yet, best first (ranked again only when the rung, its promotions or
        its quota changed: the controller asks at every step)."""
        recorded, done = self._recorded[rung], self._promoted[rung]
        top = self._quota(rung, len(recorded))
        stamp = (len(recorded), len(done), top)
        cached = self._cache.get(rung)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        best = recorded.top(top) if top else []
        due = [key for key in best if not recorded.at_chance(key) and key not in done]
        self._cache[rung] = (stamp, due)
        return due

    def _due(self, *, saved: bool = False) -> Any:
        """The paused trial to promote first: from the highest rung, the best ranked; with
        ``saved``, only one whose pause Ray Tune has saved (PAUSED). A trial's status stays
        RUNNING while its pause is saved: promoted then, it would be taken for started and
        then left PAUSED for good, holding a slot, and the search would wait for ever."""
        for rung in reversed(self.rungs):
            for key in self._promotable(rung):
                if key in self._paused and (not saved or self._paused[key][0].status == PAUSED):
                    return key
        return None

    def _rank_of(self, key: Any, rung: int) -> tuple[int, int]:
        recorded = self._recorded[rung]
        return recorded.rank(key), len(recorded)


def _check(objectives: Sequence[tuple[str, str]], grace: int, rf: float, max_epochs: int) -> None:
    """Refuse settings that would make the rungs or the ranking meaningless."""

    def bad(option: str, value: Any, allowed: str) -> ConfigError:
        return ConfigError(f"MOASHA {option}: got {value!r}; allowed: {allowed}")

    if isinstance(objectives, (str, bytes)) or not objectives:
        raise bad("objectives", objectives, "a non-empty list of (metric, direction) pairs")
    names = []
    for i, pair in enumerate(objectives):
        if not (isinstance(pair, Sequence) and len(pair) == 2 and isinstance(pair[0], str)):
            raise bad(f"objectives[{i}]", pair, "a (metric name, direction) pair")
        if pair[1] not in DIRECTIONS:
            raise bad(f"objectives[{i}] direction", pair[1], "'maximize' or 'minimize'")
        names.append(pair[0])
    if len(set(names)) != len(names):
        raise bad("objectives", names, "each metric once")
    if not is_int(grace, 1):
        raise bad("grace_epochs", grace, "an integer >= 1")
    if isinstance(rf, bool) or not isinstance(rf, (int, float)) or not 1 < rf < math.inf:
        raise bad("reduction_factor", rf, "a finite number > 1")
    if not is_int(max_epochs, grace):
        raise bad("max_epochs", max_epochs, f"an integer >= grace_epochs ({grace})")
