"""The signal and table examples (``examples/signals``, ``examples/table``) run as a user runs
them, in a copy: the data-making script, then ``search launch``; the stored study is read
through Optuna's own API: every trial complete, on samples of the declared shape. The signal
search's built-in ``conv1d`` trial is exported, and its ``model.onnx`` run by onnxruntime on
the raw test signals, as its README says, gives the test accuracy export measured."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

pytestmark = pytest.mark.slow  # a local Ray search each

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("example", "script", "shape"),
    [("signals", "make_signals.py", [2, 64]), ("table", "make_table.py", [12])],
)
def test_an_example_searches_its_signals_or_table_rows_as_declared(
    tmp_path, example, script, shape
):
    folder = tmp_path / example
    shutil.copytree(ROOT / "examples" / example, folder)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    run = tmp_path / "runs" / example
    for command in (
        f"python {script}",
        f"search launch search.yaml --out {run} --quiet",
    ):
        done = subprocess.run(command, shell=True, cwd=folder, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"

    study = optuna.load_study(study_name=example, storage=f"sqlite:///{run}/npas.db")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    assert max(t.values[0] for t in study.trials) > 0.6  # 3 classes: it learns something
    assert study.user_attrs["cond_sample_shape"] == shape
    fingerprint = study.user_attrs["data_fingerprints"][0]["fingerprint"]
    assert fingerprint["splits"]["train"]["shape"] == shape
    declared = study.trials[0].user_attrs["trial_config"]["dataset"]
    assert declared["layout"] == {"signals": "signal", "table": "table"}[example]
    if example == "signals":
        assert study.trials[0].params["family"] == "conv1d"  # the start point
        _exported_onnx_reproduces_the_test_accuracy(folder, run, env)


def _exported_onnx_reproduces_the_test_accuracy(folder: Path, run: Path, env: dict) -> None:
    bundle = run / "bundle"
    command = f"search export --name signals --run {run} --select trial:0 --out {bundle}"
    done = subprocess.run(command, shell=True, cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    metrics = json.loads((bundle / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["onnx"]["error"] is None
    assert metrics["onnx"]["input"]["shape"] == ["batch", 2, 64]
    data = np.load(folder / "data" / "signals.npz")
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"## Run it without npas.*?```python\n(.*?)```", readme, re.S).group(1)
    scope = {"raw": data["x_test"]}
    cwd = os.getcwd()
    os.chdir(bundle)  # the snippet opens metrics.json and model.onnx where it runs
    try:
        exec(snippet, scope)
    finally:
        os.chdir(cwd)
    correct = int((scope["logits"].argmax(1) == data["y_test"]).sum())
    assert correct == metrics["exported"]["test_correct"]
