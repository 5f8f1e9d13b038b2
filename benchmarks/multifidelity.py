"""Multi-fidelity search: hypervolume against wall-clock for ``moasha`` vs ``fifo`` on MNIST.

Claims checked (issues 10 and 25): with the same optimiser and the same wall-clock budget, a
search under the MOASHA scheduler reaches the final hypervolume of the FIFO search (every trial
trained to the end) in at most a third of its time; promotion-type MOASHA (trials pause at each
rung and resume from their checkpoints) ends with a hypervolume at least stopping-type's. For
each optimiser and seed, one FIFO search and one MOASHA search of each ``--types`` run back to
back with the same optimiser and seed (the order rotates between seeds), each stopped by the
same ``limits.time``; random search under FIFO is the floor (``--floor``).
Optimiser specs that differ only by an option acting under MOASHA alone (``rung_view``) share
one FIFO search per seed: ``--optimisers tpe,tpe:rung_view=false`` is the view's ablation.

The space is mnist-tiny's (ConvNet and SCS families, Shapeshifted into 300-5,000 parameters,
single or random store mapping) on a stratified 10,000-image training subset of the official
MNIST training set (validation: 5,000 others; the test set is not used). Objectives: validation
accuracy (max) and parameters (min); constraint params <= 5000; trials train up to ``--epochs``
(9 by default; cosine schedule). Hypervolume is computed on fixed bounds (accuracy 0.5-1.0, params
0-5,000), reference point 1.1, over the COMPLETE feasible trials ended by each moment.

Run: ``NPAS_DATA=../shared/data python benchmarks/multifidelity.py [--minutes 3] [--seeds 3]
[--optimisers nsga2,tpe,tpe:rung_view=false] [--floor random] [--epochs 9]
[--types stopping,promotion] [--results PATH]``
→ the table, by default ``benchmarks/results/multifidelity.md``, and beside it (``.json``) each
pair's hypervolume curves; both rewritten after every pair (marked partial until the last), so
an interrupted run keeps what it measured. Each MOASHA row counts its rung decisions (pauses and
promotions, read from the trials' ``npas:decisions``) and the run folder's size at its end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import torch
import yaml
from optuna.trial import TrialState

from objectives._conditions import cpu_model_name
from search.config import load_config
from search.pareto import hypervolume
from search.record._checkpoint_files import folder_size
from search.record._schema import TrialAttr
from search.run import launch

RESULTS = Path(__file__).parent / "results" / "multifidelity.md"
OBJECTIVES = [["accuracy", "maximize"], ["params", "minimize"]]
DIRECTIONS = [d for _, d in OBJECTIVES]
NAMES = [n for n, _ in OBJECTIVES]
BOUNDS = {"accuracy": (0.5, 1.0), "params": (0.0, 5000.0)}
#: Optimiser options that act only under a stopping scheduler (see :func:`fifo_key`).
MOASHA_ONLY = ("rung_view",)
EPOCHS = 9
#: The ratio MOASHA must reach (issue 10: a third of FIFO's wall-clock, as the tables write it).
TARGET = 0.33
SPACE = {
    "family": {"choices": ["convnet", "scs"]},
    "convnet.depth": {"low": 2, "high": 4},
    "convnet.width": {"low": 4, "high": 24, "log": True},
    "scs.widths.0": {"low": 4, "high": 24, "log": True},
    "scs.widths.1": {"low": 4, "high": 24, "log": True},
    "scs.widths.2": {"low": 4, "high": 24, "log": True},
    "budget": {"low": 300, "high": 5000, "log": True},
    "ssn.mapping": {"choices": ["single", "random"]},
    "ssn.stores": {"low": 2, "high": 3, "when": {"ssn.mapping": ["random"]}},
    "ssn.upsampler": {"choices": ["mask", "repeat"]},
    "train.lr": {"low": 0.01, "high": 0.3, "log": True},
}


def optimiser_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name`` or ``name:key=value:...`` → name and options (values as written)."""
    name, *pairs = spec.split(":")
    return name, dict(pair.partition("=")[::2] for pair in pairs)


