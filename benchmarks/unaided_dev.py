"""Development runs of the unaided search on sets outside the protocol, so that each engine
change is measured before the protocol's runs and never on its datasets.

Each run: ``search launch`` on a data-only config (name, dataset, objectives, a params limit,
``limits.time``), then ``search export`` without ``--select``, which reads the test split once.
The arms are engine commits, each run from a git worktree at its commit (``PYTHONPATH``; every
``search`` command runs in its run's folder, so the worktree's engine is the one imported, and
``result.json`` names it), so later edits do not reach a run; an arm may add config keys
(``old``: one validation split and no refit, the engine before cross-validation). Results go
to ``<out>/<set>/<arm>/seed<k>/`` (``result.json``: test accuracy, params, wall seconds, the
engine) and the table to stdout.

    PYTHONPATH=<worktree> python benchmarks/unaided_dev.py --sets gunpoint,arrowhead \\
        --seeds 0,1,2 --minutes 2 --arms guard --data /work/dev --out /work/dev/runs
    python benchmarks/unaided_dev.py --table --out /work/dev/runs --pairs e4:e1,e4:tpe

The npz files: GunPoint, ArrowHead (aeon 1.6.0's wheel, ``benchmarks/unaided_data.py``'s
``signal_set``) and scikit-learn's wine (stratified 30 % test, ``random_state`` 0); ``--make``
writes the generated ones, ``synth`` (a table) and ``shapes`` (16×16 images of four noisy
shapes), from fixed seeds; ``rare`` and ``sensor`` are the unseen-data probes' sets
(``benchmarks/unaided_probes.py`` writes them), seen since and so development sets now.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import paired
from benchmarks.unaided import MISSING

#: Set → its npz file name (None: the registered dataset of that name), layout and params
#: limit. ``mnist`` is the issue's own target (≤ 1,000 parameters, 4 CPU-hours), not a dev set:
#: its runs go to their own results file.
SETS: dict[str, tuple[str | None, str, int]] = {
    "gunpoint": ("GunPoint.npz", "signal", 1000),
    "arrowhead": ("ArrowHead.npz", "signal", 1000),
    "wine": ("wine.npz", "table", 500),
    "synth": ("synth.npz", "table", 1000),
    "shapes": ("shapes.npz", "image", 1000),
    "mnist": (None, "image", 1000),
    "rare": ("rare.npz", "table", 2000),
    "sensor": ("sensor.npz", "signal", 2000),
}
#: Arm → the keys it adds to the data-only config (the engine is its worktree's commit).
ARMS: dict[str, dict[str, Any]] = {
    "new": {},
    "old": {"folds": 1, "finalists": {"top": 3, "seeds": 3, "share": 0.2, "refit": False}},
    "cur": {},
    "guard": {},
    "e1": {},
    "e2": {},
    "e3": {},
    "e3-nostart": {"start": []},
    "e4": {},
    "e5": {},
    "e6": {},
    "e7": {},
    "e8": {},
    "base": {},
    "e9": {},
    "e10": {},
    "e10-nofill": {"finalists": {"top": 3, "seeds": 3, "fill": 3, "share": 0.2}},
    "e11": {},
    "tpe": {"algorithm": "tpe", "scheduler": "fifo", "finalists": False, "start": None},
}


def make_synth() -> dict[str, np.ndarray]:
    """A 3-class table of 400 rows, 6 informative features of 20, 3 % labels flipped."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    x, y = make_classification(n_samples=400, n_features=20, n_informative=6,
                               n_redundant=4, n_classes=3, class_sep=0.8, flip_y=0.03,
                               random_state=7)  # fmt: skip
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, stratify=y,
                                                        random_state=0)  # fmt: skip
    return {"x_train": x_train.astype(np.float32), "y_train": y_train.astype(np.int64),
            "x_test": x_test.astype(np.float32), "y_test": y_test.astype(np.int64)}  # fmt: skip


def shapes(n: int, seed: int, size: int = 16, noise: float = 0.45
           ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``n`` images (N×1×size×size) of a square outline, disc, plus or X (labels 0-3) at a
    random place, size and contrast in Gaussian noise: spatial features, far from a linear
    model's reach (logistic regression, 3-fold on 720 images of seed 11: 0.41; chance 0.25)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    x = np.empty((n, 1, size, size), np.float32)
    y = rng.integers(0, 4, n)
    for i in range(n):
        cy, cx = rng.uniform(5, size - 5, 2)
        r, contrast = rng.uniform(2.5, 4.5), rng.uniform(0.5, 1.0)
        dy, dx = yy - cy, xx - cx
        box = np.maximum(abs(dy), abs(dx))
        drawn = [
            abs(box - r) < 0.7,
            np.hypot(dy, dx) < r,
            ((abs(dy) < 0.8) & (abs(dx) < r)) | ((abs(dx) < 0.8) & (abs(dy) < r)),
            ((abs(dy - dx) < 1.0) | (abs(dy + dx) < 1.0)) & (box < r),
        ][y[i]]
        x[i, 0] = contrast * drawn + rng.normal(0, noise, (size, size))
    return x, y.astype(np.int64)


def make_shapes() -> dict[str, np.ndarray]:
    """480 training and 240 test images from separate seeds."""
    (x_train, y_train), (x_test, y_test) = shapes(480, 11), shapes(240, 12)
    return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}


