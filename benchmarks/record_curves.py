"""Record the scheduler lab's curve table: every configuration trained to the full schedule.

The table is an npas study (issue 37): a FIFO search of random proposals (Optuna's
``RandomSampler``: space-filling enough for a 1-NN surrogate, and the one sampler every
conditional dimension of the space supports) on multifidelity.py's real MNIST space, each trial
trained for ``--epochs`` epochs of a cosine schedule with every epoch's validation accuracy,
loss and seconds in its curve. A second study (``-noise``) trains the first ``--noise``
configurations again under another seed (another validation split and initialisation), so the
lab knows how far a curve moves between two runs of one configuration.

Resumable: run it again and each study resumes where it stopped (a study is its own record).
When both studies are complete, the table is written as ``<out>/<name>.json.gz``
(:mod:`search.lab`'s format) with the conditions, and the Optuna storage stays beside it.

Run: ``NPAS_DATA=../shared/data python benchmarks/record_curves.py [--trials 470]
[--noise 50] [--epochs 27] [--train-size 1000] [--val-size 1000] [--out DIR]`` (default
``benchmarks/results/curves``)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import optuna
import torch
from multifidelity import OBJECTIVES, SPACE

from objectives._conditions import cpu_model_name
from search.config import load_config
from search.lab import CurveTable
from search.run import launch

OUT = Path(__file__).parent / "results" / "curves"


def record_config(args: argparse.Namespace, *, noise: bool, start: list[dict] | None) -> Any:
    """The config of the main record (seed 0) or of its noise twin (seed 1, fixed points)."""
    name = f"{args.name}-noise" if noise else args.name
    data: dict[str, Any] = {
        "name": name,
        "dataset": "mnist",
        "train_size": args.train_size,
        "val_size": args.val_size,
        "space": SPACE,
        "fixed": {"convnet.growth": 1.5, "ssn.templates": 4},
        "train": {"epochs": args.epochs, "batch_size": 64, "schedule": "cosine"},
        "objectives": OBJECTIVES,
        "constraints": ["params <= 5000"],
        "indicators": ["params", "flops_infer"],
        "algorithm": {"name": "random"},
        "scheduler": {"name": "fifo"},
        "trials": args.noise if noise else args.trials,
        "resources": {"cpu": 1},
        "out": str(args.out / "run"),
        "seed": 1 if noise else 0,
    }
    if start:
        data["start"] = start
    return load_config(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="mnist-r27")
    parser.add_argument("--trials", type=int, default=470)
    parser.add_argument("--noise", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=27)
    parser.add_argument("--train-size", type=int, default=1000)
    parser.add_argument("--val-size", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    began, cpu0 = time.time(), time.process_time()
    main_study = launch(record_config(args, noise=False, start=None))
    points = [dict(t.params) for t in main_study.trials[: args.noise]]
    noise_study = launch(record_config(args, noise=True, start=points))
    table = CurveTable.from_study(main_study, noise=noise_study)
    table.conditions.update(
        {
            "recorded_by": "benchmarks/record_curves.py " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"
            ),
            "cpu": f"{cpu_model_name()} ({os.cpu_count()} cores), 1 CPU per trial",
            "versions": f"torch {torch.__version__}, optuna {optuna.__version__}, "
            f"Python {platform.python_version()}",
            "data": f"MNIST: {args.train_size} training images (stratified subset of the "
            f"official training set), {args.val_size} validation images carved from it",
            "this_launch_s": round(time.time() - began, 1),
        }
    )
    path = table.save(args.out / f"{args.name}.json.gz")
    print(f"wrote {path}: {table.describe()}; this launch {time.process_time() - cpu0:.0f} "
          "CPU-s in the driver")


if __name__ == "__main__":
    main()
