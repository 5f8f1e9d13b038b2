"""The ``start`` key: points a search trains first, checked against the space before anything
runs; every bad point names its index, its key and what is allowed."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from search.config import SearchConfig, load_preset
from search.config._start import complete
from search.screening._describe import describe
from spaces import ConfigError

RECORD = load_preset("mnist-record")


def _with(start: Any) -> SearchConfig:
    return SearchConfig.from_dict({**RECORD.to_dict(), "start": start})


def test_points_nested_or_dotted_load_and_round_trip() -> None:
    config = _with([
        {"sepnet": {"stem": 8, "separable": True, "expansion": 2.0}, "train.lr": 0.01},
        {"ssn.mapping": "single", "budget": 900, "ssn": {"generator": "emb"}},
    ])  # fmt: skip
    assert config.start == [
        {"sepnet.stem": 8, "sepnet.separable": True, "sepnet.expansion": 2.0, "train.lr": 0.01},
        {"ssn.mapping": "single", "budget": 900, "ssn.generator": "emb"},
    ]
    again = SearchConfig.from_dict(yaml.safe_load(config.to_yaml()))
    assert again == config
    assert "Start: 2 point(s) trained first" in describe(config, cost=False)


def test_no_start_is_left_out_of_the_stored_config() -> None:
    assert RECORD.start == []
    assert "start" not in RECORD.to_dict()


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ({"sepnet.stem": 8}, "start: got {'sepnet.stem': 8}; allowed: a list of points"),
        ([{}], "start[0]: got {}; allowed: a point naming at least one searched dimension"),
        ([7], "start[0]"),
        ([{"sepnet.stemm": 8}], "stemm: not a searched dimension (did you mean 'sepnet.stem'?)"),
        ([{"sepnet.kernel": 5}], "start[0].sepnet.kernel: fixed at 3 (fixed.sepnet.kernel)"),
        ([{"sepnet.stem": 2}], "start[0].sepnet.stem: got 2; allowed: an int in [4, 16]"),
        ([{"train.optimizer": "adam"}], "start[0].train.optimizer: got 'adam'"),
        ([{"budget": 900}], "['single']: give ssn.mapping in the point too"),
        ([{"ssn.mapping": "none", "budget": 900}], "this point has ssn.mapping = 'none'"),
        ([{"sepnet.separable": False, "sepnet.expansion": 2.0}],
         "start[0].sepnet.expansion: 'sepnet.expansion' applies only when sepnet.separable"),
        ([{"sepnet.stem": 8}, {"sepnet": {"stem": 8}}], "start[1]: the same point as start[0]"),
    ],
)
def test_a_bad_point_is_refused_with_its_index_key_and_what_is_allowed(start, message) -> None:
    with pytest.raises(ConfigError) as err:
        _with(start)
    assert message in str(err.value)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), keep=st.floats(0.0, 1.0))
def test_any_part_of_a_point_of_the_space_is_a_valid_start(seed: int, keep: float) -> None:
    """A sampled point cut to any subset of its dimensions closed under their conditions is
    accepted, and completing it gives a valid point of the space that keeps its values."""
    space = RECORD.space
    point = space.sample(seed)
    rng = random.Random(seed)
    kept = {n for n in point if space[n].kind != "fixed" and rng.random() < keep}
    grown = True
    while grown:  # a kept dimension brings the dimensions its condition reads
        parents = {p for n in kept for p, _ in space[n].when if space[p].kind != "fixed"}
        grown = not parents <= kept
        kept |= parents
    part = {n: point[n] for n in space.names if n in kept}
    if not part:
        return
    config = _with([part])
    assert config.start == [part]
    whole = complete(space, part, space.sample(seed + 1))
    assert space.validate(whole) == whole
    assert {n: whole[n] for n in part} == part


def test_a_start_point_over_a_params_or_flops_constraint_is_warned_of_by_check() -> None:
    from search.screening._describe import suspicions

    seeded = load_preset("mnist-record-seeded")
    big = {"sepnet": {"stem": 24, "stages": 3, "blocks": 2, "width": 24, "growth": 2.0,
                      "expansion": 2.0, "reuse": 3},
           "ssn.mapping": "none"}  # fmt: skip
    over = {**seeded.to_dict(), "start": [*seeded.to_dict()["start"], big]}
    warnings = suspicions(SearchConfig.from_dict(over), floor=False)
    (line,) = [w for w in warnings if w.startswith("start[")]
    assert line.startswith(f"start[{len(seeded.start)}]: misses params <= 1000 (params ")
    assert "flops_infer <= 2000000 (flops_infer " in line and "refused untrained" in line
    assert not [w for w in suspicions(seeded, floor=False) if w.startswith("start[")]


def test_a_start_point_whose_budget_shapeshifting_cannot_meet_is_warned_of_by_check() -> None:
    """Round 5's start point 5: the record's layout at widths 8 and 12 Shapeshifted into 480
    with emb/inter, more than one emb store uses (447 at most): refused untrained in the
    search, and now named by `search check` with Shapeshifting's own reason."""
    from search.screening._describe import suspicions

    valid = load_preset("mnist-record-valid").to_dict()
    layout = {"sepnet": {"stem": 8, "blocks": 4, "width": 12, "padding": "valid"},
              "ssn.mapping": "single"}  # fmt: skip
    points = [{**layout, "budget": 480}, {**layout, "budget": 440}]
    warnings = suspicions(SearchConfig.from_dict({**valid, "start": points}), floor=False)
    (line,) = [w for w in warnings if w.startswith("start[")]
    assert line.startswith("start[0]: budget=480 is too large for generator='emb', ")
    assert "maximum budget is 447" in line and line.endswith("it will be refused untrained")


def test_a_shapeshifted_start_point_is_warned_of_by_its_planned_network_not_its_budget() -> None:
    """A one-store ConvNet asked 633 parameters plans 593: within params <= 600 (it trains),
    over params <= 590 (refused, with the count the trial would record)."""
    from search.screening._floor import start_warnings

    def config(limit: int) -> SearchConfig:
        return SearchConfig.from_dict({
            "dataset": "digits", "constraints": [f"params <= {limit}"],
            "space": {"convnet.width": {"low": 4, "high": 16},
                      "budget": {"low": 100, "high": 1000}},
            "fixed": {"family": "convnet", "convnet.depth": 2, "ssn.mapping": "single",
                      "ssn.generator": "emb", "ssn.upsampler": "inter", "ssn.templates": 4},
            "start": [{"convnet.width": 10, "budget": 633}],
        })  # fmt: skip

    assert start_warnings(config(600)) == []
    (line,) = start_warnings(config(590))
    assert line.startswith("start[0]: misses params <= 590 (params 593)")
