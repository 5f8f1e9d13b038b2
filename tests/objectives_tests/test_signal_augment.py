"""The signal shift (``Augment(shift=N)``): each signal of a training batch moves by its own
offset of at most N samples, edge-padded, keeping shape, dtype and device; evaluation never
sees it; a declared dataset's bad ``augment`` is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from objectives import Recipe, fit
from objectives._custom import CustomDataset, Splits, declare
from objectives.datasets import DATASETS, Augment, load
from spaces import ConfigError


def _forget(name: str) -> None:
    DATASETS._entries.pop(name, None)  # each test registers its own names


def test_a_dot_moves_by_every_offset_within_the_shift_and_no_further() -> None:
    x = torch.zeros(400, 3, 40)
    x[:, :, 20] = 1.0
    out = Augment(shift=3)(x, generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()
    moved = out[:, 0].argmax(dim=1) - 20
    assert set(moved.tolist()) == {-3, -2, -1, 0, 1, 2, 3}
    assert torch.equal(out[:, 0], out[:, 2])  # one offset per signal, every channel alike
    assert torch.all(out.sum(dim=2) == 1.0)  # moved, not blurred or lost


@settings(max_examples=25, deadline=None)
@given(shift=st.integers(1, 5), length=st.integers(6, 30), seed=st.integers(0, 999))
def test_the_shift_is_a_window_of_the_edge_padded_signal(shift: int, length: int,
                                                         seed: int) -> None:  # fmt: skip
    x = torch.randn(5, 2, length, generator=torch.Generator().manual_seed(seed))
    out = Augment(shift=shift)(x, generator=torch.Generator().manual_seed(seed))
    padded = torch.nn.functional.pad(x, (shift, shift), mode="replicate")
    offsets = torch.randint(0, 2 * shift + 1, (5,), generator=torch.Generator().manual_seed(seed))
    for i, start in enumerate(offsets.tolist()):
        assert torch.equal(out[i], padded[i, :, start : start + length])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_shift_keeps_dtype_and_is_seeded(dtype: torch.dtype) -> None:
    x = torch.randn(16, 1, 50).to(dtype)

    def shifted(seed: int) -> torch.Tensor:
        return Augment(shift=5)(x, generator=torch.Generator().manual_seed(seed))

    assert shifted(1).dtype == dtype and torch.equal(shifted(1), shifted(1))
    assert not torch.equal(shifted(1), shifted(2))


def test_a_shift_the_batch_cannot_take_is_refused() -> None:
    with pytest.raises(ConfigError, match="shift must be smaller than the signal's length 4"):
        Augment(shift=4)(torch.zeros(2, 1, 4))
    with pytest.raises(ConfigError, match=r"shape \(2, 1, 8, 8\); allowed: N×C×L signals"):
        Augment(shift=1)(torch.zeros(2, 1, 8, 8))
    with pytest.raises(ConfigError, match=r"shape \(2, 1, 8\); allowed: N×C×H×W images"):
        Augment(pad=1)(torch.zeros(2, 1, 8))
    with pytest.raises(ConfigError, match=r"Augment\.shift must be an int >= 0"):
        Augment(shift=-1)
    with pytest.raises(ConfigError, match="not both"):
        Augment(shift=2, pad=1)


class _Seen(nn.Module):
    """A linear classifier of signals that keeps the inputs of its evaluation passes."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.fc = nn.Linear(length, 2)
        self.evaluated: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            self.evaluated.append(x.detach().clone())
        return self.fc(x[:, 0])


def test_training_batches_are_shifted_and_evaluation_is_not() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 1, 24)).astype(np.float32)
    y = np.arange(60) % 2
    name = "t-shift-fit"
    DATASETS.add(name, CustomDataset(name, lambda: Splits(train=(x, y), test=(x, y)),
                                     source="test", layout="signal",
                                     augment=Augment(shift=3)))  # fmt: skip
    try:
        data = load(name)
        seen = _Seen(24)
        on = fit(seen, data, Recipe(epochs=2, batch_size=16), seed=0, progress=False)
        assert on.config["augment"] == {"shift": 3}
        # each epoch's validation saw the validation split as it is
        assert torch.equal(torch.cat(seen.evaluated), data.val.x.repeat(2, 1, 1))
        off = fit(_Seen(24), data, Recipe(epochs=2, batch_size=16, augment=False), seed=0,
                  progress=False)  # fmt: skip
        assert off.config["augment"] is None
        assert on.history[0]["train_loss"] != off.history[0]["train_loss"]  # it did shift
    finally:
        _forget(name)


