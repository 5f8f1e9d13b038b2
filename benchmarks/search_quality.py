"""Search quality: hypervolume after 16, 32 and 64 trials on ``digits-quick`` per optimiser.

Claim checked (issue 4): how fast each optimiser (Optuna NSGA-II, Optuna TPE, pymoo NSGA-II,
random search) finds a good accuracy / parameters / FLOPs front on the ``digits-quick`` preset,
over several seeds. Every search runs through ``launch`` with the real ``run_trial``; after the
search, the hypervolume of the feasible completed trials among the first k (by trial number) is
computed for each checkpoint k, with the objectives normalised by bounds common to every run
of the benchmark (the min and max over all their trials), reference point 1.1.

This is long (the default is 4 optimisers x 3 seeds x 64 trials of real training); the flags
make a smaller version: ``--checkpoints 4,8 --seeds 1`` runs 8 trials per search.

Run: ``python benchmarks/search_quality.py [--checkpoints 16,32,64] [--seeds 3]
[--optimisers nsga2,tpe,pymoo-nsga2,random] [--epochs N]`` →
``benchmarks/results/search_quality.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import ray
import torch

from objectives._conditions import cpu_model_name
from search.config import load_config, load_preset
from search.pareto import hypervolume
from search.run._launch import launch

RESULTS = Path(__file__).parent / "results" / "search_quality.md"
GA = {"nsga2", "nsga3", "pymoo-nsga2", "pymoo-nsga3", "pymoo-smsemoa"}


def search(out: Path, optimiser: str, seed: int, trials: int, epochs: int | None) -> Any:
    data = load_preset("digits-quick").to_dict()
    options = data["algorithm"]["options"] if optimiser in GA else {}
    data.update(name=f"{optimiser}-s{seed}", out=str(out), trials=trials, seed=seed,
                algorithm={"name": optimiser, "options": options})  # fmt: skip
    if epochs is not None:
        data["train"] = {**data["train"], "epochs": epochs}
    config = load_config(data)
    start = time.perf_counter()
    study = launch(config, progress=False)
    return config, study, time.perf_counter() - start


def table(studies: dict[tuple[str, int], Any], objectives: list[Any], checkpoints: list[int]):
    """Hypervolume per (optimiser, seed, checkpoint) on bounds common to all runs."""
    rows = {}
    for key, study in studies.items():
        done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        rows[key] = [(t.number, t.values, bool(t.user_attrs.get("feasible"))) for t in done]
    every = np.array(
        [v for r in rows.values() for _, v, ok in r if ok and np.all(np.isfinite(v))], dtype=float
    )
    names, directions = [n for n, _ in objectives], [d for _, d in objectives]
    bounds = {n: (every[:, j].min(), every[:, j].max()) for j, n in enumerate(names)}
    out: dict[tuple[str, int], list[float]] = {}
    for key, r in rows.items():
        out[key] = []
        for k in checkpoints:
            first = [(v, ok) for n, v, ok in r if n < k]
            if not first:
                out[key].append(0.0)
                continue
            values = np.array([v for v, _ in first], dtype=float)
            feasible = np.array([ok for _, ok in first])
            result = hypervolume(values, directions, bounds=bounds, names=names,
                                 feasible=feasible)
            out[key].append(result.value)
    return out, bounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", default="16,32,64")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--optimisers", default="nsga2,tpe,pymoo-nsga2,random")
    parser.add_argument("--epochs", type=int, default=None, help="override the preset's")
    args = parser.parse_args()
    checkpoints = sorted(int(k) for k in args.checkpoints.split(","))
    optimisers = args.optimisers.split(",")
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    studies, seconds = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for optimiser in optimisers:
                config, study, took = search(
                    Path(tmp), optimiser, seed, checkpoints[-1], args.epochs
                )
                studies[(optimiser, seed)] = study
                seconds[(optimiser, seed)] = took
                print(f"{optimiser} seed {seed}: {took:.0f} s", file=sys.stderr, flush=True)
        hv, bounds = table(studies, list(config.objectives), checkpoints)
        failed = {k: sum(t.state.name == "FAIL" for t in s.trials) for k, s in studies.items()}
    ray.shutdown()
    write(args, config, optimisers, checkpoints, hv, bounds, seconds, failed)


def rows(
    optimisers: list[str],
    checkpoints: list[int],
    hv: dict[tuple[str, int], list[float]],
    seconds: dict[tuple[str, int], float],
    failed: dict[tuple[str, int], int],
) -> list[str]:
    """The table: per optimiser, the mean ± std over seeds of the hypervolume at each
    checkpoint, each seed's last one, the mean minutes of a search and the failed trials."""
    head = " | ".join(f"HV after {k}" for k in checkpoints)
    lines = [f"| optimiser | {head} | per seed after {checkpoints[-1]} | minutes per search "
             "| failed trials |", "|---" * (len(checkpoints) + 4) + "|"]  # fmt: skip
    for optimiser in optimisers:
        keys = [k for k in hv if k[0] == optimiser]
        cells = []
        for i in range(len(checkpoints)):
            values = [hv[k][i] for k in keys]
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):.4f} ± {std:.4f}")
        minutes = statistics.mean(seconds[k] for k in keys) / 60
        seeds = ", ".join(f"{hv[k][-1]:.3f}" for k in sorted(keys))
        lines.append(f"| {optimiser} | {' | '.join(cells)} | {seeds} | {minutes:.1f} | "
                     f"{sum(failed[k] for k in keys)} |")  # fmt: skip
    return lines


def write(args, config, optimisers, checkpoints, hv, bounds, seconds, failed) -> None:
    lines = rows(optimisers, checkpoints, hv, seconds, failed)
    bound_text = ", ".join(f"{n} [{lo:.4g}, {hi:.4g}]" for n, (lo, hi) in bounds.items())
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        f"""# Search quality on digits-quick

Produced by `benchmarks/search_quality.py --checkpoints {args.checkpoints} --seeds {args.seeds}
--optimisers {args.optimisers}{f" --epochs {args.epochs}" if args.epochs else ""}`.
CPU: {cpu_model_name()} ({platform.machine()}), {os.cpu_count()} cores; torch {torch.__version__}
({torch.get_num_threads()} thread in the driver), Ray {ray.__version__}, Optuna
{optuna.__version__}. Each search: `launch` on the `digits-quick` preset (objectives
{", ".join(f"{n} ({d})" for n, d in config.objectives)}; the preset's options (population 8)
for the genetic optimisers, Optuna's defaults for the others (TPE: 10 random start-up trials); 1
CPU per trial, 2 at a time), real training. The Optuna optimisers share their seeded random
start (NSGA-II's first generation, TPE's start-up, random), so they agree for the first trials.

Hypervolume of the feasible completed trials among the first k trials, objectives normalised
with bounds common to all runs ({bound_text}), reference point 1.1 (normalised), mean ± std over
{args.seeds} seed(s). The machine is shared with other jobs (timings noisy).

{chr(10).join(lines)}
""",
        encoding="utf-8",
    )
    print(RESULTS.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
