"""The search's ``loggers``: a real search on digits logs every trial to TensorBoard and MLflow,
read back through each tool's own reader; and what the loggers are shown of a result."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState
from ray.tune.logger import LoggerCallback
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from search.record._records import metrics_of
from search.record._schema import RayKey
from search.run._launch import launch
from search.run._loggers import (
    Readable,
    TrialView,
    logged_result,
    mlflow_uri,
    tensorboard_folder,
)
from tests._support.searches import digits_config

OBJECTIVES = ["accuracy", "params"]


def test_a_result_is_logged_as_finite_numbers_by_name_stepped_by_epoch():
    point = {"epoch": 2, "accuracy": 0.5, "val_loss": math.nan, "at_chance": False, "x": "cpu"}
    epoch = {"accuracy": 0.5, "params": 900.0, RayKey.CURVE: json.dumps(point), "config": {}}
    assert logged_result(epoch, OBJECTIVES) == {
        "epoch": 2.0, "accuracy": 0.5, "params": 900.0, "training_iteration": 2,
    }  # fmt: skip
    metrics = {"accuracy": 0.6, "params": 900, "epochs": 3, "energy_source": "none"}
    end = {"accuracy": 0.6, "params": 900.0, RayKey.METRICS: json.dumps(metrics)}
    assert logged_result(end, OBJECTIVES) == {
        "accuracy": 0.6, "params": 900.0, "epochs": 3.0, "training_iteration": 3,
    }  # fmt: skip
    untrained = {
        "accuracy": math.nan,
        "params": 900.0,
        RayKey.METRICS: json.dumps({"params": 900}),
    }
    assert logged_result(untrained, OBJECTIVES) == {"params": 900.0, "training_iteration": 0}
    assert logged_result({"accuracy": math.nan, RayKey.ERROR: "ValueError: x"}, OBJECTIVES) == {}


def test_a_trial_is_shown_by_its_number_and_its_hyper_parameters_by_dimension_name():
    hyper = {"widths": [8, 16], "act": "relu"}
    train = {"lr": 0.1, "augment": ("flip",)}
    cfg = SimpleNamespace(family="scs", budget=None, hyper=hyper, ssn={"k": 2}, train=train)
    trial = SimpleNamespace(config={"number": 3, "trial_config": cfg}, trial_id="ab_00003")
    view = TrialView(trial, Path("/tb"))
    assert str(view) == view.name == "trial-3" and view.local_path == "/tb/trial-3"
    assert view.config == view.evaluated_params == {
        "number": 3, "family": "scs", "scs.widths.0": 8, "scs.widths.1": 16, "scs.act": "relu",
        "ssn.k": 2, "train.lr": 0.1, "train.augment": "('flip',)",
    }  # fmt: skip
    assert view.trial_id == "ab_00003"  # anything else is the trial's


def test_a_familys_own_train_option_keeps_its_name_and_distillation_needs_a_teacher():
    """``convnet.train.lr`` was logged as ``train.lr``, and ``distill_*`` with no teacher."""
    train = {"lr": 0.1, "momentum": 0.9, "teacher": None, "distill_weight": 0.5}
    cfg = SimpleNamespace(family="convnet", budget=900, hyper={}, ssn={}, train=train)
    trial = SimpleNamespace(config={"number": 0, "trial_config": cfg})
    named = TrialView(trial, None, {"family", "convnet.train.lr", "train.momentum"}).config
    assert named == {"number": 0, "family": "convnet", "budget": 900, "convnet.train.lr": 0.1,
                     "train.momentum": 0.9}  # fmt: skip
    taught = SimpleNamespace(**{**vars(cfg), "train": {**train, "teacher": {"family": "mlp"}}})
    named = TrialView(SimpleNamespace(config={"number": 0, "trial_config": taught}), None).config
    assert named["train.distill_weight"] == 0.5 and named["train.lr"] == 0.1


class _Trial(SimpleNamespace):
    __hash__ = object.__hash__  # as Ray Tune's trials: each its own key


class _Failing(Readable, LoggerCallback):
    def log_trial_start(self, trial):
        raise OSError("no space left on device")


def test_a_failing_logger_warns_once_and_the_search_goes_on(capsys):
    cfg = SimpleNamespace(family="mlp", budget=900, hyper={}, ssn={}, train={})
    trial = _Trial(config={"number": 0, "trial_config": cfg})
    logger = _Failing(OBJECTIVES, None, "fake")
    logger.on_trial_start(0, [trial], trial)
    logger.on_trial_start(1, [trial], trial)
    err = capsys.readouterr().err
    assert err.count("[npas] warning: loggers: fake stopped logging (OSError: no space") == 1


@pytest.mark.usefixtures("local_ray")
def test_a_search_logs_every_trial_to_tensorboard_and_mlflow(tmp_path):
    config = digits_config(tmp_path, epochs=2, loggers=["tensorboard", "mlflow"])
    study = launch(config, progress=False)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    client = MlflowClient(tracking_uri=mlflow_uri(tmp_path, config.name))
    experiment = client.get_experiment_by_name(config.name)
    assert experiment.artifact_location.startswith((tmp_path / config.name).as_uri())
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == ["trial-0", "trial-1"]
    for trial in study.trials:
        curve = {p["epoch"]: p["accuracy"] for p in trial.user_attrs["curve"]}
        assert sorted(curve) == [1, 2]
        metrics = metrics_of(trial)
        # MLflow: the hyper-parameters by dimension name, each metric per epoch, then the end's
        run = runs[f"trial-{trial.number}"]
        assert run.info.status == "FINISHED"
        for name, value in trial.params.items():
            assert run.data.params[name] == str(value), name
        assert run.data.params["number"] == str(trial.number)
        assert not any("trial_config" in k or "npas_" in k for k in run.data.params)
        assert not any("config" in k or "npas_" in k for k in run.data.metrics)
        history = client.get_metric_history(run.info.run_id, "accuracy")
        assert {m.step: m.value for m in history} == pytest.approx(curve)
        assert run.data.metrics["params"] == metrics["params"] <= 1500
        assert run.data.metrics["train_loss"] == pytest.approx(metrics["train_loss"])
        assert "test_accuracy" not in run.data.metrics  # no trial reads the test split
        assert run.data.metrics["flops_infer"] == metrics["flops_infer"]
        # TensorBoard: the same scalars per epoch, and the hyper-parameters at the end
        events = EventAccumulator(
            str(tensorboard_folder(tmp_path, config.name) / run.info.run_name)
        )
        events.Reload()
        scalars = {e.step: e.value for e in events.Scalars("ray/tune/accuracy")}
        assert scalars == pytest.approx(curve, rel=1e-6)  # float32 in the event file
        assert "ray/tune/flops_infer" in events.Tags()["scalars"]
        start = [
            plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info
            for content in events.PluginTagToContent("hparams").values()
        ]
        (hparams,) = [s.hparams for s in start if s.hparams]
        assert hparams["family"].string_value == "mlp"
        assert hparams["mlp.width"].number_value == trial.params["mlp.width"]
