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
from search.schedulers._rungtrust import (
    AUDITED,
    MIN_PAIRS,
    UNTRUSTED,
    PromotionTrust,
    RungTrust,
)
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


def _audit(pairs: list[tuple[float, float]]) -> RungTrust:
    """An ``audit`` RungTrust that has seen each (epoch 1, epoch 3) accuracy pair."""
    scheduler = RungTrust(OBJECTIVES, max_epochs=9, evidence="audit")
    for i, (first, second) in enumerate(pairs):
        _curve(scheduler, f"seen{i}", {1: first, 3: second})
    return scheduler


def test_audit_trusts_a_rung_until_its_best_third_loses_too_often_later():
    assert not _audit([]).refuted(1)
    # 15 trials: the best third at epoch 1 (accuracy 0.11-0.15) against the rest (0.01-0.10)
    firsts = [0.01 * (i + 1) for i in range(15)]
    assert not _audit([(a, a) for a in firsts]).refuted(1)  # the best third wins every pair
    swapped = _audit([(a, 1 - a) for a in firsts])  # the best third loses every pair
    assert swapped.refuted(1) and not swapped.trusted(1)
    # by hand, accuracies in twentieths: at epoch 3 the rest hold 1 .. 10, the best five
    # 11, 11, 11, 6 and 4.5: of the 50 pairs the best wins 10 + 10 + 10 + (5 + a tie on 6,
    # half) + 4 = 39.5, a chance of 0.79, not below MIN_AUDIT_AUC; with 3.5 for 4.5, 38.5
    # (0.77): refuted
    rest = [(0.01 * (i + 1), (i + 1) / 20) for i in range(10)]
    for last, refuted in ((4.5, False), (3.5, True)):
        best = [(0.11 + 0.01 * i, b / 20) for i, b in enumerate([11, 11, 11, 6, last])]
        assert _audit(best + rest).refuted(1) is refuted


def test_audit_needs_enough_trials_on_each_side():
    # 14 trials at epoch 1 (the best third: 5), all 5 best and 4 of the rest seen at epoch 3
    scheduler = _audit([(0.10 + 0.01 * i, 0.0) for i in range(5)]
                       + [(0.01 * (i + 1), 1.0) for i in range(4)])  # fmt: skip
    for i in range(4, 9):
        _curve(scheduler, f"stopped{i}", {1: 0.01 * (i + 1)})
    assert not scheduler.refuted(1)  # the best lose every pair, but only 4 of the rest seen
    _curve(scheduler, "stopped8", {3: 1.0})
    assert scheduler.refuted(1)


def test_audit_lets_every_fourth_trial_it_would_stop_go_on_and_says_why():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9, evidence="audit")
    _report(scheduler, "best", 1, 0.99)
    outcomes = [_report(scheduler, f"late{i}", 1, 0.01) for i in range(8)]
    assert scheduler.audits == 2 and outcomes.count(TrialScheduler.CONTINUE) == 2
    audited = [d for d in scheduler.decisions() if d.get("why") == AUDITED]
    assert [d["trial_id"] for d in audited] == ["late3", "late7"]  # its 4th and 8th would-be stops
    assert all(d["outcome"] == "continue" for d in audited)


def _pooled(evidence: str, nine: list[float]) -> RungTrust:
    """15 trials whose epoch 3 ranks as epoch 1 (the best third wins all 50 pairs at rung 1);
    the five best at epoch 3 and the five worst then report epoch 9: the best ``nine``, the
    rest 0.2 .. 0.6."""
    scheduler = RungTrust(OBJECTIVES, max_epochs=9, evidence=evidence)
    rest = [0.2, 0.3, 0.4, 0.5, 0.6]
    for i in range(15):
        at = {1: 0.01 * (i + 1), 3: 0.01 * (i + 1)}
        if i < 5 or i >= 10:
            at[9] = rest[i] if i < 5 else nine[i - 10]
        _curve(scheduler, f"seen{i}", at)
    return scheduler


def test_pooled_audits_judge_every_rung_on_the_wins_summed_over_the_rungs():
    # by hand: rung 1's best third wins 50 of 50 pairs; rung 3's best five against the five
    # worst at epoch 9 win 5 + 5 (0.9 and 0.65 beat all five) = 10 of 25, or 5 + 4 = 9 with
    # 0.55: pooled 60/75 = 0.80 (trusted) and 59/75 = 0.787 (below MIN_AUDIT_AUC: refuted)
    for second, refuted in ((0.65, False), (0.55, True)):
        pooled = _pooled("pooled", [0.9, second, 0.1, 0.1, 0.1])
        assert [pooled.refuted(rung) for rung in (1, 3)] == [refuted, refuted]
        audit = _pooled("audit", [0.9, second, 0.1, 0.1, 0.1])  # rung by rung: 50/50, 10/25
        assert [audit.refuted(rung) for rung in (1, 3)] == [False, True]


