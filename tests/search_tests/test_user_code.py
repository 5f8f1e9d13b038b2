"""The user's code in a search: errors at ``search launch`` before anything exists, and one
trial of a user's family, image folder and indicator from a hand-written trial config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from search.trial import run_trial
from tests.search_tests.userplugin import write_images, write_plugin

ROOT = Path(__file__).resolve().parents[2]

BAD = {
    "missing module": ({"imports": ["no_such_module_xyz"]}, "module 'no_such_module_xyz' "
                       "cannot be imported: ModuleNotFoundError"),
    "module raises (--import)": ({}, "--import[0]: module 'raises' (", ),
    "name registered twice": ({"imports": ["twice.py"]}, "family 'mlp' is already registered"),
    "labels not integers": ({"imports": ["floats.py"], "dataset": "t-floats"},
                            "labels of dtype float64"),
    "indicator not a number": ({"imports": ["text.py"], "objectives": ["accuracy", "t_text"]},
                               "indicator 't_text' returned 'small' (str)"),
}  # fmt: skip
SOURCES = {
    "raises.py": "raise RuntimeError('broken on purpose')\n",
    "twice.py": "import spaces\nspaces.register_family('mlp')(lambda i, n: None)\n",
    "floats.py": "import numpy as np, objectives\n"
    "objectives.register_dataset('t-floats', source='test')(lambda: objectives.Splits("
    "train=(np.zeros((20, 1, 4, 4)), np.arange(20) % 2 * 1.0)))\n",
    "text.py": "import objectives\n"
    "objectives.register_indicator('t_text', 'minimize')(lambda model, example: 'small')\n",
}


@pytest.mark.slow  # `search launch`/`search check` in a fresh interpreter importing torch
@pytest.mark.parametrize("case", list(BAD))
def test_launch_refuses_bad_user_code_in_one_line_before_anything_exists(tmp_path, case):
    changes, message = BAD[case]
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text)
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "trials": 1, **changes}
    (tmp_path / "search.yaml").write_text(json.dumps(config))  # JSON is YAML
    out = tmp_path / "run"
    given = ["--import", "raises.py"] if "--import" in case else []
    run = subprocess.run(
        [sys.executable, "-m", "search", "launch", "search.yaml", "--out", str(out), *given],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-3000:]
    assert message in lines[0], lines[0]
    assert not out.exists(), "no run folder, no storage, no Ray"


def test_a_hand_written_trial_config_runs_the_users_family_dataset_and_indicator(tmp_path):
    plugin = write_plugin(tmp_path / "elsewhere", "trial_plugin", family="t-tiny",
                          indicator="t_bytes")  # fmt: skip
    images = write_images(tmp_path / "images")
    result = run_trial(
        {
            "imports": [str(plugin)],
            "dataset": {"name": "t-trial-images", "image_folder": str(images)},
            "val_size": 8,
            "family": "t-tiny",
            "hyper": {"width": 3},
            "train": {"epochs": 3, "batch_size": 8},
            "objectives": [["accuracy", "maximize"], ["t_bytes", "minimize"]],
            "constraints": ["t_bytes <= 100"],
            "indicators": ["params"],
        }
    )
    assert result["feasible"] == 1.0 and result["t_bytes"] == result["params"] == 3 * 9 + 3 + 8
    assert result["accuracy"] > 0.5


@pytest.mark.slow  # `search launch`/`search check` in a fresh interpreter importing torch
def test_search_check_runs_the_launch_checks_and_creates_nothing(tmp_path):
    (tmp_path / "text.py").write_text(SOURCES["text.py"])
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "imports": ["text.py"],
              "indicators": ["params"]}  # the full panel would measure t_text too  # fmt: skip
    for objectives, code in (([["accuracy", "maximize"]], 0), (["accuracy", "t_text"], 2)):
        (tmp_path / "search.yaml").write_text(json.dumps({**config, "objectives": objectives}))
        run = subprocess.run(
            [sys.executable, "-m", "search", "check", "search.yaml"], cwd=tmp_path,
            capture_output=True, text=True, timeout=120,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert run.returncode == code, run.stderr[-3000:]
    assert "returned 'small'" in run.stderr and not (tmp_path / "runs").exists()