def config(
    out: Path,
    optimiser: str,
    scheduler: str,
    seed: int,
    minutes: float,
    epochs: int = EPOCHS,
    kind: str = "stopping",
) -> Any:
    name, written = optimiser_spec(optimiser)
    options: dict[str, Any] = {"population_size": 16} if name == "nsga2" else {}
    options.update((key, yaml.safe_load(value)) for key, value in written.items())
    label = optimiser.replace(":", "-").replace("=", "-")
    return load_config(
        {
            "name": f"{label}-{scheduler}{'-' + kind if scheduler == 'moasha' else ''}-s{seed}",
            "dataset": "mnist",
            "train_size": 10_000,
            "space": SPACE,
            "fixed": {"convnet.growth": 1.5, "ssn.templates": 4},
            "train": {"epochs": epochs, "batch_size": 128, "schedule": "cosine"},
            "objectives": OBJECTIVES,
            "constraints": ["params <= 5000"],
            "indicators": ["params", "flops_infer"],
            "algorithm": {"name": name, "options": options},
            "scheduler": {"name": scheduler, "grace_epochs": 1, "reduction_factor": 3}
            | ({"type": kind} if scheduler == "moasha" else {}),
            "limits": {"time": minutes * 60},
            "trials": 10_000,
            "resources": {"cpu": 1},
            "out": str(out),
            "seed": seed,
        }
    )


def curve(study: optuna.Study) -> list[tuple[float, float]]:
    """(seconds since the first trial started, hypervolume) after each COMPLETE trial."""
    trials = study.get_trials(deepcopy=False)
    start = min(t.datetime_start for t in trials)
    done = sorted(
        (t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("feasible")),
        key=lambda t: t.datetime_complete,
    )
    points, out = [], []
    for trial in done:
        points.append(trial.values)
        hv = hypervolume(np.array(points), DIRECTIONS, bounds=BOUNDS, names=NAMES).value
        out.append(((trial.datetime_complete - start).total_seconds(), hv))
    return out


def reached(history: list[tuple[float, float]], target: float) -> float | None:
    """The first moment the history reaches ``target`` (None: never)."""
    return next((t for t, hv in history if hv >= target - 1e-12), None)


def hv_at(history: list[tuple[float, float]], t: float) -> float:
    """The hypervolume a history had at second ``t`` (0 before its first complete trial)."""
    return max((hv for s, hv in history if s <= t), default=0.0)


def mean_reach(pairs: list[dict[str, Any]]) -> tuple[float, float, int | None]:
    """Over seeds: FIFO's mean final hypervolume, the mean time of its last trial, and the
    first whole second at which MOASHA's hypervolume averaged over the seeds reaches that
    mean (None: never) -- the seed-averaged anytime curves HPO benchmarks compare."""
    target = statistics.fmean(r["fifo_hv"] for r in pairs)
    fifo_s = statistics.fmean(r["fifo_s"] for r in pairs)
    curves = [r["moasha_curve"] for r in pairs]
    horizon = math.ceil(max((c[-1][0] for c in curves if c), default=0.0))
    reach = next(
        (
            t
            for t in range(horizon + 1)
            if statistics.fmean(hv_at(c, t) for c in curves) >= target - 1e-12
        ),
        None,
    )
    return target, fifo_s, reach


def counts(study: optuna.Study) -> dict[str, int]:
    states = [t.state for t in study.get_trials(deepcopy=False)]
    return {
        "complete": states.count(TrialState.COMPLETE),
        "pruned": states.count(TrialState.PRUNED),
        "failed": states.count(TrialState.FAIL),
    }


def floor(out: Path, optimiser: str, seed: int, minutes: float, epochs: int) -> dict[str, Any]:
    """One FIFO search of the floor optimiser: its final hypervolume and trial counts."""
    study = launch(config(out, optimiser, "fifo", seed, minutes, epochs), progress=False)
    history = curve(study)
    return {
        "optimiser": optimiser,
        "seed": seed,
        "hv": history[-1][1] if history else 0.0,
        "counts": counts(study),
    }


def fifo_key(optimiser: str) -> str:
    """The FIFO search an optimiser spec stands for: options acting only under a stopping
    scheduler (``MOASHA_ONLY``) are dropped, so specs differing only by them share one."""
    name, options = optimiser_spec(optimiser)
    kept = [f"{key}={value}" for key, value in options.items() if key not in MOASHA_ONLY]
    return ":".join([name, *kept])


def events(study: optuna.Study) -> dict[str, int]:
    """How many rung decisions of each outcome the study's trials stored (``npas:decisions``)."""
    found: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        for decision in trial.user_attrs.get(TrialAttr.DECISIONS, []):
            found[decision["outcome"]] = found.get(decision["outcome"], 0) + 1
    return found


