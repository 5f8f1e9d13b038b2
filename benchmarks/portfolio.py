"""Do good configurations of the unaided search's space carry over from one dataset to another?

The go/no-go measurement for a learned portfolio of start points (issue 57): a search that
starts from configurations good on other datasets, as auto-sklearn 2.0 and AutoGluon's presets
do, gains only if a configuration's rank carries over between datasets of a layout.

For each build set, the space the unaided search derives for it (its params limit, a 2-minute
search's recipe: ``search.derive``). ``--points`` points are drawn once in the unit box: a
family, then each of its searched dimensions as a fraction of its range (in the log where the
range is logarithmic) and each categorical as a fraction of its choices, so that one point
maps into every set's own ranges (``search.derive._learned.in_space``). Each point is trained
once on each set with that set's derived recipe (cross-validated where the derivation says
so) and its validation accuracy recorded (``<out>/scores.json``, resumable: a run again trains
only what is missing). Then:

- ``rank correlation``: Spearman's rho of the points' scores between every two sets;
- ``leave one set out``: K points chosen greedily on the other sets (each set's scores put on
  one scale: 0 at its median point, 1 at its best), scored on the left-out set as the
  percentile of the best of the K among all points there. K points drawn at random score
  K / (K + 1) in expectation.

The rule, written before the first run (2026-11-30): learned start points are worth building
(round 6 of the unaided engine) if, with the defaults (64 points, K = 4, seed 0), the
leave-one-out percentile is above K / (K + 1) = 0.8 on at least five of the six build sets and
its mean over them is at least 0.9; otherwise not, and the table says which sets failed.

Nothing here reads a test split, and no dataset of an unaided protocol is used: the build sets
are aeon 1.6.0's bundled sets outside every protocol (``--wheel``: ``pip download --no-deps
aeon==1.6.0``) and generated signal sets.

Run: ``python benchmarks/portfolio.py --wheel aeon-1.6.0-py3-none-any.whl [--points 64] [--k 4]
[--out DIR] [--save]`` (default ``benchmarks/results/portfolio``) → ``<out>/scores.json`` and
``benchmarks/results/portfolio.md``; ``--save`` writes the K points chosen greedily on all the
build sets as the signal layout's learned start points (``search/derive/learned_starts.yaml``).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
import zipfile
from concurrent import futures
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from generated_signals import waves  # benchmark modules beside this one
from scipy.stats import spearmanr
from unaided_data import signal_set

from search.derive._learned import FILE, generic, in_space
from spaces import Categorical, Fixed

OUT = Path(__file__).parent / "results" / "portfolio"
RESULTS = Path(__file__).parent / "results" / "portfolio.md"
#: Build set -> (where it comes from, its params limit): aeon's sets outside every protocol
#: and generated ones (name: generator arguments), the limits alternating 1,000 and 5,000.
BUILD: dict[str, tuple[str, int]] = {
    "BasicMotions": ("aeon", 1000),
    "PickupGestureWiimoteZ": ("aeon", 5000),
    "Covid3Month_disc": ("aeon", 1000),
    "waves-a": ("waves 600 11 128 2 1.4", 5000),
    "waves-b": ("waves 400 12 64 1 1.0", 1000),
    "waves-c": ("waves 800 13 256 2 2.0", 5000),
}
#: The search time the derived recipe is for (a development run's).
MINUTES = 2
#: The rule's least mean leave-one-out percentile (see the module doc).
GO_MEAN = 0.9


def build_sets(wheel: Path | None, folder: Path) -> dict[str, Path]:
    """Every build set as an npz in ``folder`` (written once): aeon's from the wheel, the
    generated ones from their seeds (a quarter of the series held out as the test split)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (source, _) in BUILD.items():
        path = folder / f"{name}.npz"
        paths[name] = path
        if path.exists():
            continue
        if source == "aeon":
            if wheel is None:
                raise SystemExit(f"--wheel: needed to write {name} (pip download aeon==1.6.0)")
            with zipfile.ZipFile(wheel) as archive:
                np.savez(path, **signal_set(archive, name))  # type: ignore[arg-type]
            continue
        n, seed, length, bands, noise = source.split()[1:]
        x, y = waves(int(n), int(seed), int(length), bands=int(bands), noise=float(noise))
        cut = int(n) * 3 // 4
        np.savez(path, x_train=x[:cut], y_train=y[:cut], x_test=x[cut:], y_test=y[cut:])
    return paths


