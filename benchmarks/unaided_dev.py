"""Development runs of the unaided search on sets outside the protocol, so that each engine
change is measured before the protocol's runs and never on its datasets.

Each run: ``search launch`` on a data-only config (name, dataset, objectives, a params limit,
``limits.time``), then ``search export`` without ``--select``, which reads the test split once.
The arms are engine commits, each run from a git worktree at its commit (``PYTHONPATH``), so
later edits do not reach a run; an arm may add config keys (``old``: one validation split and
no refit, the engine before cross-validation). Results go to ``<out>/<set>/<arm>/seed<k>/``
(``result.json``: test accuracy, params, wall seconds) and the table to stdout.

    PYTHONPATH=<worktree> python benchmarks/unaided_dev.py --sets gunpoint,arrowhead \\
        --seeds 0,1,2 --minutes 2 --arms guard --data /work/dev --out /work/dev/runs
    python benchmarks/unaided_dev.py --table --out /work/dev/runs

The npz files: GunPoint, ArrowHead (aeon 1.6.0's wheel, ``benchmarks/unaided_data.py``'s
``signal_set``) and scikit-learn's wine (stratified 30 % test, ``random_state`` 0).
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

import yaml

#: Set → its npz file name, layout and params limit.
SETS = {
    "gunpoint": ("GunPoint.npz", "signal", 1000),
    "arrowhead": ("ArrowHead.npz", "signal", 1000),
    "wine": ("wine.npz", "table", 500),
    "synth": ("synth.npz", "table", 1000),
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
    "tpe": {"algorithm": "tpe", "scheduler": "fifo", "finalists": False, "start": None},
}


def run(name: str, arm: str, seed: int, minutes: float, data: Path, out: Path) -> dict[str, Any]:
    """One search and its export (a run whose result exists is read, not run again)."""
    folder = out / name / arm / f"seed{seed}"
    done = folder / "result.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    file, layout, limit = SETS[name]
    config = {
        "name": f"dev-{name}-{arm}-{seed}",
        "dataset": {"name": name, "npz": str(data / file), "layout": layout},
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
                           stderr=subprocess.STDOUT, check=True)  # fmt: skip
    metrics = json.loads((folder / "bundle" / "metrics.json").read_text())
    result = {"test_accuracy": metrics["exported"]["test_accuracy"],
              "params": metrics["metrics"].get("params"), "wall_s": time.time() - start}
    done.write_text(json.dumps(result))
    return result


def table(out: Path) -> str:
    """Mean ± std of each set and arm over its seeds, with every seed's figure."""
    rows = ["| set | arm | seeds | test accuracy | each seed |", "|---|---|---|---|---|"]
    for name in SETS:
        for arm in ARMS:
            found = sorted((out / name / arm).glob("seed*/result.json"))
            if not found:
                continue
            acc = [json.loads(p.read_text())["test_accuracy"] for p in found]
            std = statistics.stdev(acc) if len(acc) > 1 else float("nan")
            each = ", ".join(f"{a:.3f}" for a in acc)
            rows.append(f"| {name} | {arm} | {len(acc)} | {statistics.fmean(acc):.3f} ± "
                        f"{std:.3f} | {each} |")  # fmt: skip
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
    args = parser.parse_args()
    if not args.table:
        for seed in (int(s) for s in args.seeds.split(",")):
            for name in args.sets.split(","):
                for arm in args.arms.split(","):
                    result = run(name, arm, seed, args.minutes, args.data, args.out)
                    print(name, arm, seed, result, flush=True)
    print(table(args.out))


if __name__ == "__main__":
    main()
