"""Training loop: accuracy on digits, determinism, NaN detection, schedules, options, evaluate."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest
import torch
from torch import nn

from objectives._energy import RAPL_ROOT
from objectives.datasets import Augment, Data, load
from objectives.train import (
    SCHEDULES,
    TORCH_OPTIMIZERS,
    FitResult,
    NonFiniteLossError,
    Recipe,
    evaluate,
    fit,
)
from spaces._errors import ConfigError, UnknownNameError

STEPS_PER_EPOCH = 1149 // 128  # digits training split, batch 128, last partial batch dropped


@pytest.fixture(scope="module")
def digits() -> Data:
    return load("digits")


def mlp(seed: int = 0, *, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(dropout), nn.Linear(64, 10)
    )


class NaNAfter(nn.Module):
    """A linear model whose training forward passes turn NaN from call ``after`` + 1 on."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.linear = nn.Linear(64, 10)
        self.after = after
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x.flatten(1))
        if self.training:
            self.calls += 1
            if self.calls > self.after:
                out = out * float("nan")
        return out


class LayoutProbe(nn.Module):
    """A linear model that records, per mode, whether its inputs arrive channels-last."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(64, 10)
        self.seen: dict[bool, set[bool]] = {True: set(), False: set()}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen[self.training].add(x.stride(1) == 1)  # NHWC strides, also for one channel
        return self.linear(x.flatten(1))


def convnet(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def test_digits_mlp_reaches_90_percent(digits: Data) -> None:
    result = fit(mlp(), digits, Recipe(epochs=5))
    assert isinstance(result, FitResult)
    assert result.val_accuracy >= 0.90
    assert evaluate(mlp(), digits.test.x, digits.test.y)["accuracy"] < 0.5  # untrained
    assert result.epochs == 5 and result.steps == 5 * STEPS_PER_EPOCH
    assert [h["epoch"] for h in result.history] == [1, 2, 3, 4, 5]
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    assert result.train_time_s > 0 and result.energy_j > 0
    readable_rapl = any(RAPL_ROOT.glob("intel-rapl:*/energy_uj"))
    assert result.energy_source in (("rapl", "estimate") if readable_rapl else ("estimate",))
    assert result.config["optimizer"] == "sgd" and result.config["lr"] == 0.1
    assert result.config["bf16"] is False and result.config["dataset"] == "digits"


def test_same_seed_same_history_other_seed_differs(digits: Data) -> None:
    def run(seed: int) -> list[dict[str, float]]:
        model = mlp(0, dropout=0.2)
        history = fit(model, digits, Recipe(epochs=2, augment=Augment(pad=1)), seed=seed).history
        return [{k: v for k, v in h.items() if k != "elapsed_s"} for h in history]  # wall time

    before = torch.random.get_rng_state()
    first = run(7)
    assert torch.equal(torch.random.get_rng_state(), before)  # caller's RNG left untouched
    assert run(7) == first
    assert run(8) != first


@pytest.mark.parametrize("channels_last", [True, False])
def test_batches_reach_the_model_in_the_chosen_layout(digits: Data, channels_last: bool) -> None:
    probe = LayoutProbe()
    result = fit(
        probe, digits, Recipe(epochs=1, augment=Augment(pad=1), channels_last=channels_last)
    )
    assert probe.seen == {True: {channels_last}, False: {channels_last}}  # training, validation
    assert result.config["channels_last"] is channels_last


@pytest.mark.slow  # real training
def test_layout_changes_rounding_not_results(digits: Data) -> None:
    def run(channels_last: bool) -> list[dict[str, float]]:
        model = convnet()
        history = fit(model, digits, Recipe(epochs=2, channels_last=channels_last)).history
        return [{k: v for k, v in h.items() if k != "elapsed_s"} for h in history]

    nhwc, nchw = run(True), run(False)
    assert nhwc == run(True)  # deterministic in either layout
    for a, b in zip(nhwc, nchw, strict=True):
        for key in ("train_loss", "val_loss", "lr"):
            assert a[key] == pytest.approx(b[key], rel=1e-4)
        for key in ("train_accuracy", "val_accuracy"):  # a borderline sample may flip
            assert a[key] == pytest.approx(b[key], abs=0.01)


def test_nan_loss_raises_with_epoch_and_step(digits: Data) -> None:
    after = STEPS_PER_EPOCH + 3  # the 4th step of epoch 2 is the first NaN one
    with pytest.raises(NonFiniteLossError, match=r"epoch 2, step 12") as info:
        fit(NaNAfter(after), digits, Recipe(epochs=3))
    err = info.value
    assert (err.epoch, err.step) == (2, after + 1)
    assert err.value != err.value  # NaN
    copy = pickle.loads(pickle.dumps(err))  # Ray ships trial errors between processes
    assert (copy.epoch, copy.step, str(copy)) == (err.epoch, err.step, str(err))


@pytest.mark.slow  # real training
@pytest.mark.parametrize("optimizer", TORCH_OPTIMIZERS.names())
@pytest.mark.parametrize("schedule", SCHEDULES.names())
def test_each_optimizer_and_schedule_runs(digits: Data, optimizer: str, schedule: str) -> None:
    recipe = Recipe(epochs=4, optimizer=optimizer, schedule=schedule, label_smoothing=0.1)
    result = fit(mlp(), digits, recipe)
    lrs = [h["lr"] for h in result.history]
    peak = 0.1 if optimizer == "sgd" else 1e-3
    if schedule == "constant":
        assert lrs == [pytest.approx(peak)] * 4
    elif schedule == "step":
        assert lrs == pytest.approx([peak, peak, peak * 0.1, peak * 0.01])
    elif schedule == "cosine":
        assert lrs == sorted(lrs, reverse=True) and lrs[-1] < 0.05 * peak
    else:  # one-cycle: warm-up to the peak over the first 25% of steps, then down to ~0
        assert lrs[0] == pytest.approx(peak) and lrs == sorted(lrs, reverse=True)
        assert lrs[-1] < 1e-3 * peak
    assert all(h["val_loss"] == h["val_loss"] for h in result.history)  # finite, not NaN
    assert result.history[-1]["val_accuracy"] > 0.5


def test_on_epoch_sees_each_record_in_order(digits: Data) -> None:
    seen: list[dict[str, float]] = []
    result = fit(mlp(), digits, Recipe(epochs=3), on_epoch=seen.append)
    assert seen == result.history and [r["epoch"] for r in seen] == [1, 2, 3]
    elapsed = [r["elapsed_s"] for r in seen]
    assert 0 < elapsed[0] < elapsed[1] < elapsed[2] <= result.train_time_s
    seen[0]["epoch"] = 99  # the callback's copy, not the history
    assert result.history[0]["epoch"] == 1


def test_on_epoch_exception_stops_the_run(digits: Data) -> None:
    class Stop(Exception):
        pass

    calls: list[int] = []

    def stop_after_two(record: dict[str, float]) -> None:
        calls.append(int(record["epoch"]))
        if record["epoch"] == 2:
            raise Stop

    before = torch.random.get_rng_state()
    with pytest.raises(Stop):
        fit(mlp(), digits, Recipe(epochs=5), on_epoch=stop_after_two)
    assert calls == [1, 2]
    assert torch.equal(torch.random.get_rng_state(), before)


def test_unknown_names_list_the_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"adamw.*sgd"):
        Recipe(epochs=1, optimizer="lion")
    with pytest.raises(UnknownNameError, match=r"constant.*cosine.*onecycle.*step"):
        Recipe(epochs=1, schedule="linear")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("epochs", 0),
        ("epochs", 1.5),
        ("epochs", True),
        ("batch_size", 0),
        ("batch_size", -3),
        ("max_steps", 0),
        ("lr", 0.0),
        ("lr", float("nan")),
        ("momentum", 1.0),
        ("label_smoothing", 1.0),
        ("weight_decay", -1e-4),
        ("grad_clip", 0),
    ],
)
def test_bad_options_named(option: str, value: object) -> None:
    options: dict[str, object] = {"epochs": 1, option: value}
    with pytest.raises(ConfigError, match=rf"{option} .*got {value!r}"):
        Recipe.from_mapping(options)


def test_a_recipe_needs_only_epochs_and_resolves_the_learning_rate() -> None:
    recipe = Recipe(epochs=3)
    defaults = {f.name: f.default for f in dataclasses.fields(Recipe) if f.name != "epochs"}
    assert defaults == {
        "batch_size": 128, "optimizer": "sgd", "lr": None, "momentum": 0.9,
        "weight_decay": 5e-4, "schedule": "onecycle", "label_smoothing": 0.0, "augment": None,
        "max_steps": None, "channels_last": True, "grad_clip": None, "ema": None,
        "teacher": None, "distill_temperature": 4.0, "distill_weight": 0.5,
    }  # fmt: skip
    assert all(f.metadata["help"] for f in dataclasses.fields(Recipe))  # each says what it is
    assert (recipe.peak_lr, Recipe(epochs=3, optimizer="AdamW").peak_lr) == (0.1, 1e-3)
    assert Recipe(epochs=3, lr=0.02).peak_lr == 0.02
    with pytest.raises(TypeError, match="epochs"):
        Recipe()  # type: ignore[call-arg]


def test_an_unknown_recipe_key_is_refused_with_the_nearest_one() -> None:
    with pytest.raises(ConfigError, match=r"'label_smooting' \(did you mean 'label_smoothing'"):
        Recipe.from_mapping({"epochs": 1, "label_smooting": 0.1})
    assert Recipe.from_mapping({"epochs": 2, "lr": 0.5}) == Recipe(epochs=2, lr=0.5)


def test_the_config_records_the_recipe_and_the_run(digits: Data) -> None:
    """The same dict the keyword-argument ``fit`` recorded (resumed states compare it)."""
    recipe = Recipe(epochs=1, batch_size=64, optimizer="AdamW", momentum=0.8, weight_decay=1e-4,
                    schedule="Cosine", label_smoothing=0.1, augment=Augment(pad=1),
                    max_steps=3, channels_last=False, grad_clip=2.0)  # fmt: skip
    config = fit(mlp(), digits, recipe, seed=4).config
    assert config == {
        "epochs": 1, "batch_size": 64, "optimizer": "adamw", "lr": 0.001, "momentum": 0.8,
        "weight_decay": 0.0001, "schedule": "cosine", "label_smoothing": 0.1,
        "augment": {"pad": 1, "flip": False}, "seed": 4, "device": "cpu", "bf16": False,
        "max_steps": 3, "channels_last": False, "grad_clip": 2.0, "dataset": "digits",
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    }  # fmt: skip
    default = fit(mlp(), digits, Recipe(epochs=1)).config
    assert {k: default[k] for k in ("optimizer", "lr", "momentum", "weight_decay", "schedule",
                                    "label_smoothing", "augment", "seed", "max_steps",
                                    "channels_last", "grad_clip")} == {
        "optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0005,
        "schedule": "onecycle", "label_smoothing": 0.0, "augment": None, "seed": 0,
        "max_steps": None, "channels_last": True, "grad_clip": None,
    }  # fmt: skip


def test_bf16_refused_on_cpu(digits: Data) -> None:
    with pytest.raises(ConfigError, match="bf16"):
        fit(mlp(), digits, Recipe(epochs=1), bf16=True)


def test_max_steps_cuts_the_run(digits: Data) -> None:
    result = fit(mlp(), digits, Recipe(epochs=10, max_steps=STEPS_PER_EPOCH + 2))
    assert result.steps == STEPS_PER_EPOCH + 2 and result.epochs == 2


@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5])
def test_one_cycle_runs_of_a_few_steps(digits: Data, steps: int) -> None:
    result = fit(mlp(), digits, Recipe(epochs=1, max_steps=steps))  # 4 once divided by zero
    assert result.steps == steps and result.history[0]["lr"] > 0


def test_batch_larger_than_split_still_trains(digits: Data) -> None:
    result = fit(mlp(), digits, Recipe(epochs=2, batch_size=5000))
    assert result.steps == 2


def test_augment_options_recorded(digits: Data) -> None:
    assert fit(mlp(), digits, Recipe(epochs=1)).config["augment"] is None  # digits default: off
    on = fit(mlp(), digits, Recipe(epochs=1, augment=Augment(pad=1, flip=False)))
    assert on.config["augment"] == {"pad": 1, "flip": False}
    assert fit(mlp(), digits, Recipe(epochs=1, augment=False)).config["augment"] is None


def test_evaluate_matches_manual_and_restores_mode(digits: Data) -> None:
    model = mlp()
    model.train()
    out = evaluate(model, digits.val.x, digits.val.y, batch_size=100)
    assert model.training and all(m.training for m in model.modules())
    with torch.no_grad():
        logits = model.eval()(digits.val.x)
    accuracy = (logits.argmax(1) == digits.val.y).double().mean().item()
    loss = nn.functional.cross_entropy(logits, digits.val.y).item()
    assert out["accuracy"] == pytest.approx(accuracy)
    assert out["loss"] == pytest.approx(loss, rel=1e-5)
    evaluate(model, digits.val.x, digits.val.y)
    assert not model.training  # eval mode restored as eval
    assert all(p.grad is None for p in model.parameters())


def test_fit_result_serialises(digits: Data) -> None:
    result = fit(mlp(), digits, Recipe(epochs=1))
    text = json.dumps(result.to_dict())
    assert json.loads(text)["steps"] == STEPS_PER_EPOCH
