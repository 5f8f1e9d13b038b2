"""Data-only configs launched for real (``search launch``, a subprocess with its own local
Ray): a digits config and a generated table finish their trials, their study records the
derived config, and a relaunch with more trials resumes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml
from optuna.trial import TrialState

ROOT = Path(__file__).resolve().parents[3]


def _dataset(folder: Path, kind: str) -> object:
    if kind == "digits":
        return "digits"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 6)).astype(np.float32)
    labels = np.where(x[:, 0] > 0, "pos", "neg")  # names, not class indices: npas maps them
    np.savez(folder / "table.npz", x_train=x, y_train=labels)
    return {"name": "table-launch", "npz": "table.npz"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["digits", "table"])
def test_a_data_only_config_launches_and_finishes(tmp_path, kind):
    config = {
        "name": f"unaided-{kind}",
        "dataset": _dataset(tmp_path, kind),
        # train_size and few epochs keep the trials, finalists and refit to seconds (the
        # table's trials fit six times each: five folds and the model of every row, so its
        # finalist is one with two seeds, not the derived three with three)
        **({"train_size": 200, "train": {"epochs": 9}} if kind == "digits"
           else {"train": {"epochs": 6}, "finalists": {"top": 1, "seeds": 2}}),
        "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
        "constraints": ["params <= 1500"],
        "limits": {"trials": 2},
    }
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "runs"
    done = _launch(path, out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "derived from the data" in done.stdout
    url = f"sqlite:///{out / 'npas.db'}"
    study = optuna.load_study(study_name=f"unaided-{kind}", storage=url)
    states = [t.state for t in study.trials]  # MOASHA may stop one at a rung: PRUNED
    assert len(states) == 2 and set(states) <= {TrialState.COMPLETE, TrialState.PRUNED}, states
    stored = study.user_attrs["config"]
    assert "family" in stored["space"] and stored["trials"] == 2
    if kind == "digits":  # the first family's plain net at the limit trains first
        first = stored["start"][0]
        assert {k: study.trials[0].params[k] for k in first} == first
    else:  # one family: no start point
        assert not stored.get("start")
    assert all(t.user_attrs["metric_params"] <= 1500 for t in study.trials)
    recommendation = study.user_attrs["npas:recommendation"]
    assert recommendation["refit"]["trial"] == recommendation["trial"]
    assert Path(recommendation["refit"]["artifact"]).is_file()  # export writes it
    if kind == "table":  # 240 rows: cross-validated; a relaunch derives the same config
        assert stored["folds"] == 5 and stored["scheduler"]["name"] == "fifo"
        assert all(t.user_attrs["metric_folds"] == 5 for t in study.trials)
        again = _launch(path, out, "--trials", "3")
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(optuna.load_study(study_name="unaided-table", storage=url).trials) == 3
        # its recommendation retrained: once, on every sample, as the search's model was
        bundle = tmp_path / "bundle"
        for argv in (["export", "--run", str(out), "--name", "unaided-table", "--out",
                      str(bundle)], ["train", str(bundle), "--epochs", "2"]):  # fmt: skip
            done = subprocess.run([sys.executable, "-m", "search", *argv], cwd=ROOT,
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
        trained = json.loads((bundle / "train.json").read_text())
        assert trained["train_on"] == "train+val" and "folds" not in trained["metrics"]
        assert trained["trial_config"]["folds"] == 1
        _outputs_are_the_named_classes(bundle)


def _outputs_are_the_named_classes(bundle: Path) -> None:
    """The bundle names the class of each output, and onnxruntime's argmax read through those
    names gives the label rows far from the boundary have."""
    import onnxruntime

    data = json.loads((bundle / "metrics.json").read_text())["data"]
    assert data["classes"] == ["neg", "pos"]
    assert "output i is the class `classes[i]`" in (bundle / "README.md").read_text()
    rows = np.random.default_rng(1).normal(size=(20, 6)).astype(np.float32)
    rows[:, 0] = np.where(np.arange(20) % 2, 2.5, -2.5)
    pre = data["preprocessing"]
    x = rows * np.float32(pre["multiply"]) - np.float32(pre["subtract"])
    session = onnxruntime.InferenceSession(str(bundle / "model.onnx"))
    logits = session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0]
    named = [data["classes"][i] for i in logits.argmax(1)]
    truth = ["pos" if v > 0 else "neg" for v in rows[:, 0]]
    assert sum(a == b for a, b in zip(named, truth, strict=True)) >= 18, (named, truth)


def _launch(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "search", "launch", str(path), "--out", str(out),
         "--address", "local", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