@pytest.mark.parametrize(
    ("layout", "augment", "message"),
    [
        ("signal", {"shift": -2}, r"^dataset.augment.shift: got -2; allowed: an int >= 0$"),
        ("signal", {"shift": 1.5}, r"^dataset.augment.shift: got 1.5; allowed: an int >= 0$"),
        ("signal", {"pad": 2}, r"^dataset.augment: got \{'pad': 2\}; allowed: a mapping of shift"),
        ("image", {"shift": 2}, r"^dataset.augment: got .*; allowed: a mapping of pad, flip$"),
        ("table", {"shift": 2}, r"^dataset.augment: got .*; allowed: no augment for layout"),
        ("signal", 3, r"^dataset.augment: got 3; allowed: a mapping of shift$"),
        (None, {"shift": 1, "flip": True}, r"^dataset.augment: Augment: shift 1 with .*"),
    ],
)
def test_a_declared_bad_augment_is_refused_in_one_line(tmp_path, layout, augment, message):
    np.savez(tmp_path / "s.npz", x_train=np.zeros((8, 1, 12), np.float32),
             y_train=np.arange(8) % 2)  # fmt: skip
    spec = {"name": "t-bad-shift", "npz": "s.npz", "augment": augment}
    if layout:
        spec["layout"] = layout
    with pytest.raises(ConfigError, match=message) as err:
        declare(spec, base=str(tmp_path))
    assert "\n" not in str(err.value)
    assert "t-bad-shift" not in DATASETS


def test_a_declared_shift_as_long_as_the_signal_is_refused_when_read(tmp_path):
    np.savez(tmp_path / "s.npz", x_train=np.zeros((8, 1, 12), np.float32),
             y_train=np.arange(8) % 2)  # fmt: skip
    spec = {"name": "t-long-shift", "npz": "s.npz", "layout": "signal", "augment": {"shift": 12}}
    declare(spec, base=str(tmp_path))
    try:
        with pytest.raises(ConfigError, match=r"allowed: shift, smaller than the length 12"):
            DATASETS.get("t-long-shift").in_shape  # noqa: B018
        spec = {**spec, "name": "t-ok-shift", "augment": {"shift": 11}}
        declare(spec, base=str(tmp_path))
        entry = DATASETS.get("t-ok-shift")
        assert entry.in_shape == (1, 12) and entry.augment == Augment(shift=11)
    finally:
        _forget("t-long-shift")
        _forget("t-ok-shift")


def test_a_declared_pad_as_wide_as_the_image_is_refused_when_read(tmp_path):
    """Reflect padding needs a pad below the side: a 3x3 image padded by 3 failed in every
    trial ("pad must be smaller than the image"), not when the data were checked."""
    np.savez(tmp_path / "i.npz", x_train=np.zeros((8, 1, 3, 5), np.float32),
             y_train=np.arange(8) % 2)  # fmt: skip
    spec = {"name": "t-wide-pad", "npz": "i.npz", "layout": "image", "augment": {"pad": 3}}
    declare(spec, base=str(tmp_path))
    try:
        with pytest.raises(ConfigError, match=r"allowed: pad smaller than the image's shorter "
                                              r"side 3"):  # fmt: skip
            DATASETS.get("t-wide-pad").in_shape  # noqa: B018
        declare({**spec, "name": "t-ok-pad", "augment": {"pad": 2}}, base=str(tmp_path))
        assert DATASETS.get("t-ok-pad").in_shape == (1, 3, 5)
    finally:
        _forget("t-wide-pad")
        _forget("t-ok-pad")
