"""Trial throughput: seconds per training epoch of the mnist-tiny families on CPU, before/after.

Measures ``objectives.fit(model, data, Recipe(epochs=1))`` (batch 128, SGD-Nesterov,
one-cycle, the dataset's default augmentation; validation included, as in a trial) on an MNIST
subset, for ``convnet`` and ``scs`` at about 500 / 1,000 / 3,000 parameters plus each family's
~3,000-parameter net Shapeshifted into 500 and 1,000 (``spaces.ssn.shapeshift`` defaults). Achieved
GFLOP/s = training FLOPs per sample (``objectives.measure(..., ["flops_train"])``) × samples
trained / epoch seconds, set against what the same thread does on a 1024² float32 matmul and
on an 8→8-channel 3×3 convolution (batch 128, 28×28, forward + both gradients).

Arms run in fresh processes, interleaved per repeat (the order rotates) so that the noise of a
shared machine hits them alike:

- ``after``: this working tree with the recipe's defaults;
- ``before``: the ``objectives`` and ``spaces`` packages of ``--baseline`` (a git revision,
  read with ``git archive``), everything else from this tree;
- ``nchw``: this tree with the recipe's ``channels_last=False``.

Each process loads the data, then per model runs an untimed warm-up (a few steps and one
validation) and one timed epoch on a freshly seeded copy. Wall time and process CPU time are
both recorded: CPU time is the steadier of the two when other jobs share the cores. A second
table times one validation pass over the 5,000 validation images at batch 256 and 1024.

Run: ``NPAS_DATA=/path/to/data python benchmarks/trial_throughput.py --baseline a4bb72b``
(the last revision before the changes measured; writes
``benchmarks/results/trial_throughput.md``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "trial_throughput.md"
#: label → (family, hyper-parameters, SSN budget or None).
CASES: dict[str, tuple[str, dict[str, Any], int | None]] = {
    "convnet d3 w3": ("convnet", {"depth": 3, "width": 3, "growth": 1.5}, None),
    "convnet d3 w4": ("convnet", {"depth": 3, "width": 4, "growth": 1.5}, None),
    "convnet d3 w8": ("convnet", {"depth": 3, "width": 8, "growth": 1.5}, None),
    "convnet d3 w8, SSN 500": ("convnet", {"depth": 3, "width": 8, "growth": 1.5}, 500),
    "convnet d3 w8, SSN 1000": ("convnet", {"depth": 3, "width": 8, "growth": 1.5}, 1000),
    "scs 5-5-5 depthwise": ("scs", {"widths": (5, 5, 5), "depthwise": True}, None),
    "scs 4-4-4": ("scs", {"widths": (4, 4, 4)}, None),
    "scs 6-8-8": ("scs", {"widths": (6, 8, 8)}, None),
    "scs 6-8-8, SSN 500": ("scs", {"widths": (6, 8, 8)}, 500),
    "scs 6-8-8, SSN 1000": ("scs", {"widths": (6, 8, 8)}, 1000),
}
ARMS = ("before", "after", "nchw")
#: Speed-up of ``after`` over ``before`` (CPU time per epoch) this pass aimed at (issue 13).
TARGET = 2.0
#: What this pass changed and tried, with the measurements that decided (written to the results).
NOTES = """\
## What changed, and what was tried

Kept (spaces/_families; each fast path equals the formula it replaces, forward and gradients,
tests/spaces_tests/test_fast_paths.py). Timings: CPU time, one thread, fwd+bwd of one layer at
batch 128 (micro-benchmarks on this machine):

- SCS sharpening `sign(s)·(|s|+eps)^p` as one autograd Function (the power as exp(p·log a),
  hand-written backward): about 9 elementwise passes forward and 8 backward instead of 12 and
  20; `pow` with a per-channel exponent alone took 2.3 ms at 128×6×24×24, log·p·exp 0.44 ms.
- SCS patch norms as box sums of x² by shifted adds, not a convolution with an all-ones kernel:
  0.13 ms against 0.65 ms forward at 128×1×28×28 (0.58 against 7.7 ms with the backward).
  With the sharpening: layer 1 of scs 6-8-8 (1→6, 5×5) 5.2 ms against 11.7 ms. The FLOP
  count (`flops_train`) no longer includes the patch norms: it counts convolutions, and these
  are normalisation, which the convention leaves out (hence the smaller SCS counts above).
