"""Unseen-data probes of the unaided search: made-up data sets of shapes and kinds no protocol
holds (long multi-channel signals, many rows, a rare class), each through the command a user
types (a data-only config, ``search launch``, ``search export`` without ``--select``), to find
where a search learns nothing or recommends badly. Not a benchmark of accuracy: a probe
passes when its recommendation is clear of chance and near what a plain reference learns.

Each set is learnable by construction, and a reference says how well: scikit-learn's
histogram gradient boosting on the flattened samples (or, for signals, logistic regression on
each channel's spectrum), trained on the training split and read on the test split. A probe's
row holds what the search derived (epochs, scheduler, grace), how its trials ended, the
recommendation's mean validation accuracy against a constant guess, and its test accuracy
(read once by export). Results: ``<results>/<probe>/result.json`` and ``<results>.md``.

    python benchmarks/unaided_probes.py --probes long3b,rare --minutes 10
        [--results benchmarks/results/unaided_probes]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.unaided import MISSING, _search, engine

ROOT = Path(__file__).resolve().parents[1]
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def long_bursts(n_train: int = 400, n_test: int = 200, length: int = 2000, *,
                seed: int = 0, drift: float = 0.01, burst: int = 100,
                amplitude: float = 3.0) -> Arrays:  # fmt: skip
    """Three channels of ``length`` steps of Gaussian noise and a random-walk drift; a
    ``burst``-step windowed sine at a random place in channel 0 or 1, of a low (0.03) or high
    (0.08 cycles a step) frequency: four classes, (channel, frequency)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.integers(0, 4, n)
    x = rng.normal(0, 1.0, (n, 3, length)).astype(np.float32)
    x += np.cumsum(rng.normal(0, drift, (n, 3, length)), axis=2).astype(np.float32)
    t = np.arange(burst)
    for i in range(n):
        channel, high = divmod(int(y[i]), 2)
        start = rng.integers(0, length - burst)
        wave = amplitude * np.sin(2 * np.pi * (0.08 if high else 0.03) * t) * np.hanning(burst)
        x[i, channel, start:start + burst] += wave
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def beats(n_train: int = 20000, n_test: int = 4000, length: int = 187, seed: int = 1) -> Arrays:
    """One channel of heartbeat-like shapes, five classes (half of the rows the first): a peak
    of random place and width (wider for class 1, later for class 2), a second wave after it
    (inverted for class 3), a ripple for class 4, noise of deviation 0.12."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.choice(5, n, p=[0.5, 0.15, 0.15, 0.1, 0.1])
    t = np.arange(length)[None, :]
    centre = rng.normal(60, 6, (n, 1)) + 10 * (y[:, None] == 2)
    width = rng.uniform(2, 4, (n, 1)) * np.where(y[:, None] == 1, 2.2, 1.0)
    x = np.exp(-0.5 * ((t - centre) / width) ** 2)
    second = rng.normal(120, 10, (n, 1))
    x += np.where(y[:, None] == 3, -0.35, 0.25) * np.exp(-0.5 * ((t - second) / 12) ** 2)
    x += 0.3 * (y[:, None] == 4) * np.sin(2 * np.pi * t / rng.uniform(15, 25, (n, 1)))
    x = (x + rng.normal(0, 0.12, x.shape))[:, None, :].astype(np.float32)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def rare(n_train: int = 3000, n_test: int = 1000, features: int = 20, seed: int = 2) -> Arrays:
    """A table of two classes, about 10 % positive: positive when the product of two features
    plus a third is in its top 8 %, 2 % of the labels flipped (a rule no linear model sees)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    x = rng.normal(size=(n, features)).astype(np.float32)
    score = x[:, 0] * x[:, 1] + 0.8 * x[:, 2]
    y = (score > np.quantile(score, 0.92)).astype(np.int64)
    flip = rng.random(n) < 0.02
    y[flip] = 1 - y[flip]
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def shapes(n_train: int = 3000, n_test: int = 1000, side: int = 32, seed: int = 3) -> Arrays:
    """RGB images (N×C×H×W) of ten classes, (shape, colour): a filled disc or a square's
    outline, of a random size and place, in one of five colours, on a noisy background of a
    random colour."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.integers(0, 10, n)
    yy, xx = np.mgrid[0:side, 0:side] / side
    colours = np.array([[1, 0.2, 0.2], [0.2, 1, 0.2], [0.2, 0.2, 1], [1, 1, 0.2], [1, 0.2, 1]])
    x = np.empty((n, 3, side, side), np.float32)
    for i in range(n):
        kind, tone = divmod(int(y[i]), 5)
        cy, cx, r = rng.uniform(0.3, 0.7), rng.uniform(0.3, 0.7), rng.uniform(0.12, 0.25)
        if kind == 0:  # a disc
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r**2
        else:  # a square's outline
            inside = np.maximum(abs(yy - cy), abs(xx - cx))
            mask = (inside < r) & (inside > r - 0.07)
        background = rng.uniform(0, 0.6, 3)[:, None, None]
        x[i] = background + rng.normal(0, 0.15, (3, side, side))
        x[i][:, mask] = colours[tone][:, None] * rng.uniform(0.7, 1.0)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def few_per_class(classes: int = 30, per_class: int = 10, n_test: int = 600, length: int = 64,
                  seed: int = 4) -> Arrays:  # fmt: skip
    """One channel of ``length`` steps: a sine of one of six frequencies and one of five
    phases (30 classes), of random amplitude, in noise of deviation 0.5; ``per_class``
    training series of each."""
    rng = np.random.default_rng(seed)
    n_train = classes * per_class
    y = np.concatenate([np.repeat(np.arange(classes), per_class),
                        rng.integers(0, classes, n_test)])  # fmt: skip
    t = np.arange(length) / length
    frequency, phase = 2.0 + 1.5 * (y // 5), 2 * np.pi * (y % 5) / 5
    amplitude = rng.uniform(0.8, 1.2, len(y))
    x = amplitude[:, None] * np.sin(2 * np.pi * frequency[:, None] * t + phase[:, None])
    x = (x + rng.normal(0, 0.5, x.shape))[:, None, :].astype(np.float32)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def sensor(n_train: int = 2000, n_test: int = 1000, length: int = 24, seed: int = 5) -> Arrays:
    """Six short channels (an accelerometer's and a gyroscope's axes, say): six activities,
    each a different pair of channels oscillating together at its own rate, in noise."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.integers(0, 6, n)
    t = np.arange(length)
    x = rng.normal(0, 0.6, (n, 6, length)).astype(np.float32)
    for i in range(n):
        a, b = int(y[i]), (int(y[i]) + 1) % 6
        wave = np.sin(2 * np.pi * (0.08 + 0.03 * (y[i] % 3)) * t + rng.uniform(0, 2 * np.pi))
        x[i, a] += wave
        x[i, b] += 0.7 * wave
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


