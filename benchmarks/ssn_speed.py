"""Speed of Shapeshifter Networks against the same plain architecture, on CPU with one thread.

Measures, interleaving SSN and plain so that machine noise hits both alike (warm-up, then the
median of the repeats):
- one training step (forward, backward, SGD step) of the SSN vs the plain model;
- inference of the materialised SSN vs the plain model (target 1.00x: it *is* a plain model);
- inference of the SSN itself in eval mode (generated weights cached).

Run: ``python benchmarks/ssn_speed.py`` (writes ``benchmarks/results/ssn_speed.md``).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from torch import nn

import spaces
from benchmarks.stats import median_ratio
from objectives._conditions import cpu_model_name
from spaces.ssn import shapeshift

WARMUP = 3
CASES = [  # family, input shape, batch, repeats
    ("convnet", (1, 28, 28), 128, 31),
    ("wrn-16-4", (3, 32, 32), 32, 9),
]
FRACTIONS = (0.1, 1.0)


def build(family: str, in_shape: tuple[int, ...]) -> nn.Module:
    torch.manual_seed(0)
    return spaces.build_model(family, in_shape, 10)


def train_step(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
    net.train()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    return step


def infer(net: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    net.eval()

    def run() -> None:
        with torch.no_grad():
            net(x)

    return run


def interleaved(a: Callable[[], None], b: Callable[[], None], repeats: int) -> tuple[list, list]:
    """Seconds per call of ``a`` and ``b``, alternating which goes first."""
    for _ in range(WARMUP):
        a()
        b()
    ta, tb = [], []
    for r in range(repeats):
        for fn, out in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return ta, tb


def fmt(times: list[float]) -> str:
    ms = [t * 1e3 for t in times]
    return f"{statistics.median(ms):.1f} ({statistics.mean(ms):.1f} ± {statistics.stdev(ms):.1f})"


def cells(ssn: list[float], plain: list[float]) -> str:
    """The row's timing cells: SSN ms, plain ms and the ratio of their medians (SSN / plain:
    above 1, the SSN is slower)."""
    return f"{fmt(ssn)} | {fmt(plain)} | {median_ratio(ssn, plain):.2f}x"


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    for family, in_shape, batch, repeats in CASES:
        model = build(family, in_shape)
        plain_params = sum(p.numel() for p in model.parameters())
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(batch, *in_shape, generator=gen)
        y = torch.randint(0, 10, (batch,), generator=gen)
        for fraction in FRACTIONS:
            net = shapeshift(model, int(plain_params * fraction))
            plain = build(family, in_shape)
            cases = [
                ("train step", train_step(net, x, y), train_step(plain, x, y)),
                ("inference, materialized", infer(net.materialize(), x), infer(plain, x)),
                ("inference, SSN eval (cached)", infer(net, x), infer(plain, x)),
            ]
            for what, ssn_fn, plain_fn in cases:
                ts, tp = interleaved(ssn_fn, plain_fn, repeats)
                rows.append(
                    f"| {family} | {batch} | {fraction:.0%} ({net.num_params:,} of"
                    f" {plain_params:,}) | {what} | {cells(ts, tp)} |"
                )
                print(rows[-1], flush=True)
    header = [
        "# SSN speed vs plain (CPU)",
        "",
        f"- CPU: {cpu_model_name()}; torch {torch.__version__};"
        f" threads: {torch.get_num_threads()}",
        f"- warm-up {WARMUP} calls each, then repeats as listed, SSN and plain interleaved"
        " (alternating order); times in ms: median (mean ± std)",
        "- SSN: single store, generator wavg, upsampler mask, P = 4 templates; train step ="
        " forward + cross-entropy backward + SGD(momentum) step; random inputs",
        f"- repeats: {', '.join(f'{f}: {r}' for f, _, _, r in CASES)}",
        "",
        "| model | batch | budget | measurement | SSN ms | plain ms | ratio |",
        "|---|---:|---|---|---:|---:|---:|",
    ]
    out = Path(__file__).parent / "results" / "ssn_speed.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(header + rows) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