- Max-abs pooling from the four window corners, copied once, with float masks: 1.9 ms against
  4.8 ms at 128×6×24×24; gradients go to the element the two max_pool2d calls chose, ties
  included.
- ConvNet: ReLU after 2×2 max pooling (the same function and gradients, a quarter of the
  work); batch norm of 1-7 channels on large channels-last batches computed on "channel rows"
  (per-channel vectors repeated to 64+ values): 1.4 ms against 3.9 ms at 128×3×28×28.

Tried, not kept:

- 2×2 max pooling from corners for ConvNet: faster only at 3 channels (1.45 against 1.95 ms at
  28×28), slower from 4 on (3.0 against 1.5 ms at 8 channels), where ATen's kernel vectorises.
- One Function for batch norm → max pool → ReLU: 2.97 against 3.55 ms at 3 channels, slower from
  4 channels on (6.2 against 3.8 ms at 8): each pass over memory runs at about 8 GB/s on one core
  here, and torch ops cannot fuse passes. The channel-row batch norm is slower than ATen's from 8
  channels (3.8 against 2.4 ms at 128×8×28×28), so those keep ATen's.
- Bool masks and `torch.where`: unvectorised here (0.43 ms for 110k elements against 0.015 ms for
  a float op), hence float masks written by comparisons with `out=`.
- First-layer convolution as a GEMM on stacked shifted copies: 1.6 against 1.9 ms (1→8, 3×3),
  2.2 against 1.7 ms (1→6, 5×5); weight gradient as a convolution over the batch: 1.2 against
  0.8 ms. Convolutions stay ATen's; they are now the largest cost of every net.
- avg_pool2d (divisor_override=1) for the patch norms: 1.0 against 0.13 ms forward at 28×28
  (0.1 ms faster on 5×5 maps only).
- torch.compile (inductor, CPU): slower steps (convnet d3 w8 15.9 against 11.7 ms, scs 6-8-8
  24.8 against 18.0 ms) after a first step of 5-22 s CPU (27-56 s wall), more than a trial's
  training.
- channels_last=False for SCS nets with the new paths: within the noise (±10 %), see the last
  columns; ConvNets of 8+ channels stay faster channels-last.
- SGD with foreach / fused: 0.11 → 0.08 / 0.03 ms per step (< 1 %), left as is; the Shapeshifter
  weight generation costs 0.5 ms per step forward and backward (3-4 % of a step), left as is.
- The rest of a step outside the model (data indexing and augmentation, loss, optimiser) costs
  about 1.1 ms, measured with a linear model.

Batch size was not changed: it would change the training recipe, not only its speed.
Measured later (torch 2.13.0+cpu, one thread, CPU time; these were not kept either):

- Where a ConvNet step goes, convnet d3 w4 (4-6-9 channels), batch 128, 9.0 ms per step (torch
  profiler, 20 steps): convolutions 1.3 ms forward and 1.4 ms backward, max pooling 1.3 ms
  forward (the 128×4×28×28 stem map at about 4 GB/s: ATen's channels-last kernel vectorises
  over 4 channels), the channel-row batch norm about 3 ms with its backward, the rest (loss,
  SGD, data, ReLU) about 2 ms. The stem block alone (conv 1→C, BN, pool, ReLU, forward and
  backward) costs 4.0 ms at C = 4 channels-last and 4.8 ms NCHW. At the memory speed this thread
  reaches on a plain add (28 GB/s) and 20 GFLOP/s for the stem's convolution, the stem's floor
  is about 2 ms: even a perfect stem would make the step about 1.3x faster, about 1.6x with
  what is kept above, short of 2x. Only a fused native kernel (convolution, batch-norm
  statistics and pooling in one pass over memory, forward and backward) could go further; torch
  ops cannot fuse passes, and torch.compile was slower (above).
- bf16 autocast on the CPU (this Xeon has AMX and AVX512-BF16): 0.9-1.1x per epoch on the ten
  rows above (convnet d3 w8 0.97 against 1.07 s, scs 5-5-5 depthwise 1.64 against 1.33 s,
  one epoch each, two repeats, bf16 first); 1.6x only on a wider net (8-16-32 channels, 6,274
  weights), which mnist-tiny reaches only Shapeshifted into its budgets.
- Batch size 64, 128, 256, 512: per-sample time within about ±15 % with no trend for
  convnet d3 w3, w4 and w8 (e.g. w4: 80, 63, 72, 69 µs per sample): the step is memory passes
  proportional to the batch, not per-step overhead.
