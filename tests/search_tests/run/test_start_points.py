"""Start points on a real local Ray: trained first, in order, by every kind of algorithm; once
per study across relaunches, and again only when their trial failed. A trial's point is
recognised by the point itself (a relaunch may reorder the list), in a study recorded before
npas kept it too."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from search.record._schema import TrialAttr
from search.record._study import enqueue_start
from search.run._launch import launch
from tests._support.searches import fake_trial, make_config

MLP = {"family": "mlp", "mlp.depth": 2, "mlp.width": 40, "budget": 1500,
       "ssn.mapping": "single", "ssn.generator": "emb", "mlp.train.lr": 0.05}  # fmt: skip
SMALL_MLP = {"family": "mlp", "budget": 1200, "ssn.mapping": "single"}
CONVNET = {"family": "convnet", "convnet.width": 16}  # fake_trial fails every convnet


def _started(study: optuna.Study) -> dict[int, list[int]]:
    """start index → the numbers of the trials that trained it."""
    out: dict[int, list[int]] = {}
    for t in study.get_trials(deepcopy=False):
        if TrialAttr.START in t.user_attrs:
            out.setdefault(t.user_attrs[TrialAttr.START], []).append(t.number)
    return out


def _holds(trial: optuna.trial.FrozenTrial, point: dict) -> bool:
    return all(trial.params.get(k) == v for k, v in point.items())


@pytest.mark.parametrize("optimiser", ["tpe", "pymoo-nsga2"])
def test_start_points_train_first_then_only_new_or_failed_ones(tmp_path: Path, optimiser) -> None:
    config = make_config(tmp_path, optimiser=optimiser, trials=4, start=[MLP, CONVNET])
    study = launch(config, trial_fn=fake_trial, progress=False)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    assert _holds(trials[0], MLP) and trials[0].state == TrialState.COMPLETE
    assert _holds(trials[1], CONVNET) and trials[1].state == TrialState.FAIL
    assert _started(study) == {0: [0], 1: [1]}
    proposed = [t for t in trials[2:] if TrialAttr.START not in t.user_attrs]
    assert len(proposed) >= 2  # the algorithm proposed the rest

    # relaunched with one more point: it and the failed convnet are queued, MLP is not
    more = make_config(tmp_path, optimiser=optimiser, trials=8, start=[MLP, CONVNET, SMALL_MLP])
    study = launch(more, trial_fn=fake_trial, progress=False)
    started = _started(study)
    assert started[0] == [0]
    assert len(started[1]) == 2 and started[1][0] == 1
    (small,) = started[2]
    trial = study.trials[small]
    assert _holds(trial, SMALL_MLP) and trial.state == TrialState.COMPLETE
    assert small > trials[-1].number  # after every trial of the first launch
    # what the point left out was proposed: a whole point of the space
    assert {"mlp.depth", "mlp.width", "ssn.generator", "mlp.train.lr"} <= trial.params.keys()


def test_a_start_point_is_recognised_by_its_point_not_its_place_in_the_list() -> None:
    study = optuna.create_study()
    assert enqueue_start(study, [MLP, CONVNET]) == 2
    (first, second) = study.get_trials(deepcopy=False)
    assert first.user_attrs == {TrialAttr.START: 0, TrialAttr.START_POINT: MLP}
    assert second.user_attrs[TrialAttr.START_POINT] == CONVNET
    assert enqueue_start(study, [CONVNET, SMALL_MLP, MLP]) == 1  # reordered, one added
    assert study.get_trials(deepcopy=False)[-1].user_attrs[TrialAttr.START_POINT] == SMALL_MLP


def test_a_study_recorded_before_start_point_is_read_from_optunas_queue() -> None:
    study = optuna.create_study()
    study.enqueue_trial(dict(MLP), user_attrs={TrialAttr.START: 0})  # what npas wrote then
    assert enqueue_start(study, [MLP, CONVNET]) == 1
    assert study.get_trials(deepcopy=False)[-1].user_attrs[TrialAttr.START_POINT] == CONVNET
