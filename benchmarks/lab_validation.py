"""Is the scheduler lab's replay a fair stand-in for a real search? (issue 37, item 3)

Runs ``--searches`` real searches on this machine with the curve table's own space, data and
schedule (its recorded config), the optimiser, scheduler and workers given, each for the lab's
horizon (``--budget`` full FIFO trials' worth of time on that many workers, as
``scheduler_lab.py``), then replays the same search on the table over ``--seeds`` seeds for the
same time, and sets each real figure beside the simulated spread: trials started, trials that
completed their full schedule, the second the first one completed, and the hypervolume at the
end (on the table's bounds, as the lab scores it). A real figure "falls inside" when it lies
between the replays' 5th and 95th percentiles.

The two clocks are calibrated first. The table's epochs were timed on this machine while it
also did other work, so an epoch of a real search on the idle machine is shorter than its
recorded twin. ``speed`` is the median, over the real searches' trials, of a trial's training
seconds over those of the same epochs of its nearest recorded configuration (the replay's own
1-NN); a real search's figures are read on the table's clock: at ``speed`` times
the horizon, its times divided by ``speed``.

The real searches need the machine to themselves (their clock is the wall-clock): run this
with nothing else busy. The replays run after them.

Run: ``NPAS_DATA=../shared/data python benchmarks/lab_validation.py [--searches 3]
[--optimiser nsga2] [--type stopping] [--workers 2] [--budget 40] [--seeds 50] [--reuse]``
(``--reuse``: replay again beside the real searches a run before left in ``--out``)
→ ``benchmarks/results/lab_validation.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import ray

from objectives._conditions import cpu_model_name
from search.config import load_config
from search.lab import CurveTable, ReplaySpec
from search.lab._compare import hv_at, hv_curve
from search.lab._replay import NearestRow, replay, replay_config
from search.record._curves import epoch_values
from search.run import launch

HERE = Path(__file__).parent
RESULTS = HERE / "results" / "lab_validation.md"
TABLE = HERE / "results" / "curves" / "mnist-r27.json.gz"
#: Added to a real search's time limit: the launch's own start (Ray, the data) before its
#: first trial, which the replay does not model; figures are read up to the horizon after the
#: first trial started.
STARTUP_S = 90.0
FIGURES = ("started", "completed", "first_s", "hv_end")
LABELS = {"started": "trials started", "completed": "trials completed",
          "first_s": "first completion (s)", "hv_end": "hypervolume at the end"}  # fmt: skip


def real_config(table: CurveTable, args: argparse.Namespace, i: int, horizon: float) -> Any:
    """The table's recorded search, with the optimiser and scheduler under test, for the
    lab's horizon."""
    data = dict(table.config)
    data.update(
        name=f"validate-{args.optimiser}-{args.type}-{i}",
        algorithm={"name": args.optimiser, "options": {}},
        scheduler={"name": "moasha", "type": args.type},
        trials=10_000,
        limits={"time": horizon + STARTUP_S},
        resources={"cpu": 1},
        out=str(args.out / "run"),
        seed=100 + i,
    )
    data.pop("storage", None)
    return load_config(data)


def epoch_pairs(studies: list[optuna.Study], table: CurveTable) -> np.ndarray:
    """Each real trial's seconds per epoch beside its nearest recorded row's over the same
    epochs (rows: ``(recorded, real)``), the replay's own 1-NN."""
    nearest = NearestRow(table.rows, replay_config(table, ReplaySpec()).space)
    pairs = []
    for study in studies:
        for t in study.trials:
            curve = [p for p in t.user_attrs.get("curve") or [] if p.get("train_time_s")]
            if curve:  # the curve's train_time_s is cumulative, as the table's seconds add up
                last = max(curve, key=lambda p: p["epoch"])
                row, epochs = nearest(t.params), last["epoch"]
                pairs.append((sum(row.seconds[:epochs]) / epochs, last["train_time_s"] / epochs))
    return np.array(pairs, dtype=float).reshape(-1, 2)


def speed(pairs: np.ndarray) -> float:
    """The median ratio of a real epoch's seconds to its nearest recorded twin's (see the
    module doc), over :func:`epoch_pairs`."""
    return float(np.median(pairs[:, 1] / pairs[:, 0]))


