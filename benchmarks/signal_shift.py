"""Does the signal shift help? One hand-written 1-D conv net trained with and without it.

Why: the unaided derivation searches ``train.augment`` on and off for signals (a shift in time
of 1/10 of the length, ``search.derive._data``); this measures whether the shift helps a
fixed net, so the default can say so. The net and the recipe below were written by a person
before the first run and not changed after it: a small FCN (Wang et al. 2017: three conv
blocks of kernels 7, 5, 3 with batch norm, global average pooling) at 16-32 channels, AdamW at
3e-3 with a cosine schedule, 150 epochs, batch 16. Seeds 0-4 were fixed before the first run
(one smoke run before it, on UnitTest, seed 0, timed the script; UnitTest is not in the
table). The validation split (npas's default 10 % of the training split, raised to one sample
per class where that is fewer; it chooses nothing) is carved with seed 0 for every run, so the
arms and seeds train on the same samples; the seed sets the initialisation, the batch order
and the shifts.

Data: aeon 1.6.0's bundled UCR/UEA sets, read from its wheel (``benchmarks/unaided_data.py``),
official train and test splits. Never the unaided protocol's sets
(``benchmarks/protocols/unaided.yaml``): their test figures must not be seen before the
protocol runs, and :func:`check_sets` refuses them.

    pip download --no-deps aeon==1.6.0 -d /tmp/aeondl
    python benchmarks/signal_shift.py /tmp/aeondl/aeon-1.6.0-py3-none-any.whl

writes ``benchmarks/results/signal_shift.md`` (and ``.json``: every run's figures).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from torch import nn

from benchmarks.stats import mean_ci, welch
from benchmarks.unaided import protocol
from benchmarks.unaided_data import SIGNALS, signal_set
from objectives import Recipe, Splits, fit
from objectives._conditions import cpu_model_name
from objectives._custom import CustomDataset
from objectives.datasets import DATASETS, Augment, load
from search.derive._data import SHIFT_FRACTION

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "signal_shift"
#: Non-protocol sets of the aeon 1.6.0 wheel, fixed before the first run.
SETS = ("GunPoint", "ArrowHead", "BasicMotions", "PickupGestureWiimoteZ")
SEEDS = (0, 1, 2, 3, 4)
RECIPE = {"epochs": 150, "batch_size": 16, "optimizer": "adamw", "lr": 3e-3,
          "schedule": "cosine", "weight_decay": 1e-4}  # fmt: skip


def hand_net(channels: int, classes: int) -> nn.Module:
    """The fixed net: three conv blocks (7, 5, 3), batch norm, global average pooling."""

    def block(cin: int, cout: int, kernel: int) -> list[nn.Module]:
        return [nn.Conv1d(cin, cout, kernel, padding=kernel // 2, bias=False),
                nn.BatchNorm1d(cout), nn.ReLU()]  # fmt: skip

    return nn.Sequential(
        *block(channels, 16, 7), *block(16, 32, 5), *block(32, 32, 3),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, classes),
    )  # fmt: skip


def check_sets(names: Sequence[str]) -> None:
    """Refuses the unaided protocol's sets (by archive name, any case)."""
    held = {SIGNALS[key].lower() for key in protocol()["datasets"] if key in SIGNALS}
    seen = sorted(n for n in names if n.lower() in held)
    if seen:
        raise SystemExit(f"{', '.join(seen)}: the unaided protocol's sets; allowed: any other")


def shift_of(length: int) -> int:
    """The derivation's rule: 1/SHIFT_FRACTION of the length, at least 1, below the length."""
    return min(length - 1, max(1, round(length / SHIFT_FRACTION)))


