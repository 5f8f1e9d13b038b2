"""The portfolio transfer measurement: a unit point lands in every set's own ranges, the
greedy portfolio and its leave-one-out percentile on hand-computed scores, and a tiny run
(two points on two generated sets) trains, stores and resumes its scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from objectives.datasets import DATASETS
from spaces import Categorical, Fixed, Float, Int
from tests._support.bundles import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("portfolio")


@pytest.fixture(scope="module")
def tiny(bench, tmp_path_factory):
    """Two small generated sets in place of the build sets (the module's own, restored)."""
    folder = tmp_path_factory.mktemp("sets")
    build = {"waves-x": ("waves 120 21 48 1 1.0", 1000),
             "waves-y": ("waves 160 22 64 2 1.4", 5000)}
    old = dict(bench.BUILD)
    bench.BUILD.clear()
    bench.BUILD.update(build)
    try:
        yield bench.build_sets(None, folder)
    finally:
        bench.BUILD.clear()
        bench.BUILD.update(old)
        for name in build:  # a derivation here declared them: other tests see the built-ins
            DATASETS._entries.pop(name, None)


def test_a_unit_point_lands_at_the_same_fractions_of_each_sets_ranges(bench, tiny):
    for name, path in tiny.items():
        space = bench.set_config(name, path, bench.BUILD[name][1]).space
        families = [str(c) for c in space["family"].choices]
        keys = {bench.generic(n, families) for n in space.names if n != "family"}
        low = bench.in_space(space, {"family": families[0], **dict.fromkeys(keys, 0.0)})
        mid = bench.in_space(space, {"family": families[0], **dict.fromkeys(keys, 0.5)})
        for dim_name, value in low.items():
            dim = space[dim_name]
            if isinstance(dim, Int | Float):
                assert value == dim.low
                if isinstance(dim, Float) and dim.log:  # halfway on the log scale
                    assert mid[dim_name] == pytest.approx(math.sqrt(dim.low * dim.high), rel=5e-3)
            elif isinstance(dim, Categorical) and dim_name != "family":
                assert value == dim.choices[0]
        searched = {n for n in space.names if not isinstance(space[n], Fixed)}
        assert set(low) == {n for n in searched if space.is_active(n, low)}
        assert bench.in_space(space, {"family": "mlp", **dict.fromkeys(keys, 0.5)}) is None


def test_the_greedy_portfolio_and_its_percentile_on_known_scores(bench):
    assert bench.normalised([0.2, 0.4, 0.6, None]) == pytest.approx([-1.0, 0.0, 1.0, 0.0])
    scale = {"a": [1.0, 0.0, 0.8], "b": [0.0, 1.0, 0.8]}
    assert bench.greedy(scale, 1) == [2]  # 0.8 on both beats 1.0 on one (mean 0.5)
    assert bench.greedy(scale, 2) == [2, 0]  # then 0.9 either way: the first
    assert bench.percentile([0.5, 0.9, 0.7, None], [2]) == pytest.approx(2 / 3)
    # three sets, one point best everywhere: a left-out set's portfolio holds its best point
    scores = {name: {str(i): v for i, v in enumerate(row)}
              for name, row in {"a": [0.9, 0.1, 0.2, 0.3, 0.4], "b": [0.8, 0.2, 0.1, 0.3, 0.4],
                                "c": [0.7, 0.3, 0.2, 0.1, 0.4]}.items()}  # fmt: skip
    lines = bench.analysis(scores, 5, 1)
    assert [line.split("|")[3].strip() for line in lines[2:5]] == ["1.000"] * 3
    assert "Above it on 3 of 3 sets (not: none), mean 1.000" in lines[-1]
    assert lines[-1].endswith("**go**.")


@pytest.mark.slow  # real training in spawned processes
def test_a_tiny_run_trains_stores_and_resumes_every_score(bench, tiny, tmp_path):
    name, path = next(iter(tiny.items()))
    space = bench.set_config(name, path, bench.BUILD[name][1]).space
    families = [str(c) for c in space["family"].choices]
    keys = sorted({bench.generic(n, families) for n in space.names if n != "family"})
    points = bench.unit_points(2, 0, families, keys)
    scores = bench.train_all(tiny, points, tmp_path, workers=2)
    assert {name: sorted(s) for name, s in scores.items()} == {n: ["0", "1"] for n in tiny}
    assert all(0.0 <= v <= 1.0 for s in scores.values() for v in s.values() if v is not None)
    stored = json.loads((tmp_path / "scores.json").read_text())
    assert stored["points"] == points and stored["scores"] == scores
    assert bench.train_all(tiny, points, tmp_path, workers=2) == scores  # nothing to train


@pytest.mark.parametrize("layout", ["image", "table"])
def test_every_build_set_of_a_layout_is_generated_with_its_rank_and_classes(bench, layout):
    """Each generated set has the layout's array rank, at least two classes in both splits'
    rows, and the same rows from the same seed."""
    rank = {"image": 4, "table": 2}[layout]
    for name, (source, limit) in bench.LAYOUTS[layout].items():
        x, y = bench.generated(source)
        assert x.ndim == rank and x.dtype == "float32" and len(x) == len(y), name
        cut = len(y) * 3 // 4
        assert len(set(y[:cut])) >= 2 and len(set(y[cut:])) >= 2, name
        again, _ = bench.generated(source)
        assert (again == x).all() and limit in (500, 1000, 2000), name


def test_a_set_s_layout_is_read_from_its_arrays(bench, tmp_path):
    """set_config derives a table's search for a 2-D npz and an image's for a 4-D one."""
    for source, families in (("moons 120 0.2 3", {"mlp"}),
                             ("bars 120 4 12 1 0.5", {"convnet", "sepnet", "resnet"})):
        x, y = bench.generated(source)
        path = tmp_path / f"{source.split()[0]}.npz"
        np.savez(path, x_train=x, y_train=y)
        name = f"layout-{source.split()[0]}"
        try:
            space = bench.set_config(name, path, 1000).space
        finally:
            DATASETS._entries.pop(name, None)
        assert set(bench.space_families(space)) <= families and bench.space_families(space)
