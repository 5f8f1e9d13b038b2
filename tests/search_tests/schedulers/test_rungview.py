"""What TPE, GP and NSGA-II/III learn under a stopping scheduler: the study seen at one epoch
(RungView)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import optuna
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optuna.trial import TrialState

from search.config import load_config
from search.errors import ConfigError
from search.optimisers import OPTIMISERS
from search.run import launch
from search.schedulers._rungview import EPOCH_ATTR, RungView, view_epoch
from spaces import Float, Space
from tests._support.curves import curve_config, curve_trial

OBJECTIVES = ["accuracy", "params"]
#: Optuna's NSGA-II/III population size in these tests, and where they keep a trial's
#: generation.
POPULATION = 8
GENERATION = "NSGAIISampler:generation"
GENERATIONS = (GENERATION, "NSGAIIISampler:generation")


@given(st.lists(st.integers(1, 9), max_size=60), st.integers(0, 40))
def test_the_view_epoch_is_the_highest_that_enough_trials_reached(reached, extra):
    told = len(reached) + extra  # trials told without a curve (refused before training)
    needed = max(10, 2 * math.ceil(0.1 * told))
    epoch = view_epoch(reached, told)
    enough = [e for e in range(1, 10) if sum(r >= e for r in reached) >= needed]
    assert epoch == (max(enough) if enough else None)


def _tpe() -> optuna.samplers.TPESampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=0, multivariate=True, group=True, constant_liar=True
        )


_SPACE = Space({"x": Float(0.0, 1.0)})


def _study(sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """30 trials stopped at epoch 3 whose accuracy there peaks at x = 0.8, 40 stopped at
    epoch 1, and 3 complete ones near x = 0.1 (survivors of an early, thin rung); NSGA-II
    generations of ``POPULATION`` trials in the order they were asked."""
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    dists = {"x": optuna.distributions.FloatDistribution(0, 1)}

    def add(x: float, epochs: int, state: TrialState) -> None:
        curve = [
            {"epoch": e, "accuracy": (1 - abs(x - 0.8)) * e / 9, "violation": 0.0}
            for e in range(1, epochs + 1)
        ]
        study.add_trial(
            optuna.trial.create_trial(
                state=state,
                values=[curve[-1]["accuracy"], 1000.0] if state == TrialState.COMPLETE else None,
                params={"x": x},
                distributions=dists,
                user_attrs={"curve": curve, "metric_params": 1000.0},
                system_attrs=dict.fromkeys(GENERATIONS, len(study.trials) // POPULATION),
            )
        )

    for i in range(40):
        add(i / 40, 1, TrialState.PRUNED)
    for i in range(30):
        add(i / 30, 3, TrialState.PRUNED)
    for x in (0.05, 0.1, 0.15):
        add(x, 9, TrialState.COMPLETE)
    return study


def _proposals(study: optuna.Study, n: int) -> list[float]:
    """``n`` asks, each told FAIL right away (so the history the sampler ranks stays as is)."""
    xs = []
    for _ in range(n):
        trial = study.ask()
        xs.append(trial.suggest_float("x", 0, 1))
        study.tell(trial, state=TrialState.FAIL)
    return xs


def test_the_view_models_the_highest_epoch_enough_trials_reached():
    sampler = RungView(_tpe(), OBJECTIVES)
    study = _study(sampler)
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    assert sampler.epoch == 3  # 33 trials reached epoch 3; epoch 9: only 3
    view = sampler._view[1]
    seen = {t.number: t for t in view.trials}
    assert [seen[n].state for n in (0, 40, 70)] == [
        TrialState.PRUNED,  # stopped at epoch 1: stays pruned
        TrialState.COMPLETE,  # reached epoch 3: its values there
        TrialState.COMPLETE,  # complete: its values at epoch 3, not its final ones
    ]
    assert seen[70].values == pytest.approx([(1 - abs(0.05 - 0.8)) / 3, 1000.0])
    assert seen[trial.number].state == TrialState.RUNNING
    stored = study._storage.get_trial(trial._trial_id).system_attrs
    assert stored[EPOCH_ATTR] == 3
    # TPE's constant liar shares the point it sampled with the trials asked next: that attribute
    # is on the study's own trial, not only on the view's copy.
    assert any(key.startswith("tpe:relative_params") for key in stored)
    # The storage itself is untouched.
    assert study.trials[40].state == TrialState.PRUNED and study.trials[70].values[0] < 0.3


def test_a_view_read_from_one_study_takes_nothing_of_another_of_the_same_name():
    """The curves read are the study's own: a sampler asked on a second storage holding a
    study of the same name and trial numbers (a replay after a launch, a study copied) sees
    that study's curves, not the first one's. The cache holds the storage it read, not its
    ``id()``, which a storage made after the first was freed may be given again."""
    sampler = RungView(_tpe(), OBJECTIVES)
    first = _study(sampler)
    first.ask().suggest_float("x", 0, 1)
    assert sampler.epoch == 3
    second = optuna.create_study(study_name=first.study_name, sampler=sampler,
                                 directions=["maximize", "minimize"])  # fmt: skip
    dists = {"x": optuna.distributions.FloatDistribution(0, 1)}
    for i in range(len(first.trials) - 1):  # the same numbers, each stopped at epoch 1
        curve = [{"epoch": 1, "accuracy": 0.2, "violation": 0.0}]
        second.add_trial(optuna.trial.create_trial(
            state=TrialState.PRUNED, params={"x": i / 80}, distributions=dists,
            user_attrs={"curve": curve, "metric_params": 10.0}))  # fmt: skip
    second.ask().suggest_float("x", 0, 1)
    assert sampler.epoch == 1


def test_a_trial_at_chance_at_the_view_epoch_is_seen_pruned():
    sampler = RungView(_tpe(), OBJECTIVES)
    study = _study(sampler)
    dists = {"x": optuna.distributions.FloatDistribution(0, 1)}
    for at_chance in (True, False):  # trials 73 and 74: stopped at epoch 3
        curve = [{"epoch": e, "accuracy": 0.1, "at_chance": at_chance} for e in (1, 2, 3)]
        study.add_trial(
            optuna.trial.create_trial(
                state=TrialState.PRUNED,
                params={"x": 0.5},
                distributions=dists,
                user_attrs={"curve": curve, "metric_params": 10.0},
            )
        )
    study.ask().suggest_float("x", 0, 1)
    seen = {t.number: t for t in sampler._view[1].trials}
    assert sampler.epoch == 3
    assert seen[73].state == TrialState.PRUNED and seen[73].params == {"x": 0.5}
    assert seen[74].state == TrialState.COMPLETE and seen[74].values == [0.1, 10.0]


def test_tpe_learns_where_the_stopped_trials_were_best():
    """Plain MOTPE ranks every pruned trial alike, so its good group is the three complete
    points near 0.1; seen at epoch 3 the good group is near 0.8, where accuracy peaks."""
    viewed = _proposals(_study(RungView(_tpe(), OBJECTIVES)), 20)
    plain = _proposals(_study(_tpe()), 20)
    assert sum(abs(x - 0.8) < 0.2 for x in viewed) >= 14
    assert sum(abs(x - 0.8) < 0.2 for x in plain) <= 6


def _sampler(name: str, **options: Any) -> optuna.samplers.BaseSampler:
    """The sampler of npas's optimiser ``name``, checked to get the view by default."""
    optimiser = OPTIMISERS.get(name)(_SPACE, ["maximize", "minimize"], seed=0, **options)
    assert optimiser.models_rungs
    assert not OPTIMISERS.get(name)(_SPACE, ["maximize"], rung_view=False).models_rungs
    return optimiser.sampler()


