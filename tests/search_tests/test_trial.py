"""One trial on real digits data: metrics (no test-split figure unless ``report_test``), the
constraint gate, infeasible budgets, divergence, and artifacts that rebuild to the recorded
accuracies."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import search.trial
from objectives import NonFiniteLossError, Recipe, evaluate, fit, load
from objectives.datasets import DATASETS
from search.config import load_preset
from search.trial import PROBE_CLIP, _data, rebuild, run_trial
from spaces import ConfigError, build_model
from spaces.ssn import ShapeshiftNet, shapeshift
from tests._support.data import MNIST  # the shared MNIST files (NPAS_TEST_MNIST)

FAST = {"threads": 1, "warmup": 1, "latency_budget_s": 0.05, "latency_max_repeats": 10}
BASE: dict[str, Any] = {
    "dataset": "digits",
    "family": "mlp",
    "hyper": {"width": 24},
    "train": {"epochs": 2, "batch_size": 64},
    "objectives": [["accuracy", "maximize"], ["params", "minimize"], ["latency_ms", "minimize"]],
    "constraints": ["params <= 5000"],
    "indicators": ["params", "flops_infer", "weights"],
    "measure": FAST,
}
ALWAYS = [
    "accuracy", "val_loss", "train_loss", "train_accuracy",
    "train_time_s", "train_energy_j", "params", "flops_infer", "weights", "latency_ms",
    "plain_params", "feasible", "constraint_0", "trial_time_s", "cond_measure_s",
]  # fmt: skip


def check_complete(result: dict[str, Any]) -> None:
    for key in ALWAYS:
        assert math.isfinite(result[key]), (key, result[key])
    assert 0.0 <= result["accuracy"] <= 1.0 and result["feasible"] == 1.0
    assert result["energy_source"] in ("nvml", "rapl", "estimate")
    assert any(k.startswith("cond_") and k != "cond_measure_s" for k in result)
    json.dumps(result, allow_nan=False)  # flat and plain


@pytest.mark.slow  # real training
def test_plain_model_reports_every_metric_and_learns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []  # the sizes of the splits the trial evaluates after training
    real = search.trial.evaluate

    def counted(model: Any, split: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        read.append(len(split))
        return real(model, split, *args, **kwargs)

    monkeypatch.setattr(search.trial, "evaluate", counted)
    result = run_trial(BASE | {"artifact_dir": str(tmp_path)})
    check_complete(result)
    assert result["params"] == result["plain_params"] == result["weights"]
    assert result["constraint_0"] == result["params"] - 5000 < 0
    assert result["accuracy"] > 0.5  # ten classes: chance is 0.1
    val = load("digits", progress=False).val.y  # the constant guess, on the samples scored
    assert result["chance_accuracy"] == torch.bincount(val).max().item() / len(val)
    assert result["scored_samples"] == len(val)
    assert result["epochs"] == 2 and result["artifact"] == str(tmp_path / "model.pt")
    # the test split is not read: no figure of it, no evaluation on it
    assert read == [] and not [k for k in result if k.startswith("test_")]
    data = load("digits")
    model = rebuild(tmp_path)
    assert evaluate(model, data.val.x, data.val.y)["accuracy"] == result["accuracy"]


def test_ssn_model_meets_its_budget_and_rebuilds_with_auto_mapping(tmp_path: Path) -> None:
    cfg = BASE | {
        "hyper": {"depth": 2, "width": 32},
        "budget": 900,
        "ssn": {"mapping": "auto", "stores": 2, "generator": "emb"},
        "artifact_dir": str(tmp_path),
        "report_test": True,  # a benchmark's per-trial test figure: opted in
    }
    result = run_trial(cfg)
    check_complete(result)
    assert 0.0 <= result["test_accuracy"] <= 1.0 and math.isfinite(result["test_loss"])
    assert result["params"] <= 900 < result["plain_params"] == result["weights"]
    blob = torch.load(tmp_path / "model.pt", weights_only=True)
    assert sorted(set(blob["mapping"].values())) == [0, 1]  # two learned stores
    model = rebuild(blob)
    assert isinstance(model, ShapeshiftNet) and model.num_params == result["params"]
    data = load("digits")
    assert evaluate(model, data.test.x, data.test.y)["accuracy"] == result["test_accuracy"]


def test_analytic_constraint_gates_training() -> None:
    result = run_trial(BASE | {"constraints": ["flops_infer >= 0", "params <= 10"]})
    assert result["feasible"] == 0.0 and "accuracy" not in result, "nothing is made up"
    assert result["constraint_0"] <= 0 < result["constraint_1"] == result["params"] - 10
    assert "params <= 10" in result["infeasible_reason"]
    assert "train_time_s" not in result and "test_accuracy" not in result
    assert "latency_ms" not in result  # timed indicators come after training


def test_constraint_on_accuracy_is_checked_after_training() -> None:
    result = run_trial(BASE | {"constraints": ["accuracy >= 1.01"]})
    assert result["feasible"] == 0.0 and result["train_time_s"] > 0
    assert result["constraint_0"] == pytest.approx(1.01 - result["accuracy"])
    assert result["accuracy"] > 0.5 and "infeasible_reason" not in result


def test_budget_below_the_minimum_is_infeasible_not_an_error() -> None:
    result = run_trial(BASE | {"budget": 20})
    assert result["feasible"] == 0.0 and "accuracy" not in result, "nothing is made up"
    assert result["infeasible_reason"].startswith("budget: budget=20 is too small")
    assert "constraint_0" not in result  # params of a model that could not be built: unknown
    assert result["plain_params"] > 0


def test_diverging_training_raises() -> None:
    with pytest.raises(NonFiniteLossError, match="non-finite training loss"):
        run_trial(BASE | {"train": {"epochs": 1, "lr": 1e6}})


def test_bad_config_fails_before_any_work() -> None:
    with pytest.raises(ConfigError, match=r"train\.epochs: got 0; allowed: an int >= 1"):
        run_trial(BASE | {"train": {"epochs": 0}})
    with pytest.raises(ConfigError, match=r"objectives\[0\]: got 'acc'"):
        run_trial(BASE | {"objectives": ["acc"]})


def test_same_seed_same_result_and_the_dataset_is_loaded_once() -> None:
    cfg = BASE | {"train": {"epochs": 1}, "indicators": ["params"], "objectives": ["accuracy"]}
    before = _data.cache_info()
    first, second = run_trial(cfg), run_trial(cfg)
    assert first["accuracy"] == second["accuracy"] and first["val_loss"] == second["val_loss"]
    assert _data.cache_info().hits >= before.hits + 1
    assert run_trial(cfg | {"seed": 1})["val_loss"] != first["val_loss"]


def test_a_digits_quick_trial_runs_end_to_end() -> None:
    config = load_preset("digits-quick")
    point = {
        "family": "convnet", "convnet.depth": 2, "convnet.width": 8, "budget": 1500,
        "ssn.mapping": "single", "ssn.generator": "wavg", "convnet.train.lr": 0.1,
    }  # fmt: skip
    cfg = config.trial_config(point).replace(train={"epochs": 1})
    result = run_trial(cfg)
    assert result["feasible"] == 1.0 and result["params"] <= 1500
    for name in config.objective_names + list(config.indicators or []):
        assert math.isfinite(result[name]), name


@pytest.mark.slow  # a fresh interpreter importing torch
def test_trial_module_imports_without_ray() -> None:
    code = "import sys, search.trial; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_trial_trains_on_a_training_subset_when_asked() -> None:
    cfg = {"dataset": "digits", "family": "mlp", "hyper": {"hidden": [16]}, "train_size": 300,
           "train": {"epochs": 1}, "indicators": ["params"]}  # fmt: skip
    result = run_trial(cfg)
    assert result["epochs"] == 1 and 0.0 <= result["accuracy"] <= 1.0
    with pytest.raises(ConfigError, match="train_size"):
        run_trial({"dataset": "digits", "family": "mlp", "train_size": 0})


@pytest.mark.slow  # real training
def test_the_auto_probe_of_a_deep_convnet_trains_at_a_high_learning_rate() -> None:
    """The probe serves a depth-4 ConvNet's 6,534 weights from 600 parameters. Resized
    templates without random signs made near-copies of filters (val accuracy 0.10 unclipped,
    0.27 clipped, after 47 steps at SGD 0.3); with signs but unclipped, it diverged to NaN (as
    5 trials of the leaderboard search did)."""
    data = load("mnist", root=MNIST, train_size=6000, download=False)
    model = build_model("convnet", (1, 28, 28), 10, depth=4, width=4, growth=2.0)
    seen: dict[str, Any] = {}

    def pretrain(probe: torch.nn.Module) -> None:
        recipe = Recipe(epochs=1, lr=0.3, max_steps=47, grad_clip=PROBE_CLIP)
        seen["fit"] = fit(probe, data, recipe, progress=False)

    shapeshift(model, 600, stores=2, mapping="auto", pretrain=pretrain, upsampler="repeat")
    assert seen["fit"].history[-1]["val_accuracy"] > 0.5


@pytest.mark.slow  # real training
def test_a_trial_pretrains_the_auto_probe_clipped_and_itself_unclipped(monkeypatch) -> None:
    calls: list[float | None] = []
    real = search.trial.fit

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2].grad_clip)  # fit(model, data, recipe, ...)
        return real(*args, **kwargs)

    monkeypatch.setattr(search.trial, "fit", spy)
    cfg = BASE | {"hyper": {"depth": 2, "width": 32}, "budget": 900,
                  "ssn": {"mapping": "auto", "stores": 2}}  # fmt: skip
    check_complete(run_trial(cfg))
    assert calls == [PROBE_CLIP, None]
    with pytest.raises(ConfigError, match="grad_clip"):
        Recipe(epochs=1, grad_clip=0)


def test_a_point_is_at_chance_when_the_null_model_is_as_good_on_every_objective() -> None:
    cfg = search.trial.TrialConfig.from_dict({**BASE, "train": {"epochs": 2, "lr": 1e-9}})
    data = _data("digits", None, None, None, 0, "cpu")
    chance = torch.bincount(data.val.y).max().item() / len(data.val.y)
    null = search.trial._null_model(cfg, data)
    assert null == {
        "accuracy": ("maximize", chance),
        "params": ("minimize", 0.0),
        "latency_ms": ("minimize", 0.0),
    }
    at_chance = search.trial._at_chance
    assert at_chance({"accuracy": chance, "params": 10, "latency_ms": 0.1}, null)
    assert not at_chance({"accuracy": chance + 1e-3, "params": 10, "latency_ms": 0.1}, null)
    assert not at_chance({"accuracy": math.nan, "params": 10, "latency_ms": 0.1}, null)
    # No null model without accuracy (it would beat every trial), or with a loss objective.
    costs = {**BASE, "objectives": [["params", "minimize"], ["latency_ms", "minimize"]]}
    loss = {**BASE, "objectives": [["accuracy", "maximize"], ["val_loss", "minimize"]]}
    for raw in (costs, loss):
        assert search.trial._null_model(search.trial.TrialConfig.from_dict(raw), data) is None
    # A trial's every point says whether it is at chance, as judged on its own values.
    points: list[dict[str, Any]] = []
    run_trial(cfg, on_epoch=points.append)
    assert [p["epoch"] for p in points] == [1, 2]
    for point in points:
        assert point["at_chance"] == (point["accuracy"] <= chance)
    learned: list[dict[str, Any]] = []
    run_trial(BASE, on_epoch=learned.append)
    assert learned[-1]["accuracy"] > 0.5 and not learned[-1]["at_chance"]


@pytest.mark.slow  # real training
@pytest.mark.parametrize(
    "extra",
    [
        {"family": "mlp", "hyper": {"width": 24, "dropout": 0.2}},
        {"family": "convnet", "hyper": {"depth": 2, "width": 8}, "budget": 600,
         "ssn": {"mapping": "auto", "stores": 2, "pretrain_epochs": 1}},
    ],
    ids=["mlp-dropout", "ssn-auto"],
)  # fmt: skip
def test_a_trial_resumed_from_its_state_ends_as_the_uninterrupted_one(
    tmp_path: Path, extra: dict[str, Any]
) -> None:
    """The trial's own state after epoch 1 of 3, written to a folder as a checkpoint is, gives
    the same weights and learning curve; the auto mapping is not pretrained again."""
    cfg = BASE | extra | {"train": {"epochs": 3, "batch_size": 64}, "objectives": [
        ["accuracy", "maximize"], ["params", "minimize"]]}  # fmt: skip
    folders: list[Path] = []

    def keep(write: Any) -> None:
        folder = tmp_path / f"epoch{len(folders) + 1}"
        folder.mkdir()
        write(folder)
        folders.append(folder)

    whole: list[dict] = []
    full = run_trial(cfg | {"artifact_dir": str(tmp_path / "full")}, on_epoch=whole.append,
                     on_state=keep)  # fmt: skip
    assert len(folders) == 3
    rest: list[dict] = []
    calls = []
    real = search.trial._train
    # _train(model, data, cfg, device, recipe, ...): the probe's recipe is clipped
    search.trial._train = lambda *a, **k: calls.append(a[4].grad_clip) or real(*a, **k)
    try:
        part = run_trial(cfg | {"artifact_dir": str(tmp_path / "full")}, on_epoch=rest.append,
                         resume=folders[0])  # fmt: skip
    finally:
        search.trial._train = real
    assert calls == [None]  # the trial's training only: no mapping pretraining
    untimed = [{k: v for k, v in p.items() if k != "train_time_s"} for p in whole]
    assert [{k: v for k, v in p.items() if k != "train_time_s"} for p in rest] == untimed[1:]
    for key in ("accuracy", "val_loss", "train_loss", "params", "epochs"):
        assert part[key] == full[key], key


def test_a_state_of_another_trial_config_is_refused(tmp_path: Path) -> None:
    def keep(write: Any) -> None:
        write(tmp_path)

    run_trial(BASE | {"train": {"epochs": 1}}, on_state=keep)
    with pytest.raises(ConfigError, match=r"another trial config \(differs in \['hyper'\]\)"):
        run_trial(BASE | {"train": {"epochs": 1}, "hyper": {"width": 30}}, resume=tmp_path)


@pytest.mark.slow  # real training, four times
def test_a_cross_validated_trial_pools_its_folds_and_saves_a_model_of_every_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained: list[tuple[int, float, float]] = []  # each training: val size, accuracy, loss
    real = search.trial._train

    def spy(net, data, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(net, data, *args, **kwargs)
        last = result.history[-1]
        trained.append((len(data.val), last["val_accuracy"], last["val_loss"]))
        return result

    monkeypatch.setattr(search.trial, "_train", spy)
    heard: list[dict[str, Any]] = []
    cfg = BASE | {"folds": 3, "artifact_dir": str(tmp_path / "cv"), "indicators": ["params"],
                  "objectives": [["accuracy", "maximize"], ["params", "minimize"]]}  # fmt: skip
    result = run_trial(cfg, on_epoch=heard.append)
    folds, whole = trained[:3], trained[3]
    data = load("digits", progress=False)
    pool = len(data.train) + len(data.val)
    assert len(trained) == 4 and sum(n for n, _, _ in folds) == pool
    assert whole[0] == len(data.val)  # the last one trains on train+val (val inside it)
    pooled = sum(n * a for n, a, _ in folds) / pool
    assert result["accuracy"] == pytest.approx(pooled) and result["folds"] == 3
    assert result["val_loss"] == pytest.approx(sum(n * v for n, _, v in folds) / pool)
    spread = torch.tensor([a for _, a, _ in folds], dtype=torch.float64).std(unbiased=False)
    assert result["accuracy_folds_std"] == pytest.approx(float(spread))
    counts = torch.bincount(torch.cat([data.train.y, data.val.y]))  # every sample scored once
    assert result["chance_accuracy"] == pytest.approx(counts.max().item() / pool)
    assert result["scored_samples"] == pool
    assert [h["epoch"] for h in heard] == [2] and heard[0]["accuracy"] == result["accuracy"]
    # The saved model is the one train_on: train+val trains, weight for weight.
    plain = run_trial(BASE | {"train_on": "train+val", "artifact_dir": str(tmp_path / "tv"),
                              "indicators": ["params"]})  # fmt: skip
    saved = torch.load(result["artifact"], weights_only=True)["state_dict"]
    reference = torch.load(plain["artifact"], weights_only=True)["state_dict"]
    assert all(torch.equal(saved[k], reference[k]) for k in reference)
    with pytest.raises(ConfigError, match="cross-validated trial"):
        run_trial(cfg, resume=tmp_path)


def test_a_model_of_every_sample_that_fits_them_worse_than_the_folds_trains_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model a cross-validated trial saves has nothing held out to check it but its own
    samples: fitting them worse than the folds scored unseen samples, it trains again with
    another shuffle (up to FIT_TRIES), and the best fit is kept."""
    fits = iter([0.01, 0.03, 0.02])  # each try's accuracy on its own samples: all too low
    seeds: list[int] = []
    real = search.trial._train

    def spy(net, data, cfg, device, recipe, **kwargs):  # type: ignore[no-untyped-def]
        seed = kwargs.get("seed")
        seeds.append(cfg.seed if seed is None else seed)
        return real(net, data, cfg, device, recipe, **kwargs)

    monkeypatch.setattr(search.trial, "_train", spy)
    monkeypatch.setattr(search.trial, "evaluate", lambda *a, **k: {"accuracy": next(fits)})
    cfg = BASE | {"folds": 2, "seed": 5, "artifact_dir": str(tmp_path), "indicators": ["params"],
                  "train": {"epochs": 1}}  # fmt: skip
    result = run_trial(cfg)
    assert result["fit_tries"] == search.trial.FIT_TRIES == 3
    assert result["fit_accuracy"] == 0.03  # the best of the three kept
    assert seeds == [5, 5, 5, 6, 7]  # two folds, then the fits of every sample: seeds 5, 6, 7


