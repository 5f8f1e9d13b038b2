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
its mean over them is at least 0.9; otherwise not, and the table says which sets failed. The
signal layout's run passed it (``benchmarks/results/portfolio.md``); the same rule, written
before their runs (2026-11-30, 05:45 UTC), decides the image and table layouts (``--layout``).

Nothing here reads a test split, and no dataset of an unaided protocol or development round
is used (:data:`LAYOUTS`): signals are aeon 1.6.0's bundled sets outside every protocol
(``--wheel``: ``pip download --no-deps aeon==1.6.0``) and generated waves; images generated
bars, gratings and blobs; tables scikit-learn's iris and generated tables.

Run: ``python benchmarks/portfolio.py [--layout signal|image|table] [--wheel
aeon-1.6.0-py3-none-any.whl] [--points 64] [--k 4] [--out DIR] [--save]`` (default
``benchmarks/results/portfolio[-LAYOUT]``) → ``<out>/scores.json`` and ``<out>.md``;
``--save`` writes the K points chosen greedily on all the build sets as the layout's learned
start points (``search/derive/learned_starts.yaml``, the other layouts' kept).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from scipy.stats import spearmanr

from benchmarks.generated_images import bars, blobs, gratings
from benchmarks.generated_signals import waves
from benchmarks.unaided_data import signal_set
from search.derive._learned import FILE, generic, in_space, space_families
from spaces import Fixed

HERE = Path(__file__).parent
#: Each layout's build sets: name -> (where it comes from, its params limit). Signals: aeon's
#: sets outside every protocol and generated waves (generator arguments), the limits
#: alternating 1,000 and 5,000; images: generated bars, gratings and blobs
#: (``generated_images``), 1,000 and 2,000; tables: scikit-learn's iris and generated tables,
#: 500 and 1,000. None is a dataset of an unaided protocol or a development round.
LAYOUTS: dict[str, dict[str, tuple[str, int]]] = {
    "signal": {
        "BasicMotions": ("aeon", 1000),
        "PickupGestureWiimoteZ": ("aeon", 5000),
        "Covid3Month_disc": ("aeon", 1000),
        "waves-a": ("waves 600 11 128 2 1.4", 5000),
        "waves-b": ("waves 400 12 64 1 1.0", 1000),
        "waves-c": ("waves 800 13 256 2 2.0", 5000),
    },
    "image": {
        "bars-a": ("bars 600 41 20 1 0.5", 1000),
        "bars-b": ("bars 800 42 28 3 0.8", 2000),
        "gratings-a": ("gratings 600 43 16 1 0.8", 1000),
        "gratings-b": ("gratings 500 44 12 3 1.0", 2000),
        "blobs-a": ("blobs 600 45 24 3 0.4", 1000),
        "blobs-b": ("blobs 800 46 20 1 0.6", 2000),
    },
    "table": {
        "iris": ("iris", 500),
        "classes-a": ("classification 500 12 5 4 1.0 51", 1000),
        "quantiles": ("quantiles 600 6 3 52", 500),
        "moons": ("moons 400 0.25 53", 1000),
        "classes-b": ("classification 800 30 10 2 0.8 54", 500),
        "circles": ("circles 500 0.15 55", 1000),
    },
}
#: The build sets of the layout being measured (the signal layout's unless ``--layout``).
BUILD: dict[str, tuple[str, int]] = dict(LAYOUTS["signal"])
#: Where a layout's scores and table go.
OUT = {"signal": HERE / "results" / "portfolio",
       **{k: HERE / "results" / f"portfolio-{k}" for k in ("image", "table")}}  # fmt: skip
RESULTS = {k: v.with_suffix(".md") for k, v in OUT.items()}
#: The search time the derived recipe is for (a development run's).
MINUTES = 2
#: The rule's least mean leave-one-out percentile (see the module doc).
GO_MEAN = 0.9
#: Noise features added to a generated low-dimensional table.
NOISE_FEATURES = 8


def build_sets(wheel: Path | None, folder: Path) -> dict[str, Path]:
    """Every build set of :data:`BUILD` as an npz in ``folder`` (written once): aeon's from
    the wheel, the others from their seeds (a quarter held out as the test split)."""
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
        x, y = generated(source)
        cut = len(y) * 3 // 4
        np.savez(path, x_train=x[:cut], y_train=y[:cut], x_test=x[cut:], y_test=y[cut:])
    return paths


def generated(source: str) -> tuple[np.ndarray, np.ndarray]:
    """A build set from its generator and arguments (``BUILD``'s source), rows shuffled."""
    from sklearn import datasets

    kind, *args = source.split()
    if kind == "waves":
        n, seed, length, bands, noise = args
        return waves(int(n), int(seed), int(length), bands=int(bands), noise=float(noise))
    if kind in ("bars", "gratings", "blobs"):
        n, seed, size, channels, noise = args
        make = {"bars": bars, "gratings": gratings, "blobs": blobs}[kind]
        return make(int(n), int(seed), int(size), channels=int(channels), noise=float(noise))
    if kind == "iris":
        x, y = datasets.load_iris(return_X_y=True)
        order = np.random.default_rng(0).permutation(len(y))
        return x[order].astype(np.float32), y[order].astype(np.int64)
    if kind == "classification":
        n, features, informative, classes, sep, seed = args
        x, y = datasets.make_classification(
            n_samples=int(n), n_features=int(features), n_informative=int(informative),
            n_classes=int(classes), class_sep=float(sep), flip_y=0.02, random_state=int(seed))
        return x.astype(np.float32), y.astype(np.int64)
    if kind == "quantiles":
        n, features, classes, seed = args
        x, y = datasets.make_gaussian_quantiles(n_samples=int(n), n_features=int(features),
                                                n_classes=int(classes), random_state=int(seed))
    else:  # moons, circles: two informative features
        n, noise, seed = args
        make = datasets.make_moons if kind == "moons" else datasets.make_circles
        x, y = make(n_samples=int(n), noise=float(noise), random_state=int(seed))
    rng = np.random.default_rng(int(args[-1]))
    x = np.hstack([x, rng.normal(size=(len(y), NOISE_FEATURES))])
    return x.astype(np.float32), y.astype(np.int64)


def set_config(name: str, path: Path, limit: int) -> Any:
    """The search the unaided search derives for a build set under ``params <= limit`` (its
    validated config), its layout told by its arrays' rank."""
    from search.config import load_config
    from search.derive import derive

    with np.load(path) as arrays:
        layout = {2: "table", 3: "signal", 4: "image"}[arrays["x_train"].ndim]
    data = {"name": f"portfolio-{name}", "dataset": {"name": name, "npz": str(path),
            "layout": layout}, "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
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
    """The chosen points as the layout's learned start points, with how they were built (the
    other layouts' kept)."""
    built = (f"benchmarks/portfolio.py --layout {args.layout} --points {args.points} --k "
             f"{args.k} --seed {args.seed}: greedy on {', '.join(BUILD)} (validation accuracy; "
             "no test split read)")  # fmt: skip
    stored = yaml.safe_load(FILE.read_text()) if FILE.exists() else {}
    stored[args.layout] = {"built": built, "points": [
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in points[i].items()}
        for i in chosen]}  # fmt: skip
    FILE.write_text("# Written by benchmarks/portfolio.py --save: do not edit by hand.\n"
                    + yaml.safe_dump(stored, sort_keys=False, width=99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="aeon-1.6.0-py3-none-any.whl")
    parser.add_argument("--points", type=int, default=64)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--layout", choices=list(LAYOUTS), default="signal")
    parser.add_argument("--out", type=Path, help="default: benchmarks/results/portfolio[-LAYOUT]")
    parser.add_argument("--results", type=Path, help="default: the --out folder's name .md")
    parser.add_argument("--save", action="store_true", help="write the learned start points")
    args = parser.parse_args()
    args.out = args.out or OUT[args.layout]
    args.results = args.results or RESULTS[args.layout]
    BUILD.clear()
    BUILD.update(LAYOUTS[args.layout])
    paths = build_sets(args.wheel, args.out / "data")
    name, path = next(iter(paths.items()))
    first = set_config(name, path, BUILD[name][1]).space
    families = space_families(first)
    keys = sorted({generic(n, families) for n in first.names
                   if n != "family" and not isinstance(first[n], Fixed)})  # fmt: skip
    points = unit_points(args.points, args.seed, families, keys)
    scores = train_all(paths, points, args.out, args.workers)
    text = [
        "# Do the unaided search's configurations carry over between datasets?",
        "",
        f"`benchmarks/portfolio.py --layout {args.layout} --points {args.points} --k {args.k} "
        f"--seed {args.seed}`: "
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
        text += ["", f"Saved as the {args.layout} layout's learned start points ({FILE.name}): "
                 + ", ".join(f"point {i}" for i in chosen) + " (chosen on all the sets)."]
        save(chosen, points, args)
    args.results.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