@pytest.mark.parametrize("name", ["nsga2", "nsga3"])
def test_nsga_breeds_from_the_stopped_trials(name):
    """Optuna's NSGA-II and NSGA-III count a generation in COMPLETE trials only: as they are,
    their parents are the three survivors near 0.1 (and with fewer survivors than a population
    they would never leave the random first generation); seen at epoch 3 they are the best
    stopped trials, near 0.8. Without mutation a child's x is one of its parents'."""
    options = {"population_size": POPULATION, "mutation_prob": 0.0}
    viewed = _proposals(_study(RungView(_sampler(name, **options), OBJECTIVES)), 20)
    plain = _proposals(_study(_sampler(name, **options)), 20)
    assert all(abs(x - 0.8) < 0.2 for x in viewed)
    assert all(x <= 0.1 for x in plain)


def test_gp_models_the_stopped_trials():
    """GP ignores PRUNED trials: as it is, three COMPLETE ones are fewer than its 10 start-up
    trials, so it samples at random; seen at epoch 3 it has 33 and proposes from its model."""
    sampler = RungView(_sampler("gp"), OBJECTIVES)
    study = _study(sampler)
    viewed = _proposals(study, 3)
    assert sampler.epoch == 3 and study.trials[-1].system_attrs[EPOCH_ATTR] == 3
    random = _proposals(_study(optuna.samplers.RandomSampler(seed=0)), 3)
    assert viewed != random and _proposals(_study(_sampler("gp")), 3) == random


