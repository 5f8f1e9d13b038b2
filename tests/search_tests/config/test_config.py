"""Search and trial configs: every bad input names its key, value and what is allowed."""

from __future__ import annotations

import copy
import json
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from search.config import (
    Constraint,
    Objective,
    SearchConfig,
    check_trial_config,
    list_presets,
    load_config,
    load_preset,
    parse_constraints,
)
from spaces import ConfigError, build_model

BASE: dict[str, Any] = {
    "name": "unit",
    "dataset": "digits",
    "space": {
        "family": {"choices": ["mlp", "convnet"]},
        "mlp.width": {"low": 8, "high": 32},
        "convnet.depth": [1, 2],
        "budget": {"low": 300, "high": 3000, "log": True},
        "ssn.mapping": {"choices": ["single", "auto"]},
        "ssn.stores": {"value": 2, "when": {"ssn.mapping": ["auto"]}},
        "train.lr": {"low": 0.01, "high": 0.3, "log": True},
    },
    "fixed": {"ssn": {"generator": "wavg"}, "convnet.width": 8},
    "train": {"epochs": 1, "batch_size": 64},
    "objectives": [["accuracy", "maximize"], "params"],
    "constraints": ["params <= 5000"],
    "algorithm": {"name": "nsga2", "options": {"population_size": 4}},
    "trials": 4,
    "resources": {"cpu": 1, "gpu": 0},
    "seed": 0,
    "indicators": ["params", "flops_infer"],
    "measure": {"threads": 1},
}


def edited(path: str, value: Any) -> dict[str, Any]:
    """BASE with ``path`` (keys joined by '/') set to ``value``; ``...`` deletes it."""
    data = copy.deepcopy(BASE)
    *parents, last = path.split("/")
    node = data
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def test_base_config_loads_with_typed_sections() -> None:
    config = load_config(BASE)
    assert config.objectives == (
        Objective("accuracy", "maximize"),
        Objective("params", "minimize"),
    )
    assert config.constraints == (Constraint("params<=5e3"),) == ("params <= 5000",)
    (bound,) = config.constraints
    assert (bound.indicator, bound.op, bound.value) == ("params", "<=", 5000.0)
    assert pickle.loads(pickle.dumps(bound)) == bound and json.dumps(bound) == '"params <= 5000"'
    assert config.constraint_texts == ["params <= 5000"]
    assert config.directions == ["maximize", "minimize"]
    assert config.fixed == {"ssn.generator": "wavg", "convnet.width": 8}
    assert config.resources.cpu == 1.0 and config.algorithm.options == {"population_size": 4}
    # <family>.<hyper> dimensions become conditional on the family automatically
    assert dict(config.space["mlp.width"].when) == {"family": ("mlp",)}
    assert config.space["convnet.depth"].choices == (1, 2)


