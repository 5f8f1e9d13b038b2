"""The live progress view of a search: a Ray Tune callback printing one line per ended trial,
and one a minute while none ends."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from ray.tune import Callback

from search._format import duration, note
from search.record import Metric, RayKey, counts, metrics_of
from search.record import screened as is_screened
from search.run._stages import Stage, command_start

__all__ = ["Progress"]


#: Trials that must have ended in a launch before its pace is estimated (two intervals).
_PACED = 3
#: Seconds without a line after which the view says where the search is anyway: under a
#: promotion-type scheduler trials pause at their rungs rather than end (a 45-min MNIST search
#: said nothing for 14 minutes while 32 trials paused).
QUIET_S = 60.0


class Progress(Callback):
    """The live progress view: one line per finished trial, one after each :data:`QUIET_S`
    without any, then a summary, on stderr.

    Each line: trials done of the search's total (a resumed search's earlier trials included),
    running, failed, infeasible, the size of the current Pareto front of the feasible trials and
    the best feasible value of each objective so far (in its own units; they may come from
    different trials), then the time since launch and, with a total, an estimate of the time
    left at this launch's pace, never past the search's time limit (which ends it sooner). The
    pace is taken between the trials that ended in this launch, from the first to the latest,
    and only once three have: the start-up (imports, Ray, the first trial's data) is not a
    trial's cost, and a quick run's first line once said "~4 min 49 s left" of a 26 s run.

    Why best values and no hypervolume: a hypervolume needs bounds to normalise the objectives
    by. Taken from the trials seen, they move whenever a trial widens them, so one line's value
    could not be compared with the next (it read 1.33, then 0.13, then 0.83); and bounds fixed
    before the search are known only for some objectives (accuracy lies in [0, 1], latency or
    FLOPs have no range until measured). The best values mean the same on every line and never
    get worse: a dominated or infeasible trial leaves them as they are, a better one improves
    them. ``search report`` plots the hypervolume over the whole search, on bounds fixed from
    all its trials.

    Args:
        objectives: ``(name, direction)`` per objective.
        prior: The study as it was before this launch (its trials are counted too).
        total: The search's ``trials``; None where no count ends it (a derived timed search,
            whose count is a ceiling its time cannot reach: the time left is said instead).
        enabled: False prints nothing.
        clock: Seconds, for the elapsed time (``time.monotonic``: then counted from the
            command's start when :func:`search.run._stages.count_from` was told it).
        time_limit: The search's time limit in seconds, counted from this launch, if any.
        adjourned: Whether a Ray trial that ended was adjourned (left unfinished with its
            checkpoint when the time ran out): counted apart, not done.
        screened: How many proposals the screen refused in this launch (never Ray trials):
            said apart, not done, with those of earlier launches.
    """

    def __init__(
        self,
        objectives: Sequence[tuple[str, str]],
        *,
        prior: optuna.Study | None = None,
        total: int | None = None,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
        time_limit: float | None = None,
        adjourned: Callable[[str], bool] = lambda trial_id: False,
        screened: Callable[[], int] = lambda: 0,
    ) -> None:
        self.objectives = list(objectives)
        self.time_limit = time_limit
        self.total = total
        self.enabled = enabled
        self.values: list[list[float]] = []
        self.feasible: list[bool] = []
        #: Each completed trial's ``weights`` (NaN when not measured), as ``values``.
        self.weights: list[float] = []
        self.failed = 0
        self.pruned = 0
        self.refused = 0
        self.adjourned = 0
        self._is_adjourned = adjourned
        self._screened = screened
        self.screened_before = 0
        for trial in prior.get_trials(deepcopy=False) if prior is not None else ():
            if is_screened(trial):  # never started: not done
                self.screened_before += 1
            elif trial.state == TrialState.COMPLETE:
                self.values.append(list(trial.values))
                self.feasible.append(bool(trial.user_attrs.get(Metric.FEASIBLE, True)))
                self.weights.append(_weights(metrics_of(trial)))
            elif trial.state == TrialState.PRUNED:
                refused = Metric.REFUSED in metrics_of(trial)
                self.refused += refused
                self.pruned += not refused
            elif counts(trial):  # failed on its own (interrupted ones are re-run)
                self.failed += 1
        self._clock = clock
        self._started = clock()
        since = command_start()
        if clock is time.monotonic and since is not None:
            self._started = since
        self._ends: list[float] = []  # when each trial of this launch ended
        self._said = clock()  # when the view last printed a line
        self._first: Stage | None = None  # set up by Ray Tune, after it pickled this

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        # Between Ray Tune's start and a trial's first result, each worker loads torch: on
        # two cores the longest wait of a quick run, said once it has lasted a second.
        self._first = Stage("starting the trials (each Ray worker loads torch and the "
                            "trial's code)", enabled=self.enabled).start()  # fmt: skip

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        self._first_ended()

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if self._clock() - self._said >= QUIET_S:
            self._print(trials)

    def _first_ended(self) -> None:
        if self._first is not None:
            self._first.end()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._first_ended()
        if self._is_adjourned(trial.trial_id):  # the searcher, told first, left it unfinished
            self.adjourned += 1
        else:
            self._add(trial.last_result or {})
        self._print([t for t in trials if t is not trial])

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._first_ended()
        self.failed += 1
        self._ends.append(self._clock())
        self._print([t for t in trials if t is not trial])

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self._first_ended()
        if self.enabled:
            done = self.done
            word = "stopped" if self.total is not None and done < self.total else "finished"
            self._say(f"{word}: {self.line(trials, ended=True)}")

    @property
    def done(self) -> int:
        """Trials ended: completed, stopped early or failed."""
        return len(self.values) + self.pruned + self.refused + self.failed

    def _add(self, result: Mapping[str, Any]) -> None:
        self._ends.append(self._clock())
        if RayKey.ERROR not in result and RayKey.METRICS not in result and RayKey.CURVE in result:
            self.pruned += 1
            return
        if RayKey.METRICS in result and Metric.REFUSED in json.loads(result[RayKey.METRICS]):
            self.refused += 1
            return
        if RayKey.ERROR in result or RayKey.METRICS not in result:
            self.failed += 1
            return
        values = [float(result.get(n, math.nan)) for n, _ in self.objectives]
        metrics = json.loads(result[RayKey.METRICS])
        feasible = bool(metrics.get(Metric.FEASIBLE, 1.0))
        self.values.append(values)
        self.feasible.append(feasible and bool(np.all(np.isfinite(values))))
        self.weights.append(_weights(metrics))

    def best(self) -> list[float] | None:
        """The best feasible value of each objective so far; None before a feasible trial."""
        if not any(self.feasible):
            return None
        values = np.array(self.values, dtype=float)[np.array(self.feasible)]
        return [
            float(column.max() if direction == "maximize" else column.min())
            for column, (_, direction) in zip(values.T, self.objectives, strict=True)
        ]

    def line(self, trials: Sequence[Any] = (), *, ended: bool = False) -> str:
        """The progress line for the trials seen so far (``ended``: the last, which says no
        time left)."""
        from search.pareto import format_value, non_dominated

        running = sum(getattr(t, "status", "") == "RUNNING" for t in trials)
        paused = sum(getattr(t, "status", "") == "PAUSED" for t in trials)
        done = self.done
        feasible = sum(self.feasible)
        infeasible = len(self.feasible) - feasible + self.refused
        of = "" if self.total is None else f"/{self.total}"
        # ``done`` split into its outcomes, each trial once; running ones are not done
        parts = f"{feasible} feasible, {infeasible} infeasible, {self.failed} failed"
        if self.pruned:
            parts += f", {self.pruned} stopped early"
        text = f"{done}{of} done ({parts}), {running} running"
        if paused:
            text += f", {paused} paused"
        if self.adjourned:
            text += f", {self.adjourned} adjourned"
        screened = self.screened_before + self._screened()
        if screened:
            text += f"; {screened} more refused before training (screened, not counted)"
        best = self.best()
        if best is not None:
            directions = [d for _, d in self.objectives]
            values = np.array(self.values, dtype=float)
            on_front = non_dominated(values, directions, self.feasible)
            said = ", ".join(
                f"{name} {format_value(value, digits=4)}"
                for (name, _), value in zip(self.objectives, best, strict=True)
            )
            text += f", front {int(on_front.sum())} (best {said}{self._deployed(on_front)})"
        return text + self._times(done, ended)

    def _deployed(self, on_front: np.ndarray) -> str:
        """``; deployed 1,106-4,810 weights``: the front's deployed size, beside a front on
        ``params`` (a Shapeshifted net trains its budget but deploys its unshared model's
        weights); empty when ``weights`` is an objective or was not measured."""
        from search.pareto import format_value

        if "weights" in (n for n, _ in self.objectives) or len(self.weights) != len(on_front):
            return ""
        found = np.array(self.weights, dtype=float)[on_front]
        found = found[np.isfinite(found)]
        if not len(found):
            return ""
        low, high = (format_value(v, digits=4) for v in (found.min(), found.max()))
        return f"; deployed {low if low == high else f'{low}-{high}'} weights"

    def _times(self, done: int, ended: bool = False) -> str:
        elapsed = self._clock() - self._started
        text = f"; {duration(elapsed)} elapsed"
        if ended:
            return text
        limit = self.time_limit
        if self.total is None and limit is not None:  # the time, not a count, ends the search
            return text + f", at most {duration(max(0.0, limit - elapsed))} left (limit)"
        if self.total is None or done >= self.total:
            return text
        left = None
        if len(self._ends) >= _PACED:
            pace = (self._ends[-1] - self._ends[0]) / (len(self._ends) - 1)
            left = pace * (self.total - done)
        if limit is not None and (left is None or elapsed + left > limit):
            within = duration(max(0.0, limit - elapsed))
            return text + (f", at most {within} left (limit)" if left is None
                           else f", ~{within} left (limit)")  # fmt: skip
        return text if left is None else text + f", ~{duration(left)} left"

    def _print(self, trials: Sequence[Any]) -> None:
        self._said = self._clock()
        if self.enabled:
            self._say(self.line(trials))

    @staticmethod
    def _say(text: str) -> None:
        """One progress line on stderr, wrapped to the terminal width under its text."""
        print(note(text), file=sys.stderr, flush=True)


def _weights(metrics: Mapping[str, Any]) -> float:
    """A trial's ``weights`` metric, NaN when it has none (or not a number)."""
    try:
        return float(metrics.get("weights", math.nan))
    except (TypeError, ValueError):
        return math.nan
