"""The trials of the two-node cluster tests (run/test_ray_cluster.py), named in the driver
process each search runs from: one that says which node it ran on, and a checkpointing one
whose epochs are logged with their node.

The trial functions are shipped to Ray's workers by value: a worker need not import tests.
"""

from __future__ import annotations

import sys
from typing import Any

import ray.cloudpickle

from search.config import TrialConfig

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: The epochs of every paused_trial.
PROMOTION_EPOCHS = 4


def node_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """A cheap trial that says where it ran (and takes long enough to overlap another)."""
    import os
    import time

    import ray

    time.sleep(1.5)
    return {
        "accuracy": cfg.train["lr"],
        "params": float(cfg.budget),
        "feasible": 1.0,
        "node_id": ray.get_runtime_context().get_node_id(),
        "pid": os.getpid(),
    }


def paused_trial(cfg: TrialConfig, on_epoch: Any = None, on_state: Any = None,
                 resume: Any = None) -> dict[str, Any]:  # fmt: skip
    """A checkpointing trial whose curve is set by lr: each epoch it runs is logged with the
    node it ran on, and its checkpoint holds the epoch it reached."""
    import json
    import time
    from pathlib import Path

    import ray

    node = ray.get_runtime_context().get_node_id()
    first = 1 if resume is None else json.loads((Path(resume) / "e.json").read_text())["e"] + 1
    log = Path(cfg.artifact_dir).parents[1] / "epochs.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    level = cfg.train["lr"] / 0.2
    number = int(Path(cfg.artifact_dir).name)
    for epoch in range(first, PROMOTION_EPOCHS + 1):
        time.sleep(0.5)  # far shorter than a worker's start-up
        with log.open("a") as f:
            f.write(json.dumps({"trial": number, "epoch": epoch, "node": node}) + "\n")

        def write(folder: Any, epoch: int = epoch) -> None:
            (Path(folder) / "e.json").write_text(json.dumps({"e": epoch}))

        on_state(write)
        on_epoch({"epoch": epoch, "accuracy": level * epoch / PROMOTION_EPOCHS,
                  "params": float(cfg.budget), "elapsed_s": 0.5 * epoch})  # fmt: skip
    return {"accuracy": level, "params": float(cfg.budget), "feasible": 1.0}
