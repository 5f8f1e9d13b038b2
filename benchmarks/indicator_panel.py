"""The cost-indicator panel over the architecture families, and how far the indicators disagree.

Claim checked: measuring the whole panel on a ~10k-parameter ConvNet (1×28×28) takes < 10 s on
CPU with measure()'s default budgets. Then every indicator is measured for one model per family
(plus two Shapeshifter versions, whose parameter count drops while FLOPs stay), and the Kendall τ
between every pair of indicators across the models puts the efficiency-misnomer paper's point in
numbers: a low τ means the two indicators rank the same models differently.

Run: ``python benchmarks/indicator_panel.py`` → ``benchmarks/results/indicator_panel.md``.
"""

from __future__ import annotations

import itertools
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from objectives._conditions import cpu_model_name
from objectives._measure import measure
from spaces._build import build_model
from spaces.ssn import shapeshift

HYP: dict[str, Any] = {
    "threads": 1,
    "timing_runs": 3,  # runs of the full panel on the 10k ConvNet at default budgets
    "panel": {  # budgets of the family panel (smaller than the defaults: the models are big)
        "warmup": 1,
        "train_batch": 8,
        "infer_batch": 8,
        "latency_budget_s": 0.5,
        "latency_max_repeats": 100,
        "throughput_budget_s": 2.0,
        "max_throughput_batch": 256,
        "energy_budget_s": 0.3,
    },
}
MNIST, CIFAR = (1, 28, 28), (3, 32, 32)
# (label, family, input shape, hyper-parameters, SSN budget as a fraction of the plain model)
MODELS: list[tuple[str, str, tuple[int, ...], dict[str, Any], float | None]] = [
    ("mlp", "mlp", MNIST, {}, None),
    ("convnet-10k", "convnet", MNIST, {"width": 10}, None),
    ("convnet", "convnet", MNIST, {}, None),
    ("scs", "scs", MNIST, {}, None),
    ("scs-fashion-7659", "scs-fashion-7659", MNIST, {}, None),
    ("resnet-20", "resnet-20", CIFAR, {}, None),
    ("resnet-20 ssn 10%", "resnet-20", CIFAR, {}, 0.10),
    ("wrn-16-4", "wrn-16-4", CIFAR, {}, None),
    ("wrn-16-4 ssn 2%", "wrn-16-4", CIFAR, {}, 0.02),
    ("convmixer-256-8", "convmixer-256-8", CIFAR, {}, None),
    ("scs-cifar-47643", "scs-cifar-47643", CIFAR, {}, None),
]
INDICATORS = [
    "params",
    "weights",
    "flops_infer",
    "flops_train",
    "activations",
    "latency_ms",
    "latency_p90_ms",
    "throughput",
    "peak_mem_infer_mb",
    "peak_mem_train_mb",
    "energy_infer_j",
    "energy_train_j",
]  # fmt: skip  (macs = flops_infer/2 and co2 ∝ energy are left out: their τ would be 1)
OUT = Path(__file__).parent / "results" / "indicator_panel.md"


def build(family: str, shape: tuple[int, ...], hyper: dict[str, Any], ssn: float | None):
    torch.manual_seed(0)
    model = build_model(family, shape, 10, **hyper)
    if ssn is not None:
        plain = sum(p.numel() for p in model.parameters())
        model = shapeshift(model, int(plain * ssn))
    return model


def time_default_panel() -> tuple[list[float], int]:
    """Seconds of the full panel at default budgets on the ~10k ConvNet, per run."""
    model = build("convnet", MNIST, {"width": 10}, None)
    x = torch.randn(1, *MNIST)
    runs = []
    for _ in range(HYP["timing_runs"]):
        t0 = time.perf_counter()
        measure(model, x, threads=HYP["threads"])
        runs.append(time.perf_counter() - t0)
    return runs, sum(p.numel() for p in model.parameters())


