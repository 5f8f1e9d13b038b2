"""Scheduler scale: what one MOASHA rung decision costs when a rung holds 10^2 to 10^4 trials.

A search on a cluster puts thousands of trials through a rung, and MOASHA re-ranks the whole
rung at each arrival, on the Ray driver. This times the scheduler alone: ``on_trial_result``
called directly with a stand-in trial (``trial_id`` and ``config``), no Ray cluster, each of
``n`` synthetic trials reporting its first epoch, so each call is one decision at rung 1 among
the trials recorded there. Rungs of up to ``--whole-max`` trials are run whole (mean and max
per decision, total); a larger rung would take minutes per variant on a shared 2-core machine,
so its first ``n - --timed`` trials are recorded untimed, as the scheduler records them, and
only the last ``--timed`` arrivals (at ~n trials) are timed. Then one ranking of a full rung
alone, median of repeats: ``rank_order`` before and after, and ``top_k`` for the best third
(what a promotion scheduler needs).

"before" is the ranking as of commit 4969fbd (pymoo's ``NonDominatedSorting``, then pymoo's
crowding one front at a time in Python), swapped into the scheduler; "after" is
``search.schedulers._ranking.rank_order``. Both give the same order on these data (checked).

Synthetic trials (seeded): a size s ~ U(0, 1) drives accuracy (maximised, 4 decimals, as on
a 10^4-image test set), parameters (minimised, integers 10^3 to 10^6) and latency (minimised,
2 decimals, lognormal noise); a fourth objective is an unrelated memory figure (3 decimals).
Trials with more than ~5·10^5 parameters violate the budget (~10 %), 3 % are at chance and
0.5 % report NaN accuracy.

Run: ``python benchmarks/scheduler_scale.py [--sizes 100 1000 10000] [--timed 100]``
→ ``benchmarks/results/scheduler_scale.md``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import moocore
import numpy as np
import pymoo
from pymoo.operators.survival.rank_and_crowding.metrics import get_crowding_function
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

import search.schedulers._moasha as moasha_module
from objectives._conditions import cpu_model_name
from search.schedulers._moasha import MOASHA
from search.schedulers._ranking import rank_order, top_k

RESULTS = Path(__file__).parent / "results" / "scheduler_scale.md"
OBJECTIVES = [
    ("accuracy", "maximize"),
    ("params", "minimize"),
    ("latency_ms", "minimize"),
    ("memory_mb", "minimize"),
]
_CROWDING = get_crowding_function("cd")


def rank_order_before(
    F: np.ndarray, violation: np.ndarray, at_chance: np.ndarray | None = None
) -> list[int]:
    """The baseline: ``rank_order`` as of commit 4969fbd (one pymoo crowding call per front)."""
    rows = np.arange(len(F))
    chance = np.zeros(len(F), bool) if at_chance is None else np.asarray(at_chance, bool)
    valid = np.isfinite(F).all(axis=1) & ~np.isnan(violation)
    feasible = valid & (violation <= 0)
    infeasible = rows[valid & (violation > 0)]
    order: list[int] = []
    for group in (rows[feasible & ~chance], rows[feasible & chance]):
        if not len(group):
            continue
        for front in NonDominatedSorting().do(F[group]):
            members = group[front]
            crowding = _CROWDING.do(F[members])
            order.extend(int(i) for i in members[np.lexsort((members, -crowding))])
    order.extend(int(i) for i in infeasible[np.lexsort((infeasible, violation[infeasible]))])
    order.extend(int(i) for i in rows[~valid])
    return order


def synthetic_results(n: int, seed: int = 0) -> list[dict[str, float]]:
    """n first-epoch results with trade-offs, ties, infeasible, at-chance and NaN trials."""
    rng = np.random.default_rng(seed)
    size = rng.random(n)
    params = np.round(10 ** (3 + 3 * size))
    accuracy = np.clip(0.6 + 0.35 * np.sqrt(size) + rng.normal(0, 0.03, n), 0, 1).round(4)
    chance = rng.random(n) < 0.03
    accuracy[chance] = 0.1135
    accuracy[rng.random(n) < 0.005] = np.nan
    latency = (0.05 * params**0.8 * rng.lognormal(0, 0.2, n)).round(2)
    memory = rng.random(n).round(3)
    violation = np.maximum(0, params - 5e5) / 5e5
    return [
        {
            "epoch": 1,
            "accuracy": accuracy[i],
            "params": params[i],
            "latency_ms": latency[i],
            "memory_mb": memory[i],
            "npas_violation": violation[i],
            "npas_at_chance": float(chance[i]),
        }
        for i in range(n)
    ]


@contextmanager
def ranking(function: Callable[..., list[int]]) -> Iterator[None]:
    """The scheduler ranks with ``function`` inside the block."""
    saved = moasha_module.rank_order
    moasha_module.rank_order = function
    try:
        yield
    finally:
        moasha_module.rank_order = saved


def time_rung(n_obj: int, results: list[dict[str, float]], timed: int) -> list[float]:
    """Seconds per ``on_trial_result`` call for the last ``timed`` of ``results`` to enter
    rung 1; the others are recorded there first as the scheduler records them, untimed."""
    sched = MOASHA(OBJECTIVES[:n_obj], max_epochs=27, grace_epochs=1, reduction_factor=3)
    rung = sched._recorded[sched.rungs[0]]
    for i, result in enumerate(results[: len(results) - timed]):
        vector = sched._vector([result[name] for name, _ in OBJECTIVES[:n_obj]])
        rung[f"pre{i}"] = (vector, result["npas_violation"], result["npas_at_chance"] > 0)
    seconds = []
    for i, result in enumerate(results[len(results) - timed :]):
        trial = SimpleNamespace(trial_id=f"t{i}", config={"number": i})
        start = time.perf_counter()
        sched.on_trial_result(None, trial, dict(result))
        seconds.append(time.perf_counter() - start)
    assert len(sched.decisions()) == timed
    return seconds


def rung_arrays(n_obj: int, results: list[dict[str, float]]) -> tuple[np.ndarray, ...]:
    """F (minimised), violation and at-chance of a rung, as the scheduler builds them."""
    signs = np.array([-1.0 if d == "maximize" else 1.0 for _, d in OBJECTIVES[:n_obj]])
    F = np.array([[r[name] for name, _ in OBJECTIVES[:n_obj]] for r in results]) * signs
    violation = np.array([r["npas_violation"] for r in results])
    return F, violation, np.array([r["npas_at_chance"] > 0 for r in results])


def median_seconds(calls: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median seconds of each call, the calls taking turns so that load from other work on
    the machine falls on all of them alike; one warm-up each."""
    times: list[list[float]] = [[] for _ in calls]
    for call in calls:
        call()
    for _ in range(repeats):
        for call, seconds in zip(calls, times, strict=True):
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
    return [statistics.median(seconds) for seconds in times]