# (edit path, new value, fragments the message must contain: key, value, what is allowed)
BAD = [
    ("trails", 5, ["'trails'", "5", "did you mean 'trials'"]),
    ("bogus", 5, ["'bogus'", "5", "allowed: ['dataset', ", " more]"]),
    ("train/epochs", 0, ["train.epochs", "0", "an int >= 1"]),
    ("train/epoch", 3, ["train: unknown key 'epoch'", "'epochs'"]),
    ("dataset", "imagenet", ["dataset", "'imagenet'", "digits", "mnist"]),
    ("space/family", ["mlp", "transformer"], ["space.family", "'transformer'", "search families"]),
    ("space/convnet.widht", [8, 16], ["space.convnet.widht", "'widht'", "'width'"]),
    ("space/colour", [1, 2], ["space.colour", "'colour'", "'budget'", "ssn.<option>"]),
    ("space/budget", {"low": 3000, "high": 300}, ["budget", "low must be <= high"]),
    ("space/budget", {"low": 300.0, "high": 3000.0}, ["space.budget", "300.0", "int >= 1"]),
    ("space/ssn.mapping", ["auto", "manual"], ["space.ssn.mapping", "'manual'", "'random'"]),
    ("space/ssn.stores", {"low": 1, "high": 3}, ["ssn.stores", "'single'", "when"]),
    ("space/train.optimiser", ["sgd"], ["train.optimiser", "'train.optimizer'"]),
    ("fixed/train", {"optimizer": "adam"}, ["fixed.train.optimizer", "'adam'", "adamw"]),
    ("fixed/ssn", {"generator": "magic"}, ["fixed.ssn.generator", "'magic'", "wavg"]),
    ("fixed/mlp.width", 8, ["mlp.width", "both searched"]),
    ("train/lr", 0.1, ["train.lr", "train section"]),
    ("fixed/scs.widths.1", 8, ["scs", "never searched"]),
    ("objectives", [["accuracy", "up"]], ["objectives[0].direction", "'up'", "maximize"]),
    ("objectives", ["bogus"], ["objectives[0]", "'bogus'", "search indicators"]),
    ("objectives", ["test_accuracy"], ["test_accuracy", "never optimised"]),
    ("objectives", [], ["objectives", "non-empty"]),
    ("objectives", ["params", "params"], ["objectives[1]", "'params'", "once"]),
    ("constraints", ["params =< 5"], ["constraints[0]", "'params =< 5'", "<=|<|>=|>"]),
    ("constraints", ["nope <= 5"], ["constraints[0]", "'nope'", "search indicators"]),
    ("constraints", ["params <= lots"], ["constraints[0]", "'params <= lots'", "<number>"]),
    ("constraints", "params <= 5", ["constraints", "a list of constraints"]),
    ("algorithm", "cmaes", ["algorithm.name", "'cmaes'", "docs/running.md"]),
    ("algorithm/options", {"bogus": 1}, ["algorithm", "'bogus'", "population_size"]),
    ("algorithm/algo", "x", ["algorithm: unknown key 'algo'", "'options'"]),
    ("trials", 0, ["trials", "0", "int >= 1"]),
    ("resources/cpu", 0, ["resources.cpu", "0", "[0.0001, inf]"]),
    ("resources/gpu", -0.5, ["resources.gpu", "-0.5", "[0.0, inf]"]),
    ("resources/mem", 4, ["resources: unknown key 'mem'", "'memory_mb'"]),
    ("indicators", ["params", "joy"], ["indicators[1]", "'joy'", "search indicators"]),
    ("measure/latency_budget", 1, ["measure: unknown key", "'latency_budget_s'"]),
    ("measure/warmup", -1, ["measure", "warmup", "-1", ">= 0"]),
    ("name", "bad name!", ["name", "'bad name!'", "letters"]),
    ("storage", "runs/npas.db", ["storage", "'runs/npas.db'", "SQLAlchemy URL"]),
    ("seed", -1, ["seed", "-1", "int >= 0"]),
    ("val_size", 1.5, ["val_size", "1.5", "fraction in (0, 1)"]),
    ("space", ..., ["space: missing"]),
]