def test_random_search_learns_nothing_and_has_no_view():
    assert not OPTIMISERS.get("random")(_SPACE, ["maximize"]).models_rungs
    with pytest.raises(ConfigError, match="rung_view"):
        OPTIMISERS.get("random")(_SPACE, ["maximize"], rung_view=True)


def test_before_enough_trials_the_sampler_sees_the_study_as_it_is():
    sampler = RungView(_tpe(), OBJECTIVES)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    _proposals(study, 3)
    assert sampler.epoch is None
    assert all(EPOCH_ATTR not in t.system_attrs for t in study.trials)


def test_a_tpe_search_under_moasha_proposes_from_the_view(tmp_path, local_ray):
    study = launch(curve_config(tmp_path, 18, "tpe"), trial_fn=curve_trial, progress=False)
    stored = optuna.load_study(
        study_name=study.study_name, storage=f"sqlite:///{tmp_path}/npas.db"
    )
    modelled = [t.system_attrs.get(EPOCH_ATTR) for t in stored.trials]
    assert modelled[:10] == [None] * 10  # fewer than 10 told: no epoch has enough
    assert {1, 3} >= set(modelled[12:]) - {None} and any(modelled[12:])
    # Each epoch of a curve records the violation the trial reported then.
    curve = stored.get_trials(states=(TrialState.PRUNED,))[0].user_attrs["curve"]
    assert all(point["violation"] == 0.0 for point in curve)


def test_an_nsga2_search_under_moasha_leaves_its_first_generation(tmp_path, local_ray):
    """With most trials stopped at a rung, fewer than a population complete: NSGA-II as
    Optuna has it would propose every trial at random (generation 0)."""
    population = 14
    data = curve_config(tmp_path, 28, "nsga2").to_dict()
    options = {"population_size": population}
    config = load_config({**data, "algorithm": {"name": "nsga2", "options": options}})
    study = launch(config, trial_fn=curve_trial, progress=False)
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) < population
    assert max(t.system_attrs[GENERATION] for t in study.trials) >= 1


def test_rung_view_false_leaves_tpe_as_optuna_has_it(tmp_path, local_ray):
    data = curve_config(tmp_path, 14, "tpe").to_dict()
    config = load_config({**data, "algorithm": {"name": "tpe", "options": {"rung_view": False}}})
    study = launch(config, trial_fn=curve_trial, progress=False)
    assert len(study.trials) == 14 and study.get_trials(states=(TrialState.PRUNED,))
    assert all(EPOCH_ATTR not in t.system_attrs for t in study.trials)
    tpe = OPTIMISERS.get("tpe")
    with pytest.raises(ConfigError, match="rung_view"):
        tpe(config.space, config.directions, rung_view="no")
