"""The checkpointing trials of the promotion, fault and time-limit tests: a learning curve whose
epoch is saved in each checkpoint, every epoch it runs logged (``epochs.jsonl`` beside the
trials' folders) so a test sees which epochs ran and in which process; the config they run
under, and the readers of that log.

The trial functions are shipped to Ray's workers by value: a worker need not import tests.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import ray.cloudpickle

from search.config import TrialConfig
from tests._support.searches import make_config

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: The epochs of every checkpointing trial.
EPOCHS = 9
#: The trials of a checkpointing_config search.
TRIALS = 8


def checkpointing_trial(cfg: TrialConfig, on_epoch: Any = None, on_state: Any = None,
                        resume: Any = None, pause: float = 0.03) -> dict[str, Any]:  # fmt: skip
    """A learning curve set by lr, its epoch saved in each checkpoint; every epoch it runs is
    appended to ``epochs.jsonl`` beside the trial's artifact folder, so a test sees which
    epochs ran and in which process. An epoch takes ``pause`` seconds."""
    level = 1.0 - abs(math.log10(cfg.train["lr"]) + 1) / 4
    params = float(cfg.budget)
    first = 1
    if resume is not None:
        first = json.loads((Path(resume) / "state.json").read_text())["epoch"] + 1
    log = Path(cfg.artifact_dir).parents[1] / "epochs.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    number = int(Path(cfg.artifact_dir).name)
    for epoch in range(first, EPOCHS + 1):
        time.sleep(pause)
        with log.open("a") as f:
            f.write(json.dumps({"trial": number, "epoch": epoch, "pid": os.getpid()}) + "\n")

        def write(folder: Any, epoch: int = epoch) -> None:
            (Path(folder) / "state.json").write_text(json.dumps({"epoch": epoch}))

        on_state(write)
        on_epoch({"epoch": epoch, "accuracy": level * epoch / EPOCHS, "params": params,
                  "train_time_s": 0.03 * epoch, "elapsed_s": pause * epoch})  # fmt: skip
    return {"accuracy": level, "params": params, "feasible": 1.0, "epochs": EPOCHS,
            "trial_time_s": 0.3, "trial_energy_j": 2.0}  # fmt: skip


def slow_checkpointing_trial(cfg: TrialConfig, on_epoch: Any = None, on_state: Any = None,
                             resume: Any = None) -> dict[str, Any]:  # fmt: skip
    """checkpointing_trial with epochs of 0.25 s, long enough to kill one in; it leaves its
    worker's pid in its folder first."""
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pid").write_text(str(os.getpid()))
    return checkpointing_trial(cfg, on_epoch, on_state, resume, pause=0.25)


def checkpointing_config(out: Path, scheduler: str):
    """make_config for TRIALS checkpointing trials of EPOCHS epochs under ``scheduler``: "fifo"
    or "promotion" (promotion-type MOASHA)."""
    schedulers = {"fifo": {"name": "fifo"},
                  "promotion": {"name": "moasha", "type": "promotion", "reduction_factor": 2}}
    return make_config(out, optimiser="random", trials=TRIALS, constraints=[],
                       train={"epochs": EPOCHS}, scheduler=schedulers[scheduler])  # fmt: skip


def epoch_log(out: Path) -> list[dict]:
    """The rows of the epochs log of the search in ``out`` (none before its first epoch)."""
    path = out / "t-random" / "epochs.jsonl"
    return [json.loads(line) for line in path.open()] if path.exists() else []


def epochs_by_trial(rows: list[dict]) -> dict[int, list[int]]:
    """The epochs each trial ran, in the order it ran them, from the epochs log's rows."""
    runs: dict[int, list[int]] = {}
    for row in rows:
        runs.setdefault(row["trial"], []).append(row["epoch"])
    return runs


def check_each_epoch_ran_once_but_the_one_in_flight(runs: dict[int, list[int]]) -> None:
    for number, epochs in runs.items():
        assert sorted(set(epochs)) == list(range(1, max(epochs) + 1)), (number, epochs)
        assert len(epochs) - len(set(epochs)) <= 1, (number, epochs)  # one interval at most
