"""``search check``'s description of a space: its size is the number of distinct points that
sampling can give, counted without enumerating them."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from search.screening._describe import points
from spaces._dsl import Categorical, Fixed, Float, Int, Space


def _brute(space: Space) -> int:
    """Every assignment of every dimension, reduced to its active part, deduplicated."""
    names = space.names
    grids = []
    for name in names:
        dim = space[name]
        if isinstance(dim, Int):
            grids.append(range(dim.low, dim.top + 1, dim.step))
        elif isinstance(dim, Categorical):
            grids.append(dim.choices)
        else:
            grids.append([dim.value])
    seen = set()
    for combo in itertools.product(*grids):
        full = dict(zip(names, combo, strict=True))
        active = tuple((n, v) for n, v in full.items() if space.is_active(n, full))
        seen.add(active)
    return len(seen)


@st.composite
def spaces(draw: st.DrawFn) -> Space:
    """Up to 5 discrete dimensions, each maybe conditional on an earlier categorical one."""
    dims: dict[str, object] = {}
    for i in range(draw(st.integers(1, 5))):
        parents = [n for n, d in dims.items() if isinstance(d, Categorical)]
        when = {}
        if parents and draw(st.booleans()):
            parent = draw(st.sampled_from(parents))
            choices = dims[parent].choices
            when = {parent: draw(st.lists(st.sampled_from(choices), min_size=1, unique=True))}
        kind = draw(st.sampled_from(["int", "cat", "fixed"]))
        if kind == "int":
            low = draw(st.integers(0, 5))
            dims[f"d{i}"] = Int(low, low + draw(st.integers(0, 6)), draw(st.integers(1, 3)),
                                when=when)  # fmt: skip
        elif kind == "cat":
            n = draw(st.integers(1, 3))
            dims[f"d{i}"] = Categorical(tuple(f"c{j}" for j in range(n)), when=when)
        else:
            dims[f"d{i}"] = Fixed(7, when=when)
    return Space(dims)


@settings(max_examples=150, deadline=None)
@given(spaces())
def test_points_counts_the_distinct_active_points(space: Space) -> None:
    assert points(space) == _brute(space)


def test_an_active_real_dimension_makes_a_space_continuous() -> None:
    space = Space({"a": Categorical(("x", "y")), "b": Float(0.1, 1.0, when={"a": ["y"]})})
    assert math.isinf(points(space))
    assert points(Space({"a": Categorical(("x", "y")), "b": Int(1, 3, when={"a": ["y"]})})) == 4


def test_the_scheduler_line_says_when_rungs_must_earn_trust() -> None:
    from search.config import load_config
    from search.screening._describe import describe

    def line(scheduler: dict) -> str:
        config = load_config({"dataset": "digits", "space": {"family": ["mlp"]},
                              "train": {"epochs": 9}, "scheduler": scheduler})  # fmt: skip
        return next(text for text in describe(config, cost=False) if "rungs at" in text)

    assert "rungs at epoch(s) 1, 3 of 9" in line({"name": "moasha"})
    assert "trust_rungs" not in line({"name": "moasha"})
    assert line({"name": "moasha", "trust_rungs": True}).endswith("ranks the next (trust_rungs)")
    audit = line({"name": "moasha", "trust_rungs": True, "trust_by": "audit"})
    assert audit.endswith("(trust_rungs, by audit: one in four trials it would stop goes on)")
    paused = line({"name": "moasha", "type": "promotion", "trust_rungs": True,
                   "trust_by": "pooled"})  # fmt: skip
    assert paused.endswith("one in four trials it would pause goes on); a rung not trusted "
                           "promotes the trials it paused")  # fmt: skip


def test_the_finalists_line_says_when_more_seeds_fill_the_time_kept() -> None:
    from search.config import load_config
    from search.screening._describe import describe

    def line(**keys) -> str:
        config = load_config({"dataset": "digits", "space": {"family": ["mlp"]}, **keys})
        return next(text for text in describe(config, cost=False) if text.startswith("Finalists"))

    timed = line(finalists=True, limits={"time": "10m"})
    assert "with 3 fresh seed(s) each (up to 10 while whole rounds fit the time kept)" in timed
    assert "20 % of the time limit kept for them" in timed
    assert "up to" not in line(finalists=True)  # no time limit: nothing to fill
    assert "up to" not in line(finalists={"fill": 3}, limits={"time": "10m"})
    assert line() == "Finalists: none (no recommendation; search export takes the knee)"