def measure_panel() -> tuple[pd.DataFrame, dict[str, Any], float]:
    rows, conditions = [], {}
    t0 = time.perf_counter()
    for label, family, shape, hyper, ssn in MODELS:
        model = build(family, shape, hyper, ssn)
        x = torch.randn(8, *shape)
        result = measure(model, x, threads=HYP["threads"], **HYP["panel"])
        conditions = {k: v for k, v in result.items() if k.startswith("cond_")}
        rows.append({"model": label, "input": "×".join(map(str, shape))} | result)
        print(f"{label}: {result['cond_measure_s']:.1f} s", file=sys.stderr)
    return pd.DataFrame(rows).set_index("model"), conditions, time.perf_counter() - t0


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def panel_table(df: pd.DataFrame) -> str:
    cols = ["input", *INDICATORS, "latency_iqr_ms", "throughput_batch", "energy_source"]
    lines = ["| model | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, row in df.iterrows():
        lines.append(f"| {name} | " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def tau_table(df: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Kendall τ of every indicator pair; throughput is negated so all read 'higher = costlier'."""
    costs = df[INDICATORS].astype(float).copy()
    costs["throughput"] = -costs["throughput"]
    tau = costs.corr(method="kendall")
    short = [c.replace("_mb", "").replace("_ms", "").replace("_j", "") for c in INDICATORS]
    lines = ["| τ | " + " | ".join(short) + " |", "|---" * (len(short) + 1) + "|"]
    for name, s in zip(INDICATORS, short, strict=True):
        cells = " | ".join(f"{tau.loc[name, c]:.2f}" for c in INDICATORS)
        lines.append(f"| {s} | {cells} |")
    return "\n".join(lines), tau


def disagreements(df: pd.DataFrame, tau: pd.DataFrame) -> str:
    pairs = sorted(itertools.combinations(INDICATORS, 2), key=lambda p: tau.loc[p[0], p[1]])
    lines = [f"- τ({a}, {b}) = {tau.loc[a, b]:.2f}" for a, b in pairs[:6]]
    cheapest = {
        ind: (df[ind].idxmax() if ind == "throughput" else df[ind].idxmin()) for ind in INDICATORS
    }
    lines.append("")
    lines.append("Cheapest model under each indicator (all families compared together):")
    lines += [f"- {ind}: {model}" for ind, model in cheapest.items()]
    return "\n".join(lines)


def main() -> None:
    torch.set_num_threads(HYP["threads"])
    runs, n_params = time_default_panel()
    df, cond, total = measure_panel()
    tau_md, tau = tau_table(df)
    mean, std = statistics.mean(runs), statistics.stdev(runs)
    text = f"""# Cost-indicator panel

Produced by `benchmarks/indicator_panel.py`. CPU: {cpu_model_name()} ({platform.machine()}),
torch {torch.__version__}, Python {platform.python_version()}, {HYP["threads"]} thread
(`torch.set_num_threads`), float32. Machine shared with other jobs: timings are noisy.

## Panel time on a ~10k-parameter ConvNet (claim: < 10 s)

ConvNet (`convnet`, width 10, depth 3; {n_params} parameters), input 1×28×28, all
{len(INDICATORS) + 3} indicators at `measure()`'s default budgets (latency 1 s / 200 repeats,
throughput sweep 2 s, energy 0.5 s per phase, train batch 32), {len(runs)} runs:
**{mean:.2f} ± {std:.2f} s** (runs: {", ".join(f"{r:.2f}" for r in runs)}; the first includes
the one-time set-up of torch's FLOP counter).

## Panel over the families

Inputs: MNIST-style 1×28×28 for mlp, convnet, scs, scs-fashion-7659; CIFAR-style 3×32×32 for
resnet-20, wrn-16-4, convmixer-256-8, scs-cifar-47643. 10 classes, freshly initialised models.
"ssn x%" = `spaces.ssn.shapeshift` to x % of the plain model's parameters (defaults: one store,
WAvg, mask upsampler); its infer indicators are measured on `materialize()`.
Budgets: {HYP["panel"]}. Energy source: {df["energy_source"].iloc[0]}
(an estimate is seconds × {cond.get("cond_energy_watts")} W, so it tracks time, not power).
Memory: {cond.get("cond_mem_method")}. Throughput batch sweep stops after two batches without a
> 5 % gain, at 256, or when its budget is spent. Whole panel: {total:.0f} s.
Units: counts; FLOP, elements per sample; ms; samples/s; MiB; J per sample.
An SSN model deploys the same plain network as its parent (same weights, FLOPs, activations),
so the gap between their infer-phase timings is the measurement noise of this shared machine.

{panel_table(df)}

## Rank agreement between indicators (Kendall τ over the {len(df)} models)

τ = 1: the indicator pair ranks the models identically; lower values mean that which model is
"efficient" depends on the indicator chosen. Throughput is negated so every column reads
"higher = costlier".

{tau_md}

Least agreeing pairs:

{disagreements(df, tau)}
"""
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
