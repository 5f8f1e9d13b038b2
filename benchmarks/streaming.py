"""Streamed against in-memory data: training epoch time and peak memory on MNIST.

Three ways of feeding the same small ConvNet (``convnet``, depth 2, width 16) the MNIST
training split (55,000 images after the 5,000 of validation), each in a fresh process so that
its peak resident memory is its own:

- ``memory``: the default path, every split a float32 tensor, batched by ``randperm`` indexing;
- ``stream``: the same arrays read through a ``DataLoader`` with worker processes
  (``objectives.load(stream=True)``), normalised per batch;
- ``stream-npy``: MNIST written once as a memory-mapped ``.npy`` pair, declared as a dataset
  (``npy: [x.npy, y.npy]``; its test split is a carved 20 %, not the official one) and
  streamed: the path for data that does not fit in memory.

Each process trains ``--epochs`` epochs (batch 128, SGD one-cycle, one torch thread) and
reports each epoch's wall time (validation included, as ``fit`` counts it) and the peak RSS of
itself and of its DataLoader workers (``resource.getrusage``: ru_maxrss of SELF and CHILDREN;
CHILDREN is the largest worker's). Modes run interleaved, ``--repeats`` rounds.

Run: ``NPAS_DATA=/work/shared/data python benchmarks/streaming.py`` (writes
``benchmarks/results/streaming.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import median_ratio

MODES = ("memory", "stream", "stream-npy")
RESULTS = Path(__file__).parent / "results" / "streaming.md"


def child(mode: str, epochs: int, workers: int, npy: str) -> dict:
    """One mode in this (fresh) process."""
    import torch

    import objectives
    import spaces
    from objectives._custom import declare

    torch.set_num_threads(1)
    start = time.perf_counter()
    if mode == "stream-npy":
        declare({"name": "mnist-npy", "npy": [f"{npy}/x.npy", f"{npy}/y.npy"]})
        data = objectives.load("mnist-npy", val_size=5000, stream=True, workers=workers)
    else:
        data = objectives.load("mnist", stream=mode == "stream", workers=workers)
    load_s = time.perf_counter() - start
    torch.manual_seed(0)
    model = spaces.build_model("convnet", data.in_shape, data.num_classes, depth=2, width=16)
    fit = objectives.fit(model, data, objectives.Recipe(epochs=epochs, batch_size=128))
    test = objectives.evaluate(model, data.test)
    mib = 1024  # ru_maxrss is in KiB on Linux
    return {
        "mode": mode,
        "epoch_s": epoch_seconds([r["elapsed_s"] for r in fit.history]),
        "load_s": load_s,
        "val_accuracy": fit.history[-1]["val_accuracy"],
        "test_accuracy": test["accuracy"],
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / mib,
        "workers_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / mib,
        "train": len(data.train),
    }


def epoch_seconds(ends: list[float]) -> list[float]:
    """Each epoch's seconds from ``fit``'s history, which records the seconds elapsed at the
    end of each epoch since training began."""
    return [b - a for a, b in zip([0.0, *ends[:-1]], ends, strict=True)]


def write_npy(folder: Path) -> None:
    """MNIST's 70,000 images and labels as one memory-mappable ``.npy`` pair."""
    import numpy as np

    from objectives._idx import read_idx
    from objectives.datasets import default_root

    root = default_root() / "mnist"
    root = root if root.is_dir() else default_root()
    names = ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte")
    x = np.concatenate([read_idx(root / f"{n}.gz") for n in names])
    y = np.concatenate(
        [read_idx(root / f"{n.replace('images-idx3', 'labels-idx1')}.gz") for n in names]
    )
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", y.astype(np.int64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1, help="DataLoader workers")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--npy", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.epochs, args.workers, args.npy)))
        return
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as npy:
        write_npy(Path(npy))
        for _ in range(args.repeats):
            for mode in MODES:
                options = ["--epochs", str(args.epochs), "--workers", str(args.workers)]
                command = [sys.executable, __file__, "--child", mode, *options, "--npy", npy]
                out = subprocess.run(command, capture_output=True, text=True, check=True)
                runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(mode, runs[mode][-1], file=sys.stderr, flush=True)
    write(runs, args)


def mode_row(mode: str, runs: dict[str, list[dict]]) -> str:
    """The table's row of ``mode``: the median of all its runs' epochs and its ratio to
    ``memory``'s, their range, the largest peak RSS of a run and of a worker, the mean test
    accuracy."""

    def epochs(of: str) -> list[float]:
        return [t for r in runs[of] for t in r["epoch_s"]]

    times = epochs(mode)
    rss = max(r["rss_mib"] for r in runs[mode])
    worker = max(r["workers_rss_mib"] for r in runs[mode])
    accuracy = statistics.mean(r["test_accuracy"] for r in runs[mode])
    return (f"| `{mode}` | {statistics.median(times):.2f} | "
            f"{median_ratio(times, epochs('memory')):.2f}x | {min(times):.2f}–{max(times):.2f} | "
            f"{rss:.0f} | {worker:.0f} | {accuracy:.4f} |")  # fmt: skip


def write(runs: dict[str, list[dict]], args: argparse.Namespace) -> None:
    import torch

    from objectives._conditions import cpu_model_name

    lines = [
        "# Streamed vs in-memory data (MNIST, small ConvNet)",
        "",
        f"`benchmarks/streaming.py --epochs {args.epochs} --repeats {args.repeats} --workers "
        f"{args.workers}`: {platform.node() and cpu_model_name()}, {os.cpu_count()} CPU cores "
        f"(shared with other work), torch {torch.__version__}, one torch thread, batch 128, "
        "convnet depth 2 width 16, MNIST 55,000 training images (50,000 carved + official "
        "test for `stream-npy`: see the script). Each mode in a fresh process; modes "
        "interleaved. Epoch time includes the epoch's validation (5,000 images).",
        "",
        "| mode | epoch s (median, all epochs) | ratio to memory | epoch s min–max | peak RSS MiB "
        "(process) | peak RSS MiB (largest worker) | test accuracy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [mode_row(mode, runs) for mode in MODES]
    lines += [
        "",
        "Peak RSS (process) is the training process's high-water mark (the larger of the "
        "runs), torch and npas included; the workers' column is the largest DataLoader "
        "worker's (0: none ran): a worker is forked from the training process, and its RSS "
        "counts the pages it still shares with it (torch's libraries), so it is not memory "
        "on top of the process's. "
        "The in-memory path holds every split as float32 (4 bytes a pixel); the streamed "
        "paths hold the raw uint8 arrays (`stream`) or nothing but the labels (`stream-npy`, "
        "a memory map read a batch at a time).",
        "",
        "Raw runs:",
        "",
        "```json",
        json.dumps(runs, indent=1),
        "```",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
