"""The learning-curve searches of the multi-fidelity tests: a cheap trial whose curve climbs to
a level set by its lr, a slow one to kill a search in, and the MOASHA config they run under.

The trial functions are shipped to Ray's workers by value: a worker need not import tests.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import ray.cloudpickle

from search.config import TrialConfig
from tests._support.searches import make_config

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: The epochs of every curve.
EPOCHS = 9


def curve_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """A learning curve chosen by the point: accuracy climbs to a level set by lr."""
    level = 1.0 - abs(math.log10(cfg.train["lr"]) + 1) / 4
    params = float(cfg.budget)
    for epoch in range(1, EPOCHS + 1):
        time.sleep(0.02)
        if on_epoch is not None:
            on_epoch({"epoch": epoch, "accuracy": level * epoch / EPOCHS, "params": params,
                      "train_time_s": 0.02 * epoch})  # fmt: skip
    return {"accuracy": level, "params": params, "feasible": 1.0, "epochs": EPOCHS,
            "trial_time_s": 0.2, "trial_energy_j": 2.0}  # fmt: skip


def slow_curve_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """curve_trial at 0.15 s an epoch, so a search can be killed while trials train."""

    def slowly(point: dict[str, Any]) -> None:
        time.sleep(0.15)
        if on_epoch is not None:
            on_epoch(point)

    return curve_trial(cfg, slowly)


def curve_config(out: Path, trials: int, optimiser: str = "random", **changes: Any):
    """make_config for ``trials`` curve trials, MOASHA unless ``scheduler`` says otherwise."""
    scheduler = changes.pop("scheduler", {"name": "moasha", "reduction_factor": 3})
    return make_config(
        out,
        optimiser=optimiser,
        trials=trials,
        constraints=[],
        train={"epochs": EPOCHS},
        scheduler=scheduler,
        **changes,
    )
