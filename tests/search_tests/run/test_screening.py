"""The searcher's screen: a proposal it refuses is recorded at once as the refused trial
run_trial would have made (same state, metrics and attributes, plus its marker), told to the
optimiser, never sent to Ray Tune, not counted; a long run of refusals stops the search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState
from ray.tune.search import Searcher

from search.config import SearchConfig
from search.record import Metric, TrialAttr, counts, trials_counted
from search.record._storage import open_storage
from search.record._study import open_study
from search.record._writer import StudyWriter
from search.run import _searcher
from search.run._bound import bound_optimiser, constraint_keys
from search.run._outcome import OutcomeReader
from search.run._recorder import StudyRecorder
from search.run._searcher import NpasSearcher
from search.run._trainable import report_of
from tests._support.notes import notes
from tests._support.searches import make_config

optuna.logging.set_verbosity(optuna.logging.WARNING)

#: What run_trial records refusing a plain MLP over ``params <= 1000``.
REFUSED = {"plain_params": 4810, "params": 4810, Metric.REFUSED: "violates params <= 1000",
           "constraint_0": 3810.0, Metric.FEASIBLE: 0.0}  # fmt: skip


def _config(tmp_path: Path, optimiser: str = "tpe") -> SearchConfig:
    return make_config(tmp_path, optimiser=optimiser, objectives=[["accuracy", "maximize"]],
                       constraints=["params <= 1000"])  # fmt: skip


def _searcher_of(config: SearchConfig, screen: Any, *, recorded: bool = True,
                 repair: bool = False) -> NpasSearcher:  # fmt: skip
    """A searcher as launch makes one, writing to the config's storage (``recorded``)."""
    rdb = open_storage(config.storage_url)
    study = open_study(name=config.name, storage=rdb, sampler=optuna.samplers.RandomSampler(),
                       config=config.to_dict(), objectives=config.objectives,
                       constraints=config.constraint_texts,
                       optimiser=config.algorithm.name)  # fmt: skip
    return NpasSearcher(
        bound_optimiser(config, study, seed=0, scheduler="fifo"),
        outcomes=OutcomeReader(config.objectives, constraint_keys(config)),
        trial_config=lambda point, number: config.trial_config(point),
        recorder=StudyRecorder(StudyWriter(rdb, config.name)) if recorded else None,
        screen=screen,
        repair=repair,
    )


def _stored(config: SearchConfig) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=config.name, storage=config.storage_url).trials


def _both_ways(config: SearchConfig, monkeypatch: pytest.MonkeyPatch) -> NpasSearcher:
    """Trial 0 refused by the screen, trial 1 the same refusal the old way (a Ray trial
    refused by run_trial), both written to the config's storage."""
    monkeypatch.setattr(_searcher, "SCREENED_PER_SUGGEST", 1)
    searcher = _searcher_of(config, lambda cfg: dict(REFUSED))
    assert searcher.suggest("t0") is None  # one screened, then Ray Tune asks again
    assert searcher.screened == [0] and not searcher._live
    searcher.screen = None
    assert isinstance(searcher.suggest("t1"), dict)
    names = [name for name, _ in config.objectives]
    searcher.on_trial_complete("t1", report_of(dict(REFUSED), names))
    return searcher


def test_a_screened_proposal_is_recorded_as_the_refused_trial_it_would_have_been(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path)
    searcher = _both_ways(config, monkeypatch)
    screened, ran = _stored(config)
    assert screened.state == ran.state == TrialState.PRUNED
    assert screened.user_attrs[TrialAttr.SCREENED] is True
    assert TrialAttr.SCREENED not in ran.user_attrs
    assert (
        screened.user_attrs[f"{TrialAttr.METRIC_PREFIX}{Metric.REFUSED}"]
        == REFUSED[Metric.REFUSED]
    )
    mine = {
        k: v
        for k, v in screened.user_attrs.items()
        if k not in (TrialAttr.SCREENED, TrialAttr.CONFIG)
    }
    theirs = {k: v for k, v in ran.user_attrs.items() if k != TrialAttr.CONFIG}
    assert mine == theirs
    assert screened.system_attrs == ran.system_attrs
    assert not counts(screened) and counts(ran)
    study = optuna.load_study(study_name=config.name, storage=config.storage_url)
    assert trials_counted(study) == 1
    told = searcher.optimiser.study.trials[0]  # the optimiser's own copy was told
    assert told.state == TrialState.PRUNED


