"""The small searches on digits that the run tests launch: their config builders and the cheap
stand-in trials (real trainables, where training is not the point).

The trial functions are shipped to Ray's workers by value: a worker need not import tests.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import ray.cloudpickle

from search.config import TrialConfig, load_config, load_preset

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
POPULATION = {name: {"population_size": 4} for name in ("nsga2", "pymoo-nsga2")}


def make_config(out: Path, *, optimiser: str = "nsga2", trials: int = 6, **changes: Any):
    """digits-quick with two objectives, one constraint and a small population."""
    data = load_preset("digits-quick").to_dict()
    data.update(
        name=f"t-{optimiser}",
        out=str(out),
        trials=trials,
        objectives=[["accuracy", "maximize"], ["params", "minimize"]],
        constraints=["params <= 2000"],
        algorithm={"name": optimiser, "options": POPULATION.get(optimiser, {})},
    )
    data.update(changes)
    return load_config(data)


def digits_config(out: Path, *, epochs: int, **changes: Any):
    """Two real trials of small Shapeshifted MLPs on digits, trained ``epochs`` epochs."""
    return make_config(
        out,
        optimiser="random",
        trials=2,
        train={**load_preset("digits-quick").train, "epochs": epochs},
        space={
            "family": {"choices": ["mlp"]},
            "mlp.depth": {"low": 1, "high": 1},
            "mlp.width": {"low": 16, "high": 32},
            "budget": {"low": 600, "high": 1500},
            "train.lr": {"low": 0.05, "high": 0.2, "log": True},
        },
        fixed={"ssn.mapping": "single"},
        indicators=["params", "flops_infer"],
        **changes,
    )


#: A search of two real trials long enough (400 epochs) to be stopped while both train, as a
#: config file for ``search launch``.
LONG = {
    "name": "long",
    "dataset": "digits",
    "space": {"family": ["mlp"], "mlp.width": {"low": 16, "high": 32}},
    "train": {"epochs": 400, "batch_size": 64},
    "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
    "algorithm": "random",
    "trials": 2,
    "indicators": ["params"],
    "measure": {"threads": 1},
}


def fake_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """A cheap stand-in for run_trial: mlps score, convnets raise (a crashing trial)."""
    if cfg.family == "convnet":
        raise ValueError(f"no convnets today (width {cfg.hyper['width']})")
    params = float(cfg.budget)
    return {
        "accuracy": 1.0 - 300.0 / params - abs(math.log10(cfg.train["lr"]) + 1) / 10,
        "params": params,
        "flops_infer": 2.0 * params,
        "feasible": float(params <= 2000),
        "constraint_0": params - 2000,
        "pid": os.getpid(),
    }


def slow_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """fake_trial that takes a second, so a search can be killed while trials run."""
    time.sleep(1.0)
    return fake_trial(dataclasses.replace(cfg, family="mlp"))