#: Each probe: its generator, layout and params limit.
PROBES: dict[str, tuple[Callable[[], Arrays], str, int]] = {
    "long3b": (long_bursts, "signal", 5000),
    "long3": (lambda: long_bursts(drift=0.05, burst=60, amplitude=2.5), "signal", 5000),
    "beats": (beats, "signal", 5000),
    "rare": (rare, "table", 2000),
    "shapes": (shapes, "image", 5000),
    "few": (few_per_class, "signal", 2000),
    "sensor": (sensor, "signal", 2000),
}


def reference(arrays: Arrays, layout: str) -> tuple[str, float]:
    """What a plain model learns: its name and test accuracy."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    x, y, xt, yt = arrays
    if layout == "signal" and x.shape[-1] > 500:  # long: each channel's spectrum
        def spectrum(a: np.ndarray) -> np.ndarray:
            f = np.abs(np.fft.rfft(a - a.mean(-1, keepdims=True), axis=-1))[..., :200]
            return np.log1p(f.reshape(len(a), -1))
        model = LogisticRegression(max_iter=2000).fit(spectrum(x), y)
        return "logistic regression on spectra", float(model.score(spectrum(xt), yt))
    flat = HistGradientBoostingClassifier(random_state=0).fit(x.reshape(len(x), -1), y)
    return "gradient boosting", float(flat.score(xt.reshape(len(xt), -1), yt))


def run_probe(name: str, minutes: float, folder: Path) -> dict[str, Any]:
    """Write the set and its data-only config, launch, export; read back what happened."""
    import optuna

    make, layout, limit = PROBES[name]
    if (folder / "run").exists():  # its study would be resumed, not searched afresh
        raise SystemExit(f"{folder / 'run'} exists: move {folder} aside, or pass another "
                         "--results")  # fmt: skip
    arrays = make()
    folder.mkdir(parents=True, exist_ok=True)
    npz = folder / f"{name}.npz"
    np.savez(npz, **dict(zip(("x_train", "y_train", "x_test", "y_test"), arrays, strict=True)))
    config = {"name": f"probe-{name}",
              "dataset": {"name": f"probe-{name}", "npz": str(npz), "layout": layout},
              "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
              "constraints": [f"params <= {limit}"],
              "limits": {"time": f"{minutes:g}m"}}  # fmt: skip
    path = folder / "search.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    log = folder / "log.txt"
    log.unlink(missing_ok=True)
    run = folder / "run"
    start = time.monotonic()
    _search(["launch", str(path), "--out", str(run)], log)
    wall = time.monotonic() - start
    try:  # a search that recommends nothing has nothing to export: a probe's finding
        _search(["export", "--run", str(run), "--name", config["name"], "--out",
                 str(folder / "bundle"), "--replace"], log)  # fmt: skip
        exported = json.loads((folder / "bundle" / "metrics.json").read_text())["exported"]
    except RuntimeError:
        exported = {"test_accuracy": None}
    study = optuna.load_study(study_name=config["name"], storage=f"sqlite:///{run / 'npas.db'}")
    stored = study.user_attrs["config"]
    states = [t.state.name for t in study.trials]
    found = study.user_attrs.get("npas:recommendation") or {}
    label, ref = reference(arrays, layout)
    return {
        "probe": name, "shape": list(arrays[0].shape), "classes": int(arrays[1].max() + 1),
        "majority_test": float(np.bincount(arrays[3]).max() / len(arrays[3])),
        "epochs": stored["train"]["epochs"], "scheduler": stored["scheduler"],
        "trials": len(states), "complete": states.count("COMPLETE"),
        "stopped": states.count("PRUNED"), "failed": states.count("FAIL"),
        "recommended": found.get("trial"), "val_mean": found.get("mean"),
        "val_std": found.get("std"), "chance": found.get("chance"),
        "test_accuracy": exported["test_accuracy"], "reference": label,
        "reference_accuracy": ref, "wall_s": round(wall, 1), "engine": engine(),
    }  # fmt: skip


#: What the table says of itself.
HEADER = ("# Unseen-data probes of the unaided search\n\n"
          "Written by `benchmarks/unaided_probes.py`: one search of each probe set through a "
          "data-only config, `search launch` and `search export` (its recommendation; the test "
          "split read once) on the machine's CPUs (`wall s`: the launch's, finalists included); "
          "`engine` is the commit that searched. `a guess`: a constant guess of the most "
          "frequent class on the samples the recommendation was scored on; `majority`: the "
          "same on the test split; `reference`: what a plain model learns on the same splits. "
          "One search each: a smoke test of a kind of data, not a measure of accuracy.")


def table(rows: list[dict[str, Any]]) -> str:
    """The probes' markdown table."""
    def figure(value: Any) -> str:
        return MISSING if value is None else f"{value:.4f}"

    lines = [HEADER, "",
             "| probe | samples | epochs | scheduler | trials (complete / stopped) | "
             "recommended: val mean ± std (a guess) | test | majority | reference | wall s | "
             "engine |", "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        s = r["scheduler"]
        shown = s["name"] + (f", grace {s['grace_epochs']}" if s["name"] == "moasha" else "")
        lines.append(
            f"| {r['probe']} | {r['shape'][0]} × {'×'.join(map(str, r['shape'][1:]))}, "
            f"{r['classes']} classes | {r['epochs']} | {shown} | {r['trials']} ({r['complete']} "
            f"/ {r['stopped']}) | {figure(r['val_mean'])} ± {figure(r['val_std'])} "
            f"({figure(r['chance'])}) | {figure(r['test_accuracy'])} | {r['majority_test']:.4f} | "
            f"{r['reference_accuracy']:.4f} ({r['reference']}) | {r['wall_s']:.0f} | "
            f"{r['engine']} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", default=",".join(PROBES))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--results", default=str(ROOT / "benchmarks/results/unaided_probes"))
    args = parser.parse_args(argv)
    results = Path(args.results)
    for name in args.probes.split(","):
        if name not in PROBES:
            parser.error(f"--probes: {name!r} is none of {', '.join(PROBES)}")
        print(f"[probe] {name}: {args.minutes:g}-minute search …", flush=True)
        row = run_probe(name, args.minutes, results / name)
        (results / name / "result.json").write_text(json.dumps(row, indent=1))
        print(f"[probe] {name}: test {row['test_accuracy']}, reference "
              f"{row['reference_accuracy']:.4f}", flush=True)
    rows = [json.loads(p.read_text()) for p in sorted(results.glob("*/result.json"))]
    Path(f"{results}.md").write_text(table(rows))
    os.sync()


if __name__ == "__main__":
    main()