def test_folds_need_fifo_and_stay_out_of_a_config_that_does_not_set_them() -> None:
    from search.config import load_config

    data = {"name": "cv", "dataset": "digits", "space": {"family": "mlp"},
            "train": {"epochs": 1}, "trials": 1}  # fmt: skip
    assert "folds" not in load_config(data).to_dict()  # a stored search relaunches unchanged
    config = load_config(data | {"folds": 4})
    assert config.folds == 4 and config.trial_config({"family": "mlp"}).folds == 4
    with pytest.raises(ConfigError, match="folds: 4 with scheduler 'moasha'"):
        load_config(data | {"folds": 4, "scheduler": "moasha"})
    with pytest.raises(ConfigError, match="folds"):
        load_config(data | {"folds": 0})


def test_a_budget_at_or_above_the_plain_count_trains_the_plain_model(tmp_path: Path) -> None:
    """A store at least as large as the weights it would generate holds no function the plain
    model cannot: the plain model trains, its params its own count; the screen plans the
    same count and the artifact rebuilds plain."""
    from search.config import TrialConfig
    from search.screening import planned_params

    cfg = BASE | {"budget": 5000, "ssn": {"mapping": "single"}, "artifact_dir": str(tmp_path),
                  "indicators": ["params"], "train": {"epochs": 1}}  # fmt: skip
    result = run_trial(cfg)
    assert result["plain_params"] < 5000 and result["params"] == result["plain_params"]
    assert not isinstance(rebuild(result["artifact"]), ShapeshiftNet)
    info = DATASETS.get("digits")
    assert planned_params(TrialConfig.from_dict(cfg), info, {}) == result["plain_params"]
    below = run_trial(cfg | {"budget": result["plain_params"] - 1, "artifact_dir": None})
    assert below["params"] < result["plain_params"]  # one under: Shapeshifted into it