def set_config(name: str, path: Path, limit: int) -> Any:
    """The search the unaided search derives for a build set under ``params <= limit`` (its
    validated config)."""
    from search.config import load_config
    from search.derive import derive

    data = {"name": f"portfolio-{name}", "dataset": {"name": name, "npz": str(path),
            "layout": "signal"}, "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
            "constraints": [f"params <= {limit}"], "limits": {"time": f"{MINUTES}m"},
            "seed": 0}  # fmt: skip
    return load_config(derive(data).config)


def unit_points(n: int, seed: int, families: list[str], keys: list[str]) -> list[dict]:
    """``n`` points of the unit box: a family, and a fraction in [0, 1) for every key."""
    rng = np.random.default_rng(seed)
    return [{"family": families[int(rng.integers(len(families)))],
             **{key: float(rng.random()) for key in keys}} for _ in range(n)]  # fmt: skip


def score(name: str, path: str, limit: int, unit: dict[str, Any]) -> float | None:
    """One point trained on one set with its derived recipe: its validation accuracy (None:
    its family is not in the set's space, or its training diverged, as a search's trial may)."""
    import torch

    from objectives.train import NonFiniteLossError
    from search.trial import run_trial

    torch.set_num_threads(1)
    config = set_config(name, Path(path), limit)
    point = in_space(config.space, unit)
    if point is None:
        return None
    try:
        metrics = run_trial(config.trial_config(point))
    except NonFiniteLossError:
        return None
    accuracy = metrics.get("accuracy")
    finite = isinstance(accuracy, int | float) and math.isfinite(accuracy)
    return float(accuracy) if finite else None


