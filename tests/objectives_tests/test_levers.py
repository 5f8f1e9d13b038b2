"""Recipe levers: the weights' moving average (``ema``) and distillation from a teacher whose
soft targets are cached on disk, with their checks, resume and the fused trainer's fallback."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import objectives.train as train_module
from objectives import Teacher, fit_seeds
from objectives.datasets import Data, load
from objectives.train import FitResult, Recipe, evaluate, fit, trained_weights
from spaces._errors import ConfigError, UnknownNameError
from tests._support.nets import net, through_disk

#: A tiny teacher: an MLP trained for a few epochs on the digits' training split.
TEACHER = {"family": "mlp", "hyper": {"width": 32}, "train": {"epochs": 4}, "seed": 0}


@pytest.fixture(scope="module")
def digits() -> Data:
    return load("digits")


@pytest.fixture(autouse=True)
def teachers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder of the teachers' cached targets, in this test's own cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "npas" / "data" / "teachers"


def untimed(result: FitResult) -> list[dict[str, float]]:
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in result.history]


def distilling(**options: object) -> Recipe:
    return Recipe.from_mapping({"epochs": 2, "teacher": TEACHER, **options})


# -- the checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("ema", 1.0),
        ("ema", -0.1),
        ("distill_temperature", 0),
        ("distill_weight", 1.5),
        ("distill_weight", -0.5),
    ],
)
def test_bad_lever_values_are_named(option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"{option} .*got {value!r}"):
        Recipe.from_mapping({"epochs": 1, "teacher": TEACHER, option: value})


def test_distillation_options_need_a_teacher() -> None:
    with pytest.raises(ConfigError, match=r"distill_weight=0\.9 needs a teacher"):
        Recipe(epochs=1, distill_weight=0.9)


def test_a_teacher_is_checked_and_reads_back_from_plain_data() -> None:
    recipe = distilling(distill_weight=0.7)
    assert isinstance(recipe.teacher, Teacher) and recipe.teacher.recipe == Recipe(epochs=4)
    assert Recipe.from_mapping(recipe.to_dict()) == recipe
    assert hash(recipe) == hash(distilling(distill_weight=0.7))  # a recipe stays hashable
    with pytest.raises(UnknownNameError, match="mlp"):
        Teacher.from_mapping({**TEACHER, "family": "mpl"})
    with pytest.raises(ConfigError, match="unknown teacher option 'hyperr'"):
        Teacher.from_mapping({**TEACHER, "hyperr": {}})
    with pytest.raises(ConfigError, match="a teacher has no teacher of its own"):
        Teacher.from_mapping({**TEACHER, "train": {"epochs": 1, "teacher": TEACHER}})


# -- ema ----------------------------------------------------------------------------------------


def test_the_average_is_validated_and_is_what_the_model_ends_with(digits: Data) -> None:
    states: list[dict] = []
    model = net()
    result = fit(model, digits, Recipe(epochs=2, ema=0.9), on_state=states.append)
    last = states[-1]
    assert last["ema_updates"] == result.steps and result.config["ema"] == 0.9
    held = model.state_dict()
    assert all(torch.equal(held[k], v) for k, v in trained_weights(last).items())
    assert any(not torch.equal(last["model"][k], v) for k, v in last["ema"].items())
    assert evaluate(model, digits.val) == {
        "accuracy": result.val_accuracy, "loss": result.history[-1]["val_loss"]
    }  # fmt: skip


def test_an_average_of_decay_zero_is_the_plain_run(digits: Data) -> None:
    plain, averaged = net(), net()
    a = fit(plain, digits, Recipe(epochs=2))
    b = fit(averaged, digits, Recipe(epochs=2, ema=0.0))
    assert untimed(a) == untimed(b) and "ema" not in a.config
    pairs = zip(plain.state_dict().values(), averaged.state_dict().values(), strict=True)
    assert all(torch.equal(x, y) for x, y in pairs)


def test_a_run_with_an_average_resumes_exactly(digits: Data) -> None:
    recipe = Recipe(epochs=3, ema=0.8)
    states: list[dict] = []
    whole = net()
    done = fit(whole, digits, recipe, seed=2, on_state=states.append)
    again = net(seed=1)
    resumed = fit(again, digits, recipe, seed=2, resume=through_disk(states[0]))
    assert untimed(resumed) == untimed(done)
    pairs = zip(whole.state_dict().values(), again.state_dict().values(), strict=True)
    assert all(torch.equal(x, y) for x, y in pairs)
    plain: list[dict] = []
    fit(net(), digits, Recipe(epochs=3), seed=2, on_state=plain.append)
    assert "ema" not in plain[0] and "ema" not in plain[0]["options"]  # states as before
    with pytest.raises(ConfigError, match=r"other options.*'ema'"):
        fit(net(), digits, recipe, seed=2, resume=plain[0])
    with pytest.raises(ConfigError, match=r"other options.*'ema'"):
        fit(net(), digits, Recipe(epochs=3), seed=2, resume=states[0])


@pytest.mark.parametrize("lever", [{"ema": 0.9}, {"teacher": TEACHER}])
def test_fused_seeds_train_one_after_another_with_a_lever(digits: Data, lever: dict) -> None:
    recipe = Recipe.from_mapping({"epochs": 1, **lever})
    (name,) = lever
    results = fit_seeds([net(0), net(1)], digits, recipe, seeds=[0, 1])
    assert all(name in r.config["fused"] for r in results)
    alone = fit(net(1), digits, recipe, seed=1)
    assert untimed(results[1]) == untimed(alone)
    with pytest.raises(ConfigError, match=rf"cannot be fused.*{name}"):
        fit_seeds([net(0), net(1)], digits, recipe, seeds=[0, 1], fused=True)


# -- distillation -------------------------------------------------------------------------------


def test_the_teacher_trains_once_on_the_training_split(
    digits: Data, teachers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taught: list[Data] = []
    real_fit = train_module.fit

    def spy(model: nn.Module, data: Data, recipe: Recipe, **options: Any) -> FitResult:
        taught.append(data)  # fit's own calls: the teacher's
        return real_fit(model, data, recipe, **options)

    monkeypatch.setattr(train_module, "fit", spy)
    first = fit(net(), digits, distilling())
    path = Path(first.config["teacher_targets"])
    assert path.parent == teachers and len(taught) == 1
    (seen,) = taught
    assert seen.train is digits.train and seen.val is digits.train and seen.test is digits.train
    blob = torch.load(path, weights_only=True)
    made_by = blob["provenance"]
    assert made_by["teacher"] == Teacher.from_mapping(TEACHER).to_dict()
    assert made_by["dataset"] == "digits" and made_by["torch"] == torch.__version__
    assert made_by["train_split"]["size"] == len(digits.train) and blob["teacher"]["trained_on"]
    targets = blob["targets"]
    assert targets.shape == (len(digits.train), 10)
    assert (targets.argmax(1) == digits.train.y).float().mean() > 0.7  # in the split's order

    stamp = path.stat().st_mtime_ns
    second = fit(net(), digits, distilling())
    assert len(taught) == 1 and path.stat().st_mtime_ns == stamp  # read, not trained again
    assert untimed(second) == untimed(first)


@pytest.fixture()
def taught(monkeypatch: pytest.MonkeyPatch) -> list[Data]:
    """The data of every training of the test from here on (a spy on ``train.fit``: a
    teacher trained again shows as one more)."""
    seen: list[Data] = []
    real_fit = train_module.fit

    def spy(model: nn.Module, data: Data, recipe: Recipe, **options: Any) -> FitResult:
        seen.append(data)
        return real_fit(model, data, recipe, **options)

    monkeypatch.setattr(train_module, "fit", spy)
    return seen


def test_another_teacher_split_or_provenance_trains_again(
    digits: Data, taught: list[Data]
) -> None:
    path = Path(fit(net(), digits, distilling()).config["teacher_targets"])
    other_seed = Recipe.from_mapping({"epochs": 2, "teacher": {**TEACHER, "seed": 1}})
    assert Path(fit(net(), digits, other_seed).config["teacher_targets"]) != path
    other_split = load("digits", seed=1)
    assert Path(fit(net(), other_split, distilling()).config["teacher_targets"]) != path
    assert len(taught) == 3
    blob = torch.load(path, weights_only=True)
    blob["provenance"]["torch"] = "0.0"  # a file that another torch made, under this name
    torch.save(blob, path)
    fit(net(), digits, distilling())
    assert len(taught) == 4
    assert torch.load(path, weights_only=True)["provenance"]["torch"] == torch.__version__


def test_a_distillation_weight_of_zero_is_the_plain_run(digits: Data) -> None:
    plain = fit(net(), digits, Recipe(epochs=2))
    zero = fit(net(), digits, distilling(distill_weight=0.0))
    assert untimed(zero) == untimed(plain)
    assert zero.config["distill_weight"] == 0.0 and "teacher" not in plain.config


def test_a_distillation_weight_changes_the_training(digits: Data) -> None:
    plain, taught = net(), net()
    a = fit(plain, digits, Recipe(epochs=2))
    b = fit(taught, digits, distilling(distill_weight=0.9, distill_temperature=2.0))
    assert [r["train_loss"] for r in a.history] != [r["train_loss"] for r in b.history]
    pairs = zip(plain.state_dict().values(), taught.state_dict().values(), strict=True)
    assert not all(torch.equal(x, y) for x, y in pairs)
    assert b.config["teacher"]["family"] == "mlp" and b.config["distill_temperature"] == 2.0


def test_a_streamed_training_split_is_refused(digits: Data) -> None:
    streamed = load("digits", stream=True, workers=0)
    with pytest.raises(ConfigError, match=r"teacher: .*stream=False"):
        fit(net(), streamed, distilling())


#: A process that waits for ``go``, distils from a slow teacher and prints what it did.
_RACER = """
import sys, time
import struct
from pathlib import Path
import torch
import objectives.train as t
real = t._train_teacher
def spy(*args, **kwargs):
    print("TRAINED", flush=True)
    return real(*args, **kwargs)
