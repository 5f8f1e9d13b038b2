"""A relaunch with a changed config is refused naming each key that differs, to the leaf
(it once printed both whole spaces, about 1,200 characters, for one changed bound)."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest
import yaml

from search.record._study import open_study
from spaces._errors import ConfigError

SPACE = {"family": ["conv1d"], "conv1d.width": {"low": 8, "high": 24, "log": True},
         "train.lr": {"low": 0.001, "high": 0.1, "log": True}}  # fmt: skip


def _open(storage: optuna.storages.BaseStorage, config: dict) -> optuna.Study:
    return open_study(name="s", storage=storage, sampler=optuna.samplers.RandomSampler(),
                      config=config, objectives=[("accuracy", "maximize")], constraints=[],
                      optimiser="tpe")  # fmt: skip


def test_the_refusal_names_the_changed_leaf_only() -> None:
    storage = optuna.storages.InMemoryStorage()
    _open(storage, {"name": "s", "space": SPACE, "seed": 0, "trials": 8})
    changed = {**SPACE, "conv1d.width": {**SPACE["conv1d.width"], "high": 32}}
    with pytest.raises(ConfigError) as err:
        _open(storage, {"name": "s", "space": changed, "seed": 1, "trials": 12})
    text = str(err.value)
    assert "(seed: 0 → 1; space.conv1d.width.high: 24 → 32)" in text
    assert "train.lr" not in text and "trials" not in text.split(":")[0]
    added = {**SPACE, "train.momentum": 0.9}
    with pytest.raises(ConfigError, match=r"space\.train\.momentum: '\(not set\)' → 0\.9"):
        _open(storage, {"name": "s", "space": added, "seed": 0, "trials": 8})


@pytest.mark.slow  # a launch command in a process of its own (it imports torch)
def test_a_relaunch_with_another_config_says_so_before_anything_else(tmp_path) -> None:
    """Refused before "Launching …" or "no trial to run" is printed, naming the key (a changed
    objective once printed "no trial to run; give --trials above 8" first)."""
    from search.config import load_config
    from search.record._storage import open_storage
    from tests._support.configs import CLI_CONFIG, CLI_NAME

    config = load_config({**CLI_CONFIG, "out": str(tmp_path)})
    _ = open_study(name=CLI_NAME, storage=open_storage(config.storage_url),
                   sampler=optuna.samplers.RandomSampler(), config=config.to_dict(),
                   objectives=config.objectives, constraints=config.constraint_texts,
                   optimiser="random")  # fmt: skip
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump({**CLI_CONFIG, "out": str(tmp_path), "train": {
        **CLI_CONFIG["train"], "epochs": 3}}), encoding="utf-8")  # fmt: skip
    run = subprocess.run([sys.executable, "-m", "search", "launch", str(changed)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Launching" not in run.stdout and "no trial to run" not in run.stdout, run.stdout
    assert "(train.epochs: 2 → 3)" in run.stderr, run.stderr[-2000:]
