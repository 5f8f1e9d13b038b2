"""RungTrust (``scheduler.trust_rungs``): known answers on hand-made curves (a rung is trusted
only when it and the rungs above it rank their next checkpoint as the search has seen), the
config that builds it, the decisions' reasons and a relaunch's history."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ray.tune.schedulers import TrialScheduler

from search.config import load_config
from search.record import RayKey
from search.schedulers import SCHEDULERS
from search.schedulers._rungtrust import MIN_PAIRS, UNTRUSTED, RungTrust
from spaces import ConfigError

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


def test_own_evidence_trusts_a_rung_before_the_rungs_above_have_pairs():
    chain = RungTrust(OBJECTIVES, max_epochs=9)
    own = RungTrust(OBJECTIVES, max_epochs=9, evidence="own")
    for scheduler in (chain, own):
        for i in range(MIN_PAIRS):  # epochs 1 and 3 agree; no trial has reached epoch 9
            _curve(scheduler, f"seen{i}", {1: 0.1 * (i + 1), 3: 0.1 * (i + 1) + 0.05})
    assert own.trusted(1) and not own.trusted(3)
    assert not chain.trusted(1)


def test_own_evidence_is_blocked_by_a_refuted_rung_above():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9, evidence="own")
    _seen(scheduler, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])  # epoch 9 reverses epoch 3
    assert not scheduler.trusted(1)


def test_unknown_evidence_is_refused():
    with pytest.raises(ValueError, match="evidence: got 'some'"):
        RungTrust(OBJECTIVES, max_epochs=9, evidence="some")


def test_an_untrusted_rung_lets_a_trial_on_that_moasha_stops():
    reversed_ = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(reversed_, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])
    agreeing = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(agreeing, [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)])
    # the worst at epoch 1 of the nine there: outside the top ceil(9 / 3)
    assert _report(agreeing, "late", 1, 0.01) == TrialScheduler.STOP
    assert _report(reversed_, "late", 1, 0.01) == TrialScheduler.CONTINUE
    assert reversed_.untrusted_passes == 1 and agreeing.untrusted_passes == 0


def test_an_overruled_decision_says_why_and_a_kept_one_does_not():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(scheduler, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])
    _report(scheduler, "late", 1, 0.01)  # outside the top: let on, the rung not trusted
    _report(scheduler, "best", 1, 0.99)  # inside the top: kept by the rule itself
    late, best = scheduler.decisions()[-2:]
    assert late["outcome"] == "continue" and late["why"] == UNTRUSTED
    assert best["outcome"] == "continue" and "why" not in best


def test_a_relaunch_history_counts_toward_trust():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    for i in range(MIN_PAIRS):
        value = 0.1 * (i + 1)
        curve = {1: [value, 100.0], 3: [value + 0.05, 100.0], 9: [value + 0.1, 100.0]}
        scheduler.add_history(curve, number=i if i % 2 else None)
    assert scheduler.trusted(1)
    assert _report(scheduler, "late", 1, 0.01) == TrialScheduler.STOP


def test_the_config_builds_it_for_stopping_moasha_and_refuses_it_for_promotion():
    def config(scheduler: dict) -> object:
        return load_config({"dataset": "digits", "space": {"family": ["mlp"]},
                            "scheduler": scheduler})  # fmt: skip

    made = SCHEDULERS.get("moasha")(config({"name": "moasha", "trust_rungs": True}))
    assert isinstance(made, RungTrust)
    assert not isinstance(SCHEDULERS.get("moasha")(config({"name": "moasha"})), RungTrust)
    with pytest.raises(ConfigError, match=r"scheduler\.trust_rungs: got True; allowed: false "
                                          r"with type 'promotion'"):  # fmt: skip
        config({"name": "moasha", "type": "promotion", "trust_rungs": True})


def test_a_diverged_trials_nan_does_not_keep_a_rung_untrusted_forever():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    _curve(scheduler, "diverged", {1: float("nan"), 3: float("nan"), 9: "nan"})
    _seen(scheduler, [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)])
    assert scheduler.trusted(1)