"""
#: The packages the ``before`` arm takes from the baseline revision.
PACKAGES = ("objectives", "spaces")
EVAL_BATCHES = [256, 1024]  # evaluate's default now, and before


def build(label: str) -> Any:
    """The seeded model of a case (plain, or Shapeshifted into its budget)."""
    import torch

    import spaces

    family, hyper, budget = CASES[label]
    torch.manual_seed(0)
    model = spaces.build_model(family, (1, 28, 28), 10, **hyper)
    return model if budget is None else spaces.ssn.shapeshift(model, budget)


def subset(train: int, val: int) -> Any:
    """MNIST with the first ``train`` training and ``val`` validation images."""
    from objectives.datasets import Split, load

    data = load("mnist", progress=False)
    return replace(
        data,
        train=Split(data.train.x[:train], data.train.y[:train]),
        val=Split(data.val.x[:val], data.val.y[:val]),
    )


def worker(args: argparse.Namespace) -> None:
    """One arm, one repeat: a timed epoch per case, printed as one JSON line."""
    import torch

    import objectives
    import spaces
    from objectives import train

    torch.set_num_threads(args.threads)
    options = {**json.loads(args.fit_options), "batch_size": args.batch}

    def fit(model: Any, data: Any, **more: Any) -> Any:
        """One epoch of ``fit`` with ``options``; a baseline from before objectives.Recipe
        takes them as keywords."""
        if not hasattr(train, "Recipe"):
            return train.fit(model, data, epochs=1, progress=False, **options, **more)
        return train.fit(model, data, train.Recipe(epochs=1, **options, **more), progress=False)

    data = subset(args.train, args.val)
    out: dict[str, Any] = {"sources": [objectives.__file__, spaces.__file__]}
    for label in args.cases:
        model = build(label)
        fit(copy.deepcopy(model), data, max_steps=args.warmup)
        fresh = copy.deepcopy(model)
        wall, cpu = time.perf_counter(), time.process_time()
        result = fit(fresh, data)
        out[label] = {
            "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu,
            "samples": result.steps * args.batch,
        }
    print(json.dumps(out))


def extract(rev: str, into: Path) -> Path:
    """The :data:`PACKAGES` at git revision ``rev``, unpacked under ``into`` (read-only git)."""
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, *PACKAGES],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_arm(arm: str, base: Path | None, args: argparse.Namespace) -> dict[str, dict]:
    paths = [str(base)] if arm == "before" and base is not None else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, str(ROOT)]))
    options = {"channels_last": False} if arm == "nchw" else {}
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--fit-options",
        json.dumps(options),
        "--train",
        str(args.train),
        "--val",
        str(args.val),
        "--threads",
        str(args.threads),
        "--warmup",
        str(args.warmup),
        "--batch",
        str(args.batch),
        "--cases",
        *args.cases,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"arm {arm!r} failed:\n{done.stderr}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    expected = base if arm == "before" and base is not None else ROOT
    for source in map(Path, out.pop("sources")):
        if not source.resolve().is_relative_to(expected.resolve()):
            raise RuntimeError(f"arm {arm!r} imported {source}, not from {expected}")
    return out


def rate(fn: Callable[[], None], flops: float, repeats: int) -> list[float]:
    """GFLOP/s of ``fn`` per repeat: calls for at least 0.2 s of CPU time, after a warm-up."""
    for _ in range(3):
        fn()
    rates = []
    for _ in range(repeats):
        calls, start = 0, time.process_time()
        while (elapsed := time.process_time() - start) < 0.2:
            fn()
            calls += 1
        rates.append(flops * calls / elapsed / 1e9)
    return rates


def machine(repeats: int) -> dict[str, list[float]]:
    """The thread's own matmul and convolution throughput, for scale."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(1024, 1024, generator=gen), torch.randn(1024, 1024, generator=gen)
    out = torch.empty(1024, 1024)
    refs = {"matmul 1024²": rate(lambda: torch.mm(a, b, out=out), 2 * 1024**3, repeats)}
    conv_flops = 3 * 2 * 128 * 28 * 28 * 8 * 8 * 9  # forward, input and weight gradients
    layouts = (("NCHW", torch.contiguous_format), ("channels-last", torch.channels_last))
    for layout, memory in layouts:
        x = torch.randn(128, 8, 28, 28, generator=gen).to(memory_format=memory).requires_grad_()
        w = torch.randn(8, 8, 3, 3, generator=gen).requires_grad_()
        grad = torch.randn(128, 8, 28, 28, generator=gen).to(memory_format=memory)

        def conv(x: torch.Tensor = x, w: torch.Tensor = w, grad: torch.Tensor = grad) -> None:
            torch.autograd.grad(F.conv2d(x, w, padding=1), (x, w), grad)

        name = f"conv 8→8 3×3, batch 128, 28×28, fwd+bwd, {layout}"
        refs[name] = rate(conv, conv_flops, repeats)
    return refs