def run(arrays: dict[str, np.ndarray], name: str, shift: int, seed: int) -> dict[str, Any]:
    """Trains the hand net on ``arrays`` with a shift of ``shift`` (0: none); its test
    accuracy after the last epoch."""
    key = f"shift-bench-{name}"
    if key not in DATASETS:

        def make() -> Splits:
            return Splits(train=(arrays["x_train"], arrays["y_train"]),
                          test=(arrays["x_test"], arrays["y_test"]))  # fmt: skip

        classes = int(arrays["y_train"].max()) + 1
        val = max(classes, round(0.1 * len(arrays["y_train"])))
        DATASETS.add(key, CustomDataset(key, make, source=f"aeon 1.6.0 {name}",
                                        layout="signal", val_size=val))  # fmt: skip
    data = load(key, seed=0)
    torch.manual_seed(seed)
    net = hand_net(data.in_shape[0], data.num_classes)
    augment: Augment | bool = Augment(shift=shift) if shift else False
    start = time.perf_counter()
    fit(net, data, Recipe(**RECIPE, augment=augment), seed=seed, progress=False)
    wall = time.perf_counter() - start
    net.eval()
    with torch.no_grad():
        predicted = net(data.test.x).argmax(1)
    return {"set": name, "shift": shift, "seed": seed, "train_wall_s": round(wall, 2),
            "test_accuracy": float((predicted == data.test.y).float().mean()),
            "params": sum(p.numel() for p in net.parameters())}  # fmt: skip


def table(runs: list[dict[str, Any]]) -> list[str]:
    """Markdown rows: per set, each arm's mean ± std, the difference (shift − none) with its
    95 % Welch interval and p, and whether it is within noise (the interval holds 0)."""
    rows = [
        "| set | C×L | shift | none: test acc | shift: test acc | shift − none (95 % CI) "
        "| Welch p | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["set"] for r in runs):
        mine = [r for r in runs if r["set"] == name]
        off = [r["test_accuracy"] for r in mine if not r["shift"]]
        on = [r["test_accuracy"] for r in mine if r["shift"]]
        diff, half, p = welch(on, off)
        verdict = ("within noise" if abs(diff) <= half
                   else "shift helps" if diff > 0 else "shift hurts")  # fmt: skip
        shape = mine[0]["shape"]
        rows.append(
            f"| {name} | {shape} | {max(r['shift'] for r in mine)} | {_cell(off)} | "
            f"{_cell(on)} | {diff:+.4f} ({diff - half:+.4f}, {diff + half:+.4f}) | "
            f"{p:.3f} | {verdict} |"
        )
    return rows


def _cell(values: Sequence[float]) -> str:
    mean, std, _ = mean_ci(values)
    return f"{mean:.4f} ± {std:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", help="aeon-1.6.0-py3-none-any.whl (pip download --no-deps)")
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    args = parser.parse_args()
    check_sets(args.sets)
    torch.set_num_threads(1)
    runs: list[dict[str, Any]] = []
    start, cpu = time.perf_counter(), time.process_time()
    with zipfile.ZipFile(args.wheel) as wheel:
        for name in args.sets:
            arrays = signal_set(wheel, name)
            shape = "×".join(str(n) for n in arrays["x_train"].shape[1:])
            shift = shift_of(arrays["x_train"].shape[-1])
            for seed in SEEDS:
                for s in (0, shift):
                    runs.append({**run(arrays, name, s, seed), "shape": shape})
                    print(json.dumps(runs[-1]), flush=True)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps(runs, indent=1) + "\n")
    params = sorted({r["params"] for r in runs})
    lines = [
        "# Signal shift: the hand net with and without it",
        "",
        "Written by `benchmarks/signal_shift.py` (its docstring: the net and recipe, fixed "
        "before the first run). Test accuracy after the last epoch, official test splits of "
        f"aeon 1.6.0's bundled sets (none of the unaided protocol's), seeds {list(SEEDS)}, "
        f"mean ± sample std over the seeds. Shift: 1/{SHIFT_FRACTION} of the length, at least "
        "1 (the derivation's rule), edge-padded, per sample, training batches only. The "
        'verdict is "within noise" when the 95 % Welch interval of the difference holds 0.',
        "",
        *table(runs),
        "",
        f"Net: {', '.join(f'{p:,}' for p in params)} parameters (by set: input channels and "
        f"classes). Recipe: {RECIPE}; validation carved from the training split (10 %, at "
        "least one sample per class, seed 0), not used to choose anything.",
        "",
        f"Conditions: {cpu_model_name()}, 1 torch thread, torch {torch.__version__}, Python "
        f"{platform.python_version()}, {len(runs)} runs in {wall:.0f} s wall, {cpu:.0f} s CPU "
        "(a machine shared with other work: times are not comparable across runs).",
    ]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
