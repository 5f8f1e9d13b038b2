"""The space DSL: encodings, Optuna and pymoo with real studies and operators, plain data."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import optuna
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.evaluator import Evaluator
from pymoo.core.problem import Problem
from pymoo.core.termination import NoTermination
from pymoo.operators.sampling.rnd import FloatRandomSampling
from pymoo.problems.static import StaticProblem

from spaces._dsl import Categorical, Fixed, Float, Int, Space
from spaces._errors import ConfigError

optuna.logging.set_verbosity(optuna.logging.WARNING)
PROPERTY = settings(max_examples=60, deadline=None)


def example_space() -> Space:
    return Space(
        {
            "family": Categorical(["mlp", "convnet", "wrn"]),
            "width": Int(8, 64, log=True, when={"family": ["convnet", "wrn"]}),
            "kernel": Int(3, 7, step=2, when={"family": ["convnet"]}),
            "pooling": Categorical(["max", "avg", None], when={"kernel": [3, 5]}),
            "depth": Int(2, 20, step=3),
            "lr": Float(1e-4, 1e-1, log=True),
            "dropout": Float(0.0, 0.5),
            "bn": Categorical([True, False, 1, 1.5]),
            "classes": Fixed(10),
        }
    )


# -- hypothesis strategies -------------------------------------------------------------------

CHOICE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-1e3, 1e3, allow_nan=False),
    st.text(max_size=3),
)


@st.composite
def dimensions(draw, parents: dict) -> object:
    kind = draw(st.sampled_from(["int", "int_log", "float", "float_log", "cat", "fixed"]))
    when = None
    candidates = {n: d for n, d in parents.items() if isinstance(d, Categorical | Int)}
    if candidates and draw(st.booleans()):
        parent = draw(st.sampled_from(sorted(candidates)))
        dim = candidates[parent]
        values = (
            dim.choices if isinstance(dim, Categorical) else range(dim.low, dim.top + 1, dim.step)
        )
        when = {parent: draw(st.lists(st.sampled_from(list(values)), min_size=1, max_size=3))}
    if kind == "int":
        low = draw(st.integers(-20, 20))
        return Int(low, low + draw(st.integers(0, 40)), step=draw(st.integers(1, 5)), when=when)
    if kind == "int_log":
        low = draw(st.integers(1, 100))
        return Int(low, low + draw(st.integers(0, 5000)), log=True, when=when)
    if kind == "float":
        low = draw(st.floats(-10, 10))
        return Float(low, low + draw(st.floats(0, 100)), when=when)
    if kind == "float_log":
        low = draw(st.floats(1e-6, 10))
        return Float(low, low * draw(st.floats(1, 1e6)), log=True, when=when)
    if kind == "cat":
        key = lambda c: (type(c).__name__, c)  # noqa: E731 (unique as the DSL sees them)
        choices = draw(st.lists(CHOICE, min_size=1, max_size=4, unique_by=key))
        return Categorical(choices, when=when)
    return Fixed(draw(CHOICE), when=when)


@st.composite
def spaces(draw) -> Space:
    dims: dict = {}
    for i in range(draw(st.integers(1, 6))):
        dims[f"d{i}"] = draw(dimensions(dims))
    return Space(dims)


@st.composite
def configs(draw, space: Space) -> dict:
    """A valid config drawn value by value, independently of ``decode``."""
    config: dict = {}
    for name in space.names:
        dim = space[name]
        if not space.is_active(name, config):
            continue
        if isinstance(dim, Int):
            k = draw(st.integers(0, (dim.top - dim.low) // dim.step))
            config[name] = dim.low + k * dim.step
        elif isinstance(dim, Float):
            config[name] = draw(st.floats(dim.low, dim.high))
        elif isinstance(dim, Categorical):
            config[name] = draw(st.sampled_from(dim.choices))
        else:
            config[name] = dim.value
    return config


@st.composite
def space_and_point(draw) -> tuple[Space, np.ndarray]:
    space = draw(spaces())
    xl, xu = space.bounds()
    x = [draw(st.floats(lo, hi)) for lo, hi in zip(xl, xu, strict=True)]
    return space, np.array(x, dtype=float)


def assert_same_config(space: Space, a: dict, b: dict) -> None:
    """Exact, type-aware equality; log floats to a relative 1e-12 (exp/log round off)."""
    assert list(a) == list(b)
    for name in a:
        dim = space[name]
        if isinstance(dim, Float) and dim.log:
            assert math.isclose(a[name], b[name], rel_tol=1e-12)
        elif isinstance(dim, Float):
            assert a[name] == b[name]
        else:
            assert type(a[name]) is type(b[name]) and a[name] == b[name], name


def log_float_mask(space: Space) -> np.ndarray:
    free = [n for n in space.names if not isinstance(space[n], Fixed)]
    return np.array([isinstance(space[n], Float) and space[n].log for n in free], dtype=bool)


# -- encoding properties ---------------------------------------------------------------------


@PROPERTY
@given(st.data())
def test_decode_inverts_encode_for_every_valid_config(data):
    space = data.draw(spaces())
    config = data.draw(configs(space))
    x = space.encode(config)
    xl, xu = space.bounds()
    assert x.shape == (space.n_var,)
    assert np.all((xl <= x) & (x <= xu))
    assert_same_config(space, space.decode(x), space.validate(config))


@PROPERTY
@given(space_and_point())
def test_encode_decode_is_an_idempotent_projection_of_the_box(case):
    space, x = case
    config = space.decode(x)
    space.validate(config)
    projected = space.encode(config)
    again = space.encode(space.decode(projected))
    exact = ~log_float_mask(space)
    assert np.array_equal(again[exact], projected[exact])
    assert np.allclose(again, projected, rtol=1e-12, atol=0)
    assert_same_config(space, space.decode(projected), config)


@PROPERTY
@given(spaces(), st.lists(st.floats(-1e6, 1e6), min_size=6, max_size=6))
def test_decode_turns_any_finite_vector_into_a_valid_config(space, values):
    config = space.decode(np.array(values[: space.n_var]))
    assert space.validate(config) == config


@PROPERTY
@given(spaces())
def test_plain_data_round_trip_for_every_space(space):
    data = space.to_dict()
    assert Space.from_dict(data) == space
    assert Space.from_dict(yaml.safe_load(yaml.safe_dump(data))) == space


def test_encoding_of_each_dimension_type():
    space = example_space()
    xl, xu = space.bounds()
    assert space.n_var == len(space) - 1  # Fixed takes no variable
    config = {
        "family": "convnet",
        "width": 16,
        "kernel": 5,
        "pooling": None,
        "depth": 5,
        "lr": 1e-2,
        "dropout": 0.25,
        "bn": 1,
        "classes": 10,
    }
    x = space.encode(config)
    assert x[0] == 1.0  # categorical index
    assert x[1] == pytest.approx(math.log(16))  # log int in log space
    assert (xl[1], xu[1]) == pytest.approx((math.log(7.5), math.log(64.5)))
    assert x[4] == 5.0 and (xl[4], xu[4]) == (0.5, 21.5)  # half a step beyond the grid
    assert x[5] == pytest.approx(math.log(1e-2))
    assert x[7] == 2.0  # 1 is not True: index 2, not 0
    mlp = space.encode(
        {k: v for k, v in config.items() if k not in ("width", "kernel", "pooling")}
        | {"family": "mlp"}
    )
    # Inactive dimensions sit at a fixed neutral value: their first valid value.
    assert mlp[1] == pytest.approx(math.log(8)) and mlp[2] == 3.0 and mlp[3] == 0.0
    assert "width" not in space.decode(mlp)


def test_decode_rounds_clips_and_rejects_bad_vectors():
    space = Space({"n": Int(0, 10, step=4), "c": Categorical(["a", "b"]), "f": Float(1.0, 2.0)})
    assert space.decode([9.9, 7.0, -3.0]) == {"n": 8, "c": "b", "f": 1.0}
    assert space.decode([5.9, -0.4, 1.5]) == {"n": 4, "c": "a", "f": 1.5}
    with pytest.raises(ConfigError, match="length n_var=3"):
        space.decode([1.0, 2.0])
    with pytest.raises(ConfigError, match="finite"):
        space.decode([np.nan, 0.0, 1.0])


def test_sample_is_valid_and_uniform_over_grid_values():
    space = Space({"n": Int(1, 3), "c": Categorical(["a", "b"]), "w": Int(1, 4, when={"c": "b"})})
    rng = np.random.default_rng(0)
    draws = [space.sample(rng) for _ in range(3000)]
    for config in draws:
        space.validate(config)
    n = Counter(d["n"] for d in draws)
    assert set(n) == {1, 2, 3} and all(abs(v / 3000 - 1 / 3) < 0.04 for v in n.values())
    c = Counter(d["c"] for d in draws)
    assert abs(c["a"] / 3000 - 0.5) < 0.04
    assert all(("w" in d) == (d["c"] == "b") for d in draws)
    assert space.sample(7) == space.sample(np.random.default_rng(7))


# -- Optuna ----------------------------------------------------------------------------------


def test_suggest_with_a_real_study_only_suggests_active_dimensions():
    space = example_space()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    for _ in range(40):
        trial = study.ask()
        config = space.suggest(trial)
        assert space.validate(config) == config
        assert trial.params == {k: v for k, v in config.items() if k != "classes"}
        seen.add(config["family"])
        assert ("width" in config) == (config["family"] != "mlp")
        assert ("pooling" in config) == (config.get("kernel") in (3, 5))
        study.tell(trial, config["depth"])
    assert seen == {"mlp", "convnet", "wrn"}


def test_suggest_drives_a_multi_objective_nsga2_study():
    space = example_space()
    sampler = optuna.samplers.NSGAIISampler(population_size=4, seed=0)
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    for _ in range(12):
        trial = study.ask()
        config = space.suggest(trial)
        space.validate(config)
        study.tell(trial, [config["dropout"], config["depth"]])
    assert len(study.trials) == 12 and study.best_trials


def test_suggest_replays_a_hand_written_config_through_fixed_trial():
    space = example_space()
    config = space.sample(3)
    params = {k: v for k, v in config.items() if k != "classes"}
    assert space.suggest(optuna.trial.FixedTrial(params)) == config


# -- pymoo -----------------------------------------------------------------------------------


def test_pymoo_random_sampling_decodes_to_valid_configs():
    space = example_space()
    xl, xu = space.bounds()
    problem = Problem(n_var=space.n_var, n_obj=1, xl=xl, xu=xu)
    X = FloatRandomSampling().do(problem, 50, random_state=np.random.default_rng(0)).get("X")
    configs_ = [space.decode(x) for x in X]
    for config in configs_:
        space.validate(config)
    assert {c["family"] for c in configs_} == {"mlp", "convnet", "wrn"}


def test_pymoo_nsga2_offspring_decode_to_valid_configs():
    space = example_space()
    xl, xu = space.bounds()
    problem = Problem(n_var=space.n_var, n_obj=2, xl=xl, xu=xu)
    algorithm = NSGA2(pop_size=8)
    algorithm.setup(problem, termination=NoTermination(), seed=1)
    for _ in range(3):  # initial population, then two generations of SBX + PM offspring
        pop = algorithm.ask()
        configs_ = [space.decode(x) for x in pop.get("X")]
        for config in configs_:
            space.validate(config)
        F = np.array([[-c["dropout"], c["depth"]] for c in configs_], dtype=float)
        Evaluator().eval(StaticProblem(problem, F=F), pop)
        algorithm.tell(infills=pop)
    assert len(algorithm.pop) == 8


# -- validation ------------------------------------------------------------------------------

GOOD = {
    "family": "convnet",
    "width": 16,
    "kernel": 7,
    "depth": 5,
    "lr": 0.01,
    "dropout": 0.0,
    "bn": True,
    "classes": 10,
}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"widht": 3}, "unknown key 'widht' \\(value 3\\); allowed: \\['family'"),
        ({"width": None}, "missing key 'width': an int in \\[8, 64\\]"),
        ({"pooling": "max"}, "'pooling' \\(value 'max'\\) is inactive: .*kernel in \\[3, 5\\]"),
        ({"width": 65}, "key 'width': value 65 is not an int in \\[8, 64\\]"),
        ({"depth": 4}, "key 'depth': value 4 is not an int in \\[2, 20\\] in steps of 3"),
        ({"depth": 5.0}, "key 'depth': value 5.0 is not an int"),
        ({"width": True}, "key 'width': value True is not an int"),
        ({"lr": 0.5}, "key 'lr': value 0.5 is not a number in \\[0.0001, 0.1\\]"),
        ({"lr": float("nan")}, "key 'lr': value nan"),
        ({"bn": 1.0}, "key 'bn': value 1.0 is not one of \\[True, False, 1, 1.5\\]"),
        ({"classes": 11}, "key 'classes': value 11 is not exactly 10"),
    ],
)
def test_validate_names_key_value_and_what_is_allowed(change, needle):
    config = {k: v for k, v in (GOOD | change).items() if v is not None or k == "pooling"}
    with pytest.raises(ConfigError, match=needle):
        example_space().validate(config)


def test_validate_returns_declaration_order():
    shuffled = dict(reversed(GOOD.items()))
    assert list(example_space().validate(shuffled)) == [
        k for k in example_space().names if k in GOOD
    ]


def test_a_dimension_declared_before_its_parent_follows_it_the_rest_keeps_its_order():
    """A space means the same in any declared order (a YAML dump sorts its keys): a dimension
    whose condition names a later one moves just after it; nothing else moves."""
    space = Space({
        "a.width": Int(8, 64, when={"family": ["a"]}),
        "lr": Float(1e-3, 1e-1, log=True),
        "family": Categorical(["a", "b"]),
        "a.depth": Int(1, 3, when={"a.width": [8, 16]}),
        "b.width": Int(8, 64, when={"family": ["b"]}),
    })  # fmt: skip
    assert space.names == ["lr", "family", "a.width", "a.depth", "b.width"]
    ordered = Space({n: space[n] for n in space.names})
    assert ordered == space and ordered.names == space.names  # a valid order is kept as is


# -- construction errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (
            lambda: Space({"a": Int(0, 3, when={"c": [1]}), "b": Int(0, 3)}),
            "dimension 'a': condition on 'c', which is not a dimension",
        ),
        (
            lambda: Space({"a": Int(0, 3, when={"b": [1]}), "b": Int(0, 3, when={"a": [1]})}),
            "dimension 'a': condition on 'b', which cannot come first: the conditions form a",
        ),
        (
            lambda: Space({"a": Int(0, 3, when={"a": [1]})}),
            "dimension 'a': condition on 'a', which cannot come first: the conditions form",
        ),
        (  # a dimension whose parent is caught in a cycle it is not part of
            lambda: Space({"a": Int(0, 3, when={"b": [1]}), "b": Int(0, 3, when={"c": [1]}),
                           "c": Int(0, 3, when={"b": [1]})}),
            "dimension 'a': condition on 'b', which cannot come first: the conditions form",
        ),
        (
            lambda: Space({"a": Categorical(["x"]), "b": Int(0, 3, when={"a": ["y"]})}),
            "dimension 'b': condition value 'y' for 'a' is not one of \\['x'\\]",
        ),
        (lambda: Space([("a", Int(0, 1)), ("a", Int(0, 2))]), "dimension 'a' is declared twice"),
        (lambda: Int(3, 1), "low must be <= high"),
        (lambda: Int(1, 9, step=2, log=True), "log=True needs step=1"),
        (lambda: Int(0, 9, log=True), "low >= 1"),
        (lambda: Float(0.0, 1.0, log=True), "log=True needs low > 0"),
        (lambda: Float(0.0, float("inf")), "high must be finite"),
        (lambda: Categorical([]), "choices must not be empty"),
        (lambda: Categorical(["a", "a"]), "'a' appears twice"),
        (lambda: Categorical([[1]]), "choices must be None, bool, int"),
        (lambda: Int(0, 3, log=1), "log must be true or false"),
    ],
)
def test_bad_declarations_raise_config_errors(build, needle):
    with pytest.raises(ConfigError, match=needle):
        build()


def test_conditions_chain_through_inactive_parents():
    space = example_space()
    assert not space.is_active("pooling", {"family": "mlp"})
    assert space.is_active("pooling", {"family": "convnet", "kernel": 3})
    assert not space.is_active("pooling", {"family": "convnet", "kernel": 7})


# -- plain data ------------------------------------------------------------------------------


def test_plain_data_from_the_readme_example():
    space = Space.from_dict(
        {
            "family": {"choices": ["mlp", "convnet"]},
            "width": {
                "type": "int",
                "low": 8,
                "high": 64,
                "log": True,
                "when": {"family": ["convnet"]},
            },
            "lr": {"low": 1.0e-4, "high": 0.1, "log": True},
            "epochs": {"low": 1, "high": 5},
            "seed": {"value": 0},
        }
    )
    assert space == Space(
        {
            "family": Categorical(["mlp", "convnet"]),
            "width": Int(8, 64, log=True, when={"family": ["convnet"]}),
            "lr": Float(1e-4, 0.1, log=True),
            "epochs": Int(1, 5),
            "seed": Fixed(0),
        }
    )
    assert space.to_dict()["width"] == {
        "type": "int",
        "low": 8,
        "high": 64,
        "step": 1,
        "log": True,
        "when": {"family": ["convnet"]},
    }


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"w": {"type": "int", "low": 1, "hi": 3}}, "dimension 'w': unknown key 'hi' for type"),
        ({"w": {"type": "int", "low": 1}}, "dimension 'w': missing key 'high'"),
        ({"w": {"type": "integer", "low": 1}}, "dimension 'w': key 'type': 'integer' is not"),
        ({"w": [1, 2]}, "dimension 'w': must be a mapping of fields"),
        ({"w": {"low": 1.0, "high": "1e-3"}}, "dimension 'w': high must be a number.*1.0e-3"),
        ({"w": {"low": 1, "high": "x"}}, "dimension 'w': high must be a number"),
        ({"w": {"type": "int", "low": 1.5, "high": 3}}, "dimension 'w': low must be an int"),
        ({"w": {"choices": "abc"}}, "dimension 'w': choices must be a list"),
        ({"w": {"choices": [1], "when": ["x"]}}, "dimension 'w': when must be a mapping"),
        ({"w": {"choices": [1], "when": {"v": [1]}}}, "dimension 'w': condition on 'v'"),
        ([1, 2], "a space must be a mapping"),
    ],
)
def test_bad_plain_data_names_the_dimension_and_key(data, needle):
    with pytest.raises(ConfigError, match=needle):
        Space.from_dict(data)


def test_a_scalar_condition_means_a_one_value_list():
    space = Space.from_dict({"a": {"choices": ["x", "y"]}, "b": {"value": 1, "when": {"a": "y"}}})
    assert space["b"].when == (("a", ("y",)),)
    assert space.decode([0.0]) == {"a": "x"} and space.decode([1.0]) == {"a": "y", "b": 1}
