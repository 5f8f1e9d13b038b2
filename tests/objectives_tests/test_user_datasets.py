"""The user's datasets: an image folder, .npz and .npy files, a registered function returning
arrays or a torch Dataset; in memory or streamed (the same values, the same training)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

import objectives
from objectives._custom import declare
from objectives.datasets import DATASETS, load
from spaces._errors import ConfigError, NpasError
from tests.search_tests.userplugin import write_images


def _untimed(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in history]


def _forget(name: str) -> None:
    DATASETS._entries.pop(name, None)  # each test registers its own names


@pytest.fixture
def images(tmp_path):
    return write_images(tmp_path / "images")


def test_an_image_folder_loads_with_its_classes_shape_and_declared_source(images):
    record = declare({"name": "t-images", "image_folder": str(images), "source": "mine"})
    try:
        data = load("t-images", val_size=8)
        assert data.in_shape == (1, 8, 8) and data.num_classes == 2
        assert (len(data.train), len(data.val), len(data.test)) == (40, 8, 16)
        assert data.provenance["source"] == "mine" and data.provenance["dataset"] == "t-images"
        assert abs(float(data.train.x.mean())) < 0.2  # normalised on the training split
        assert declare(dict(record)) == record  # the same declaration again: a no-op
        with pytest.raises(ConfigError, match="already registered"):
            declare({**record, "channels": 3})
    finally:
        _forget("t-images")


def test_an_image_folder_resized_to_rgb(images):
    declare({"name": "t-rgb", "image_folder": str(images), "size": [6, 6], "channels": 3})
    try:
        data = load("t-rgb", val_size=8)
        assert data.in_shape == (3, 6, 6) and data.train.x.shape[1:] == (3, 6, 6)
    finally:
        _forget("t-rgb")


def test_npz_and_memory_mapped_npy_pair(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (120, 1, 5, 5)).astype(np.uint8)
    y = np.repeat([0, 1, 2], 40)
    np.savez(tmp_path / "a.npz", x_train=x[:90], y_train=y[:90], x_test=x[90:], y_test=y[90:])
    np.save(tmp_path / "x.npy", x[:, 0])  # N×H×W: one channel is added
    np.save(tmp_path / "y.npy", y)
    declare({"name": "t-npz", "npz": "a.npz"}, base=tmp_path)
    declare({"name": "t-npy", "npy": ["x.npy", "y.npy"]}, base=tmp_path)
    try:
        npz = load("t-npz", val_size=9)
        assert (len(npz.train), len(npz.val), len(npz.test)) == (81, 9, 30)
        npy = load("t-npy", val_size=0.1, stream=True, workers=0)
        assert npy.streamed and npy.in_shape == (1, 5, 5) and len(npy.test) == 24  # 20 %
        batch = next(npy.train.batches(7, shuffle=False))[0]
        assert batch.shape == (7, 1, 5, 5) and batch.dtype == torch.float32
    finally:
        _forget("t-npz")
        _forget("t-npy")


class _Squares(Dataset):
    """A torch Dataset with no ``targets``: its labels are read sample by sample."""

    def __len__(self) -> int:
        return 60

    def __getitem__(self, i: int):
        x = torch.full((1, 4, 4), float(i % 3))
        return x, i % 3


def test_a_registered_torch_dataset_in_memory_and_streamed_trains_the_same():
    objectives.register_dataset("t-squares", source="a test's own squares")(
        lambda: objectives.Splits(train=_Squares(), test=_Squares(), pixel_scale=2.0)
    )
    try:
        results = []
        for stream in (False, True):
            data = load("t-squares", val_size=12, stream=stream, workers=1 if stream else 0)
            assert data.streamed == stream and data.num_classes == 3
            torch.manual_seed(0)
            model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
            fit = objectives.fit(model, data, objectives.Recipe(epochs=2, batch_size=8))
            results.append((_untimed(fit.history), objectives.evaluate(model, data.test)))
        assert results[0] == results[1]
    finally:
        _forget("t-squares")


def test_streamed_digits_train_exactly_as_in_memory():
    runs = []
    for stream in (False, True):
        data = load("digits", stream=stream, workers=0)
        torch.manual_seed(0)
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
        runs.append(_untimed(objectives.fit(model, data, objectives.Recipe(epochs=2)).history))
    assert runs[0] == runs[1]


def test_streaming_starts_beyond_the_size_set():
    assert load("digits", stream_above_mb=0.01).streamed
    assert not load("digits").streamed


@pytest.mark.parametrize(
    ("splits", "message"),
    [
        (lambda: "not splits", "returned str; allowed: objectives.Splits"),
        (lambda: objectives.Splits(train=(np.zeros(4), [0, 1, 0, 1])), "x has shape (4,)"),
        (
            lambda: objectives.Splits(train=(np.zeros((4, 1, 2, 2)), [0.5, 1.0, 0.0, 1.0])),
            "label 0.5 (sample 0, 1 such)",
        ),
        (lambda: objectives.Splits(train=(np.zeros((4, 1, 2, 2)), [0, 1, 0])), "3 labels"),
        (
            lambda: objectives.Splits(
                train=(np.zeros((4, 1, 2, 2)), [0, 1, 0, 1]),
                test=(np.zeros((2, 1, 3, 3)), [0, 1]),
            ),
            "split 'test': a sample has shape (1, 3, 3)",
        ),
        (
            lambda: objectives.Splits(
                train=(np.zeros((4, 1, 2, 2)), [0, 1, 0, 5]),
                test=(np.zeros((2, 1, 2, 2)), [0, 1]),
                num_classes=2,
            ),
            "label 5 with num_classes=2",
        ),
    ],
)
def test_a_bad_dataset_is_one_clear_line(splits, message):
    objectives.register_dataset("t-bad", source="a test")(splits)
    try:
        with pytest.raises(ConfigError, match="dataset 't-bad'") as err:
            DATASETS.get("t-bad").check()
        assert message in str(err.value) and "\n" not in str(err.value)
    finally:
        _forget("t-bad")


def test_a_dataset_name_registered_twice_is_refused():
    with pytest.raises(NpasError, match="'digits' is already registered"):
        objectives.register_dataset("digits", source="x")(lambda: None)
    with pytest.raises(ConfigError, match="source must say where"):
        objectives.register_dataset("t-nosource", source="")(lambda: None)


def test_arrays_load_without_loader_processes_and_as_a_loader_reads_them(tmp_path, monkeypatch):
    """An array's splits (the validation split carved from it too) are taken from the array,
    not read through DataLoader worker processes: in a spawned process each worker imports
    torch, and a finalist run (a new seed: a new load) paid seconds for a 280-row table."""
    import objectives._custom as custom

    rng = np.random.default_rng(1)
    x = rng.normal(size=(90, 3, 7)).astype(np.float32)
    np.savez(tmp_path / "s.npz", x_train=x[:60], y_train=np.arange(60) % 3, x_test=x[60:],
             y_test=np.arange(30) % 3)  # fmt: skip
    declare({"name": "t-arrays", "npz": "s.npz", "layout": "signal"}, base=tmp_path)
    try:
        with monkeypatch.context() as patch:  # every split read through a loader, as before
            patch.setattr(custom, "_raw", lambda part, workers: torch.cat(
                [xb for xb, _ in custom._batches(part, 0)]).numpy())  # fmt: skip
            through = load("t-arrays", val_size=12, seed=4, workers=0)
        loader = custom.DataLoader

        def no_workers(*args, num_workers=0, **kwargs):
            assert num_workers == 0, "loader processes read an array"
            return loader(*args, num_workers=num_workers, **kwargs)

        monkeypatch.setattr(custom, "DataLoader", no_workers)
        direct = load("t-arrays", val_size=12, seed=4, workers=2)
    finally:
        _forget("t-arrays")
    for split in ("train", "val", "test"):
        a, b = getattr(through, split), getattr(direct, split)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y), split
