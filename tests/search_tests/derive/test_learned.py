"""The learned start points (``search.derive._learned``): a point of the unit box maps into
any space's ranges as its docstring says, every stored point maps into a derived signal space,
and a signal search (the one layout with points) trains them first."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from search.derive import load_config
from search.derive._learned import FILE, generic, in_space, learned_points
from spaces import Categorical, Fixed, Float, Int, Space

SPACE = Space({
    "family": Categorical(["a", "b"]),
    "a.depth": Int(2, 5, when={"family": ["a"]}),
    "a.width": Int(4, 16, log=True, when={"family": ["a"]}),
    "b.depth": Int(1, 9, step=4, when={"family": ["b"]}),
    "lr": Float(0.01, 1.0, log=True),
    "augment": Categorical([False, True]),
    "kernel": Fixed(3),
})  # fmt: skip


def test_a_unit_point_lands_where_its_fractions_say():
    """Known answers: 0 the low end, 1 the high end, the middle of a log range its geometric
    middle, a categorical's choices split evenly, an int snapped to its step."""
    unit = {"family": "a", "depth": 0.0, "width": 1.0, "lr": 0.5, "augment": 0.5}
    assert in_space(SPACE, unit) == {"family": "a", "a.depth": 2, "a.width": 16, "lr": 0.1,
                                     "augment": True}  # fmt: skip
    assert in_space(SPACE, {**unit, "width": 0.5, "augment": 0.49})["a.width"] == 8  # sqrt(64)
    assert in_space(SPACE, {**unit, "augment": 0.49})["augment"] is False
    b = in_space(SPACE, {"family": "b", "depth": 0.6, "lr": 0.0})
    assert b == {"family": "b", "b.depth": 5, "lr": 0.01, "augment": True}  # 1 + 0.6×8 → 5
    assert in_space(SPACE, {"family": "c", "depth": 0.5}) is None  # a family it lacks


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["a", "b"]), st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4))
def test_every_unit_point_is_a_valid_point_of_the_space(family, fractions):
    unit = dict(zip(["depth", "width", "lr", "augment"], fractions, strict=True))
    point = in_space(SPACE, {"family": family, **unit})
    assert point is not None
    for name, value in point.items():
        assert SPACE.is_active(name, point) and SPACE[name].check(value), (name, value)
    assert all(not n.startswith("b." if family == "a" else "a.") for n in point)


def test_a_family_prefix_is_dropped_from_a_dimension_s_name():
    assert generic("conv1d.width", ["conv1d"]) == "width"
    assert generic("train.lr", ["conv1d"]) == "train.lr"
    assert generic("conv1d.train.lr", ["conv1d"]) == "train.lr"


def test_the_stored_points_are_fractions_of_the_signal_families():
    stored = yaml.safe_load(FILE.read_text())
    points = stored["signal"]["points"]
    assert len(points) >= 2 and "portfolio.py" in stored["signal"]["built"]
    for point in points:
        assert point["family"] in {"conv1d", "sepconv1d", "resnet1d"}
        assert all(0.0 <= v <= 1.0 for k, v in point.items() if k != "family")


def _signal_config(folder, limit: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    np.savez(folder / "s.npz", x_train=rng.normal(size=(120, 2, 64)).astype(np.float32),
             y_train=np.arange(120) % 3)  # fmt: skip
    return {"name": "learned", "dataset": {"name": "learned-s", "npz": str(folder / "s.npz"),
            "layout": "signal"}, "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
            "constraints": [f"params <= {limit}"], "limits": {"time": "2m"}}  # fmt: skip


@pytest.fixture
def unregistered():
    """The test's declared dataset, unregistered after it (a trial config declares it again)."""
    from objectives.datasets import DATASETS

    yield
    DATASETS._entries.pop("learned-s", None)


def test_a_signal_search_trains_the_learned_points_first(tmp_path, unregistered):
    """The derived start begins with the learned points, each a valid point of the search's
    space whose budget is within the params limit (a model up to 4× it Shapeshifted into
    it), then the plain nets; the lines say why."""
    from search.config._start import complete
    from search.screening import meta_model, trainable

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_signal_config(tmp_path, 1000)))
    config, derivation = load_config(str(path))
    stored = yaml.safe_load(FILE.read_text())["signal"]["points"]
    learned = learned_points("signal", derivation.config["space"])
    assert len(learned) >= 2 and config.start[: len(learned)] == learned
    assert [p["family"] for p in config.start[: len(learned)]] == [
        p["family"] for p in stored][: len(learned)]
    info = type("Info", (), {"in_shape": (2, 64), "num_classes": 3})()
    for point in config.start:
        cfg = config.trial_config(complete(config.space, point, config.space.sample(0)))
        unshared = trainable(meta_model(cfg, info, {}))
        assert cfg.budget <= 1000 and unshared <= 4 * 1000, point  # larger: Shapeshifted
    lines = {d.key: d for d in derivation.values}
    assert "learned points" in lines["start (learned)"].because
    assert lines["start"].because.startswith("trained next")


def test_a_fixed_family_keeps_its_own_start_points_and_says_which(tmp_path, unregistered):
    """A user who fixes the family keeps the derived start points of that family (learned,
    then plain), on the dimensions still searched, and the start line lists those, not the
    derived points of the other families."""
    data = {**_signal_config(tmp_path, 1000), "fixed": {"family": "sepconv1d"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    config, derivation = load_config(str(path))
    stored = yaml.safe_load(FILE.read_text())["signal"]["points"]
    assert sum(p["family"] == "sepconv1d" for p in stored) >= 2  # a portfolio is left
    assert len(config.start) >= 2
    assert all("family" not in p and all(k.startswith(("sepconv1d.", "budget", "train."))
                                          for k in p) for p in config.start)  # fmt: skip
    [line] = [d for d in derivation.values if d.key.startswith("start")]
    assert line.key == "start" and line.value.count("depth") == len(config.start)
    assert "fixed keys" in line.because


def test_no_layout_without_learned_points_gets_any():
    space = {"family": {"choices": ["convnet", "sepnet"]},
             "convnet.depth": {"low": 2, "high": 3}, "sepnet.stages": {"low": 1, "high": 3}}
    assert list(yaml.safe_load(FILE.read_text())) == ["signal"]  # images: round 7 failed
    assert learned_points("image", space) == [] and learned_points("table", space) == []
    one = {"family": {"choices": ["conv1d"]}, "conv1d.depth": {"low": 2, "high": 3}}
    stored = yaml.safe_load(FILE.read_text())["signal"]["points"]
    kept = learned_points("signal", one)  # only the stored points of the space's one family
    assert len(kept) <= sum(p["family"] == "conv1d" for p in stored)
    assert all(p["family"] == "conv1d" and set(p) == {"family", "conv1d.depth"} for p in kept)
