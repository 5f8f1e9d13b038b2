"""How a trial's last Ray result is read into what the storage records."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from search.record._counting import counts
from search.run._outcome import outcome_of
from search.run._trainable import epoch_report, report_of

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
NAMES = [n for n, _ in OBJECTIVES]


def test_a_trial_whose_process_died_names_where_its_logs_are() -> None:
    outcome = outcome_of(None, objectives=OBJECTIVES, constraints=[], ray_error=True,
                         logs="/runs/ray/s1")  # fmt: skip
    assert outcome.state == TrialState.FAIL
    assert "/runs/ray/s1" in outcome.error and "<out>" not in outcome.error


def test_a_trial_stopped_after_an_epoch_is_pruned_with_its_point() -> None:
    point = {"epoch": 3, "accuracy": 0.7, "params": 900, "train_time_s": 1.5}
    outcome = outcome_of(epoch_report(point, NAMES), objectives=OBJECTIVES, constraints=[])
    assert outcome.state == TrialState.PRUNED and outcome.pruned_at == 3
    assert outcome.values is None and outcome.metrics == point


def test_a_finished_trial_is_complete_even_after_epoch_reports() -> None:
    metrics = {"accuracy": 0.9, "params": 900, "feasible": 1.0}
    outcome = outcome_of(report_of(metrics, NAMES), objectives=OBJECTIVES, constraints=[])
    assert outcome.state == TrialState.COMPLETE and outcome.values == [0.9, 900.0]


def test_pruned_trials_count_toward_the_trials_of_a_search() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"])
    trial = study.ask()
    study.tell(trial, state=TrialState.PRUNED)
    assert counts(study.trials[0])


def test_a_budget_refuses_the_trial_that_would_pass_it() -> None:
    from search.config._search import LimitsConfig
    from search.run._cost import SearchCost

    now = [0.0]
    cost = SearchCost(LimitsConfig(time=10.0, energy_j=100.0), clock=lambda: now[0])
    assert cost.exhausted() is None
    cost.add({"trial_time_s": 4.0, "trial_energy_j": 30.0, "energy_source": "estimate"})
    now[0] = 5.0
    assert cost.exhausted() is None  # 5 s + a 4 s trial fits in 10 s; 30 + 30 J in 100 J
    now[0] = 7.0
    assert "time limit" in cost.exhausted()
    now[0] = 1.0
    cost.add({"train_time_s": 2.0})  # stopped early: estimated at the metered 7.5 W
    assert cost.energy_j == 45.0 and "energy_j limit" not in (cost.exhausted() or "")
    cost.add({"trial_time_s": 1.0, "trial_energy_j": 40.0})
    assert "energy_j limit" in cost.exhausted()  # 85 J spent + about 28 J a trial > 100 J


def test_the_time_limit_expects_a_trial_as_long_as_nine_in_ten_of_those_ended() -> None:
    """Nine 1 s trials and one of 20 s (the GPU check's cross-validated tail): the mean, 2.9 s,
    would start a trial at 80 s of a 96 s limit that may run to 100 s; the rule expects 20 s.
    With nineteen 1 s trials the one long trial is under a tenth, and 1 s is expected."""
    from search.config._search import LimitsConfig
    from search.run._cost import SearchCost

    now = [0.0]
    cost = SearchCost(LimitsConfig(time=96.0), clock=lambda: now[0])
    for seconds in [1.0] * 9 + [20.0]:
        cost.add({"trial_time_s": seconds})
    now[0] = 76.0
    assert cost.exhausted() is None  # 76 + 20 = 96: ends on the limit
    now[0] = 80.0
    refused = cost.exhausted()
    assert refused is not None and "about 20 s a trial" in refused
    assert "at least 90% of the 10 trials ended took no longer" in refused
    for _ in range(9):
        cost.add({"trial_time_s": 1.0})
    assert cost.exhausted() is None  # 80 + 1 s


def test_an_epoch_at_chance_is_reported_stored_and_read_back_for_a_resume() -> None:
    from search.record._curves import rung_history

    point = {"epoch": 1, "accuracy": 0.11, "params": 300, "at_chance": True}
    report = epoch_report(point, NAMES)
    assert report["npas_at_chance"] == 1.0
    assert epoch_report({**point, "at_chance": False}, NAMES)["npas_at_chance"] == 0.0
    assert epoch_report({"epoch": 1, "accuracy": 0.5}, NAMES)["npas_at_chance"] == 0.0
    outcome = outcome_of(report, objectives=OBJECTIVES, constraints=[])
    study = optuna.create_study(directions=["maximize", "minimize"])
    trial = study.ask()
    trial.set_user_attr("curve", [outcome.metrics, {**point, "epoch": 2, "at_chance": False}])
    trial.set_user_attr("metric_params", 300)
    study.tell(trial, state=TrialState.PRUNED)
    [(vectors, violation, at_chance, _)] = rung_history(study, NAMES)
    assert vectors == {1: [0.11, 300.0], 2: [0.11, 300.0]} and violation == 0.0
    assert at_chance == {1}