def fmt(values: list[float], digits: int = 2) -> str:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {spread:.{digits}f}"


def git_rev(rev: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True
    )
    return done.stdout.strip() or rev


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="git revision of the 'before' objectives/, spaces/")
    parser.add_argument("--repeats", type=int, default=5, help="timed epochs per model and arm")
    parser.add_argument("--train", type=int, default=10_000, help="training images")
    parser.add_argument("--val", type=int, default=1_000, help="validation images")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps before each epoch")
    parser.add_argument(
        "--cases",
        nargs="+",
        default=list(CASES),
        choices=list(CASES),
        metavar="LABEL",
        help="models to time, by label (default: all): " + "; ".join(CASES),
    )
    parser.add_argument("--no-nchw", action="store_true", help="skip the channels_last=False arm")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Markdown file to write")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fit-options", default="{}", help=argparse.SUPPRESS)
    parser.add_argument(
        "--batch", type=int, default=128, help="batch size (a hyper-parameter: changes training)"
    )
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    import torch

    from objectives import measure

    torch.set_num_threads(args.threads)
    skip = {"before"} if not args.baseline else set()
    arms = [a for a in ARMS if a not in skip | ({"nchw"} if args.no_nchw else set())]
    load_start = os.getloadavg()[0]
    times: dict[str, dict[str, list[dict]]] = {a: {c: [] for c in args.cases} for a in arms}
    with tempfile.TemporaryDirectory() as tmp:
        base = extract(args.baseline, Path(tmp)) if args.baseline else None
        for r in range(args.repeats):
            for arm in arms[r % len(arms) :] + arms[: r % len(arms)]:
                for label, t in run_arm(arm, base, args).items():
                    times[arm][label].append(t)
                print(f"repeat {r + 1}/{args.repeats}: {arm} done", flush=True)
    refs = machine(args.repeats)
    evals = validation(args)
    load_end = os.getloadavg()[0]
    example = subset(args.train, args.val).train.x[:1]
    rows, speeds = [], {}
    for label in args.cases:
        model = build(label)
        params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        flops = measure(model, example, ["flops_train"])["flops_train"]
        rows.append(row(label, params, flops, {a: times[a][label] for a in arms}))
        print(rows[-1], flush=True)
        if "before" in arms:
            speeds[label] = speed_up({a: times[a][label] for a in arms})
    write(args, arms, rows, refs, evals, (load_start, load_end), speeds)


def validation(args: argparse.Namespace) -> list[str]:
    """Table rows: CPU seconds of one validation pass over MNIST's 5,000 images per batch."""
    from objectives.datasets import load
    from objectives.train import evaluate

    val = load("mnist", progress=False).val
    rows = []
    for label in args.cases:
        model = build(label)
        evaluate(model, val.x[:1024], val.y[:1024], batch_size=1024)  # warm-up, both shapes
        cpu: dict[int, list[float]] = {b: [] for b in EVAL_BATCHES}
        for r in range(args.repeats):
            for batch in EVAL_BATCHES[r % 2 :] + EVAL_BATCHES[: r % 2]:
                start = time.process_time()
                evaluate(model, val.x, val.y, batch_size=batch)
                cpu[batch].append(time.process_time() - start)
        rows.append(validation_row(label, cpu))
    return rows


def validation_row(label: str, cpu: dict[int, list[float]]) -> str:
    """A row of the validation table: CPU seconds per pass at batch 256 and 1024 (mean ±
    std) and the ratio of their means, 1024 over 256."""
    ratio = statistics.mean(cpu[1024]) / statistics.mean(cpu[256])
    return f"| {label} | {fmt(cpu[256], 3)} | {fmt(cpu[1024], 3)} | {ratio:.2f}x |"


def speed_up(runs: dict[str, list[dict]], key: str = "cpu_s") -> float:
    """``before``'s mean seconds over ``after``'s (``key``: CPU or wall time per epoch)."""
    return statistics.mean(t[key] for t in runs["before"]) / statistics.mean(
        t[key] for t in runs["after"]
    )