def retimed(table: CurveTable, pairs: np.ndarray) -> tuple[CurveTable, tuple[float, float]]:
    """The table with each row's epochs as this machine trains them: a row of ``s`` recorded
    seconds an epoch (its mean) takes ``exp(a) * s ** b``, ``(a, b)`` fitted by least squares
    in logs to ``pairs`` (:func:`epoch_pairs`); each epoch scaled alike. One ratio for every
    row misreads a table recorded on another machine, or beside other work: on the MNIST table
    this machine ran its fastest rows at 0.6-0.7x their recorded seconds and its slowest at
    0.2-0.3x."""
    b, a = np.polyfit(np.log(pairs[:, 0]), np.log(pairs[:, 1]), 1)
    rows = []
    for row in table.rows:
        mean = sum(row.seconds) / len(row.seconds)
        factor = math.exp(a) * mean ** (b - 1.0)
        rows.append(dataclasses.replace(row, seconds=[x * factor for x in row.seconds]))
    return dataclasses.replace(table, rows=rows), (float(a), float(b))


def start_cost(studies: list[optuna.Study], workers: int) -> float:
    """What starting a trial costs a real search, all told: the workers' time from its first
    trial's start to its last trial's end that no trial spent training (Ray's start of a
    trial, the optimiser's and the scheduler's decisions, reports, measurement, the wait for a
    free worker), over the trials it ran; the median over ``studies``. The table's
    ``start_s`` is only the part Ray Tune timed inside a trial while the table was recorded
    under FIFO. A trial still paused when the search ended (RUNNING, no end of its own: most
    of a promotion search's) counts with the training its curve records; the span ends with
    the last trial that ended."""
    costs = []
    for study in studies:
        trials = [t for t in study.trials if t.datetime_start]
        ended = [t.datetime_complete for t in trials if t.datetime_complete]
        if not ended:
            raise ValueError(f"search {study.study_name!r}: no trial ended, so no span to read")
        span = (max(ended) - min(t.datetime_start for t in trials)).total_seconds()
        training = sum(max((p["train_time_s"] for p in t.user_attrs.get("curve") or []
                            if p.get("train_time_s")), default=0.0) for t in trials)  # fmt: skip
        costs.append(max(0.0, workers * span - training) / len(trials))
    return float(np.median(costs))


def horizon_of(table: CurveTable, args: argparse.Namespace) -> float:
    """The lab's horizon: ``--budget`` full FIFO trials' worth of time on ``--workers``."""
    mean_trial = sum(table.trial_s(row) for row in table.rows) / len(table.rows)
    return args.budget * mean_trial / args.workers


def real_figures(
    study: optuna.Study, table: CurveTable, horizon: float, ratio: float
) -> dict[str, float]:
    """A real search's figures on the table's clock (a real second is 1 / ``ratio`` table
    seconds), its clock started when its first trial started."""
    trials = [t for t in study.trials if t.datetime_start is not None]
    began = min(t.datetime_start for t in trials)
    epochs = table.epochs
    completed = []
    started = 0
    for t in trials:
        points = epoch_values(t, table.names)
        if not points or (t.datetime_start - began).total_seconds() / ratio > horizon:
            continue
        started += 1
        if max(points) >= epochs and t.state == optuna.trial.TrialState.COMPLETE:
            values, violation, _ = points[max(points)]
            second = (t.datetime_complete - began).total_seconds() / ratio
            if second <= horizon:
                completed.append((second, list(values), violation <= 0))
    curve = hv_curve(completed, table, table.bounds())
    first = min((c[0] for c in completed), default=math.inf)
    return {"started": started, "completed": len(completed), "first_s": first,
            "hv_end": hv_at(curve, horizon)}  # fmt: skip


