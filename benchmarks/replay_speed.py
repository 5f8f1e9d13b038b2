"""How long ``search replay`` takes on a study of 100 recorded curves (issue 37: 20 seeds of a
100-trial study in under a minute on 2 CPUs).

The study is the first ``--trials`` curves of the lab's MNIST table (27 epochs each); the
replay is what ``search replay`` runs by default (FIFO, stopping and promotion MOASHA with the
table's optimiser, TPE, 2 workers, each for the time FIFO needs to train every curve once),
timed as a whole with the replays ``--jobs`` at once, and each arm's mean wall-clock per replay
beside it (where the time goes: the optimiser's proposals).

Run: ``python benchmarks/replay_speed.py [--trials 100] [--seeds 20] [--jobs 2]``
→ ``benchmarks/results/replay_speed.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time
from pathlib import Path

import optuna

from objectives._conditions import cpu_model_name
from search.lab import CurveTable
from search.lab._compare import Run
from search.lab._whatif import what_if

TABLE = Path(__file__).parent / "results" / "curves" / "mnist-r27.json.gz"
RESULTS = Path(__file__).parent / "results" / "replay_speed.md"
TARGET_S = 60.0


def verdict(seconds: float, seeds: int, arms: int) -> str:
    """The measured time, scaled to 20 seeds (replays are independent, so time grows with
    the seeds), against :data:`TARGET_S`."""
    twenty = seconds * 20 / seeds
    return (f"**{seconds:.1f} s** for {seeds} seeds x {arms} arms; 20 seeds at that rate: "
            f"{twenty:.0f} s (replays are independent; target: under {TARGET_S:.0f} s: "
            f"{'met' if twenty < TARGET_S else 'missed'}).")  # fmt: skip


def arm_rows(runs: dict[str, list[Run]]) -> list[str]:
    """Per arm, the mean over its replays of the trials started and of the seconds spent
    deciding (the optimiser's proposals and the scheduler's decisions)."""
    rows = []
    for arm, replays in runs.items():
        started = sum(r.counts["started"] for r in replays) / len(replays)
        decision = sum(r.counts["decision_s"] for r in replays) / len(replays)
        rows.append(f"| {arm} | {started:.1f} | {decision:.2f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    whole = CurveTable.load(args.table)
    table = dataclasses.replace(whole, rows=whole.rows[: args.trials], noise=[])
    began = time.perf_counter()
    result = what_if(table, seeds=args.seeds, jobs=args.jobs)
    seconds = time.perf_counter() - began
    c = result.comparison
    lines = [
        "# `search replay` speed: 20 seeds of a 100-curve study",
        "",
        f"`python benchmarks/replay_speed.py --trials {args.trials} --seeds {args.seeds} --jobs "
        f"{args.jobs}` on {cpu_model_name()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}, Optuna {optuna.__version__}. Table: the first "
        f"{len(table.rows)} curves of `{args.table.name}` ({table.epochs} epochs); the default "
        f"arms (FIFO, stopping and promotion MOASHA, {result.optimiser}, {result.workers} "
        f"workers), horizon {c.horizon_s:.0f} simulated s.",
        "",
        verdict(seconds, args.seeds, len(c.runs)),
        "",
        "| arm | trials started (mean) | decision s per replay (mean) |",
        "|---|---:|---:|",
        *arm_rows(c.runs),
    ]
    args.results.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
