"""The screen (search.config.screen) against run_trial's own refusal step: the same verdict,
reason and counts, and None wherever it cannot be sure."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import search.trial as trial_module
from search.config import SearchConfig, TrialConfig
from search.record import Metric, TrialAttr
from search.screening import Screen, screen

#: Round 5's search of mnist-record-valid as it ran, before the screen.
ROUND5 = Path(__file__).parents[3] / "benchmarks/results/leaderboard_valid/study.db"

#: Plain and Shapeshifted (one store, two random stores) MLPs and ConvNets on digits, sized so
#: that about half the points miss a constraint or a budget.
SPACE: dict[str, Any] = {
    "dataset": "digits",
    "train_size": 100,
    "space": {
        "family": {"choices": ["mlp", "convnet"]},
        "mlp.depth": {"low": 1, "high": 2},
        "mlp.width": {"low": 4, "high": 64},
        "convnet.depth": {"low": 1, "high": 3},
        "convnet.width": {"low": 2, "high": 16},
        "ssn.mapping": {"choices": ["none", "single", "random"]},
        "ssn.stores": {"value": 2, "when": {"ssn.mapping": ["random"]}},
        "budget": {
            "low": 100,
            "high": 3000,
            "log": True,
            "when": {"ssn.mapping": ["single", "random"]},
        },
    },
    "fixed": {"ssn.generator": "emb", "ssn.upsampler": "inter", "ssn.templates": 4},
    "train": {"epochs": 1},
    "objectives": [["accuracy", "maximize"]],
    "constraints": ["params <= 1000", "flops_infer <= 20000"],
}
CONFIG = SearchConfig.from_dict(SPACE)


class _WouldTrain(Exception):
    """run_trial got past its refusal step."""


def _refusal(cfg: TrialConfig) -> dict[str, Any] | None:
    """What run_trial records refusing ``cfg`` before training; None when it would train
    (its training step is replaced by a raise: every step before it runs as in a search)."""

    def would_train(*_: Any, **__: Any) -> None:
        raise _WouldTrain

    with mock.patch.object(trial_module, "_train", would_train):
        try:
            return trial_module.run_trial(cfg)
        except _WouldTrain:
            return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_screen_refuses_what_run_trial_refuses(seed: int) -> None:
    cfg = CONFIG.trial_config(CONFIG.space.sample(seed))
    screened, refused = screen(cfg), _refusal(cfg)
    assert (screened is None) == (refused is None), (cfg.to_dict(), screened, refused)
    if screened is None or refused is None:
        return
    assert screened[Metric.REFUSED] == refused[Metric.REFUSED]
    assert screened[Metric.FEASIBLE] == refused[Metric.FEASIBLE] == 0.0
    for key in ("plain_params", "params", "flops_infer", "constraint_0", "constraint_1"):
        assert screened.get(key) == refused.get(key), key
    assert set(screened) <= set(refused)  # nothing run_trial would not record


#: The space with the deployed model's size bounded instead: ``weights`` (a Shapeshifted
#: trial's are its plain model's, however small its budget) as an objective and a constraint.
WEIGHTS = SearchConfig.from_dict({**SPACE, "objectives": [["accuracy", "maximize"],
                                                          ["weights", "minimize"]],
                                  "constraints": ["weights <= 2000"]})  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_a_weights_constraint_is_screened_as_run_trial_refuses_it(seed: int) -> None:
    cfg = WEIGHTS.trial_config(WEIGHTS.space.sample(seed))
    screened, refused = screen(cfg), _refusal(cfg)
    assert (screened is None) == (refused is None), (cfg.to_dict(), screened, refused)
    if screened is not None and refused is not None:
        assert screened[Metric.REFUSED] == refused[Metric.REFUSED]
        for key in ("plain_params", "params", "weights", "constraint_0"):
            assert screened.get(key) == refused.get(key), key


def test_a_shapeshifted_net_over_a_weights_limit_is_refused_whatever_its_budget() -> None:
    # a 64-wide MLP Shapeshifted into 900 parameters still deploys its 4,810 weights
    ssn = {"mapping": "single", "generator": "emb", "upsampler": "inter", "templates": 4}
    cfg = _config(budget=900, ssn=ssn, constraints=["weights <= 4000"],
                  objectives=[["accuracy", "maximize"], ["weights", "minimize"]])  # fmt: skip
    screened, refused = screen(cfg), _refusal(cfg)
    assert screened is not None and refused is not None
    assert screened[Metric.REFUSED] == refused[Metric.REFUSED] == "violates weights <= 4000"
    assert screened["weights"] == refused["weights"] == 4810
    assert screened["params"] == refused["params"] <= 900


def test_the_space_has_both_verdicts_and_both_reasons() -> None:
    verdicts = [screen(CONFIG.trial_config(CONFIG.space.sample(s))) for s in range(80)]
    reasons = [v[Metric.REFUSED] for v in verdicts if v is not None]
    assert None in verdicts
    assert any(r.startswith("budget: ") for r in reasons)
    assert any(r.startswith("violates params <= 1000") for r in reasons)
    assert any("flops_infer <= 20000" in r for r in reasons)


def _config(**changes: Any) -> TrialConfig:
    data = {"dataset": "digits", "family": "mlp", "hyper": {"depth": 1, "width": 64},
            "constraints": ["params <= 1000"], **changes}  # fmt: skip
    return TrialConfig.from_dict(data)


def test_a_shapeshifted_trial_counts_its_planned_network_not_its_budget() -> None:
    # 633 asked: the one-store network plans 593 parameters (90-100 % of its budget)
    ssn = {"mapping": "single", "generator": "emb", "upsampler": "inter", "templates": 4}
    shared = {"family": "convnet", "hyper": {"depth": 2, "width": 10}, "budget": 633, "ssn": ssn}
    within = _config(**shared, constraints=["params <= 600"])
    assert screen(within) is None and _refusal(within) is None  # trained, though 633 > 600
    over = _config(**shared, constraints=["params <= 590"])
    screened, refused = screen(over), _refusal(over)
    assert screened is not None and refused is not None
    assert screened["params"] == refused["params"] == 593


def test_unsure_cases_are_left_to_run_trial() -> None:
    over = _config()  # a plain 64-wide MLP: 4,810 params, over the limit
    assert screen(over) is not None
    assert screen(_config(constraints=["params <= 1000", "latency_ms <= 5"])) is None
    assert screen(_config(constraints=["activations <= 1000"])) is None  # not counted
    auto = _config(budget=50, ssn={"mapping": "auto", "stores": 2})
    assert screen(auto) is None  # the learned mapping's stores need training
    assert screen(_config(constraints=[])) is None  # nothing to violate


def test_an_unmet_budget_is_refused_whatever_the_constraints() -> None:
    cfg = _config(budget=30, ssn={"mapping": "single"}, constraints=["latency_ms <= 5"])
    screened = screen(cfg)
    assert screened is not None and screened[Metric.REFUSED].startswith("budget: ")
    assert screened[Metric.REFUSED] == _refusal(cfg)[Metric.REFUSED]  # type: ignore[index]


def test_a_model_that_fails_on_the_meta_device_is_left_to_run_trial() -> None:
    with mock.patch("search.screening._screen.meta_model", side_effect=RuntimeError("meta")):
        assert screen(_config()) is None


def test_a_dataset_whose_shape_is_not_registered_is_left_to_run_trial() -> None:
    with mock.patch("search.screening._screen.DATASETS", {}):  # a shape known only once loaded
        assert screen(_config()) is None


def test_round_5s_search_as_it_ran_is_screened_trial_for_trial(tmp_path: Path) -> None:
    """Each of the 154 trials of round 5 (mnist-record-valid, before the screen; 94 refused
    untrained by run_trial): the screen refuses exactly those, with their reason and counts."""
    import optuna

    copy = tmp_path / "study.db"
    shutil.copy(ROUND5, copy)
    study = optuna.load_study(study_name="mnist-record-valid", storage=f"sqlite:///{copy}")
    check = Screen()
    refused = 0
    for trial in study.trials:
        attrs = trial.user_attrs
        said = check(TrialConfig.from_dict(attrs["trial_config"]))
        recorded = attrs.get(f"{TrialAttr.METRIC_PREFIX}{Metric.REFUSED}")
        assert (said is None) == (recorded is None), trial.number
        if said is not None:
            refused += 1
            assert said[Metric.REFUSED] == recorded
            for key in ("plain_params", "params", "flops_infer", "constraint_0", "constraint_1"):
                if key in said:
                    assert said[key] == attrs[f"{TrialAttr.METRIC_PREFIX}{key}"], (
                        trial.number,
                        key,
                    )
    assert (len(study.trials), refused) == (154, 94)