def run(name: str, arm: str, seed: int, minutes: float, data: Path, out: Path) -> dict[str, Any]:
    """One search and its export (a run whose result exists is read, not run again).

    Each ``search`` command runs in the run's own folder: ``python -m`` puts its working
    folder first on the import path, so from a checkout it would import that checkout's
    engine whatever ``PYTHONPATH`` names. The result records the engine it imported."""
    folder = (out / name / arm / f"seed{seed}").resolve()
    data = data.resolve()
    done = folder / "result.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    file, layout, limit = SETS[name]
    config = {
        "name": f"dev-{name}-{arm}-{seed}",
        "dataset": {"name": name, "npz": str(data / file), "layout": layout} if file else name,
        "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
        "constraints": [f"params <= {limit}"],
        "limits": {"time": f"{minutes:g}m"},
        "seed": seed,
        **ARMS[arm],
    }
    (folder / "search.yaml").write_text(yaml.safe_dump(config))
    start = time.time()
    with open(folder / "log.txt", "w") as log:
        for command in (
            ["launch", str(folder / "search.yaml"), "--out", str(folder / "run")],
            ["export", "--run", str(folder / "run"), "--name", config["name"], "--out",
             str(folder / "bundle"), "--replace"],
        ):  # fmt: skip
            subprocess.run([sys.executable, "-m", "search", *command], stdout=log,
                           stderr=subprocess.STDOUT, check=True, cwd=folder)  # fmt: skip
    metrics = json.loads((folder / "bundle" / "metrics.json").read_text())
    result = {"test_accuracy": metrics["exported"]["test_accuracy"],
              "params": metrics["metrics"].get("params"), "wall_s": time.time() - start,
              "engine": engine(folder)}  # fmt: skip
    done.write_text(json.dumps(result))
    return result


def engine(folder: Path) -> str:
    """The folder of the ``search`` package a command run in ``folder`` imports, and its git
    commit when it is a checkout."""
    where = subprocess.run([sys.executable, "-c", "import pathlib, search; "
                            "print(pathlib.Path(search.__file__).resolve().parents[1])"],
                           cwd=folder, capture_output=True, text=True, check=True
                           ).stdout.strip()  # fmt: skip
    commit = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    return f"{where} {commit}".strip()


def accuracies(out: Path, name: str, arm: str) -> dict[int, float]:
    """Each finished seed's test accuracy of an arm on a set, in seed order."""
    found = {int(p.parent.name.removeprefix("seed")): json.loads(p.read_text())["test_accuracy"]
             for p in (out / name / arm).glob("seed*/result.json")}  # fmt: skip
    return dict(sorted(found.items()))


def table(out: Path) -> str:
    """Mean ± std of each set and arm over its seeds, with every seed's figure."""
    rows = ["| set | arm | seeds | test accuracy | each seed |", "|---|---|---|---|---|"]
    for name in SETS:
        for arm in ARMS:
            acc = list(accuracies(out, name, arm).values())
            if not acc:
                continue
            std = f"{statistics.stdev(acc):.3f}" if len(acc) > 1 else MISSING
            each = ", ".join(f"{a:.3f}" for a in acc)
            rows.append(f"| {name} | {arm} | {len(acc)} | {statistics.fmean(acc):.3f} ± "
                        f"{std} | {each} |")  # fmt: skip
    return "\n".join(rows)


def paired_table(out: Path, pairs: list[tuple[str, str]]) -> str:
    """Each pair of arms on each set, paired by the seeds both ran: the mean difference of test
    accuracy, its 95 % t interval and the paired t-test's p."""
    rows = ["| set | difference | seeds | mean [95 % CI] | p |", "|---|---|---|---|---|"]
    for name in SETS:
        for a, b in pairs:
            by_arm = [accuracies(out, name, arm) for arm in (a, b)]
            seeds = sorted(set(by_arm[0]) & set(by_arm[1]))
            if len(seeds) < 2:
                continue
            mean, half, p = paired([by_arm[0][s] for s in seeds], [by_arm[1][s] for s in seeds])
            rows.append(f"| {name} | {a} − {b} | {len(seeds)} | {mean:+.3f} "
                        f"[{mean - half:+.3f}, {mean + half:+.3f}] | {p:.3g} |")  # fmt: skip
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--arms", default="guard")
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--data", type=Path, default=Path("/work/dev"))
    parser.add_argument("--out", type=Path, default=Path("/work/dev/runs"))
    parser.add_argument("--table", action="store_true", help="print the table only")
    parser.add_argument("--make", action="store_true", help="write the generated sets to --data")
    parser.add_argument("--pairs", default="", help="arm pairs to compare, a:b,c:d")
    args = parser.parse_args()
    if args.make:
        for name, make in (("synth", make_synth), ("shapes", make_shapes)):
            np.savez(args.data / str(SETS[name][0]), **make())  # type: ignore[arg-type]
        return
    if not args.table:
        for seed in (int(s) for s in args.seeds.split(",")):
            for name in args.sets.split(","):
                for arm in args.arms.split(","):
                    result = run(name, arm, seed, args.minutes, args.data, args.out)
                    print(name, arm, seed, result, flush=True)
    print(table(args.out))
    if args.pairs:
        pairs = [(pair.split(":")[0], pair.split(":")[-1]) for pair in args.pairs.split(",")]
        print("\n" + paired_table(args.out, pairs))


if __name__ == "__main__":
    main()