def row(label: str, params: int, flops: float, runs: dict[str, list[dict]]) -> str:
    wall = {a: [t["wall_s"] for t in ts] for a, ts in runs.items()}
    cpu = {a: [t["cpu_s"] for t in ts] for a, ts in runs.items()}
    samples = runs["after"][0]["samples"]

    def gflops(arm: str) -> str:
        return f"{flops * samples / statistics.mean(cpu[arm]) / 1e9:.1f}"

    cells = [label, f"{params:,}", f"{flops / 1e6:.2f}"]
    for arm in runs:
        cells += [fmt(cpu[arm]), fmt(wall[arm]), gflops(arm)]
        if arm == "after" and "before" in runs:
            cells += [f"{speed_up(runs):.2f}x ({speed_up(runs, 'wall_s'):.2f}x)"]
    return "| " + " | ".join(cells) + " |"


def target(speeds: dict[str, float]) -> list[str]:
    """Lines saying where the :data:`TARGET` speed-up was met and how far short the rest are."""
    if not speeds:
        return []
    met = [label for label, speed in speeds.items() if speed >= TARGET]
    short = [
        f"{label} {speed:.2f}x (needs {TARGET / speed:.2f}x more)"
        for label, speed in speeds.items()
        if speed < TARGET
    ]
    return [
        f"Target: {TARGET:g}x by CPU time per epoch. Met in {len(met)} of {len(speeds)} rows"
        + (f" ({'; '.join(met)})" if met else "")
        + (f"; short: {'; '.join(short)}." if short else "."),
        "",
    ]


def write(
    args: argparse.Namespace,
    arms: list[str],
    rows: list[str],
    refs: dict[str, list[float]],
    evals: list[str],
    load: tuple[float, float],
    speeds: dict[str, float],
) -> None:
    import torch

    from objectives._conditions import cpu_model_name

    names = {"before": "before", "after": "after", "nchw": "after, channels_last=False"}
    head = ["model", "params", "train MFLOP/sample"]
    for arm in arms:
        head += [f"{names[arm]}: s/epoch CPU", "s/epoch wall", "GFLOP/s"]
        if arm == "after" and "before" in arms:
            head += ["speed-up CPU (wall)"]
    steps = args.train // args.batch
    baseline = f"`{args.baseline}` ({git_rev(args.baseline)})" if args.baseline else "not run"
    lines = [
        "# Trial throughput (CPU): seconds per training epoch, mnist-tiny families",
        "",
        f"- CPU: {cpu_model_name()}; torch {torch.__version__}; threads: {args.threads};"
        f" load average {load[0]:.1f} at start, {load[1]:.1f} at end (a shared machine: CPU"
        " time is the steadier measure, wall time shows the contention)",
        f"- epoch: `objectives.fit(model, data, Recipe(epochs=1))` defaults (batch {args.batch},"
        f" SGD-Nesterov, one-cycle, pad-2 crop) on the first {args.train:,} MNIST training images"
        f" ({steps} steps, {steps * args.batch:,} samples), validation on {args.val:,} images"
        " included; timed around the whole call",
        f"- repeats: {args.repeats} timed epochs per model and arm, each in a fresh process"
        f" after a warm-up of {args.warmup} steps and one validation; arms interleaved per"
        " repeat (order rotating); mean ± std",
        f"- before: objectives/ and spaces/ at {baseline}; after: this working tree's defaults;"
        " channels_last=False: the same tree with batches in NCHW",
        "- GFLOP/s = `measure(model, x[:1], ['flops_train'])` × samples / CPU s/epoch;"
        " speed-up = before mean / after mean",
        "- SSN: `shapeshift(model, budget)` defaults (one store, wavg, mask, P = 4); params"
        " count everything trainable",
        f"- the same thread on dense work (GFLOP/s, mean ± std over {args.repeats} × 0.2 s"
        " CPU): " + "; ".join(f"{name}: {fmt(values, 1)}" for name, values in refs.items()),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|",
        *rows,
        "",
        *target(speeds),
        "## Validation pass: CPU seconds over MNIST's 5,000 validation images, by batch",
        "",
        "`evaluate(model, x, y, batch_size=...)` (channels-last), same thread and repeats;"
        " 256 is the default now, 1024 was before.",
        "",
        "| model | batch 256 | batch 1024 | 1024 / 256 |",
        "|---|---:|---:|---:|",
        *evals,
        "",
        NOTES,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