def test_pooled_audits_refute_a_rung_with_no_pairs_of_its_own():
    swapped = _audit([(a, 1 - a) for a in [0.01 * (i + 1) for i in range(15)]])
    assert swapped.refuted(1) and not swapped.refuted(3)  # rung 3 has no pair at epoch 9
    pooled = RungTrust(OBJECTIVES, max_epochs=9, evidence="pooled")
    pooled.seen = swapped.seen
    assert pooled.refuted(1) and pooled.refuted(3) and not pooled.trusted(3)


def test_pooled_audits_count_each_side_over_the_rungs():
    # rung 1 (epoch 1: 0.01 .. 0.09, the best third 0.07 .. 0.09): 3 best and 3 of the rest
    # seen at epoch 3, where the best are lower. Rung 3 (ten trials: the six above at
    # 0.41 .. 0.49 and four that report from epoch 3): its best third 0.96, 0.95, 0.49, 0.48,
    # of which the first two and the rest's 0.11 and 0.10 are seen at epoch 9, where the best
    # are lower. No rung has MIN_AUDITED a side; pooled, 5 and 5, and the best win no pair.
    by = {"audit": RungTrust(OBJECTIVES, max_epochs=9, evidence="audit"),
          "pooled": RungTrust(OBJECTIVES, max_epochs=9, evidence="pooled")}  # fmt: skip
    for scheduler in by.values():
        for i in (0, 1, 2, 3, 4, 5, 6, 7, 8):
            at = {1: 0.01 * (i + 1)}
            if i < 3 or i >= 6:
                at[3] = 0.5 - 0.01 * (i + 1)
            _curve(scheduler, f"one{i}", at)
        for i, (three, nine) in enumerate([(0.96, 0.1), (0.95, 0.1), (0.11, 0.9), (0.10, 0.9)]):
            _curve(scheduler, f"three{i}", {3: three, 9: nine})
    assert not by["audit"].refuted(1) and not by["audit"].refuted(3)
    assert by["pooled"].refuted(1) and by["pooled"].refuted(3)


def test_unknown_evidence_is_refused():
    with pytest.raises(ValueError, match="evidence: got 'some'"):
        RungTrust(OBJECTIVES, max_epochs=9, evidence="some")


def test_an_untrusted_rung_lets_a_trial_on_that_moasha_stops():
    reversed_ = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(reversed_, [0.9 - 0.1 * i for i in range(MIN_PAIRS)])
    agreeing = RungTrust(OBJECTIVES, max_epochs=9)
    _seen(agreeing, [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)])
    # the worst at epoch 1 of the nine there: outside the top floor(9 / 3) + 1
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


def test_the_config_builds_it_for_stopping_and_for_promotion_moasha():
    def config(scheduler: dict) -> object:
        return load_config({"dataset": "digits", "space": {"family": ["mlp"]},
                            "scheduler": scheduler})  # fmt: skip

    made = SCHEDULERS.get("moasha")(config({"name": "moasha", "trust_rungs": True}))
    assert isinstance(made, RungTrust)
    assert not isinstance(SCHEDULERS.get("moasha")(config({"name": "moasha"})), RungTrust)
    promotion = SCHEDULERS.get("moasha")(config({"name": "moasha", "type": "promotion",
                                                 "trust_rungs": True, "trust_by": "pooled",
                                                 "early_promotion": True}))  # fmt: skip
    assert isinstance(promotion, PromotionTrust) and promotion.evidence == "pooled"
    assert promotion.early
    audit = SCHEDULERS.get("moasha")(config({"name": "moasha", "trust_rungs": True,
                                             "trust_by": "audit"}))  # fmt: skip
    assert isinstance(audit, RungTrust) and audit.evidence == "audit"
    with pytest.raises(ConfigError, match=r"scheduler\.trust_by: got 'audit'; allowed: chain "
                                          r"unless trust_rungs"):  # fmt: skip
        config({"name": "moasha", "trust_by": "audit"})
    with pytest.raises(ConfigError, match=r"scheduler\.trust_by: got 'some'"):
        config({"name": "moasha", "trust_rungs": True, "trust_by": "some"})


def test_a_diverged_trials_nan_does_not_keep_a_rung_untrusted_forever():
    scheduler = RungTrust(OBJECTIVES, max_epochs=9)
    _curve(scheduler, "diverged", {1: float("nan"), 3: float("nan"), 9: "nan"})
    _seen(scheduler, [0.1 * (i + 1) + 0.1 for i in range(MIN_PAIRS)])
    assert scheduler.trusted(1)
