"""Fused multi-seed training against the same seeds one after another, on one CPU thread.

For the tiny MNIST sepnets of ~500 and ~1,000 parameters at batch 128: model-steps per second
of ``objectives.fit_seeds`` (k seeds as one vmap computation) and of ``objectives.fit`` run k
times, for k = 2, 3, 5. Each measurement trains ``--steps`` optimiser steps per seed (one
truncated epoch, then a validation of 128 images, so validation barely counts); fused and
sequential alternate within each repeat, the order flipping every repeat, so machine noise
hits both alike. The ratio is fused / sequential model-steps per second, the median of the
per-repeat ratios.

    NPAS_DATA=../shared/data python benchmarks/fused_seeds.py

writes ``benchmarks/results/fused_seeds.md``; ``benchmarks/leaderboard.py`` reads its ratios to
decide whether it retrains fused.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from objectives import Recipe, fit, fit_seeds, load
from objectives._conditions import cpu_model_name
from objectives.datasets import Data, Split
from spaces import build_model

ROOT = Path(__file__).resolve().parents[1]
#: name → sepnet hyper-parameters (the record design: early-pooled stem, separable blocks)
NETS = {
    "sepnet-480": {"stem": 6, "width": 8, "growth": 1.5},
    "sepnet-990": {"stem": 8, "width": 16, "growth": 1.25},
}
RECIPE = {"optimizer": "adamw", "lr": 1e-2, "schedule": "cosine", "weight_decay": 1e-4}


def recipe(steps: int) -> Recipe:
    """The benchmark's recipe cut at ``steps`` steps."""
    return Recipe(epochs=1, max_steps=steps, **RECIPE)


def models(hyper: dict, data: Data, k: int) -> list[torch.nn.Module]:
    out = []
    for seed in range(k):
        torch.manual_seed(seed)
        out.append(build_model("sepnet", data.in_shape, data.num_classes, **hyper))
    return out


def sequential(hyper: dict, data: Data, k: int, steps: int) -> float:
    """Seconds to train k seeds one after another with ``fit`` (its defaults)."""
    nets = models(hyper, data, k)
    start = time.perf_counter()
    for seed, net in enumerate(nets):
        fit(net, data, recipe(steps), seed=seed, progress=False)
    return time.perf_counter() - start


def fused(hyper: dict, data: Data, k: int, steps: int) -> float:
    """Seconds to train the same k seeds fused."""
    nets = models(hyper, data, k)
    start = time.perf_counter()
    fit_seeds(nets, data, recipe(steps), seeds=list(range(k)), fused=True)
    return time.perf_counter() - start


def rates(k: int, steps: int, seq_t: list[float], fused_t: list[float]
          ) -> tuple[float, float, list[float]]:  # fmt: skip
    """Model-steps/s of each path (k × steps over its median seconds) and each repeat's
    sequential / fused seconds, a ratio of two times of the same repeat (the same noise)."""
    ratios = [s / f for s, f in zip(seq_t, fused_t, strict=True)]
    seq_rate = k * steps / statistics.median(seq_t)
    fused_rate = k * steps / statistics.median(fused_t)
    return seq_rate, fused_rate, ratios


def table_row(name: str, params: int, k: int, seq_rate: float, fused_rate: float,
              ratios: list[float]) -> str:  # fmt: skip
    """A row of the table; ``benchmarks/leaderboard.py`` reads its median ratio."""
    return (f"| {name} {NETS[name]} | {params} | {k} | {seq_rate:.0f} | "
            f"{fused_rate:.0f} | {statistics.median(ratios):.2f}x | "
            f"{min(ratios):.2f}–{max(ratios):.2f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="steps per seed (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (default 5)")
    parser.add_argument("--ks", default="2,3,5", help="seeds fused (default 2,3,5)")
    parser.add_argument("--note", default="", help="a line on the machine's load, for the table")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/fused_seeds.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ks = [int(k) for k in args.ks.split(",")]
    data = load("mnist", progress=False)
    data = dataclasses.replace(data, val=Split(data.val.x[:128], data.val.y[:128]))
    rows = []
    started = time.time()
    for name, hyper in NETS.items():
        params = sum(p.numel() for p in models(hyper, data, 1)[0].parameters())
        for k in ks:
            fused(hyper, data, k, 5)  # warm-up of both paths
            sequential(hyper, data, k, 5)
            seq_t, fused_t = [], []
            for r in range(args.repeats):
                pair = [(sequential, seq_t), (fused, fused_t)]
                for fn, out in pair if r % 2 == 0 else pair[::-1]:
                    out.append(fn(hyper, data, k, args.steps))
            seq_rate, fused_rate, ratios = rates(k, args.steps, seq_t, fused_t)
            rows.append((name, params, k, seq_rate, fused_rate, ratios))
            print(f"{name} k={k}: sequential {seq_rate:.0f}, fused {fused_rate:.0f} "
                  f"model-steps/s, ratio {statistics.median(ratios):.2f}", flush=True)  # fmt: skip
    lines = [
        "# Fused multi-seed training vs one seed after another",
        "",
        f"- Run: `NPAS_DATA=../shared/data python benchmarks/fused_seeds.py --steps {args.steps} "
        f"--repeats {args.repeats} --ks {args.ks}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, "
        f"{(time.time() - started) / 60:.1f} min",
        f"- Machine: {cpu_model_name() or platform.processor()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}, 1 thread; {args.note or 'load not recorded'}",
        f"- Each measurement: k seeds × {args.steps} steps of batch 128 on MNIST (55,000 "
        f"training images), AdamW + cosine, MNIST's default augmentation ({data.augment}, "
        "drawn per seed); then one validation of 128 images. Sequential: `objectives.fit` k "
        "times with its defaults (channels-last input); fused: "
        "`objectives.fit_seeds(fused=True)`.",
        "- model-steps/s = k × steps / the median time of the repeats; ratio = the median "
        "over repeats of sequential time / fused time (both measured in the same repeat, "
        "the order alternating). All rows come from this one run.",
        "",
        "| net | params | k | sequential model-steps/s | fused model-steps/s | ratio (median) "
        "| ratio min–max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [table_row(*row) for row in rows]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
