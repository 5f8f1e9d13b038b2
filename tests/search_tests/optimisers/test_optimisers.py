"""Contract tests every registered optimiser passes: ask, tell, fail, resume, seed (no Ray)."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from search.optimisers import OPTIMISERS, point_of
from search.record._schema import Metric
from spaces import Categorical, ConfigError, Fixed, Float, Int, Space, UnknownNameError

SPACE = Space(
    {
        "family": Categorical(["mlp", "convnet"]),
        "mlp.width": Int(4, 64, log=True, when={"family": ["mlp"]}),
        "convnet.depth": Int(1, 4, when={"family": ["convnet"]}),
        "lr": Float(1e-3, 1e-1, log=True),
        "kernel": Fixed(3),
    }
)
DIRECTIONS = ["maximize", "minimize"]
KEYS = ["params <= 40", Metric.FEASIBLE]
# Small populations and start-up phases, so a few trials reach the model-based phase.
OPTIONS = {
    "nsga2": {"population_size": 4},
    "nsga3": {"population_size": 4},
    "tpe": {"n_startup_trials": 4},
    "gp": {"n_startup_trials": 12},  # GP fits take seconds: two model-based asks after resuming
    "pymoo-nsga2": {"population_size": 4},
    "pymoo-nsga3": {"population_size": 4},
    "pymoo-smsemoa": {"population_size": 4},
}


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental-feature and fallback-sampling notes
        yield


def evaluate(point: dict) -> tuple[list[float], float] | None:
    """A cheap two-objective problem; None (a failure) for width 5."""
    if point.get("mlp.width") == 5:
        return None
    params = point.get("mlp.width", 0) + 10.0 * point.get("convnet.depth", 0)
    accuracy = 1 - 1 / (1 + params) - 0.05 * abs(math.log10(point["lr"]) + 2)
    return [accuracy, params], params - 40


def build(name: str, study: optuna.Study | None = None, seed: int = 0):
    opt = OPTIMISERS.get(name)(
        SPACE, DIRECTIONS, seed=seed, constraints=KEYS, **OPTIONS.get(name, {})
    )
    if study is None:
        study = optuna.create_study(directions=DIRECTIONS, sampler=opt.sampler())
    opt.bind(study)
    return opt, study


def run(opt, n: int, *, batch: int = 2) -> None:
    """Asks and tells ``n`` trials, ``batch`` in flight, recording constraints like launch."""
    pending, asked = [], 0
    while asked < n or pending:
        proposal = opt.ask() if asked < n and len(pending) < batch else None
        if proposal is None:
            assert pending, "an optimiser with nothing in flight must propose a point"
            trial, point = pending.pop(0)
            result = evaluate(point)
            if result is None:
                opt.tell(trial.number, None, TrialState.FAIL)
                continue
            values, violation = result
            trial.set_constraint(KEYS[0], violation)
            trial.set_constraint(Metric.FEASIBLE, float(violation > 0))
            opt.tell(trial.number, values, TrialState.COMPLETE)
            continue
        assert SPACE.validate(proposal.point) == proposal.point
        assert point_of(SPACE, proposal.trial.params) == proposal.point
        pending.append(proposal)
        asked += 1


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n == "gp" else n for n in OPTIMISERS.names()],
)  # GP: a Gaussian process fitted at every ask
def test_asks_tells_and_resumes(name):
    opt, study = build(name)
    assert opt.multi_objective
    run(opt, 10)
    states = [t.state for t in study.trials]
    assert len(states) == 10 and set(states) <= {TrialState.COMPLETE, TrialState.FAIL}
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert complete and all(len(t.values) == 2 for t in complete)
    assert all(set(t.constraints) == set(KEYS) for t in complete)
    assert study.best_trials  # the feasible front
    # Resume: a fresh optimiser bound to the same study continues from its history.
    resumed, _ = build(name, study, seed=1)
    run(resumed, 4)
    assert len(study.trials) == 14
    assert [t.state for t in study.trials[:10]] == states


@pytest.mark.parametrize("name", OPTIMISERS.names())
def test_same_seed_same_proposals(name):
    first, again = build(name)[0], build(name)[0]
    assert [first.ask().point for _ in range(3)] == [again.ask().point for _ in range(3)]


def _ask_all(opt, most: int = 100) -> list:
    """The proposals the optimiser makes before it has to wait (``most`` at most)."""
    proposals = []
    while len(proposals) < most and (proposal := opt.ask()) is not None:
        proposals.append(proposal)
    return proposals


def _tell(opt, proposal) -> None:
    values, violation = evaluate(proposal.point) or ([0.0, 0.0], 0.0)
    proposal.trial.set_constraint(KEYS[0], violation)
    proposal.trial.set_constraint(Metric.FEASIBLE, float(violation > 0))
    opt.tell(proposal.trial.number, values, TrialState.COMPLETE)


@pytest.mark.parametrize("name", OPTIMISERS.names("pymoo-*"))
def test_pymoo_waits_for_its_first_generation_only(name):
    """pymoo breeds from a told population, so the first generation is told in full before
    the second is proposed; after that, a generation still being evaluated leaves no worker
    waiting: the next one is bred from the population as last told."""
    opt, _ = build(name)
    assert opt.generational
    first = _ask_all(opt)
    assert 1 <= len(first) <= 4  # pymoo may drop duplicates from a population
    opt.tell(first[0].trial.number, None, TrialState.FAIL)  # worst values: it completes
    for proposal in first[1:]:
        _tell(opt, proposal)
    second = _ask_all(opt, 10)
    assert len(second) == 10  # the second generation and more, none of them told yet
    slow, *others = second
    for proposal in others:
        _tell(opt, proposal)
    waiting = opt._generations[0]
    assert slow.trial.number in opt._rows and opt._rows[slow.trial.number][0] is waiting
    assert all(g.pending for g in opt._generations[1:])  # only the last, being handed out
    iterations = opt._algorithm.n_iter
    _tell(opt, slow)
    assert opt._algorithm.n_iter == iterations + 1  # its generation was told to pymoo
    assert waiting not in opt._generations
    with pytest.raises(KeyError, match="in flight"):
        opt.tell(slow.trial.number, [0.0, 0.0], TrialState.COMPLETE)


def test_pymoo_resume_tells_history_again():
    opt, study = build("pymoo-nsga2")
    run(opt, 8, batch=4)
    resumed, _ = build("pymoo-nsga2", study)
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    told = resumed._algorithm.pop.get("X")
    history = [point_of(SPACE, t.params) for t in complete]
    assert len(told) >= 1 and all(resumed._encoding.decode(x) in history for x in told)
    assert np.all(np.isfinite(resumed._algorithm.pop.get("F")))


def test_unknown_name_and_option_are_named():
    with pytest.raises(UnknownNameError, match="pymoo-nsga2"):
        OPTIMISERS.get("nsga-9")
    with pytest.raises(ConfigError, match=r"'popsize'.*population_size"):
        OPTIMISERS.get("nsga2")(SPACE, DIRECTIONS, popsize=4)
    with pytest.raises(ConfigError, match="population_size"):
        OPTIMISERS.get("pymoo-nsga2")(SPACE, DIRECTIONS, population_size=1)
    with pytest.raises(ConfigError, match="directions"):
        OPTIMISERS.get("random")(SPACE, ["max"])


SMALL = Space(
    {
        "family": Categorical(["mlp", "convnet"]),
        "mlp.width": Int(4, 6, when={"family": ["mlp"]}),
        "convnet.depth": Int(1, 2, when={"family": ["convnet"]}),
    }
)  # five points in all


@pytest.mark.parametrize("name", OPTIMISERS.names("pymoo-*"))
def test_pymoo_repeats_no_point_until_the_space_is_exhausted(name):
    opt = OPTIMISERS.get(name)(SMALL, DIRECTIONS, seed=0, constraints=[], population_size=4)
    study = optuna.create_study(directions=DIRECTIONS, sampler=opt.sampler())
    opt.bind(study)
    points = []
    for _ in range(60):  # asks until 9 points are out; a generation at a time
        if len(points) == 9:
            break
        proposal = opt.ask()
        if proposal is None:
            continue  # the generation is told below
        points.append(proposal.point)
        score = proposal.point.get("mlp.width", 0) + proposal.point.get("convnet.depth", 0)
        opt.tell(proposal.trial.number, [score, -score], TrialState.COMPLETE)
    keys = [tuple(sorted(p.items())) for p in points]
    assert len(points) == 9, "an exhausted space must not stall the search"
    assert len(set(keys[:5])) == 5, f"a repeat before all 5 points were tried: {keys}"


@pytest.mark.parametrize("name", ["nsga2", "nsga3", "tpe", "random"])
def test_a_sampler_pickles_and_its_copy_goes_on(name):
    """Ray Tune pickles a search's searcher, its study's sampler with it (Optuna 5.1's genetic
    samplers hold a thread lock); a genetic sampler's copy writes generations under Optuna's
    own key, so that a study it recorded reads as one Optuna's sampler recorded."""
    opt, study = build(name)
    run(opt, 6)
    twin = pickle.loads(pickle.dumps(study.sampler))
    resumed = optuna.create_study(directions=DIRECTIONS, sampler=twin)
    resumed.add_trials(study.get_trials())
    trial = resumed.ask()
    assert set(trial.params) <= set(SPACE.names) and trial.number == 6
    optuna_class = getattr(optuna.samplers, type(study.sampler).__name__)
    assert isinstance(twin, optuna_class)
    if isinstance(twin, optuna.samplers.NSGAIISampler | optuna.samplers.NSGAIIISampler):
        key = twin._get_generation_key()
        assert key == optuna_class._get_generation_key() == f"{optuna_class.__name__}:generation"