def train_all(paths: dict[str, Path], points: list[dict], out: Path, workers: int) -> dict:
    """Every (set, point) score, the stored ones kept, the rest trained ``workers`` at once."""
    store = out / "scores.json"
    scores: dict[str, dict[str, float | None]] = (
        json.loads(store.read_text())["scores"] if store.exists() else {})  # fmt: skip
    todo = [(name, i) for name in paths for i in range(len(points))
            if str(i) not in scores.get(name, {})]  # fmt: skip
    context = multiprocessing.get_context("spawn")
    began = time.monotonic()
    with futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        jobs = {pool.submit(score, name, str(paths[name]), BUILD[name][1], points[i]): (name, i)
                for name, i in todo}  # fmt: skip
        for done, job in enumerate(futures.as_completed(jobs), start=1):
            name, i = jobs[job]
            scores.setdefault(name, {})[str(i)] = job.result()
            store.write_text(json.dumps({"points": points, "scores": scores}, indent=1))
            print(f"\r{done}/{len(todo)} trained, {time.monotonic() - began:.0f} s", end="",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(file=sys.stderr)
    return scores


def normalised(values: list[float | None]) -> list[float]:
    """Scores on one scale: 0 at the median point, 1 at the best (a missing one: 0)."""
    known = [v for v in values if v is not None]
    middle, best = statistics.median(known), max(known)
    span = best - middle or 1.0
    return [0.0 if v is None else (v - middle) / span for v in values]


def greedy(scale: dict[str, list[float]], k: int) -> list[int]:
    """K points, each added for the best mean over the sets of the best point chosen so far."""
    n = len(next(iter(scale.values())))
    chosen: list[int] = []
    for _ in range(k):
        def gain(i: int) -> float:
            return statistics.fmean(max(s[j] for j in [*chosen, i]) for s in scale.values())
        chosen.append(max((i for i in range(n) if i not in chosen), key=gain))
    return chosen


def percentile(values: list[float | None], chosen: list[int]) -> float:
    """Where the best chosen point ranks among all scored points (1.0: the best of them)."""
    known = [v for v in values if v is not None]
    best = max((values[i] for i in chosen if values[i] is not None), default=-math.inf)
    return sum(v <= best for v in known) / len(known)


def analysis(scores: dict[str, dict[str, float | None]], n: int, k: int) -> list[str]:
    names = list(scores)
    values = {s: [scores[s].get(str(i)) for i in range(n)] for s in names}
    lines = ["| set | rho with each other set (median) | leave-one-out portfolio percentile |",
             "|---|---:|---:|"]  # fmt: skip
    held: list[float] = []
    for s in names:
        rhos = []
        for t in names:
            if t == s:
                continue
            pairs = [(a, b) for a, b in zip(values[s], values[t], strict=True)
                     if a is not None and b is not None]  # fmt: skip
            rhos.append(float(spearmanr(*zip(*pairs, strict=True))[0]))
        others = {t: normalised(values[t]) for t in names if t != s}
        held.append(percentile(values[s], greedy(others, k)))
        lines.append(f"| {s} | {statistics.median(rhos):.2f} | {held[-1]:.3f} |")
    chance = k / (k + 1)
    above = [s for s, p in zip(names, held, strict=True) if p > chance]
    go = len(above) >= len(names) - 1 and statistics.fmean(held) >= GO_MEAN
    missing = {s: sum(v is None for v in values[s]) for s in names}
    lines += ["", "Points with no score (diverged, or a family the set's space lacks), counted "
              "at the median point in the greedy choice: " + ", ".join(
                  f"{s} {m}" for s, m in missing.items()) + "."]  # fmt: skip
    lines += ["", f"K = {k}: {k} points drawn at random score {chance:.3f} in expectation. "
              f"Above it on {len(above)} of {len(names)} sets (not: "
              f"{', '.join(s for s in names if s not in above) or 'none'}), mean "
              f"{statistics.fmean(held):.3f}: by the rule written before the run, "
              + ("**go**." if go else "**no go**.")]  # fmt: skip
    return lines


def save(chosen: list[int], points: list[dict], args: argparse.Namespace) -> None:
    """The chosen points as the signal layout's learned start points, with how they were built."""
    built = (f"benchmarks/portfolio.py --points {args.points} --k {args.k} --seed {args.seed}: "
             f"greedy on {', '.join(BUILD)} (validation accuracy; no test split read)")
    stored = {"signal": {"built": built, "points": [
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in points[i].items()}
        for i in chosen]}}  # fmt: skip
    FILE.write_text("# Written by benchmarks/portfolio.py --save: do not edit by hand.\n"
                    + yaml.safe_dump(stored, sort_keys=False, width=99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="aeon-1.6.0-py3-none-any.whl")
    parser.add_argument("--points", type=int, default=64)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--save", action="store_true", help="write the learned start points")
    args = parser.parse_args()
    paths = build_sets(args.wheel, args.out / "data")
    name, path = next(iter(paths.items()))
    first = set_config(name, path, BUILD[name][1]).space
    family = first["family"]
    assert isinstance(family, Categorical)
    families = [str(c) for c in family.choices]
    keys = sorted({generic(n, families) for n in first.names
                   if n != "family" and not isinstance(first[n], Fixed)})  # fmt: skip
    points = unit_points(args.points, args.seed, families, keys)
    scores = train_all(paths, points, args.out, args.workers)
    text = [
        "# Do the unaided search's configurations carry over between datasets?",
        "",
        f"`benchmarks/portfolio.py --points {args.points} --k {args.k} --seed {args.seed}`: "
        f"{args.points} points of the unit box, each trained once on each build set with the "
        f"recipe the unaided search derives for it ({MINUTES}-minute searches); validation "
        "accuracy only (no test split read). Build sets (params limit): "
        + ", ".join(f"{n} ({BUILD[n][1]:,})" for n in paths) + ".",
        "",
        *analysis(scores, args.points, args.k),
    ]
    if args.save:
        chosen = greedy({s: normalised([scores[s].get(str(i)) for i in range(args.points)])
                         for s in scores}, args.k)  # fmt: skip
        text += ["", f"Saved as the signal layout's learned start points ({FILE.name}): "
                 + ", ".join(f"point {i}" for i in chosen) + " (chosen on all the sets)."]
        save(chosen, points, args)
    args.results.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