t._train_teacher = spy
from objectives.datasets import load
data = load("digits")
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.01)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
teacher = {"family": "mlp", "hyper": {"width": 32}, "train": {"epochs": 25}, "seed": 0}
result = t.fit(net, data, t.Recipe.from_mapping({"epochs": 1, "teacher": teacher}))
print("PATH", result.config["teacher_targets"], result.history[-1]["train_loss"], flush=True)
"""


def test_trials_starting_at_once_train_the_teacher_once(tmp_path: Path) -> None:
    """Two processes distilling from one uncached teacher at the same moment: one trains it,
    the other waits on its lock and reads its file (same targets, same training)."""
    import os
    import subprocess
    import sys

    go = tmp_path / "go"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, str(go)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for _ in range(2)]  # fmt: skip
    try:
        go.touch()
        outs = [racer.communicate(timeout=240) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    assert [r.returncode for r in racers] == [0, 0], [err[-2000:] for _, err in outs]
    said = "".join(out for out, _ in outs).splitlines()
    assert said.count("TRAINED") == 1, said
    paths = [line.split()[1:] for line in said if line.startswith("PATH")]
    assert len(paths) == 2 and paths[0] == paths[1]  # one file, the same training from it
    assert Path(paths[0][0] + ".lock").exists()


# -- a poisoned cache ---------------------------------------------------------------------------


def _flip_a_target(path: Path) -> None:
    """Overwrites the first logit's 4 bytes in the file with another finite float32: the
    file still loads (torch.load checks no CRC), the shape and values stay plausible."""
    raw = path.read_bytes()
    first = torch.load(path, weights_only=True)["targets"][0, :4].numpy().tobytes()
    at = raw.index(first)
    path.write_bytes(raw[:at] + struct.pack("<f", 1234.5) + raw[at + 4 :])


def _rewrite(path: Path, change: Any) -> None:
    """The file saved again with its targets changed by ``change`` and their checksum made to
    fit: only the shape or finiteness check can catch it."""
    blob = torch.load(path, weights_only=True)
    blob["targets"] = change(blob["targets"]).contiguous()
    blob["targets_sha256"] = hashlib.sha256(blob["targets"].numpy().tobytes()).hexdigest()
    torch.save(blob, path)


def _nan_first(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t[0, 0] = float("nan")
    return t


@pytest.fixture(scope="module")
def cached(digits: Data, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bytes, list]:
    """A good teacher file (its name and bytes), made once, and the run that distilled from it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        first = fit(net(), digits, distilling())
    path = Path(first.config["teacher_targets"])
    return path.name, path.read_bytes(), untimed(first)