def cluster_reading(decision_ms: dict[int, float]) -> str:
    """What the driver's decision rate means for 100 nodes, from the largest rung's cost."""
    worst = max(decision_ms.values())
    lines = [
        "## What this means for a 100-node cluster\n",
        "A decision is made only when a report crosses a rung milestone; other reports return "
        "before any ranking. With grace 1, rf 3 and 27 epochs a trial runs 3 epochs on average "
        "(2/3 stop at 1, 2/9 at 3, 2/27 at 9, 1/27 run 27) and enters 1 + 1/3 + 1/9 = 1.44 "
        "rungs, so about 0.48 decisions per reported epoch. 100 nodes x N trials each, with "
        "epochs of T s, report 100 N / T epochs/s and need about 48 N / T decisions/s. At the "
        "largest rung measured a decision costs (median) "
        + ", ".join(f"{ms:.1f} ms ({k} objectives)" for k, ms in sorted(decision_ms.items()))
        + f", i.e. the driver makes about {1e3 / worst:.0f} decisions/s at the slowest. "
        "Share of one driver core the scheduler takes at that cost "
        "(needed decisions/s x cost; above 100 % results queue up):\n",
        "| N trials per node | T s per epoch | decisions/s needed | driver core busy |",
        "|---|---|---|---|",
    ]
    for n_per_node, epoch_s in ((1, 60), (1, 10), (8, 10), (8, 1)):
        needed = 48 * n_per_node / epoch_s
        busy = needed * worst / 1e3
        lines.append(f"| {n_per_node} | {epoch_s} | {needed:.1f} | {100 * busy:.0f} % |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--objectives", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--whole-max", type=int, default=1000)
    parser.add_argument("--timed", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    wall = time.perf_counter()

    header = "| objectives | trials at rung | ranking | mean ms | median ms | max ms"
    header += " | last 10 % mean ms"
    decision_ms: dict[int, float] = {}
    rows = [header + " | total s |", "|---|---|---|---|---|---|---|---|"]
    for n_obj in args.objectives:
        for n in args.sizes:
            results = synthetic_results(n)
            timed = n if n <= args.whole_max else args.timed
            for label, function in (("before", rank_order_before), ("after", rank_order)):
                with ranking(function):
                    seconds = time_rung(n_obj, results, timed)
                tail = seconds[-max(1, n // 10) :]
                total = (
                    f"{sum(seconds):.1f}" if timed == n else f"({sum(seconds):.1f} for {timed})"
                )
                rows.append(
                    f"| {n_obj} | {n} | {label} | {1e3 * statistics.mean(seconds):.2f} | "
                    f"{1e3 * statistics.median(seconds):.2f} | "
                    f"{1e3 * max(seconds):.1f} | {1e3 * statistics.mean(tail):.2f} | {total} |"
                )
                print(rows[-1], flush=True)
                if label == "after" and n == max(args.sizes):
                    decision_ms[n_obj] = 1e3 * statistics.median(tail)  # spikes: other work

    n_full = max(args.sizes)
    full = ["| objectives | before `rank_order` ms | after `rank_order` ms | `top_k` (n/3) ms |"]
    full.append("|---|---|---|---|")
    for n_obj in args.objectives:
        F, violation, chance = rung_arrays(n_obj, synthetic_results(n_full))
        k = n_full // 3
        assert rank_order(F, violation, chance) == rank_order_before(F, violation, chance)
        assert top_k(F, violation, chance, k) == rank_order(F, violation, chance)[:k]
        cells = median_seconds(
            [
                partial(rank_order_before, F, violation, chance),
                partial(rank_order, F, violation, chance),
                partial(top_k, F, violation, chance, k),
            ],
            args.repeats,
        )
        full.append(f"| {n_obj} | " + " | ".join(f"{1e3 * c:.1f}" for c in cells) + " |")
        print(full[-1], flush=True)

    reading = cluster_reading(decision_ms)
    conditions = (
        f"CPU: {cpu_model_name()} ({platform.machine()}), 2 cores shared with other work; "
        f"Python {platform.python_version()}, numpy {np.__version__}, pymoo {pymoo.__version__}, "
        f"moocore {moocore.__version__}. Command: `python benchmarks/scheduler_scale.py "
        f"{' '.join(sys.argv[1:])}`; run time {time.perf_counter() - wall:.0f} s."
    )
    args.out.write_text(
        "# Scheduler scale: one MOASHA rung decision at 10^2 to 10^4 trials\n\n"
        f"{conditions}\n\n## Whole rungs through `MOASHA.on_trial_result`\n\n"
        + "\n".join(rows)
        + f"\n\n## One ranking of a full rung of {n_full} trials "
        f"(median of {args.repeats}, taking turns)\n\n" + "\n".join(full) + "\n\n" + reading
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
