"""RungTrust (a lab design): known answers on hand-made curves (a rung is trusted only when it
and the rungs above it rank their next checkpoint as the search has seen), and a replay."""

from __future__ import annotations

from types import SimpleNamespace

from ray.tune.schedulers import TrialScheduler

from search.lab import ReplaySpec, replay
from search.lab._rungtrust import MIN_PAIRS, RungTrust
from search.lab._whatif import full_horizon
from search.record import RayKey

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]


def _report(scheduler: RungTrust, name: str, epoch: int, accuracy: float) -> str:
    result = {RayKey.EPOCH: epoch, "accuracy": accuracy, "params": 100.0}
    return scheduler.on_trial_result(None, SimpleNamespace(trial_id=name), result)


def _curve(scheduler: RungTrust, name: str, at: dict[int, float]) -> list[str]:
    """Reports a trial's accuracy at epochs 1, 3 and 9 (the rungs of 9 and the last)."""
    return [_report(scheduler, name, epoch, value) for epoch, value in at.items()]


def _seen(scheduler: RungTrust, third: list[float]) -> None:
    """MIN_PAIRS trials whose epochs 1 and 3 rank alike (0.1, 0.2, ...) and whose epoch 9
    follows ``third``'s order."""
    for i, last in enumerate(third):
        _curve(scheduler, f"seen{i}", {1: 0.1 * (i + 1), 3: 0.1 * (i + 1) + 0.05, 9: last})


def test_a_rung_is_trusted_only_when_it_and_the_rungs_above_predict():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    assert scheduler.checkpoints == (1, 3, 9)
    rising = [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)]
    _seen(scheduler, rising[:-1])
    assert not scheduler.trusted(1) and not scheduler.trusted(3)  # one pair too few
    _seen(scheduler, rising)  # the same keys again: still MIN_PAIRS trials, now all at 9
    assert scheduler.trusted(3) and scheduler.trusted(1)


def test_a_rung_below_an_untrusted_one_is_not_trusted():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(scheduler, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])  # epoch 9 reverses epoch 3
    assert not scheduler.trusted(3)
    assert not scheduler.trusted(1)  # epochs 1 and 3 agree, but 3 does not predict 9


def test_an_untrusted_rung_lets_a_trial_on_that_moasha_stops():
    reversed_ = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(reversed_, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])
    agreeing = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(agreeing, [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)])
    # the worst at epoch 1 of the nine there: outside the top ceil(9 / 3)
    assert _report(agreeing, "late", 1, 0.01) == TrialScheduler.STOP
    assert _report(reversed_, "late", 1, 0.01) == TrialScheduler.CONTINUE
    assert reversed_.untrusted_passes == 1 and agreeing.untrusted_passes == 0


def test_a_replay_stops_fewer_trials_than_moasha_until_its_rungs_are_trusted(table):
    horizon = 3 * full_horizon(table, 2)
    ran = {name: replay(table, ReplaySpec("random", name, workers=2), seed=0,
                        horizon_s=horizon, charge_decisions=False)
           for name in ("moasha", "rungtrust")}  # fmt: skip
    first = [how for _, how in list(ran["rungtrust"].ends.values())[:MIN_PAIRS]]
    assert first == ["complete"] * MIN_PAIRS  # nothing trusted before MIN_PAIRS finish
    assert ran["rungtrust"].stopped < ran["moasha"].stopped
