"""Does sharing beat shrinking? SSN upsamplers vs a narrower plain ConvNet on MNIST, on CPU.

At each parameter budget (a fraction of the full ConvNet's trainable parameters) it trains:
- the full ConvNet turned into a Shapeshifter Network (single store, generator wavg) with each
  upsampler: mask, repeat, inter;
- a plain ConvNet of reduced width whose trainable parameter count is the closest to the budget;
and, once, the full plain ConvNet as reference. Every model gets the same recipe
(:func:`objectives.train.fit`: Nesterov SGD, one-cycle) and the same training subset; val and
test accuracy are reported as mean ± std over the seeds, with each model's exact trainable
parameter count (everything included: stores, coefficients, masks, norms, biases).

Run: ``python benchmarks/ssn_accuracy.py`` (writes ``benchmarks/results/ssn_accuracy.md``);
``--help`` lists the flags (epochs, seeds, budgets, training subset, data root, ...).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from objectives._conditions import cpu_model_name
from objectives.datasets import Data, Split, load
from objectives.train import Recipe, evaluate, fit
from spaces import build_model
from spaces.ssn import shapeshift

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "mnist"
OUT = HERE / "results" / "ssn_accuracy.md"
FAMILY, DEPTH, WIDTH = "convnet", 3, 32
UPSAMPLERS = ("mask", "repeat", "inter")


@dataclasses.dataclass
class Row:
    """One model across seeds."""

    model: str
    budget: str
    params: int
    val: list[float] = dataclasses.field(default_factory=list)
    test: list[float] = dataclasses.field(default_factory=list)
    seconds: list[float] = dataclasses.field(default_factory=list)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="MNIST IDX folder")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--budgets",
        type=float,
        nargs="+",
        default=[0.05, 0.25],
        help="fractions of the full model's trainable parameters",
    )
    parser.add_argument(
        "--train-subset",
        type=int,
        default=5000,
        help="training samples used (0: the whole training split)",
    )
    parser.add_argument(
        "--val-size",
        type=int,
        default=2000,
        help="validation samples carved from the official training set",
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1, help="peak one-cycle learning rate")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if any(not 0 < b < 1 for b in args.budgets):
        parser.error(f"--budgets must be fractions in (0, 1), got {args.budgets}")
    if args.epochs < 1 or args.train_subset < 0:
        parser.error("--epochs must be >= 1 and --train-subset >= 0")
    return args


def trainable(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def convnet(width: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return build_model(FAMILY, (1, 28, 28), 10, depth=DEPTH, width=width)


def closest_width(budget: int) -> int:
    """The ConvNet width whose trainable count is the closest to ``budget`` (ties: smaller)."""
    counts = {w: trainable(convnet(w, 0)) for w in range(1, WIDTH + 1)}
    return min(counts, key=lambda w: (abs(counts[w] - budget), w))


def subset(data: Data, n: int) -> Data:
    """The first ``n`` samples of a fixed (seed 0) permutation of the training split."""
    if n == 0 or n >= len(data.train):
        return data
    idx = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(0))[:n]
    return dataclasses.replace(data, train=Split(data.train.x[idx], data.train.y[idx]))


def candidates(full: int, budgets: Sequence[float]) -> list[tuple[str, str, Callable]]:
    """(model label, budget label, seed -> fresh model) for every row of the table."""
    out: list[tuple[str, str, Callable]] = [
        (f"plain ConvNet width {WIDTH} (reference)", "100%", lambda s: convnet(WIDTH, s))
    ]
    for fraction in budgets:
        budget = int(full * fraction)
        label = f"{fraction:.0%} ({budget:,})"
        for up in UPSAMPLERS:
            out.append((f"SSN wavg + {up}", label, _ssn(budget, up)))
        width = closest_width(budget)
        out.append((f"plain ConvNet width {width} (shrunk)", label, _plain(width)))
    return out


def _ssn(budget: int, upsampler: str) -> Callable[[int], nn.Module]:
    def make(seed: int) -> nn.Module:
        return shapeshift(
            convnet(WIDTH, seed),
            budget,
            generator="wavg",
            upsampler=upsampler,
            stores=1,
            seed=seed,
        )

    return make


def _plain(width: int) -> Callable[[int], nn.Module]:
    return lambda seed: convnet(width, seed)


def run(args: argparse.Namespace) -> tuple[list[Row], Data, float]:
    data = subset(
        load("mnist", root=args.data, download=False, val_size=args.val_size), args.train_subset
    )
    full = trainable(convnet(WIDTH, 0))
    recipe = Recipe(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr)
    rows: list[Row] = []
    start = time.perf_counter()
    for label, budget, make in candidates(full, args.budgets):
        row: Row | None = None
        for seed in args.seeds:
            model = make(seed)
            row = row or Row(label, budget, trainable(model))
            result = fit(model, data, recipe, seed=seed, progress=False)
            row.val.append(result.val_accuracy)
            row.test.append(evaluate(model, data.test.x, data.test.y)["accuracy"])
            row.seconds.append(result.train_time_s)
            print(
                f"{label:40s} {budget:14s} seed {seed}: {row.params:>7,} params, val"
                f" {row.val[-1]:.4f}, test {row.test[-1]:.4f}, {row.seconds[-1]:.0f}s",
                flush=True,
            )
        assert row is not None
        rows.append(row)
    return rows, data, time.perf_counter() - start


def pct(values: list[float]) -> str:
    mean = 100 * statistics.mean(values)
    if len(values) < 2:
        return f"{mean:.2f}"
    return f"{mean:.2f} ± {100 * statistics.stdev(values):.2f}"


def reading(rows: list[Row], n_seeds: int) -> str:
    """A plain statement of who won at each budget, generated from the numbers."""
    parts = []
    for budget in dict.fromkeys(r.budget for r in rows if r.budget != "100%"):
        group = [r for r in rows if r.budget == budget]
        shrunk = next(r for r in group if "shrunk" in r.model)
        ssns = sorted(
            (r for r in group if r.model.startswith("SSN")), key=lambda r: -statistics.mean(r.test)
        )
        best = ssns[0]
        gap = 100 * (statistics.mean(best.test) - statistics.mean(shrunk.test))
        beaten = sum(statistics.mean(r.test) > statistics.mean(shrunk.test) for r in ssns)
        verdict = "sharing beats shrinking" if gap > 0 else "shrinking beats sharing"
        if n_seeds > 1 and abs(gap) <= 100 * 2 * max(_std(best.test), _std(shrunk.test)):
            verdict = "no clear winner (the gap is within two seed standard deviations)"
        parts.append(
            f"at {budget}, {verdict}: the best SSN ({best.model}, {best.params:,} params) has"
            f" {pct(best.test)} % test accuracy vs {pct(shrunk.test)} % for the"
            f" {shrunk.model} ({shrunk.params:,} params), a gap of {gap:+.2f} points;"
            f" {beaten} of {len(ssns)} upsamplers beat the shrunk model"
        )
    spread = (
        f"{n_seeds} seeds"
        if n_seeds > 1
        else "1 seed, so no spread was measured and a gap of a point or less may be noise"
    )
    return (
        "Reading (generated from the numbers above, mean test accuracy): "
        + "; ".join(parts)
        + f". Conditions: a short schedule on a training subset, {spread}. The paper compares"
        " at full training schedules; this table says nothing about what happens there."
    )


def _std(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def write(args: argparse.Namespace, rows: list[Row], data: Data, seconds: float) -> None:
    splits = {"train": len(data.train), "val": len(data.val), "test": len(data.test)}
    header = [
        "# Sharing vs shrinking: SSN vs a narrower ConvNet on MNIST (CPU)",
        "",
        f"- CPU: {cpu_model_name()}, shared with other jobs; torch {torch.__version__};"
        f" threads: {torch.get_num_threads()}; whole run {seconds / 60:.1f} min",
        f"- data: MNIST, splits train {splits['train']:,} (fixed random subset, seed 0, of"
        f" the training split) / val {splits['val']:,} (stratified, carved from the official"
        f" training set) / test {splits['test']:,}; default augmentation (pad-2 random crop)",
        f"- recipe (`objectives.train.fit`): {args.epochs} epoch(s), batch {args.batch_size},"
        f" SGD Nesterov momentum 0.9, weight decay 5e-4, one-cycle peak lr {args.lr};"
        f" seeds {args.seeds} (model init, SSN init, batch order; mean ± sample std over seeds)",
        f'- base model: `build_model("{FAMILY}", (1, 28, 28), 10, depth={DEPTH},'
        f" width={WIDTH})` (3×3 conv-BN-ReLU-maxpool blocks, widths ×2 per block, GAP,"
        " linear head)",
        '- SSN: `shapeshift(model, budget, stores=1, generator="wavg", upsampler=...)`,'
        " P = 4 templates; shrunk: the width whose count is the closest to the budget",
        "- params: exact trainable parameters of the trained module (SSN: stores,"
        " coefficients, masks, BN and biases included)",
        "- val: accuracy after the last epoch; test: full official test set; time: training"
        " wall clock (validation included) per seed, on a machine shared with other jobs: it"
        " is not a speed comparison (see `ssn_speed.md`)",
        "",
        "| model | budget | params | val acc % | test acc % | train s / seed |",
        "|---|---|---:|---:|---:|---:|",
    ]
    body = [
        f"| {r.model} | {r.budget} | {r.params:,} | {pct(r.val)} | {pct(r.test)} |"
        f" {statistics.mean(r.seconds):.0f} |"
        for r in rows
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(header + body + ["", reading(rows, len(args.seeds))]) + "\n")
    print(f"wrote {args.out}")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    rows, data, seconds = run(args)
    write(args, rows, data, seconds)


if __name__ == "__main__":
    main()
