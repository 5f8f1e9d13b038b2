"""A training run resumed from the state of an epoch ends exactly as the uninterrupted run."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from objectives.datasets import Augment, Data, load
from objectives.train import STATE_FORMAT, Recipe, fit
from spaces._errors import ConfigError
from tests._support.nets import net, through_disk

EPOCHS = 4
#: History keys that are measurements of time, not of what was computed.
TIMED = ("elapsed_s",)


@pytest.fixture(scope="module")
def digits() -> Data:
    return load("digits")


def untimed(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMED} for r in history]


@pytest.mark.slow  # real training, twice
@pytest.mark.parametrize(
    "options",
    [
        {"optimizer": "sgd", "schedule": "onecycle"},
        {"optimizer": "adamw", "schedule": "cosine", "lr": 3e-3, "label_smoothing": 0.1,
         "augment": Augment(pad=1, flip=True)},
    ],
    ids=["sgd-onecycle", "adamw-cosine-augment"],
)  # fmt: skip
@pytest.mark.parametrize("after", [1, 3])
def test_resumed_run_is_bit_identical(digits: Data, options: dict, after: int) -> None:
    states: list[dict] = []
    whole = net()
    full = fit(whole, digits, Recipe(epochs=EPOCHS, **options), seed=3, on_state=states.append)
    assert [s["epoch"] for s in states] == list(range(1, EPOCHS + 1))
    assert all(s["format"] == STATE_FORMAT for s in states)

    resumed = net(seed=99)  # other initial weights: the state must replace them all
    curve: list[dict] = []
    part = fit(resumed, digits, Recipe(epochs=EPOCHS, **options), seed=3,
               resume=through_disk(states[after - 1]), on_epoch=curve.append)  # fmt: skip

    assert [r["epoch"] for r in curve] == list(range(after + 1, EPOCHS + 1))
    assert untimed(part.history) == untimed(full.history)
    assert part.steps == full.steps
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values(),
                            strict=True):  # fmt: skip
        assert torch.equal(a, b), name
    assert part.train_time_s >= states[after - 1]["seconds"]


def test_global_rngs_are_saved_and_restored(digits: Data) -> None:
    """After a resumed run the caller's RNGs are its own again; the state holds the run's."""
    states: list[dict] = []
    fit(net(), digits, Recipe(epochs=2), seed=0, on_state=states.append)
    rng = states[0]["rng"]
    assert set(rng) == {"torch", "cuda", "numpy", "python"}
    random.seed(5)
    np.random.seed(5)
    before = (random.random(), np.random.rand())
    random.seed(5)
    np.random.seed(5)
    fit(net(), digits, Recipe(epochs=2), seed=0, resume=through_disk(states[0]))
    assert (random.random(), np.random.rand()) == before


def test_resume_with_other_options_is_refused(digits: Data) -> None:
    states: list[dict] = []
    fit(net(), digits, Recipe(epochs=2), seed=0, on_state=states.append)
    assert states[0]["options"] == {  # what states saved by the keyword-argument fit hold
        "epochs": 2, "batch_size": 128, "optimizer": "sgd", "lr": 0.1, "momentum": 0.9,
        "weight_decay": 5e-4, "schedule": "onecycle", "label_smoothing": 0.0, "augment": None,
        "seed": 0, "bf16": False, "max_steps": None, "channels_last": True, "grad_clip": None,
        "dataset": "digits",
    }  # fmt: skip
    with pytest.raises(ConfigError, match=r"other options.*'lr'"):
        fit(net(), digits, Recipe(epochs=2, lr=0.5), seed=0, resume=states[0])
    with pytest.raises(ConfigError, match="not a training state"):
        fit(net(), digits, Recipe(epochs=2), seed=0, resume={"format": "something else"})


def test_a_finished_state_trains_no_further(digits: Data) -> None:
    states: list[dict] = []
    whole = net()
    fit(whole, digits, Recipe(epochs=2), seed=0, on_state=states.append)
    again = net(seed=1)
    result = fit(again, digits, Recipe(epochs=2), seed=0, resume=states[-1])
    assert result.epochs == 2 and result.steps == states[-1]["steps"]
    pairs = zip(whole.state_dict().values(), again.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
