"""A user's samples as images, signals or table rows: every array rank with every declared
layout is read with the sample shape the rule gives or refused naming the shape; signals and
tables are normalised per channel and per feature, the same in memory as streamed; mlp takes
them, and an image family says what does."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import Dataset

from objectives._custom import CustomDataset, Splits, declare
from objectives.datasets import DATASETS, Augment, load
from spaces import build_model
from spaces._errors import ConfigError

LAYOUTS = (None, "image", "signal", "table")


def _forget(name: str) -> None:
    DATASETS._entries.pop(name, None)  # each test registers its own names


def expected(shape: tuple[int, ...], layout: str | None) -> tuple[int, ...] | None:
    """The sample shape the documented rule gives an array of ``shape``; None: refused."""
    rank = len(shape)
    if layout is None:
        layout = {4: "image", 3: "image", 2: "table"}.get(rank)
    takes = {"image": (4, 3), "signal": (3, 2), "table": (2,)}.get(layout, ())
    if rank not in takes:
        return None
    return shape[1:] if rank == takes[0] else (1, *shape[1:])


def dataset(x: np.ndarray, layout: str | None, **options) -> CustomDataset:
    y = np.arange(len(x)) % 2
    return CustomDataset("t-layout", lambda: Splits(train=(x, y), test=(x, y), **options),
                         source="test", layout=layout)  # fmt: skip


@settings(max_examples=120, deadline=None)
@given(
    dims=st.lists(st.integers(1, 4), min_size=0, max_size=4),
    layout=st.sampled_from(LAYOUTS),
)
def test_every_rank_and_layout_is_read_as_the_rule_says_or_refused_naming_the_shape(dims, layout):
    shape = (6, *dims)
    x = np.zeros(shape, np.float32)
    want = expected(shape, layout)
    if want is None:
        with pytest.raises(ConfigError, match=re.escape(str(shape))):
            dataset(x, layout).in_shape  # noqa: B018
    else:
        data = dataset(x, layout)
        assert data.in_shape == want
        assert data.sample_layout == {3: "image", 2: "signal", 1: "table"}[len(want)]


class _Samples(Dataset):
    """A torch Dataset of samples of one shape: its rank gives the layout."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape, self.targets = shape, np.arange(6) % 2

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return torch.zeros(self.shape), int(self.targets[i])


@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(1, 4), min_size=0, max_size=4),
    layout=st.sampled_from(LAYOUTS),
)
def test_a_datasets_sample_rank_gives_its_layout_and_a_mismatch_is_refused(dims, layout):
    shape = tuple(dims)
    found = {3: "image", 2: "signal", 1: "table"}.get(len(shape))
    entry = CustomDataset("t-samples", lambda: Splits(train=_Samples(shape)), source="test",
                          layout=layout)  # fmt: skip
    if found is None or layout not in (None, found):
        with pytest.raises(ConfigError, match=re.escape(f"a sample has shape {shape}")):
            entry.in_shape  # noqa: B018
    else:
        assert entry.in_shape == shape and entry.sample_layout == found


def test_the_signals_of_the_issue_are_signals_when_declared(tmp_path):
    x = np.random.default_rng(0).normal(0, 1, (40, 1, 64)).astype(np.float32)
    y = np.arange(40) % 2
    np.savez(tmp_path / "s.npz", x_train=x, y_train=y)
    declare({"name": "t-undeclared", "npz": "s.npz"}, base=tmp_path)
    declare({"name": "t-signal", "npz": "s.npz", "layout": "signal"}, base=tmp_path)
    try:
        assert DATASETS.get("t-undeclared").in_shape == (1, 1, 64)  # rank 3: N×H×W images
        data = load("t-signal", val_size=4)
        assert data.in_shape == (1, 64) and data.train.x.shape[1:] == (1, 64)
        assert data.provenance["layout"] == "signal"
    finally:
        _forget("t-undeclared")
        _forget("t-signal")


