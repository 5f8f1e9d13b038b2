"""Trial throughput: seconds per training epoch of the mnist-tiny families on CPU, before/after.

Measures ``objectives.fit(model, data, epochs=1)`` (batch 128, SGD-Nesterov, one-cycle, the
dataset's default augmentation; validation included, as in a trial) on an MNIST subset, for
``convnet`` and ``scs`` at about 500 / 1,000 / 3,000 parameters plus each family's ~3,000-
parameter net Shapeshifted into 500 and 1,000 (``spaces.ssn.shapeshift`` defaults). Achieved
GFLOP/s = training FLOPs per sample (``objectives.measure(..., ["flops_train"])``) × samples
trained / epoch seconds, set against what the same thread does on a 1024² float32 matmul and
on an 8→8-channel 3×3 convolution (batch 128, 28×28, forward + both gradients).

Arms run in fresh processes, interleaved per repeat (the order rotates) so that the noise of a
shared machine hits them alike:

- ``after``: this working tree with ``fit``'s defaults;
- ``before``: the ``objectives`` package of ``--baseline`` (a git revision, read with
  ``git archive``), everything else from this tree;
- ``nchw``: this tree with ``channels_last=False``.

Each process loads the data, then per model runs an untimed warm-up (a few steps and one
validation) and one timed epoch on a freshly seeded copy. Wall time and process CPU time are
both recorded: CPU time is the steadier of the two when other jobs share the cores. A second
table times one validation pass over the 5,000 validation images at batch 256 and 1024.

Run: ``NPAS_DATA=/path/to/data python benchmarks/trial_throughput.py --baseline 98035fc``
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
    from objectives.train import fit

    torch.set_num_threads(args.threads)
    options = {**json.loads(args.fit_options), "batch_size": args.batch}
    data = subset(args.train, args.val)
    out: dict[str, Any] = {"objectives": objectives.__file__}
    for label in args.cases:
        model = build(label)
        fit(copy.deepcopy(model), data, epochs=1, max_steps=args.warmup, progress=False, **options)
        fresh = copy.deepcopy(model)
        wall, cpu = time.perf_counter(), time.process_time()
        result = fit(fresh, data, epochs=1, progress=False, **options)
        out[label] = {
            "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu,
            "samples": result.steps * args.batch,
        }
    print(json.dumps(out))


def extract(rev: str, into: Path) -> Path:
    """``objectives/`` at git revision ``rev``, unpacked under ``into`` (read-only git use)."""
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "objectives"],
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
    source = Path(out.pop("objectives")).resolve()
    expected = base if arm == "before" and base is not None else ROOT
    if not source.is_relative_to(expected.resolve()):
        raise RuntimeError(f"arm {arm!r} imported objectives from {source}, not {expected}")
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
    parser.add_argument("--baseline", help="git revision whose objectives/ is 'before'")
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
    rows = []
    for label in args.cases:
        model = build(label)
        params = sum(p.numel() for p in model.parameters() if p.requires_grad)
        flops = measure(model, example, ["flops_train"])["flops_train"]
        rows.append(row(label, params, flops, {a: times[a][label] for a in arms}))
        print(rows[-1], flush=True)
    write(args, arms, rows, refs, evals, (load_start, load_end))


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
        ratio = statistics.mean(cpu[1024]) / statistics.mean(cpu[256])
        rows.append(f"| {label} | {fmt(cpu[256], 3)} | {fmt(cpu[1024], 3)} | {ratio:.2f}x |")
    return rows


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
            speed = statistics.mean(cpu["before"]) / statistics.mean(cpu["after"])
            speed_wall = statistics.mean(wall["before"]) / statistics.mean(wall["after"])
            cells += [f"{speed:.2f}x ({speed_wall:.2f}x)"]
    return "| " + " | ".join(cells) + " |"


def write(
    args: argparse.Namespace,
    arms: list[str],
    rows: list[str],
    refs: dict[str, list[float]],
    evals: list[str],
    load: tuple[float, float],
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
        f"- epoch: `objectives.fit(model, data, epochs=1)` defaults (batch {args.batch}, SGD"
        f"-Nesterov, one-cycle, pad-2 crop) on the first {args.train:,} MNIST training images"
        f" ({steps} steps, {steps * args.batch:,} samples), validation on {args.val:,} images"
        " included; timed around the whole call",
        f"- repeats: {args.repeats} timed epochs per model and arm, each in a fresh process"
        f" after a warm-up of {args.warmup} steps and one validation; arms interleaved per"
        " repeat (order rotating); mean ± std",
        f"- before: objectives/ at {baseline}; after: this working tree's defaults;"
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
        "## Validation pass: CPU seconds over MNIST's 5,000 validation images, by batch",
        "",
        "`evaluate(model, x, y, batch_size=...)` (channels-last), same thread and repeats;"
        " 256 is the default now, 1024 was before.",
        "",
        "| model | batch 256 | batch 1024 | 1024 / 256 |",
        "|---|---:|---:|---:|",
        *evals,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