def run(
    args: argparse.Namespace, measured: Callable[[list, list], None]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every FIFO search and the MOASHA searches beside it; ``measured(rows, floors)`` after
    each row, so none is lost."""
    rows: list[dict[str, Any]] = []
    floors: list[dict[str, Any]] = []
    out = Path(tempfile.mkdtemp(prefix="npas-mf-"))

    disk: dict[str, int] = {}  # a search's Ray folder (its checkpoints) when it ended

    def search(optimiser: str, scheduler: str, seed: int, kind: str) -> optuna.Study:
        cfg = config(out, optimiser, scheduler, seed, args.minutes, args.epochs, kind)
        study = launch(cfg, progress=False)
        disk[study.study_name] = folder_size(out / "ray" / cfg.name)
        print(f"{cfg.name}: {counts(study)}", file=sys.stderr, flush=True)
        return study

    for seed in range(args.first_seed, args.first_seed + args.seeds):
        if args.floor:
            floors.append(floor(out, args.floor, seed, args.minutes, args.epochs))
            measured(rows, floors)
        fifos: dict[str, optuna.Study] = {}
        for optimiser in args.optimisers:
            key = fifo_key(optimiser)
            order = [None, *args.types]  # None: the FIFO search
            shift = (seed + len(rows)) % len(order)
            studies: dict[str | None, optuna.Study] = {}
            for kind in order[shift:] + order[:shift]:
                if kind is None:
                    if key not in fifos:
                        fifos[key] = search(key, "fifo", seed, "stopping")
                    continue
                studies[kind] = search(optimiser, "moasha", seed, kind)
            fifo = curve(fifos[key])
            target = fifo[-1][1] if fifo else 0.0
            for kind in args.types:
                moasha = curve(studies[kind])
                rows.append(
                    {
                        "optimiser": optimiser,
                        "seed": seed,
                        "type": kind,
                        "fifo_hv": target,
                        "moasha_hv": moasha[-1][1] if moasha else 0.0,
                        "fifo_s": fifo[-1][0] if fifo else float("nan"),
                        "moasha_reach_s": reached(moasha, target),
                        "fifo": counts(fifos[key]),
                        "moasha": counts(studies[kind]),
                        "events": events(studies[kind]),
                        "disk_bytes": disk[studies[kind].study_name],
                        "fifo_curve": fifo,
                        "moasha_curve": moasha,
                    }
                )
            measured(rows, floors)
    return rows, floors


def write(
    rows: list[dict[str, Any]],
    floors: list[dict[str, Any]],
    args: argparse.Namespace,
    seconds: float,
    load: tuple[float, float],
    *,
    partial: bool = False,
) -> None:
    lines = [
        "# Multi-fidelity: MOASHA (stopping and promotion) vs FIFO on MNIST (same optimiser, "
        "same wall-clock)",
        "",
        f"Produced by `benchmarks/multifidelity.py --minutes {args.minutes} --seeds "
        f"{args.seeds} --first-seed {args.first_seed} --optimisers "
        f"{','.join(args.optimisers)} --floor '{args.floor}' "
        f"--epochs {args.epochs} --types {','.join(args.types)}` in {seconds / 60:.0f} min; "
        f"load average {load[0]:.2f} before, {load[1]:.2f} after."
        + (" **Partial: the run was still going when this was written.**" if partial else ""),
        f"CPU: {cpu_model_name()} ({os.cpu_count()} cores), torch {torch.__version__}, Python "
        f"{platform.python_version()}, 2 trials at a time (1 CPU each). MNIST: 10,000 "
        f"training images (stratified subset), 5,000 validation; up to {args.epochs} epochs, "
        "cosine, batch 128. Objectives accuracy (max) / params (min), params <= 5000. "
        "Hypervolume on fixed bounds accuracy 0.5-1.0, params 0-5,000, reference 1.1, over "
        "COMPLETE feasible trials. `reach` = seconds MOASHA took to reach FIFO's final "
        "hypervolume; `ratio` = reach / the time of FIFO's last completed trial "
        f"(target <= {TARGET}); `pause/promote` = rung decisions stored; `disk` = the MOASHA "
        "search's Ray folder (its checkpoints) when it ended.",
        "",
        "| optimiser | seed | type | FIFO final HV | MOASHA final HV | FIFO last trial (s) | "
        "MOASHA reach (s) | ratio | FIFO trials (complete/pruned/failed) | "
        "MOASHA trials (complete/pruned/failed) | pause/promote | disk (MiB) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    for r in rows:
        reach, ratio = r["moasha_reach_s"], ratio_of(r)
        f, m, e = r["fifo"], r["moasha"], r["events"]
        lines.append(
            f"| {r['optimiser']} | {r['seed']} | {r['type']} | {r['fifo_hv']:.4f} | "
            f"{r['moasha_hv']:.4f} | {r['fifo_s']:.0f} | "
            f"{'never' if reach is None else f'{reach:.0f}'} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | "
            f"{f['complete']}/{f['pruned']}/{f['failed']} | "
            f"{m['complete']}/{m['pruned']}/{m['failed']} | "
            f"{e.get('pause', 0)}/{e.get('promote', 0)} | {r['disk_bytes'] / 2**20:.1f} |"
        )
    lines += [
        "",
        "Per optimiser and type, the ratio's median over all seeds (a seed where MOASHA never "
        "reached FIFO's final hypervolume counts as above every ratio), then the same reading "
        "of the seeds' mean curves (MOASHA's hypervolume at each second averaged over the "
        "seeds, against FIFO's final hypervolume averaged over the seeds):",
        "",
    ]
    for name, kind in dict.fromkeys((r["optimiser"], r["type"]) for r in rows):
        mine = [r for r in rows if (r["optimiser"], r["type"]) == (name, kind)]
        values = [v for v in map(ratio_of, mine) if v is not None]
        middle = statistics.median(values + [math.inf] * (len(mine) - len(values)))
        target, fifo_s, reach = mean_reach(mine)
        lines.append(
            f"- {name}, {kind}: median {'never' if math.isinf(middle) else f'{middle:.2f}'}; "
            f"at most {TARGET} in {sum(v <= TARGET for v in values)} of {len(mine)} seeds, "
            f"reached in {len(values)}. Mean curves: FIFO's final hypervolume {target:.4f} at a "
            f"mean {fifo_s:.0f} s; MOASHA reached it at {'-' if reach is None else reach} s, "
            f"ratio {'never' if reach is None else f'{reach / fifo_s:.2f}'}"
        )
    for name in dict.fromkeys(r["optimiser"] for r in rows):
        final = {(r["seed"], r["type"]): r["moasha_hv"] for r in rows if r["optimiser"] == name}
        seeds = [s for s, kind in final if kind == "promotion" and (s, "stopping") in final]
        if seeds:
            wins = sum(final[s, "promotion"] >= final[s, "stopping"] for s in seeds)
            lines.append(
                f"- {name}: promotion's final hypervolume >= stopping's in {wins} of "
                f"{len(seeds)} seeds"
            )
    if floors:
        lines += [
            "",
            f"Floor: {args.floor} search under FIFO, same minutes, per seed:",
            "",
            "| seed | final HV | trials (complete/pruned/failed) |",
            "|---:|---:|---|",
        ]
        for f in floors:
            c = f["counts"]
            lines.append(
                f"| {f['seed']} | {f['hv']:.4f} | {c['complete']}/{c['pruned']}/{c['failed']} |"
            )
    args.results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = {"rows": rows, "floors": floors, "partial": partial}
    args.results.with_suffix(".json").write_text(json.dumps(raw, indent=1), encoding="utf-8")


def ratio_of(row: dict[str, Any]) -> float | None:
    """MOASHA's time to FIFO's final hypervolume over FIFO's time (None: never reached)."""
    reach = row["moasha_reach_s"]
    return None if reach is None else reach / row["fifo_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="wall-clock per search")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds run: this one and the next --seeds - 1"
    )
    parser.add_argument(
        "--optimisers",
        default="nsga2,tpe",
        help="comma-separated; each NAME or NAME:OPTION=VALUE (e.g. tpe:rung_view=false)",
    )
    parser.add_argument(
        "--floor", default="random", help="optimiser run under FIFO only ('': none)"
    )
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="a full trial's epochs")
    parser.add_argument(
        "--types", default="stopping,promotion", help="MOASHA's types, comma-separated"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the table written")
    args = parser.parse_args()
    args.optimisers = args.optimisers.split(",")
    args.types = args.types.split(",")
    if not set(args.types) <= {"stopping", "promotion"}:
        parser.error(f"--types: got {args.types}; allowed: stopping, promotion")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started, before = time.perf_counter(), os.getloadavg()[0]

    def measured(
        rows: list[dict[str, Any]], floors: list[dict[str, Any]], partial: bool = True
    ) -> None:
        elapsed, load = time.perf_counter() - started, (before, os.getloadavg()[0])
        write(rows, floors, args, elapsed, load, partial=partial)

    measured(*run(args, measured), partial=False)
    print(args.results.read_text(), end="")


if __name__ == "__main__":
    main()
