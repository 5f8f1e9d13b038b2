"""Fused multi-seed training: a fused seed is the same seed trained alone by ``fit``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from objectives import Recipe, fit, fit_seeds, fusable
from objectives.datasets import Data, load
from objectives.train import evaluate
from spaces import build_model
from spaces._errors import ConfigError
from spaces.ssn import shapeshift

SEEDS = [0, 1, 2]
#: Float tolerance between a fused seed and the seed alone: vmap's grouped convolution sums
#: in another order than the k single convolutions (seen after 2 epochs: 1e-7 for the sepnet,
#: 6e-6 for the ConvNet's batch-norm statistics); a seed given another batch order or dropout
#: mask differs by 1e-2 and more.
ATOL = 1e-4


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One thread: the same float rounding run after run (as the search's trials)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def digits() -> Data:
    return load("digits")


def seeded(family: str, seed: int, data: Data, **hyper: Any) -> nn.Module:
    """The model a trial of ``seed`` starts from (search.trial seeds the init the same way)."""
    torch.manual_seed(seed)
    return build_model(family, data.in_shape, data.num_classes, **hyper)


def assert_same(alone: nn.Module, fused: nn.Module) -> None:
    a, f = alone.state_dict(), fused.state_dict()
    assert a.keys() == f.keys()
    for key in a:
        torch.testing.assert_close(f[key], a[key], atol=ATOL, rtol=ATOL, msg=key)


RECIPES = {
    # the record design: separable blocks, reuse, PReLU, dropout (per-seed masks), AdamW, cosine
    "sepnet": ({"stem": 4, "width": 6, "reuse": 2, "activation": "prelu", "dropout": 0.1},
               {"optimizer": "adamw", "lr": 1e-2, "schedule": "cosine", "weight_decay": 1e-4,
                "label_smoothing": 0.1}),
    # a small ConvNet with batch norm (running stats), SGD one-cycle and gradient clipping
    "convnet": ({"depth": 2, "width": 6},
                {"optimizer": "sgd", "lr": 0.1, "grad_clip": 1.0}),
}  # fmt: skip


@pytest.mark.parametrize("family", sorted(RECIPES))
def test_a_fused_seed_equals_the_seed_trained_alone(family: str) -> None:
    """Each seed with its own data (its own validation split, as a trial's), 2 epochs."""
    hyper, recipe = RECIPES[family]
    datas = [load("digits", seed=s) for s in SEEDS]
    alone = [seeded(family, s, d, **hyper) for s, d in zip(SEEDS, datas, strict=True)]
    lone = [fit(m, d, Recipe(epochs=2, **recipe), seed=s)
            for m, d, s in zip(alone, datas, SEEDS, strict=True)]  # fmt: skip
    fused = [seeded(family, s, d, **hyper) for s, d in zip(SEEDS, datas, strict=True)]
    results = fit_seeds(fused, datas, Recipe(epochs=2, **recipe), seeds=SEEDS)
    assert [r.config["fused"] for r in results] == [3, 3, 3]
    for a, f, ra, rf in zip(alone, fused, lone, results, strict=True):
        assert_same(a, f)
        assert rf.steps == ra.steps
        for ha, hf in zip(ra.history, rf.history, strict=True):
            assert hf["val_accuracy"] == pytest.approx(ha["val_accuracy"], abs=1 / 360)
            assert hf["train_loss"] == pytest.approx(ha["train_loss"], abs=1e-5)
            assert hf["lr"] == ha["lr"]


def test_k_fused_models_are_independent_and_load_into_the_plain_family(digits: Data) -> None:
    hyper = {"stem": 4, "width": 6, "norm": "batch"}
    models = [seeded("sepnet", s, digits, **hyper) for s in SEEDS]
    results = fit_seeds(models, digits, Recipe(epochs=8, optimizer="adamw", lr=2e-2), seeds=SEEDS)
    assert len(results) == 3
    states = [m.state_dict() for m in models]
    for i, state in enumerate(states):
        plain = build_model("sepnet", digits.in_shape, digits.num_classes, **hyper)
        plain.load_state_dict(state)
        accuracy = evaluate(plain, digits.val)["accuracy"]
        assert accuracy == results[i].history[-1]["val_accuracy"]
        assert accuracy > 0.3  # trained: chance is 0.1
        for j in range(i):
            assert not torch.equal(state["head.weight"], states[j]["head.weight"])


def test_one_seed_fused_alone_equals_fit(digits: Data) -> None:
    """k = 1 is the degenerate fusion: the same run as ``fit``'s, shared data."""
    a, f = seeded("sepnet", 5, digits, stem=4, width=4), seeded("sepnet", 5, digits, stem=4,
                                                                width=4)  # fmt: skip
    lone = fit(a, digits, Recipe(epochs=1, channels_last=False), seed=5)
    fused = fit_seeds([f], digits, Recipe(epochs=1), seeds=[5], fused=True)[0]
    assert_same(a, f)
    assert fused.config == {**lone.config, "fused": 1}  # the same record, and k


def test_a_shapeshifter_net_falls_back_to_one_seed_after_another(digits: Data) -> None:
    def ssn(seed: int) -> nn.Module:
        return shapeshift(seeded("sepnet", seed, digits, stem=6, width=8), 200, seed=seed)

    reason = fusable(ssn(0), digits)
    assert reason  # its weight generation does not run under vmap
    alone = [ssn(s) for s in (0, 1)]
    lone = [fit(m, digits, Recipe(epochs=1), seed=s) for m, s in zip(alone, (0, 1), strict=True)]
    models = [ssn(s) for s in (0, 1)]
    results = fit_seeds(models, digits, Recipe(epochs=1), seeds=[0, 1])
    assert [r.config["fused"] for r in results] == [reason, reason]
    for a, m, ra, rm in zip(alone, models, lone, results, strict=True):
        assert rm.history[-1]["val_accuracy"] == ra.history[-1]["val_accuracy"]
        for key, value in a.state_dict().items():
            assert torch.equal(m.state_dict()[key], value), key
    with pytest.raises(ConfigError, match="cannot be fused"):
        fit_seeds([ssn(0), ssn(1)], digits, Recipe(epochs=1), seeds=[0, 1], fused=True)


def test_fused_false_trains_with_fit(digits: Data) -> None:
    models = [seeded("sepnet", s, digits, stem=4, width=4) for s in (0, 1)]
    results = fit_seeds(models, digits, Recipe(epochs=1), seeds=[0, 1], fused=False)
    assert [r.config["fused"] for r in results] == ["fused=False"] * 2
    assert results[0].config["channels_last"] is True  # fit's own options


def test_bad_calls_are_refused(digits: Data) -> None:
    nets = [seeded("sepnet", s, digits, stem=4, width=4) for s in (0, 1)]
    with pytest.raises(ConfigError, match="one seed and one dataset per model"):
        fit_seeds(nets, digits, Recipe(epochs=1), seeds=[0])
    with pytest.raises(ConfigError, match="one architecture"):
        other = seeded("sepnet", 1, digits, stem=4, width=6)
        fit_seeds([nets[0], other], digits, Recipe(epochs=1), seeds=[0, 1], fused=True)
    small = load("digits", val_size=100)
    with pytest.raises(ConfigError, match="equal lengths"):
        fit_seeds(nets, [digits, small], Recipe(epochs=1), seeds=[0, 1], fused=True)


def test_the_probe_step_runs_as_the_fused_loop_does_bf16_included(digits: Data) -> None:
    """The probe is the fused loop's own step, under its bf16 autocast: on CUDA (bf16 by
    default) vmap handed a later convolution bf16 inputs with float32 weights, which the probe
    without autocast did not see. bf16 is GPU-only, here as in ``fit``."""
    model = seeded("sepnet", 0, digits, stem=4, width=4)
    assert fusable(model, digits, bf16=False) is None
    with pytest.raises(ConfigError, match="bf16=True needs a CUDA device"):
        fusable(model, digits, bf16=True)
    with pytest.raises(ConfigError, match="bf16=True needs a CUDA device"):
        fit_seeds([model, model], digits, Recipe(epochs=1), seeds=[0, 1], bf16=True)


@pytest.mark.parametrize("odd", [nn.Dropout2d, nn.AlphaDropout])
def test_a_dropout_other_than_nn_dropout_is_not_fused(digits: Data, odd: type) -> None:
    size = digits.train.example(1)[0].numel()
    model = nn.Sequential(odd(0.1), nn.Flatten(), nn.Linear(size, 10))
    assert "only nn.Dropout is fused" in str(fusable(model, digits))
    assert (
        fusable(nn.Sequential(nn.Dropout(0.1), nn.Flatten(), nn.Linear(size, 10)), digits) is None
    )
