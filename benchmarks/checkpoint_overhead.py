"""What a checkpoint after every epoch costs a trial: epoch time with and without it, and size.

Runs ``search.trial.run_trial`` on the same trial config twice per repeat, taking turns: once
as a search without checkpoints runs it, once handing out its state after every epoch and
writing it into a fresh temporary folder, exactly as the Ray trainable does before it reports
the folder to Ray Tune (Ray's own copy of the folder into the run folder is not included).
The ratio of median epoch times is the overhead; the checkpoint's size is what one trial keeps
on disk with ``keep_checkpoints: 1``.

    NPAS_DATA=../shared/data python benchmarks/checkpoint_overhead.py --out benchmarks/results
"""

from __future__ import annotations

import argparse
import itertools
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import median_ratio
from search.config import TrialConfig
from search.run._checkpoints import folder_size
from search.trial import run_trial

#: (label, trial config changes): a tiny digits net (the worst case: short epochs) and an
#: MNIST ConvNet on a 10,000-image subset.
CASES: dict[str, dict[str, Any]] = {
    "digits mlp (width 32)": {"dataset": "digits", "family": "mlp",
                              "hyper": {"depth": 2, "width": 32}, "budget": 2000},
    "mnist convnet (width 16, 10k images)": {"dataset": "mnist", "family": "convnet",
                                             "hyper": {"depth": 2, "width": 16},
                                             "budget": 6000, "train_size": 10000},
}  # fmt: skip


def _config(changes: dict[str, Any], epochs: int) -> TrialConfig:
    base = {"train": {"epochs": epochs, "batch_size": 128, "lr": 0.05}, "seed": 0,
            "indicators": ["params"], "progress": False}  # fmt: skip
    return TrialConfig.from_dict({**base, **changes})


def _run(cfg: TrialConfig, checkpoint: bool) -> tuple[list[float], int]:
    """Epoch seconds (between consecutive epoch reports) and the last checkpoint's bytes."""
    stamps: list[float] = [time.perf_counter()]
    sizes: list[int] = []

    def on_epoch(point: dict[str, Any]) -> None:
        stamps.append(time.perf_counter())

    def on_state(write: Any) -> None:
        with tempfile.TemporaryDirectory(prefix="npas-checkpoint-") as folder:
            write(folder)
            sizes.append(folder_size(folder))

    if checkpoint:
        run_trial(cfg, on_epoch=on_epoch, on_state=on_state)
    else:
        run_trial(cfg, on_epoch=on_epoch)
    return epoch_seconds(stamps), (sizes[-1] if sizes else 0)


def epoch_seconds(stamps: list[float]) -> list[float]:
    """Seconds of epochs 2..N from the start stamp and one stamp per epoch report: the first
    epoch also pays for the trial's start, which is not what a checkpoint costs."""
    return [b - a for a, b in itertools.pairwise(stamps[1:])]


def row(label: str, times: dict[bool, list[float]], size: int) -> str:
    """The table's row: median epoch ms without and with a checkpoint (``times`` keyed by
    whether one was written), the ratio of the medians, the checkpoint's KiB."""
    plain, saved = statistics.median(times[False]), statistics.median(times[True])
    return (f"| {label} | {plain * 1000:.1f} | {saved * 1000:.1f} | "
            f"{median_ratio(times[True], times[False]):.3f}x | {size / 1024:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for label, changes in CASES.items():
        cfg = _config(changes, args.epochs)
        times: dict[bool, list[float]] = {False: [], True: []}
        size = 0
        for _ in range(args.repeats):
            for checkpoint in (False, True):  # taking turns
                epochs, bytes_ = _run(cfg, checkpoint)
                times[checkpoint] += epochs
                size = max(size, bytes_)
        rows.append(row(label, times, size))
        print(rows[-1], flush=True)
    text = "\n".join([
        "# Checkpoint overhead: a checkpoint after every epoch",
        "",
        f"`python benchmarks/checkpoint_overhead.py --epochs {args.epochs} --repeats "
        f"{args.repeats}`; {platform.processor() or platform.machine()}, 2 CPU cores (shared), "
        f"torch {torch.__version__}, one torch thread. Median epoch time over epochs 2..N of "
        f"{args.repeats} runs each, with and without the checkpoint, taking turns; the "
        "checkpoint is written to a fresh temporary folder as the Ray trainable does (Ray "
        "Tune's copy into the run folder not included).",
        "",
        "| trial | epoch ms, no checkpoint | epoch ms, checkpoint each epoch | ratio | "
        "checkpoint KiB |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ])  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "checkpoint_overhead.md").write_text(text)


if __name__ == "__main__":
    main()
