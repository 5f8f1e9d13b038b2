"""Record a scheduler lab curve table: every configuration trained to the full schedule.

The table is an npas study (issue 37): a FIFO search of random proposals (Optuna's
``RandomSampler``: space-filling enough for a 1-NN surrogate, and the one sampler every
conditional dimension of the space supports), each trial trained for ``--epochs`` epochs with
every epoch's validation accuracy, loss and seconds in its curve. A second study (``-noise``)
trains the first ``--noise`` configurations again under another seed (another validation split
and initialisation), so the lab knows how far a curve moves between two runs of one
configuration.

Two datasets (``--dataset``):

- ``mnist``: multifidelity.py's real MNIST space (hand-written), a cosine schedule, batch 64,
  ``--train-size`` and ``--val-size`` images of the official training set;
- ``waves``: a generated signal set (``generated_signals.waves``: six classes, two channels
  of 128 steps, noise 1.8; ``--train-size`` + ``--val-size`` series from seed 1, 1,000 test
  series from seed 2) and the space and recipe the unaided search derives for it under
  ``params <= --params-limit`` (``search.derive``: what ``search launch`` searches on a
  data-only config of that data), with its start points, finalists and cross-validation off.

Resumable: run it again and each study resumes where it stopped (a study is its own record);
the storage is committed gzipped (``<out>/<name>.db.gz``) and unpacked into ``<out>/run/<name>``
by a fresh checkout, so a record can go on in another session. When both studies are complete,
the table is written as ``<out>/<name>.json.gz`` (:mod:`search.lab`'s format) with the
conditions (the load average at the start and the end among them: epoch seconds are only
comparable between schedulers if nothing else ran); ``--export-only`` writes the table of
what the storage holds now (its conditions say how much).

Run: ``NPAS_DATA=../shared/data python benchmarks/record_curves.py [--dataset mnist]
[--trials 470] [--noise 50] [--epochs 27] [--train-size 1000] [--val-size 1000]
[--params-limit 5000] [--out DIR] [--export-only] [--contended-until UTC]`` (default
``benchmarks/results/curves``; ``--contended-until``: rows started before that time ran beside
other work, their epoch seconds rescaled by :func:`decontended`)
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.generated_signals import waves
from benchmarks.multifidelity import OBJECTIVES, SPACE
from objectives._conditions import cpu_model_name
from search.config import load_config
from search.derive import derive
from search.lab import CurveTable
from search.run import launch

OUT = Path(__file__).parent / "results" / "curves"
#: The generated signal set's length, noise and test series.
WAVES_LENGTH, WAVES_NOISE, WAVES_TEST = 128, 1.8, 1000
#: Each dataset's data, as the table's conditions state it.
DATA = {
    "mnist": "MNIST: {val} validation images and, of the rest, {train} training images, both "
    "stratified from the official training set (the test set is only read by each trial's "
    "final measurement)",
    "waves": f"generated_signals.waves (six classes, 2 channels of {WAVES_LENGTH} steps, noise "
    f"{WAVES_NOISE}): {{train}} training and {{val}} validation series from seed 1, "
    f"{WAVES_TEST:,} test series from seed 2 (only read by each trial's final measurement)",
}


def record_config(args: argparse.Namespace, *, noise: bool, start: list[dict] | None) -> Any:
    """The config of the main record (seed 0) or of its noise twin (seed 1, fixed points)."""
    name = f"{args.name}-noise" if noise else args.name
    common: dict[str, Any] = {
        "name": name,
        "objectives": OBJECTIVES,
        "constraints": [f"params <= {args.params_limit}"],
        "indicators": ["params", "flops_infer"],
        "algorithm": {"name": "random"},
        "scheduler": {"name": "fifo"},
        "trials": args.noise if noise else args.trials,
        "resources": {"cpu": 1},
        "out": str(args.out / "run" / args.name),
        "seed": 1 if noise else 0,
        "start": start or [],
    }
    if args.dataset == "mnist":
        train = {"epochs": args.epochs, "batch_size": 64, "schedule": "cosine"}
        return load_config({**common, "dataset": "mnist", "train_size": args.train_size,
                            "val_size": args.val_size, "space": SPACE, "train": train,
                            "fixed": {"convnet.growth": 1.5, "ssn.templates": 4}})  # fmt: skip
    dataset = {"name": "waves", "npz": str(waves_npz(args)), "layout": "signal"}
    derived = derive({**common, "dataset": dataset, "val_size": args.val_size, "folds": 1,
                      "finalists": False, "train": {"epochs": args.epochs}})  # fmt: skip
    return load_config(derived.config)


def waves_npz(args: argparse.Namespace) -> Path:
    """The generated signal set, written once beside the record (the same from its seeds)."""
    path = args.out / "run" / args.name / "waves.npz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        (x_train, y_train), (x_test, y_test) = (
            waves(args.train_size + args.val_size, 1, WAVES_LENGTH, bands=2, noise=WAVES_NOISE),
            waves(WAVES_TEST, 2, WAVES_LENGTH, bands=2, noise=WAVES_NOISE),
        )
        np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mnist", "waves"), default="mnist")
    parser.add_argument("--name", help="the table's name (default: <dataset>-r<epochs>)")
    parser.add_argument("--trials", type=int, default=470)
    parser.add_argument("--noise", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=27)
    parser.add_argument("--train-size", type=int, default=1000)
    parser.add_argument("--val-size", type=int, default=1000)
    parser.add_argument("--params-limit", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--export-only", action="store_true",
                        help="train nothing: write the table of what the storage holds now")
    parser.add_argument("--contended-until", type=datetime.fromisoformat, metavar="UTC",
                        help="trials started before this time (UTC, ISO) ran beside other work: "
                        "their epoch seconds are rescaled by the rule of decontended()")
    args = parser.parse_args()
    args.name = args.name or f"{args.dataset}-r{args.epochs}"
    began, load = time.time(), os.getloadavg()
    db = args.out / "run" / args.name / "npas.db"
    archive = args.out / f"{args.name}.db.gz"
    if not db.exists() and archive.exists():  # a fresh checkout resumes the committed record
        db.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(archive, "rb") as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
    main_config = record_config(args, noise=False, start=None)
    if args.export_only:
        storage = f"sqlite:///{db}"
        main_study = optuna.load_study(study_name=args.name, storage=storage)
        noise_study = _maybe(f"{args.name}-noise", storage)
    else:
        main_study = launch(main_config)
        points = [dict(t.params) for t in main_study.trials[: args.noise]]
        noise_study = launch(record_config(args, noise=True, start=points))
    table = CurveTable.from_study(main_study, noise=noise_study)
    if args.contended_until is not None:
        starts = {t.number: t.datetime_start for t in main_study.trials}
        contended = {n for n, at in starts.items() if at is not None and at < args.contended_until}
        table, factor = decontended(table, contended)
        table.conditions["contention"] = (
            f"the {sum(r.number in contended for r in table.rows)} rows started before "
            f"{args.contended_until:%Y-%m-%d %H:%M:%S} UTC ran beside other work; their epoch "
            f"seconds were divided by {factor:.3f}, the median ratio of their seconds to what "
            "the later rows' fit (log seconds on family, depth and log params) gives them")
    table.overheads.update(ray_overheads(table, args.out / "run" / args.name / "ray" / args.name))
    table.overheads.update(pause_resume(args.name))
    table.conditions.update(conditions(args, main_study, noise_study, began, load))
    table.conditions["noise"] = noise(table)
    path = table.save(args.out / f"{args.name}.json.gz")
    _archive(db, archive)
    print(f"wrote {path} and {archive}: {table.describe()}")


def conditions(
    args: argparse.Namespace, main_study: Any, noise_study: Any, began: float,
    load: tuple[float, float, float],
) -> dict[str, Any]:  # fmt: skip
    """How the table was recorded, and how much of the asked record it holds."""
    states = [t.state.name for t in main_study.trials]
    noise = 0 if noise_study is None else len(noise_study.trials)
    return {
        "recorded_by": "benchmarks/record_curves.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
            if k not in ("out", "export_only") and v is not None
        ),
        "trials": f"{len(states)} of {args.trials} asked ({states.count('COMPLETE')} complete,"
        f" {states.count('PRUNED')} refused before training), noise twins {noise} of "
        f"{args.noise}",
        "cpu": f"{cpu_model_name()} ({os.cpu_count()} cores), 1 CPU per trial, 2 trials at "
        "once; load average (1, 5, 15 min) at this launch's start "
        f"{', '.join(f'{x:.2f}' for x in load)}, at its end "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "versions": f"torch {torch.__version__}, optuna {optuna.__version__}, "
        f"Python {platform.python_version()}",
        "data": DATA[args.dataset].format(train=args.train_size, val=args.val_size),
        "exported_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
    }


def decontended(table: CurveTable, contended: set[int]) -> tuple[CurveTable, float]:
    """The table with the epoch seconds of the rows numbered in ``contended`` (recorded beside
    other work) divided by the contention factor, and the factor: least squares of log(median
    epoch seconds) on family, depth and log(params) over the other rows, and the factor the
    median ratio of the contended rows' seconds to the fit's (the rule of
    ``results/curves/README.md``, written before the rows it cleaned were looked at)."""
    def features(row: Any) -> tuple[Any, Any, float]:
        depth = next((v for k, v in sorted(row.point.items()) if k.endswith("depth")), 0)
        return row.point.get("family"), depth, math.log(row.metrics.get("params") or 1)

    clean = [r for r in table.rows if r.number not in contended]
    dirty = [r for r in table.rows if r.number in contended]
    families = sorted({features(r)[0] for r in table.rows}, key=str)
    depths = sorted({features(r)[1] for r in table.rows}, key=str)

    def design(rows: list[Any]) -> np.ndarray:
        return np.array([[1.0, lp, *(f == g for g in families[1:]), *(d == e for e in depths[1:])]
                         for f, d, lp in map(features, rows)], dtype=float)  # fmt: skip

    def log_seconds(rows: list[Any]) -> np.ndarray:
        return np.log([statistics.median(r.seconds) for r in rows])

    if not dirty or not clean:
        return table, 1.0
    coef, *_ = np.linalg.lstsq(design(clean), log_seconds(clean), rcond=None)
    factor = float(np.exp(np.median(log_seconds(dirty) - design(dirty) @ coef)))
    rows = [replace(r, seconds=[s / factor for s in r.seconds]) if r.number in contended else r
            for r in table.rows]  # fmt: skip
    return replace(table, rows=rows), factor


def noise(table: CurveTable) -> str:
    """How far one configuration's accuracy moves between its two seeds: the median and 90th
    percentile of |difference| at epochs 1, 3, 9 and R, over the twins both seeds trained."""
    twins = {json.dumps(row.point, sort_keys=True): row for row in table.rows}
    pairs = [(twins[key], row) for row in table.noise
             if (key := json.dumps(row.point, sort_keys=True)) in twins]  # fmt: skip
    if not pairs:
        return "no twins"
    parts = []
    for epoch in sorted(e for e in {1, 3, 9, table.epochs} if e <= table.epochs):
        gaps = sorted(abs(a.values[epoch - 1][0] - b.values[epoch - 1][0]) for a, b in pairs)
        parts.append(f"epoch {epoch}: {statistics.median(gaps):.4f} / "
                     f"{gaps[int(0.9 * (len(gaps) - 1))]:.4f}")  # fmt: skip
    return (f"|accuracy difference| between two seeds of {len(pairs)} configurations, median / "
            "90th percentile: " + "; ".join(parts))


def ray_overheads(table: CurveTable, folder: Path) -> dict[str, float]:
    """``start_s`` and ``end_s`` from Ray Tune's own results of the recorded trials: the last
    report of a trial (its metrics, after the last epoch) took ``time_this_iter_s`` to measure
    the model; the rest of its time outside its epochs was its start. Medians over the trials
    whose Ray folder is still there (none: nothing, and the replay charges every overhead at
    the start)."""
    rows = {row.number: row for row in table.rows}
    starts, ends = [], []
    for path in folder.glob("trainable_*/result.json"):
        found = re.search(r"_number=(\d+),", path.parent.name)
        row = rows.get(int(found.group(1))) if found else None
        results = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if row is None or not results or "npas_metrics" not in results[-1]:
            continue
        end = float(results[-1]["time_this_iter_s"])
        ends.append(end)
        starts.append(max(0.0, row.overhead_s - end))
    if not ends:
        return {}
    return {"start_s": statistics.median(starts), "end_s": statistics.median(ends)}


def pause_resume(name: str) -> dict[str, float]:
    """A pause's and a resume's seconds as ``benchmarks/pause_resume.py`` measured them with
    real Ray Tune trials on this machine: on this table's own search when measured there
    (``--table``), else on its preset (nothing when neither was measured). A resume on a
    kept worker: a replay runs to a horizon inside a search, whose searcher is never finished
    (only then does Ray Tune keep no worker for a paused trial)."""
    results = Path(__file__).parent / "results"
    path = results / f"pause_resume-{name}.json"
    if not path.exists():
        path = results / "pause_resume.json"
    if not path.exists():
        return {}
    measured = json.loads(path.read_text())
    return {key: float(measured[key]) for key in ("pause_s", "resume_s")}


def _maybe(name: str, storage: str) -> optuna.Study | None:
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None


def _archive(db: Path, archive: Path) -> None:
    """The storage, gzipped beside the table: a fresh checkout resumes from it, and
    optuna-dashboard reads it once unpacked. Written whole or not at all."""
    tmp = archive.with_name(archive.name + ".tmp")
    # a consistent copy, even while a launch writes
    with sqlite3.connect(db) as conn, sqlite3.connect(tmp.with_suffix(".db")) as copy:
        conn.backup(copy)
    with open(tmp.with_suffix(".db"), "rb") as src, gzip.open(tmp, "wb", 9) as dst:
        shutil.copyfileobj(src, dst)
    tmp.with_suffix(".db").unlink()
    tmp.replace(archive)


if __name__ == "__main__":
    main()