@pytest.mark.parametrize(
    ("layout", "shape", "axes"),
    [
        ("signal", (90, 3, 20), (0, 2)),
        ("table", (90, 5), (0,)),
        ("image", (90, 2, 4, 4), (0, 2, 3)),
    ],
)
def test_samples_are_standardised_per_channel_or_feature_alike_in_memory_and_streamed(
    layout, shape, axes
):
    rng = np.random.default_rng(1)
    offsets = rng.uniform(-10, 10, shape[1])[(slice(None), *[None] * (len(shape) - 2))]
    scales = 10.0 ** rng.uniform(-1, 2, shape[1])[(slice(None), *[None] * (len(shape) - 2))]
    x = (rng.normal(0, 1, shape) * scales + offsets).astype(np.float32)
    y = np.arange(shape[0]) % 3
    DATASETS.add("t-norm", CustomDataset("t-norm", lambda: Splits(train=(x, y), test=(x, y)),
                                         source="test", layout=layout))  # fmt: skip
    try:
        held = load("t-norm", val_size=9, stream=False)
        streamed = load("t-norm", val_size=9, stream=True, workers=0)
        assert held.in_shape == shape[1:] and len(held.mean) == shape[1]
        torch.testing.assert_close(held.train.x.mean(axes), torch.zeros(shape[1]), atol=1e-4,
                                   rtol=0)  # fmt: skip
        std = held.train.x.double().std(dim=axes)
        torch.testing.assert_close(std, torch.ones(shape[1], dtype=torch.float64), atol=1e-3,
                                   rtol=0)  # fmt: skip
        for a, b in ((held.train, streamed.train), (held.test, streamed.test)):
            fed = torch.cat([xb for xb, _ in b.batches(16, shuffle=False)])
            assert torch.equal(fed, a.x)  # the same float32 values either way
    finally:
        _forget("t-norm")


def test_a_tables_given_statistics_are_one_per_feature():
    x = np.zeros((20, 4), np.float32)
    with pytest.raises(ConfigError, match="allowed: 4 finite numbers, one per feature"):
        dataset(x, "table", mean=[0.0], std=[1.0]).in_shape  # noqa: B018


def test_image_augmentation_on_signals_is_refused():
    entry = dataset(np.zeros((6, 2, 9), np.float32), "signal")
    entry.augment = Augment(pad=2)
    with pytest.raises(ConfigError, match=r"augment .* on signal samples of shape \(2, 9\)"):
        entry.in_shape  # noqa: B018


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"layout": "sequence"}, "dataset.layout: got 'sequence'; allowed: layout 'image'"),
        ({"layout": "table"}, r"\(12, 2, 8\), and layout 'table' takes N×F .*"
                              r"allowed: layout 'image' or 'signal' for an array of rank 3"),
    ],
)  # fmt: skip
def test_a_declared_layout_that_the_arrays_contradict_is_refused(tmp_path, spec, message):
    np.savez(tmp_path / "s.npz", x_train=np.zeros((12, 2, 8)), y_train=np.arange(12) % 2)
    try:
        with pytest.raises(ConfigError, match=message):
            declare({"name": "t-bad", "npz": "s.npz", **spec}, base=tmp_path)
            DATASETS.get("t-bad").in_shape  # noqa: B018
    finally:
        _forget("t-bad")


def test_an_image_folder_is_images_only(tmp_path):
    (tmp_path / "train").mkdir()
    with pytest.raises(ConfigError, match="'signal' with image_folder; allowed: image"):
        declare({"name": "t-folder", "image_folder": str(tmp_path), "layout": "signal"})


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=2).map(tuple))
def test_mlp_takes_signals_and_table_rows_and_image_families_say_what_does(shape):
    model = build_model("mlp", shape, 3, width=4)
    assert model(torch.zeros(2, *shape)).shape == (2, 3)
    what = r"signal \(C, L\): conv1d, mlp, resnet1d, sepconv1d; for a table row \(F,\): mlp; or"
    with pytest.raises(ConfigError, match=r"\(channels, height, width\).*" + what):
        build_model("convnet", shape, 3)