def test_the_progress_the_end_and_status_say_how_many_were_screened_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from search.cli._status import _status_lines, _status_record
    from search.run._ending import Ending, conclude
    from search.run._progress import Progress

    config = _config(tmp_path)
    searcher = _both_ways(config, monkeypatch)
    study = optuna.load_study(study_name=config.name, storage=config.storage_url)
    view = Progress(config.objectives, prior=study, total=4, enabled=False,
                    screened=lambda: 2)  # fmt: skip
    line = view.line()
    assert line.startswith("1/4 done (0 feasible, 1 infeasible, 0 failed)"), line
    assert "; 3 more refused before training (screened, not counted)" in line
    ending = Ending.of(searcher, ran=1, remaining=1, resumes=[], disk_full=False, signum=None)
    conclude(ending, study, config, tmp_path, progress=True)
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert "1 proposal(s) refused before training by the screen" in err
    record = _status_record(study, None)
    assert (record["infeasible"], record["screened"]) == (2, 1)
    lines = _status_lines(record)
    assert lines[1] == ("  1 of the infeasible refused before training by the screen: never "
                        "started, not counted toward trials")  # fmt: skip
    searcher.narrowed = [0]
    ending = Ending.of(searcher, ran=1, remaining=1, resumes=[], disk_full=False, signum=None)
    conclude(ending, study, config, tmp_path, progress=True)
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert "1 of them queued again with narrower widths" in err


def test_refusals_in_a_row_stop_the_search_naming_what_refused_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_searcher, "SCREENED_PER_SUGGEST", 2)
    monkeypatch.setattr(_searcher, "SCREENED_IN_A_ROW", 5)
    config = _config(tmp_path)
    budget = {**REFUSED, Metric.REFUSED: "budget: 30 is below the minimum budget 120"}
    said = iter([REFUSED, budget, REFUSED, REFUSED, REFUSED])
    searcher = _searcher_of(config, lambda cfg: dict(next(said)), recorded=False)  # a replay
    assert searcher.suggest("a") is None and searcher.suggest("b") is None
    assert searcher.stopped is None
    assert searcher.suggest("c") == Searcher.FINISHED
    assert searcher.screened == [0, 1, 2, 3, 4]
    assert searcher.stopped is not None
    assert "refused the last 5 proposals" in searcher.stopped
    assert "most refused by params <= 1000: 4 of them" in searcher.stopped


def test_a_trained_proposal_resets_the_run_of_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_searcher, "SCREENED_IN_A_ROW", 3)
    config = _config(tmp_path)
    said = iter([REFUSED, REFUSED, None, REFUSED, REFUSED, None])
    searcher = _searcher_of(config, lambda cfg: next(said), recorded=False)
    assert isinstance(searcher.suggest("a"), dict) and isinstance(searcher.suggest("b"), dict)
    assert searcher.stopped is None and searcher.screened == [0, 1, 3, 4]


def test_the_screen_applies_to_run_trial_when_the_config_asks(tmp_path: Path) -> None:
    from search.run._launch import _screen
    from search.screening import Screen
    from search.trial import run_trial

    config = _config(tmp_path)
    assert isinstance(_screen(config, run_trial), Screen)
    assert _screen(config, lambda cfg, on_epoch=None: {}) is None  # it refuses its own
    off = SearchConfig.from_dict({**config.to_dict(), "screen": False})
    assert _screen(off, run_trial) is None
    assert "screen" not in config.to_dict() and off.to_dict()["screen"] is False