@pytest.mark.parametrize(("path", "value", "fragments"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_names_key_value_and_allowed(path: str, value: Any, fragments: list[str]):
    with pytest.raises(ConfigError) as info:
        load_config(edited(path, value))
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("key", ["trails", "bogus"])
def test_an_unknown_key_is_one_line_that_fits_a_terminal(key: str) -> None:
    """With the error's prefix and a file name (``search launch: error: my-search.yaml: ``): the
    closest key where one is close, else as many allowed keys as fit (it printed all 31, 401
    columns)."""
    with pytest.raises(ConfigError) as info:
        load_config(edited(key, 4))
    line = f"search launch: error: my-search.yaml: {info.value}"
    assert len(line) <= 100 and "\n" not in line, line
    assert ("did you mean 'trials'" in line) == (key == "trails")
    assert ("allowed: ['dataset', " in line) == (key == "bogus")
    with pytest.raises(ConfigError, match=r"\(value \{'a': 'long value.*…\)"):
        load_config(edited(key, {"a": "long value " * 9}))  # a long value is cut too


def test_family_is_required_and_list_elements_need_no_gaps() -> None:
    data = edited("space/family", ...)
    for key in ("mlp.width", "convnet.depth"):
        del data["space"][key]
    with pytest.raises(ConfigError, match=r"family: missing.*; search families lists them$"):
        load_config(data)
    data = edited("space/scs.widths.1", [4, 8])
    data["space"]["family"] = {"choices": ["mlp", "convnet", "scs"]}
    with pytest.raises(ConfigError, match=r"scs\.widths: elements \[1\] must be numbered 0"):
        load_config(data)


def test_list_hyper_parameters_are_assembled_from_elements() -> None:
    data = edited("space/family", ["scs"])
    for key in ("mlp.width", "convnet.depth"):
        del data["space"][key]
    data["fixed"] = {"scs.widths.2": 6}
    data["space"] |= {"scs.widths.0": [4, 5], "scs.widths.1": {"low": 3, "high": 3}}
    config = load_config(data)
    cfg = config.trial_config(config.space.sample(0)).to_dict()
    assert cfg["family"] == "scs" and cfg["hyper"]["widths"][1:] == [3, 6]
    assert cfg["hyper"]["widths"][0] in (4, 5)


def test_trial_config_merges_train_fixed_and_point() -> None:
    config = load_config(BASE)
    point = {"family": "convnet", "convnet.depth": 2, "budget": 700, "ssn.mapping": "auto",
             "ssn.stores": 2, "train.lr": 0.05}  # fmt: skip
    cfg = config.trial_config(point, artifact_dir="somewhere").to_dict()
    assert cfg["hyper"] == {"width": 8, "depth": 2}  # fixed convnet.width, searched depth
    assert cfg["ssn"]["stores"] == 2
    assert cfg["ssn"]["generator"] == "wavg" and cfg["ssn"]["mapping"] == "auto"
    assert cfg["train"]["epochs"] == 1 and cfg["train"]["lr"] == 0.05
    assert cfg["train"]["schedule"] == "onecycle"  # a default filled in
    assert cfg["objectives"] == [["accuracy", "maximize"], ["params", "minimize"]]
    assert cfg["constraints"] == ["params <= 5000"] and cfg["artifact_dir"] == "somewhere"
    with pytest.raises(ConfigError, match=r"point: .*'convnet\.depth'.*value 7"):
        config.trial_config(point | {"convnet.depth": 7})


def test_distillation_without_a_teacher_is_refused_at_load() -> None:
    """Each trial would refuse it once the search runs: the config is refused first, wherever
    the option is set (train, space, fixed); its default, or a teacher anywhere, passes."""
    searched = edited("space/train.distill_weight", {"low": 0.1, "high": 0.9})
    with pytest.raises(ConfigError, match=r"space\.train\.distill_weight: distillation needs a "
                                          r"teacher"):  # fmt: skip
        load_config(searched)
    with pytest.raises(ConfigError, match=r"^train\.distill_temperature: distillation needs"):
        load_config(edited("train/distill_temperature", 2.0))
    load_config(edited("train/distill_weight", 0.5))  # its default: distils nothing
    searched["train"]["teacher"] = {"family": "mlp", "train": {"epochs": 1}}
    load_config(searched)


def test_the_recipe_levers_and_the_batch_size_are_searchable() -> None:
    data = edited("train/batch_size", ...)
    data["space"] |= {
        "train.ema": {"low": 0.9, "high": 0.999},
        "train.distill_weight": {"low": 0.1, "high": 0.9},
        "train.distill_temperature": [2.0, 4.0],
        "train.batch_size": [32, 64, 128],
    }
    data["train"]["teacher"] = {"family": "mlp", "hyper": {"width": 16}, "train": {"epochs": 1}}
    config = load_config(data)
    recipe = config.trial_config(config.space.sample(0)).recipe()
    assert recipe.ema is not None and 0.9 <= recipe.ema <= 0.999
    assert 0.1 <= recipe.distill_weight <= 0.9 and recipe.distill_temperature in (2.0, 4.0)
    assert recipe.batch_size in (32, 64, 128)
    assert recipe.teacher is not None and recipe.teacher.hyper == {"width": 16}
    with pytest.raises(ConfigError, match=r"space\.train\.ema: got 1\.5"):
        load_config(edited("space/train.ema", {"low": 0.5, "high": 1.5}))
    with pytest.raises(ConfigError, match=r"train\.teacher: unknown teacher option 'hyperr'"):
        load_config(edited("train/teacher", {"family": "mlp", "train": {"epochs": 1},
                                             "hyperr": {}}))  # fmt: skip


def test_a_family_trains_with_its_own_options_over_the_common_ones() -> None:
    data = edited("fixed/mlp.train.optimizer", "adamw")
    data["space"]["mlp.train.lr"] = {"low": 0.001, "high": 0.01, "log": True}
    config = load_config(data)
    point = {"family": "mlp", "mlp.width": 16, "budget": 700, "ssn.mapping": "single",
             "train.lr": 0.2, "mlp.train.lr": 0.003}  # fmt: skip
    train = config.trial_config(point).train
    assert train["optimizer"] == "adamw" and train["lr"] == 0.003
    other = {"family": "convnet", "convnet.depth": 2, "budget": 700, "ssn.mapping": "single",
             "train.lr": 0.2}  # fmt: skip
    train = config.trial_config(other).train
    assert train["optimizer"] == "sgd" and train["lr"] == 0.2  # the common options
    assert not config.space.is_active("mlp.train.lr", other)
    for key, value, fragment in [("mlp.train.nope", 1, r"mlp\.train\.lr"),
                                 ("mlp.train.optimizer", "adam9", "adamw"),
                                 ("wrn.train.lr", 0.1, "never searched")]:  # fmt: skip
        with pytest.raises(ConfigError, match=fragment):
            load_config(edited(f"fixed/{key}", value))


def test_mapping_none_is_the_plain_model_in_the_same_search() -> None:
    data = copy.deepcopy(BASE)
    space = data["space"]
    budget = space.pop("budget")
    space["ssn.mapping"] = {"choices": ["none", "single", "auto"]}
    space["budget"] = budget | {"when": {"ssn.mapping": ["single", "auto"]}}
    config = load_config(data)
    plain = config.trial_config({"family": "convnet", "convnet.depth": 2, "ssn.mapping": "none",
                                 "train.lr": 0.1})  # fmt: skip
    assert plain.budget is None and plain.ssn == load_config(BASE).trial_config(
        {"family": "convnet", "convnet.depth": 2, "budget": 700, "ssn.mapping": "single",
         "train.lr": 0.1}).ssn  # fmt: skip
    rng = np.random.default_rng(0)
    budgets = {config.trial_config(config.space.sample(rng)).budget is None for _ in range(30)}
    assert budgets == {True, False}  # both kinds are sampled
    with pytest.raises(ConfigError, match=r"ssn\.mapping"):
        load_config(edited("fixed/ssn", {"generator": "wavg", "mapping": "nothing"}))


@pytest.mark.parametrize("name", list_presets())
def test_presets_sample_encode_decode_and_give_valid_trial_configs(name: str) -> None:
    config = load_preset(name)
    assert config.name == name
    rng = np.random.default_rng(0)
    families = set()
    for _ in range(20):
        point = config.space.sample(rng)
        assert config.space.decode(config.space.encode(point)) == point
        cfg = config.trial_config(point).to_dict()
        assert check_trial_config(cfg) == cfg  # complete and stable
        families.add(cfg["family"])
    searched = config.space["family"].choices if "family" in config.space else None
    assert families == set(searched or [config.fixed["family"]])


@pytest.mark.parametrize("name", list_presets())
def test_no_start_point_of_a_preset_would_be_refused_untrained(name: str) -> None:
    """`search check` of every preset is quiet about its start points: none over a constraint
    nor Shapeshifted into a budget its model cannot meet."""
    from search.screening._floor import start_warnings

    assert start_warnings(load_preset(name)) == []


def test_presets_are_the_three_promised_with_their_objectives() -> None:
    assert {"digits-quick", "mnist-tiny", "cifar10-wrn"} <= set(list_presets())
    tiny = load_preset("mnist-tiny")
    assert tiny.objective_names == ["accuracy", "params", "flops_infer"]
    assert tiny.space["budget"].low == 300 and tiny.space["budget"].high == 2000
    assert tiny.scheduler.name == "moasha" and "none" in tiny.space["ssn.mapping"].choices
    point = {"family": "scs", "scs.widths.0": 4, "scs.widths.1": 4, "scs.widths.2": 4,
             "scs.depthwise": False, "scs.train.lr": 0.01, "ssn.mapping": "none"}  # fmt: skip
    scs = tiny.trial_config(point)
    assert scs.budget is None and scs.train["optimizer"] == "adamw" and scs.train["lr"] == 0.01
    wrn = load_preset("cifar10-wrn")
    assert wrn.resources.gpu == 0.25 and wrn.fixed["family"] == "wrn"
    assert wrn.space["ssn.stores"].high == 14
    assert set(wrn.space["ssn.upsampler"].choices) == {"mask", "inter", "repeat"}
    with pytest.raises(ConfigError, match=r"preset: got 'nope'; allowed: see search presets$"):
        load_preset("nope")


@pytest.mark.parametrize("name", list_presets())
def test_yaml_round_trip_gives_an_equal_config(name: str, tmp_path: Path) -> None:
    config = load_preset(name)
    path = tmp_path / "search.yaml"
    path.write_text(config.to_yaml())
    again = load_config(path)
    assert again == config
    assert SearchConfig.from_dict(config.to_dict()) == config


def test_report_test_is_off_by_default_and_reaches_every_trial_when_on() -> None:
    """Per-trial test figures are asked for (a benchmark's); off, the stored config is as
    before the key existed (a stored search resumes)."""
    off = SearchConfig.from_dict(BASE)
    point = off.space.sample(0)
    assert off.report_test is False and "report_test" not in off.to_dict()
    assert off.trial_config(point).report_test is False
    on = SearchConfig.from_dict({**BASE, "report_test": True})
    assert on.to_dict()["report_test"] is True and SearchConfig.from_dict(on.to_dict()) == on
    assert on.trial_config(point).report_test is True
    assert on.trial_config(point).to_dict()["report_test"] is True
    with pytest.raises(ConfigError, match=r"report_test: got 'yes'; allowed: true or false"):
        SearchConfig.from_dict({**BASE, "report_test": "yes"})
    # opted in, the test metrics are still never an objective or a constraint
    for key, value in (("objectives", ["test_accuracy"]), ("constraints", ["test_loss <= 1"])):
        with pytest.raises(ConfigError, match="is measured on the test set"):
            SearchConfig.from_dict({**BASE, "report_test": True, key: value})


def test_yaml_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("dataset: digits\nspace: {family: [mlp\n")
    with pytest.raises(
        ConfigError, match=r"(?s)broken\.yaml: not valid YAML: .*broken\.yaml\", line 2"
    ):
        load_config(path)
    path.write_text(yaml.safe_dump(edited("train/epochs", "three")))
    with pytest.raises(ConfigError, match=r"broken\.yaml: train\.epochs: got 'three'"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"does not exist.*digits-quick"):
        load_config(tmp_path / "missing.yaml")


def test_yaml_reads_exponent_floats_and_names_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "my-search.yaml"
    text = yaml.safe_dump(edited("name", ...), sort_keys=False).replace("0.01", "1e-2")
    assert "1e-2" in text
    path.write_text(text)
    config = load_config(path)
    assert config.name == "my-search" and config.space["train.lr"].low == 0.01


def test_optimiser_names_come_from_the_registry() -> None:
    from search.optimisers import OPTIMISERS

    for name in OPTIMISERS.names():
        assert load_config(edited("algorithm", name)).algorithm.name == name


# -- trial configs ----------------------------------------------------------------------------

TRIAL = {"dataset": "digits", "family": "mlp"}

BAD_TRIALS = [
    ({"family": ...}, ["family: missing", "search families"]),
    ({"epochs": 3}, ["unknown key 'epochs'", "allowed: ['", " more]"]),
    ({"hyper": {"widht": 3}}, ["hyper (family mlp)", "'widht'", "'width'"]),
    ({"train": {"batch_size": 0}}, ["train.batch_size", "0", "int >= 1"]),
    ({"train": {"lr": -1.0}}, ["train.lr", "-1.0", "(0.0, inf]"]),
    ({"ssn": {"stores": 2}}, ["ssn.stores", "'single'", "'auto' or 'random'"]),
    ({"ssn": {"upsampler": "zoom"}}, ["ssn.upsampler", "'zoom'", "inter"]),
    ({"budget": 0}, ["budget", "0", "int >= 1"]),
    ({"device": "gpu"}, ["device", "'gpu'", "'cuda:1'"]),
    ({"indicators": []}, ["indicators", "non-empty list"]),
    ({"constraints": ["params << 3"]}, ["constraints[0]", "'params << 3'"]),
    ({"progress": "yes"}, ["progress", "'yes'", "true or false"]),
]


@pytest.mark.parametrize(("edit", "fragments"), BAD_TRIALS, ids=[str(b[0]) for b in BAD_TRIALS])
def test_bad_trial_config_names_key_value_and_allowed(edit: dict, fragments: list[str]) -> None:
    cfg = {k: v for k, v in (TRIAL | edit).items() if v is not ...}
    with pytest.raises(ConfigError) as info:
        check_trial_config(cfg)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_trial_config_defaults_are_complete() -> None:
    cfg = check_trial_config({"dataset": "Digits", "family": "MLP"})
    assert cfg["dataset"] == "digits" and cfg["family"] == "mlp" and cfg["budget"] is None
    assert cfg["ssn"]["mapping"] == "single" and cfg["train"]["epochs"] == 3
    assert cfg["objectives"] == [["accuracy", "maximize"], ["params", "minimize"]]
    assert cfg["indicators"] is None and cfg["device"] is None and cfg["seed"] == 0


# -- constraints ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(["<=", "<", ">=", ">"]),
    bound=st.floats(-1e6, 1e6, allow_nan=False),
    value=st.floats(-1e6, 1e6, allow_nan=False),
)
def test_violation_is_positive_exactly_when_the_bound_is_broken(op, bound, value) -> None:
    c = Constraint.parse(f"latency_ms {op} {bound!r}")
    assert c.value == bound
    held = {"<=": value <= bound, "<": value < bound, ">=": value >= bound, ">": value > bound}
    assert (c.violation({"latency_ms": value}) <= 0) == held[op]
    assert Constraint.parse(str(c)) == c


def test_missing_or_unmeasured_metric_violates() -> None:
    (c,) = parse_constraints(["peak_mem_train_mb <= 10"])
    assert c.violation({}) == math.inf
    assert c.violation({"peak_mem_train_mb": None}) == math.inf
    assert c.violation({"peak_mem_train_mb": 4.0}) == -6.0


def test_mlp_is_searchable_by_depth_and_width() -> None:
    model = build_model("mlp", (1, 8, 8), 10, depth=2, width=16)
    widths = [m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert widths == [16, 16, 10]
    assert build_model("mlp", (4,), 3, depth=0).layers[1].in_features == 4  # linear classifier
    with pytest.raises(ConfigError, match=r"either hidden or depth/width.*hidden=\[8\]"):
        build_model("mlp", (4,), 3, hidden=[8], depth=1)


# -- the budget floor ----------------------------------------------------------------------------


def _floor_config(budget: Any, **space: Any) -> SearchConfig:
    return load_config({"dataset": "digits", "space": {"family": ["convnet", "mlp"], **space,
                                                       "budget": budget}})  # fmt: skip


def test_a_budget_below_every_model_is_warned_with_the_smallest_minimum() -> None:
    from search.screening._floor import budget_warning
    from spaces.ssn import minimum_budget

    text = budget_warning(_floor_config({"low": 10, "high": 50}))
    assert text is not None and text.startswith("budget: at most 50 parameters")
    smallest = min(minimum_budget(build_model(f, (1, 8, 8), 10)) for f in ("convnet", "mlp"))
    assert f"smallest: {smallest}, for " in text


@pytest.mark.parametrize(
    ("budget", "space"),
    [
        ({"low": 10, "high": 100_000}, {}),  # the range reaches the minimum
        ({"low": 10, "high": 50}, {"ssn.upsampler": ["mask", "inter"]}),  # inter's is lower
    ],
)
def test_a_budget_some_model_meets_is_not_warned(budget: Any, space: dict) -> None:
    from search.screening._floor import budget_warning

    config = _floor_config(budget, **space, **{"mlp.width": {"low": 4, "high": 64}})
    assert budget_warning(config) is None


def test_a_budget_above_every_plain_model_is_warned_and_one_below_some_is_not() -> None:
    """A budget larger than the plain model itself passed `search check` silently: the
    Shapeshifted nets then hold more parameters than the nets they stand for."""
    from search.screening._floor import budget_above_warning

    width = {"mlp.width": {"low": 4, "high": 16}, "mlp.depth": 1, "family": ["mlp"]}
    largest = sum(p.numel() for p in build_model("mlp", (1, 8, 8), 10, depth=1, width=16)
                  .parameters())  # fmt: skip
    text = budget_above_warning(_floor_config({"low": largest + 1, "high": 5 * largest}, **width))
    assert text is not None and text.startswith(f"budget: at least {largest + 1} parameters")
    assert f"(largest: {largest:,}, mlp(" in text
    meets = _floor_config({"low": largest, "high": 5 * largest}, **width)
    assert budget_above_warning(meets) is None


def test_plain_points_do_not_hide_that_every_shapeshifted_one_is_infeasible() -> None:
    from search.screening._floor import budget_warning

    budget = {"low": 10, "high": 50, "when": {"ssn.mapping": ["single"]}}
    config = _floor_config(budget, **{"ssn.mapping": ["none", "single"]})
    assert "every Shapeshifted trial is likely infeasible" in budget_warning(config)


def test_the_floor_check_builds_no_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """A WRN-28-10 corner (36.5M parameters) is checked on the meta device: shapes, no memory
    (built for real, one config took 3.4 GB at launch)."""
    from search.screening import _floor, _meta

    built: list[torch.device] = []

    def spy(*args: Any, **kwargs: Any) -> torch.nn.Module:
        model = build_model(*args, **kwargs)
        built.append(next(model.parameters()).device)
        return model

    monkeypatch.setattr(_meta, "build_model", spy)
    config = load_config({"dataset": "cifar10", "space": {
        "family": ["wrn"], "wrn.depth": {"value": 28}, "wrn.widen": {"value": 10},
        "budget": {"low": 10, "high": 50}}})  # fmt: skip
    text = _floor.budget_warning(config)
    assert built and all(d.type == "meta" for d in built)
    assert text is not None and "smallest: " in text


def test_chance_from_reaches_both_moasha_types_and_a_bad_value_is_refused() -> None:
    from search.schedulers._named import SCHEDULERS

    def config(scheduler: Any) -> SearchConfig:
        return load_config({"dataset": "digits", "space": {"family": ["mlp"]},
                            "scheduler": scheduler})  # fmt: skip

    for kind in ("stopping", "promotion"):
        made = SCHEDULERS.get("moasha")(config({"name": "moasha", "type": kind, "chance_from": 3}))
        assert made.chance_from == 3
    assert SCHEDULERS.get("moasha")(config("moasha")).chance_from == 1  # the first rung
    with pytest.raises(ConfigError, match=r"scheduler\.chance_from: got 0"):
        config({"name": "moasha", "chance_from": 0})
