"""pymoo generations in flight: how much of the workers' time a generation barrier wastes.

Claim checked: a pymoo optimiser that breeds its next generation as soon as every row in flight
is handed out (``search.optimisers._pymoo``, after the first generation) keeps the workers busy
where waiting for each generation's slowest trial left them idle, most under MOASHA, where
that trial is the one trained to the end. Both ways run in one process, back to back per
scheduler and seed (alternating which goes first): ``steady`` is npas's ``pymoo-nsga2``;
``barrier`` is the same optimiser refusing to propose while a generation is out (what it did
before).

Searches are those of ``benchmarks/multifidelity.py`` (MNIST 10,000-image subset, mnist-tiny's
ConvNet/SCS space, accuracy vs params, up to 9 epochs, 2 trials at a time), each stopped by the
same ``budget.time``. Busy share = worker-seconds inside trials / (2 workers x the span from
the first trial's start to the last one's end); hypervolume as in ``multifidelity.py``.

Run: ``NPAS_DATA=../shared/data python benchmarks/generation_wait.py [--minutes 3] [--seeds 2]
[--schedulers fifo,moasha] [--results PATH]`` → ``benchmarks/results/generation_wait.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.multifidelity import config, counts, curve
from objectives._conditions import cpu_model_name
from search.optimisers import OPTIMISERS
from search.optimisers._pymoo import _PymooNSGA2
from search.run import launch

RESULTS = Path(__file__).parent / "results" / "generation_wait.md"
WORKERS = 2


class _Barrier(_PymooNSGA2):
    """pymoo NSGA-II that proposes nothing while a generation is out (the old behaviour)."""

    def ask(self) -> Any:
        if self._generations and not any(g.pending for g in self._generations):
            return None
        return super().ask()


WAYS = {"steady": "pymoo-nsga2", "barrier": "pymoo-nsga2-barrier"}


def busy_share(study: optuna.Study) -> float:
    """Worker-seconds inside trials over ``WORKERS`` x the span of the search's trials."""
    trials = [t for t in study.get_trials(deepcopy=False) if t.datetime_complete]
    start = min(t.datetime_start for t in trials)
    end = max(t.datetime_complete for t in trials)
    inside = sum((t.datetime_complete - t.datetime_start).total_seconds() for t in trials)
    return inside / (WORKERS * (end - start).total_seconds())


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    _Barrier.name = WAYS["barrier"]
    OPTIMISERS.add(WAYS["barrier"], _Barrier)
    out = Path(tempfile.mkdtemp(prefix="npas-gw-"))
    rows = []
    for seed in range(args.seeds):
        for scheduler in args.schedulers:
            pair = len(rows) // len(WAYS)
            order = list(WAYS) if (pair + seed) % 2 == 0 else list(WAYS)[::-1]
            for way in order:
                cfg = config(out, WAYS[way], scheduler, seed, args.minutes)
                study = launch(cfg, progress=False)
                history = curve(study)
                rows.append(
                    {
                        "way": way,
                        "scheduler": scheduler,
                        "seed": seed,
                        "busy": busy_share(study),
                        "hv": history[-1][1] if history else 0.0,
                        "counts": counts(study),
                    }
                )
                print(f"{cfg.name}: {rows[-1]}", file=sys.stderr, flush=True)
    return rows


def write(rows: list[dict[str, Any]], args: argparse.Namespace, seconds: float) -> None:
    lines = [
        "# pymoo generations in flight vs a generation barrier",
        "",
        f"Produced by `benchmarks/generation_wait.py --minutes {args.minutes} --seeds "
        f"{args.seeds} --schedulers {','.join(args.schedulers)}` in {seconds / 60:.0f} min. "
        f"CPU: {cpu_model_name()} ({os.cpu_count()} cores), torch {torch.__version__}, Python "
        f"{platform.python_version()}; {WORKERS} trials at a time (1 CPU each). Searches as in "
        "`multifidelity.py` (MNIST 10,000-image subset, accuracy vs params, up to 9 epochs), "
        "optimiser pymoo NSGA-II (population 16). `busy` = worker-seconds inside trials / "
        f"({WORKERS} x the span of the trials); HV over COMPLETE feasible trials at the end.",
        "",
        "| scheduler | seed | way | busy | final HV | trials (complete/pruned/failed) |",
        "|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        c = r["counts"]
        lines.append(
            f"| {r['scheduler']} | {r['seed']} | {r['way']} | {r['busy']:.1%} | {r['hv']:.4f} "
            f"| {c['complete']}/{c['pruned']}/{c['failed']} |"
        )
    lines += ["", "Mean busy share per scheduler and way:", ""]
    for scheduler in args.schedulers:
        for way in WAYS:
            shares = [r["busy"] for r in rows if (r["scheduler"], r["way"]) == (scheduler, way)]
            lines.append(f"- {scheduler}, {way}: {statistics.mean(shares):.1%}")
    args.results.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="wall-clock per search")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--schedulers", default="fifo,moasha")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the table written")
    args = parser.parse_args()
    args.schedulers = args.schedulers.split(",")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    rows = run(args)
    write(rows, args, time.perf_counter() - started)
    print(args.results.read_text(), end="")


if __name__ == "__main__":
    main()