def test_a_search_on_accuracy_within_a_params_limit_trains_what_it_starts(
    tmp_path: Path, local_ray: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """One objective and a params constraint under promotion MOASHA and TPE: the proposals
    over the limit are screened (recorded with their reason, never a Ray trial), and
    ``trials`` counts the trials Ray Tune ran."""
    from search.cli import main
    from search.run import launch

    config = make_config(
        tmp_path, optimiser="tpe", trials=4, objectives=[["accuracy", "maximize"]],
        constraints=["params <= 1500"], train={"epochs": 2, "batch_size": 64},
        space={"family": {"choices": ["mlp"]}, "mlp.depth": {"low": 1, "high": 2},
               "mlp.width": {"low": 8, "high": 128, "log": True},
               "ssn.mapping": {"choices": ["none", "single"]},
               "budget": {"low": 300, "high": 3000, "log": True,
                          "when": {"ssn.mapping": ["single"]}}},
        fixed={}, indicators=["params", "flops_infer"],
        scheduler={"name": "moasha", "type": "promotion", "reduction_factor": 2},
    )  # fmt: skip
    study = launch(config, progress=False)
    trials = _stored(config)
    screened = [t for t in trials if t.user_attrs.get(TrialAttr.SCREENED)]
    started = [t for t in trials if TrialAttr.RAY_TRIAL in t.user_attrs]
    assert screened, "the space was meant to propose some nets over the limit"
    assert len(started) == trials_counted(study) == 4
    assert not any(t.user_attrs.get(TrialAttr.SCREENED) for t in started)
    for trial in screened:
        assert trial.state == TrialState.PRUNED
        reason = trial.user_attrs[f"{TrialAttr.METRIC_PREFIX}{Metric.REFUSED}"]
        assert reason == "violates params <= 1500" or reason.startswith("budget: ")
    assert all(t.state == TrialState.COMPLETE or t.user_attrs.get(TrialAttr.PRUNED_AT)
               for t in started)  # fmt: skip
    narrowed = [t for t in started if TrialAttr.NARROWED in t.user_attrs]  # repair: true
    assert narrowed, "a plain MLP over the limit narrows into it (width 8: 682 params)"
    for trial in narrowed:
        assert trials[trial.user_attrs[TrialAttr.NARROWED]] in screened
        assert trial.user_attrs[f"{TrialAttr.METRIC_PREFIX}params"] <= 1500
    first = narrowed[0]
    assert main(["status", "--run", str(tmp_path), "--trial", str(first.number)]) == 0
    refused = first.user_attrs[TrialAttr.NARROWED]
    assert (f"  narrowed from trial {refused}, which the screen refused: the same point with "
            "narrower widths") in capsys.readouterr().out  # fmt: skip


def test_a_search_on_weights_screens_and_records_them_as_on_params(
    tmp_path: Path, local_ray: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``weights`` (what the exported model holds) as an objective and a constraint: the study
    takes it as it takes params, the proposals whose unshared model is over the limit are
    screened (Shapeshifted ones too: their network deploys those weights), and each trained
    trial's second value is its weights."""
    from search.cli import main
    from search.run import launch

    config = make_config(
        tmp_path, optimiser="random", trials=3,
        objectives=[["accuracy", "maximize"], ["weights", "minimize"]],
        constraints=["weights <= 3000"], train={"epochs": 1, "batch_size": 64},
        space={"family": {"choices": ["mlp"]}, "mlp.depth": {"low": 1, "high": 1},
               "mlp.width": {"low": 16, "high": 128, "log": True},
               "ssn.mapping": {"choices": ["none", "single"]},
               "budget": {"low": 600, "high": 1500, "when": {"ssn.mapping": ["single"]}}},
        fixed={}, indicators=["params"], repair=False,
    )  # fmt: skip
    study = launch(config, progress=False)
    assert study.user_attrs["objectives"] == [["accuracy", "maximize"], ["weights", "minimize"]]
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    trials = _stored(config)
    screened = [t for t in trials if t.user_attrs.get(TrialAttr.SCREENED)]
    started = [t for t in trials if TrialAttr.RAY_TRIAL in t.user_attrs]
    assert screened, "the space was meant to propose MLPs over 3,000 weights (width > 39)"
    assert len(started) == trials_counted(study) == 3
    key = f"{TrialAttr.METRIC_PREFIX}weights"
    for trial in screened:
        assert trial.user_attrs[f"{TrialAttr.METRIC_PREFIX}{Metric.REFUSED}"] == (
            "violates weights <= 3000"
        )
        assert trial.user_attrs[key] > 3000
    for trial in started:
        assert trial.state == TrialState.COMPLETE
        assert trial.values[1] == trial.user_attrs[key] <= 3000
    capsys.readouterr()
    assert main(["pareto", "--run", str(tmp_path), "--name", config.name]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "trial(s) (accuracy, weights, params)" in out, out


@pytest.mark.parametrize("optimiser", ["tpe", "nsga2", "random", "pymoo-nsga2"])
def test_every_optimiser_is_told_a_screened_proposal_and_asked_again(
    tmp_path: Path, optimiser: str
) -> None:
    """Samplers and a generational pymoo algorithm alike: half the proposals screened, the
    other half trained and told; every trial ends, and each screened one was told PRUNED."""
    config = _config(tmp_path, optimiser)
    turn = iter(range(10_000))
    searcher = _searcher_of(config, lambda cfg: dict(REFUSED) if next(turn) % 2 else None)
    names = [name for name, _ in config.objectives]
    for i in range(12):
        given = searcher.suggest(f"t{i}")
        if isinstance(given, dict):
            result = report_of({"accuracy": 0.5 + i / 100, "params": 500, Metric.FEASIBLE: 1.0,
                                "constraint_0": -500.0}, names)  # fmt: skip
            searcher.on_trial_complete(f"t{i}", result)
    told = searcher.optimiser.study.trials
    assert searcher.screened and all(told[n].state == TrialState.PRUNED for n in searcher.screened)
    assert all(t.state != TrialState.RUNNING for t in told)
    assert [t.number for t in _stored(config) if t.user_attrs.get(TrialAttr.SCREENED)] == (
        searcher.screened
    )


@pytest.mark.parametrize("optimiser", ["tpe", "nsga2", "random", "pymoo-nsga2"])
def test_a_refused_proposal_is_proposed_next_narrowed_until_the_screen_passes_it(
    tmp_path: Path, optimiser: str
) -> None:
    """``repair``: each proposal over the width the screen allows is followed, whatever the
    algorithm, by the same point with narrower widths, which trains; it names the refused
    one (``npas:narrowed_from``) in the storage, read through Optuna's own API."""
    config = _config(tmp_path, optimiser)

    def screen(cfg: Any) -> dict[str, Any] | None:
        return dict(REFUSED) if cfg.hyper["width"] > 24 else None

    searcher = _searcher_of(config, screen, repair=True)
    names = [name for name, _ in config.objectives]
    for i in range(16):
        if isinstance(searcher.suggest(f"t{i}"), dict):
            result = report_of({"accuracy": 0.5 + i / 100, "params": 500, Metric.FEASIBLE: 1.0,
                                "constraint_0": -500.0}, names)  # fmt: skip
            searcher.on_trial_complete(f"t{i}", result)
    stored = _stored(config)
    assert searcher.narrowed, "the space was meant to propose some nets too wide"
    repairs = [t for t in stored if TrialAttr.NARROWED in t.user_attrs]
    # each queued one proposed next; the last may still wait (a pymoo generation in flight)
    assert [t.user_attrs[TrialAttr.NARROWED] for t in repairs] == searcher.narrowed[: len(repairs)]
    assert len(searcher.narrowed) - len(repairs) <= 1
    for trial in repairs:
        refused = stored[trial.user_attrs[TrialAttr.NARROWED]]
        assert refused.user_attrs[TrialAttr.SCREENED] and trial.number > refused.number
        assert trial.state == TrialState.COMPLETE and TrialAttr.SCREENED not in trial.user_attrs
        width = f"{refused.params['family']}.width"
        assert trial.params[width] <= 24 < refused.params[width]
        others = {k: v for k, v in trial.params.items() if not k.endswith("width")}
        assert others == {k: v for k, v in refused.params.items() if not k.endswith("width")}


def test_the_screen_leaves_its_models_out_when_pickled() -> None:
    import pickle

    from search.config import TrialConfig
    from search.screening import Screen

    check = Screen()
    cfg = TrialConfig.from_dict({"dataset": "digits", "family": "mlp", "hyper": {"width": 64},
                                 "constraints": ["params <= 1000"]})  # fmt: skip
    assert check(cfg) is not None and check.models
    again = pickle.loads(pickle.dumps(check))  # Ray Tune pickles the searcher holding it
    assert again.models == {} and again(cfg) == check(cfg)


def test_an_unmet_budget_is_screened_on_a_declared_npz_dataset_too(tmp_path: Path) -> None:
    """A user's npz table (its shape read from its data, as the launch has read them): a
    budget no MLP of the space can meet is refused before it becomes a Ray trial, with
    run_trial's reason, as on a built-in dataset (issue 59: 9 of 115 ran as Ray trials)."""
    import numpy as np

    from objectives.datasets import DATASETS
    from search.run._launch import _screen
    from search.trial import run_trial

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "rows.npz", x_train=rng.normal(size=(60, 12)).astype(np.float32),
             y_train=np.arange(60) % 3)  # fmt: skip
    name = "screened-rows"
    try:
        config = make_config(
            tmp_path, optimiser="random", objectives=[["accuracy", "maximize"]], constraints=[],
            dataset={"name": name, "npz": str(tmp_path / "rows.npz"), "layout": "table"},
            space={"family": {"choices": ["mlp"]}, "mlp.width": {"low": 16, "high": 32},
                   "budget": {"low": 10, "high": 40}},
            fixed={"ssn.mapping": "single"}, indicators=["params"],
        )  # fmt: skip
        screen = _screen(config, run_trial)
        searcher = _searcher_of(config, screen)
        assert searcher.suggest("a") is None and not searcher._live  # never a Ray trial
        assert searcher.screened
        stored = _stored(config)
        for number in searcher.screened:
            reason = stored[number].user_attrs[f"{TrialAttr.METRIC_PREFIX}{Metric.REFUSED}"]
            assert reason.startswith("budget: ")
            assert not counts(stored[number])
            cfg = config.trial_config(stored[number].params)
            assert run_trial(cfg)[Metric.REFUSED] == reason  # what the Ray trial would say
    finally:
        DATASETS._entries.pop(name, None)