@pytest.mark.parametrize(
    "poison",
    [
        _flip_a_target,
        lambda p: _rewrite(p, _nan_first),
        lambda p: _rewrite(p, lambda t: t[:-1]),  # one sample short
        lambda p: _rewrite(p, lambda t: t[:, :-1]),  # one class short
    ],
    ids=["flipped-bytes", "nan", "rows", "classes"],
)
def test_a_poisoned_teacher_file_is_a_miss_trained_again_and_replaced(
    digits: Data, teachers: Path, cached: tuple, poison: Any, taught: list[Data]
) -> None:
    # Before, each was read: a flipped value trained the student silently on it, a NaN failed
    # every trial with "non-finite training loss" advice, a wrong shape with an IndexError.
    from objectives._distill import read_targets

    name, good, first = cached
    path = teachers / name
    teachers.mkdir(parents=True)
    path.write_bytes(good)
    blob = torch.load(path, weights_only=True)
    poison(path)
    again = fit(net(), digits, distilling())
    assert len(taught) == 1, "the poisoned file was read instead of training the teacher again"
    assert Path(again.config["teacher_targets"]) == path and untimed(again) == first
    shape = (len(digits.train), 10)
    assert torch.equal(read_targets(path, blob["provenance"], shape), blob["targets"])
    assert [p.name for p in teachers.iterdir() if not p.name.endswith(".lock")] == [name]