def replayed_figures(table: CurveTable, spec: ReplaySpec, seed: int, horizon: float) -> dict:
    result = replay(table, spec, seed=seed, horizon_s=horizon)
    curve = hv_curve(result.completed, table, table.bounds())
    first = min((c[0] for c in result.completed), default=math.inf)
    return {"started": result.started, "completed": len(result.completed), "first_s": first,
            "hv_end": hv_at(curve, horizon)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--searches", type=int, default=3)
    parser.add_argument("--optimiser", default="nsga2")
    parser.add_argument("--type", default="stopping", choices=("stopping", "promotion"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budget", type=float, default=40)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "validation")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--any-row", action="store_true",
                        help="replays answer each proposal with its nearest row however often "
                        "given (ReplaySpec.fresh False): a check of the fresh rule's bias")
    parser.add_argument("--near", action="store_true",
                        help="a row not given yet answers a proposal only within the table's "
                        "resolution, else its nearest row (ReplaySpec.near)")
    parser.add_argument("--retime", action="store_true",
                        help="replay on the table retimed to this machine by the real searches' "
                        "epochs (retimed()) and start cost (start_cost()), and read the real "
                        "searches on their own clock")
    parser.add_argument("--from-json", action="store_true",
                        help="write the table again from the figures --results' .json holds")
    parser.add_argument("--reuse", action="store_true",
                        help="read the real searches a run before left in --out (replay again)")
    args = parser.parse_args()
    if (os.cpu_count() or 1) < args.workers:
        raise SystemExit(f"--workers {args.workers}: this machine has {os.cpu_count()} cores")
    table = recorded = CurveTable.load(args.table)
    if args.from_json:
        saved = json.loads(args.results.with_suffix(".json").read_text())
        write(args, table, saved["horizon_s"], saved["speed"], saved["real"], saved["simulated"],
              saved.get("minutes"), saved.get("commit"), saved.get("retime"))  # fmt: skip
        return
    horizon = horizon_of(table, args)
    began = time.time()
    if not args.reuse:
        shutil.rmtree(args.out / "run", ignore_errors=True)
    studies = []
    for i in range(args.searches):
        config = real_config(table, args, i, horizon)
        if args.reuse:
            storage = f"sqlite:///{args.out / 'run' / 'npas.db'}"
            studies.append(optuna.load_study(study_name=config.name, storage=storage))
            continue
        print(f"real search {i + 1}/{args.searches} ({horizon:.0f} s)", file=sys.stderr)
        studies.append(launch(config))
    pairs = epoch_pairs(studies, table)  # each real trial against its nearest row, once
    ratio, fit = speed(pairs), None
    if args.retime:  # this machine's seconds: no longer than the real searches ran
        table, (a, b) = retimed(table, pairs)
        fit = (a, b, start_cost(studies, args.workers))
        table = dataclasses.replace(table, overheads={**table.overheads, "start_s": fit[2]})
        horizon, ratio = min(horizon, horizon_of(table, args)), 1.0
    elif ratio > 1:
        print(f"real epochs are {ratio:.2f}x the table's: the real searches are read up to "
              "their horizon only", file=sys.stderr)  # fmt: skip
    real = [real_figures(study, table, horizon, min(ratio, 1.0)) for study in studies]
    print(f"speed {ratio:.3f}; real: {real}", file=sys.stderr)
    spec = ReplaySpec(args.optimiser, "moasha", args.type, args.workers, fresh=not args.any_row,
                      near=args.near)
    simulated = []
    for seed in range(args.seeds):
        simulated.append(replayed_figures(table, spec, seed, horizon))
        print(f"\rreplays {seed + 1}/{args.seeds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    write(args, recorded, horizon, ratio, real, simulated, (time.time() - began) / 60, None, fit)


def figure_row(key: str, real: list[dict], simulated: list[dict]) -> tuple[str, int]:
    """The table's row of figure ``key``: the replays' 5th, 50th and 95th percentiles beside
    the real searches' figures, how many of those fall inside (5th and 95th included), and the
    replay's bias: the replays' median less the real searches' mean, in the figure's units (a
    positive bias: the replay is optimistic where more is better, as every figure here but the
    first completion's second)."""
    lo, mid, hi = np.percentile(np.array([s[key] for s in simulated], dtype=float), [5, 50, 95])
    reals = [r[key] for r in real]
    inside = int(sum(lo <= x <= hi for x in reals))
    fmt = "{:.4f}" if key == "hv_end" else "{:.0f}"
    bias = mid - float(np.mean(reals))
    line = (f"| {LABELS[key]} | {fmt.format(lo)} / {fmt.format(mid)} / {fmt.format(hi)} | "
            f"{', '.join(fmt.format(x) for x in reals)} | {inside}/{len(reals)} | "
            f"{'+' if bias >= 0 else ''}{fmt.format(bias)} |")  # fmt: skip
    return line, inside


def write(args: argparse.Namespace, table: CurveTable, horizon: float, ratio: float,
          real: list[dict], simulated: list[dict], minutes: float | None,
          commit: str | None = None, retime: tuple[float, ...] | None = None
          ) -> None:  # fmt: skip
    """The table and its figures (``.json``); ``commit``: the one that ran them (None: HEAD's);
    ``retime``: the fit of :func:`retimed` the replays ran on, and the start cost they charged
    (:func:`start_cost`; None: the table's seconds); ``table``: as recorded."""
    commit = commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True,
                                      check=False).stdout.strip()  # fmt: skip
    took = "" if minutes is None else f" in {minutes:.0f} min"
    any_row = " --any-row" if getattr(args, "any_row", False) else ""
    near = " --near" if getattr(args, "near", False) else ""
    flags = any_row + near + (" --retime" if retime is not None else "")
    horizon_words = ("the lab's horizon on the table's clock" if retime is not None
                     else f"{horizon:.0f} s (the lab's horizon)")  # fmt: skip
    clocks = (
        f"Clocks: a real trial's epochs took {ratio:.2f}x its nearest recorded twin's (median "
        f"over the real searches' trials), so the real figures are read on the table's clock: "
        f"up to {min(ratio, 1.0) * horizon:.0f} real s, times divided by {min(ratio, 1.0):.2f}."
    ) if retime is None else (
        f"Clocks: the replays ran on the table retimed to this machine (`retimed`: a row of s "
        f"recorded seconds an epoch takes exp({retime[0]:.3f}) · s^{retime[1]:.3f}, fitted in "
        f"logs to the real searches' epochs against their nearest rows)"
        + ("" if len(retime) < 3 else f", each trial's start charged {retime[2]:.3f} s (what "
           "the real searches' workers spent outside training, per trial: `start_cost`; the "
           f"table's own {table.start_s():.3f} s)")
        + f", and the real figures are read on their own clock, up to {horizon:.0f} s."
    )  # fmt: skip
    lines = [
        "# Does the lab's replay match a real search?",
        "",
        f"Produced by `benchmarks/lab_validation.py --searches {args.searches} --optimiser "
        f"{args.optimiser} --type {args.type} --workers {args.workers} --budget {args.budget} "
        f"--seeds {args.seeds}{flags}` at {commit}{took}, on "
        f"{cpu_model_name()} ({os.cpu_count()} cores), Python {platform.python_version()}, "
        f"Optuna {optuna.__version__}, Ray {ray.__version__}. Each real search: the table's "
        f"recorded space, data and schedule (`{args.table.name}`: {table.describe()}) under "
        f"MOASHA ({args.type}) with {args.optimiser}, {args.workers} workers, for "
        f"{horizon_words} from the start of its first trial (its time limit "
        f"{STARTUP_S:.0f} s longer, for the launch's own start). "
        f"The replays: the same search on the table, {args.seeds} seeds, the same time"
        f"{', each proposal its nearest row however often given' if any_row else ''}"
        f"{', a row not given yet only within the resolution of the table' if near else ''}. "
        + clocks,
        "",
        "| figure | replays: 5th / median / 95th percentile | real searches | inside | "
        "bias (replays' median − real mean) |",
        "|---|---|---|---|---|",
    ]
    verdict = {}
    for key in FIGURES:
        line, verdict[key] = figure_row(key, real, simulated)
        lines.append(line)
    lines += ["", "- " + "; ".join(f"{LABELS[k]}: {v}/{len(real)} inside" for k, v in
                                   verdict.items()) + "."]  # fmt: skip
    args.results.write_text("\n".join(lines) + "\n")
    args.results.with_suffix(".json").write_text(
        json.dumps({"horizon_s": horizon, "speed": ratio, "real": real, "simulated": simulated,
                    "minutes": minutes, "commit": commit, "retime": retime}, indent=1)
    )
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
