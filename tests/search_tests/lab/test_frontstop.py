"""FrontStop (a lab design): known answers on hand-made results, and a replay on the tiny
table that stops no trial the finished ones do not beat."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from ray.tune.schedulers import TrialScheduler

from search.lab import ReplaySpec, replay
from search.lab._frontstop import MIN_FINISHED, FrontStop
from search.lab._whatif import full_horizon
from search.record import RayKey

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]


def _result(epoch: int, accuracy: float, params: float, violation: float = 0.0) -> dict:
    return {RayKey.EPOCH: epoch, "accuracy": accuracy, "params": params,
            RayKey.VIOLATION: violation}  # fmt: skip


def _finish(scheduler: FrontStop, name: str, params: float, feasible: bool = True) -> None:
    """A trial at 0.5 after epoch 1 that ends its 9 epochs at 0.7 (a rise of 0.2)."""
    trial = SimpleNamespace(trial_id=name)
    for epoch in range(1, 10):
        scheduler.on_trial_result(None, trial, _result(epoch, 0.5 + 0.025 * (epoch - 1), params))
    final = {"accuracy": 0.7, "params": params,
             RayKey.METRICS: json.dumps({"feasible": feasible})}  # fmt: skip
    scheduler.on_trial_complete(None, trial, final)


def _decision(scheduler: FrontStop, accuracy: float, params: float, **more: float) -> str:
    return scheduler.on_trial_result(None, SimpleNamespace(trial_id="new"),
                                     _result(1, accuracy, params, **more))  # fmt: skip


def test_a_trial_is_stopped_once_a_finished_one_beats_its_optimistic_last_epoch():
    scheduler = FrontStop(OBJECTIVES, max_epochs=9)
    for i in range(MIN_FINISHED - 1):
        _finish(scheduler, f"t{i}", 100.0 * (i + 1))
    assert _decision(scheduler, 0.1, 900.0) == TrialScheduler.CONTINUE  # too few finished
    _finish(scheduler, "t4", 500.0)
    _finish(scheduler, "cheap", 50.0, feasible=False)  # infeasible: beats nothing
    # every finished trial rose 0.2 from epoch 1: 0.45 can reach 0.65, below (0.7, 500)
    assert _decision(scheduler, 0.45, 600.0) == TrialScheduler.STOP
    assert _decision(scheduler, 0.55, 600.0) == TrialScheduler.CONTINUE  # can reach 0.75
    assert _decision(scheduler, 0.45, 60.0) == TrialScheduler.CONTINUE  # nothing so cheap
    assert _decision(scheduler, 0.9, 60.0, violation=1.0) == TrialScheduler.STOP
    # epoch 2 is no rung (1, 3 of 9): no decision there
    assert scheduler.on_trial_result(None, SimpleNamespace(trial_id="x"),
                                     _result(2, 0.1, 900.0)) == TrialScheduler.CONTINUE


@pytest.mark.parametrize("optimiser", ["random", "tpe"])
def test_a_replay_stops_only_what_finished_trials_beat(table, optimiser):
    result = replay(table, ReplaySpec(optimiser, "frontstop", workers=2), seed=0,
                    horizon_s=3 * full_horizon(table, 2), charge_decisions=False)  # fmt: skip
    ended = list(result.ends.values())  # in the order the trials ended
    assert result.stopped > 0 and len(result.completed) >= MIN_FINISHED
    assert all(how == "complete" for _, how in ended[:MIN_FINISHED])  # nothing to beat them
    assert all((how, epochs) in (("stopped", 1), ("stopped", 3), ("complete", 8))
               for epochs, how in ended), ended  # fmt: skip
