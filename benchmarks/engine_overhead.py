"""Engine overhead: time per trivial trial through ``launch`` vs plain Ray Tune vs plain Optuna.

Claim checked (issue 4): a search through npas's ``launch`` costs at most 1.2x the time per
trial of plain Ray Tune with ``OptunaSearch`` on the same trivial trial, in one run.

The ways run the same trial function (it returns the objectives at once, so only the
engine is timed) on the ``digits-quick`` space, with the same sampler (Optuna NSGA-II,
population 8), 1 CPU per trial and 2 at a time:

- ``launch``: npas, with everything it records (SQLite storage, user attrs, constraints,
  artifact folders, the progress view silenced).
- plain Ray Tune: ``tune.Tuner`` + ``OptunaSearch`` (in-memory Optuna storage, Ray's defaults
  otherwise, ``reuse_actors=True`` and ``max_concurrent_trials=2`` as ``launch`` sets them);
  and the same with the study in a SQLite file opened as ``launch`` opens it, which separates
  what Optuna's storage costs from what npas adds.
- plain Optuna: ``study.optimize`` in this process (no Ray, no parallelism): the floor.

Each way first runs once untimed (imports, Ray workers), then each repeat runs them in turn
(the order rotates) with a fresh Tuner, on one local Ray started once; time per trial = wall
time of the whole run / trials (the run's start-up included).

Run: ``python benchmarks/engine_overhead.py [--trials 100] [--repeats 5]`` →
``benchmarks/results/engine_overhead.md``.
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

import optuna
import ray
import torch
from ray import tune
from ray.tune.search.optuna import OptunaSearch

from objectives._conditions import cpu_model_name
from search.config import TrialConfig, load_config, load_preset
from search.record._storage import open_storage
from search.run._launch import launch

OBJECTIVES = [["accuracy", "maximize"], ["params", "minimize"]]
POPULATION = 8
RESULTS = Path(__file__).parent / "results" / "engine_overhead.md"


def trivial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """The trial: objectives straight from the config (no training)."""
    return {"accuracy": cfg.train["lr"], "params": float(cfg.budget), "feasible": 1.0}


def config(out: Path, name: str, trials: int) -> Any:
    data = load_preset("digits-quick").to_dict()
    data.update(
        name=name,
        out=str(out),
        trials=trials,
        objectives=OBJECTIVES,
        algorithm={"name": "nsga2", "options": {"population_size": POPULATION}},
    )
    return load_config(data)


def run_launch(out: Path, name: str, trials: int) -> float:
    cfg = config(out, name, trials)
    start = time.perf_counter()
    study = launch(cfg, trial_fn=trivial, progress=False)
    elapsed = time.perf_counter() - start
    assert len(study.trials) == trials
    return elapsed


class _Space:
    """Define-by-run space (a class, not a closure: OptunaSearch pickles itself with pickle)."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def __call__(self, trial: optuna.Trial) -> dict[str, Any]:
        return {"trial_config": self.cfg.trial_config(self.cfg.space.suggest(trial))}


def run_ray_tune(out: Path, name: str, trials: int, *, sqlite: bool = False) -> float:
    cfg = config(out, name, trials)
    out.mkdir(parents=True, exist_ok=True)
    storage = open_storage(f"sqlite:///{out / 'plain.db'}") if sqlite else None

    def trainable(ray_config: dict[str, Any]) -> None:
        tune.report(trivial(ray_config["trial_config"]))

    start = time.perf_counter()
    searcher = OptunaSearch(
        space=_Space(cfg),
        metric=[n for n, _ in OBJECTIVES],
        mode=["max" if d == "maximize" else "min" for _, d in OBJECTIVES],
        sampler=optuna.samplers.NSGAIISampler(population_size=POPULATION, seed=0),
        storage=storage,
        study_name=name,
    )
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        tune_config=tune.TuneConfig(
            search_alg=searcher, num_samples=trials, max_concurrent_trials=2, reuse_actors=True
        ),
        run_config=tune.RunConfig(storage_path=str(out / "ray"), name=name, verbose=0),
    )
    results = tuner.fit()
    elapsed = time.perf_counter() - start
    assert len(results) == trials
    return elapsed


def run_optuna(out: Path, name: str, trials: int) -> float:
    cfg = config(out, name, trials)

    def objective(trial: optuna.Trial) -> list[float]:
        metrics = trivial(cfg.trial_config(cfg.space.suggest(trial)))
        return [metrics[n] for n, _ in OBJECTIVES]

    start = time.perf_counter()
    study = optuna.create_study(
        directions=[d for _, d in OBJECTIVES],
        sampler=optuna.samplers.NSGAIISampler(population_size=POPULATION, seed=0),
    )
    study.optimize(objective, n_trials=trials)
    return time.perf_counter() - start


def run_ray_tune_sqlite(out: Path, name: str, trials: int) -> float:
    return run_ray_tune(out, name, trials, sqlite=True)


WAYS = {
    "npas launch": run_launch,
    "plain Ray Tune + OptunaSearch": run_ray_tune,
    "plain Ray Tune + OptunaSearch, same SQLite storage": run_ray_tune_sqlite,
    "plain Optuna study.optimize": run_optuna,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    times: dict[str, list[float]] = {w: [] for w in WAYS}
    names = list(WAYS)
    with tempfile.TemporaryDirectory() as tmp:
        for way, run in WAYS.items():  # warm-up: first imports, Ray's worker processes
            run(Path(tmp) / f"warm-{len(way)}", f"warm{len(way)}", 10)
        for r in range(args.repeats):
            for k in range(len(names)):
                way = names[(r + k) % len(names)]
                elapsed = WAYS[way](Path(tmp) / f"{r}-{k}", f"r{r}k{k}", args.trials)
                times[way].append(elapsed / args.trials)
                print(f"repeat {r}: {way}: {elapsed / args.trials * 1000:.0f} ms/trial",
                      file=sys.stderr, flush=True)  # fmt: skip
    ray.shutdown()
    write(times, args)


#: The target: npas's launch within this many times plain Ray Tune's time per trial.
TARGET = 1.2


def ratios(times: dict[str, list[float]]) -> tuple[float, float, bool]:
    """npas's launch over plain Ray Tune (in-memory Optuna) and over plain Ray Tune on the same
    SQLite storage, each a ratio of mean times per trial, and whether the first meets
    :data:`TARGET`."""
    launch = statistics.mean(times["npas launch"])
    ratio = launch / statistics.mean(times["plain Ray Tune + OptunaSearch"])
    sqlite = statistics.mean(times["plain Ray Tune + OptunaSearch, same SQLite storage"])
    return ratio, launch / sqlite, ratio <= TARGET


def write(times: dict[str, list[float]], args: argparse.Namespace) -> None:
    base = statistics.mean(times["plain Ray Tune + OptunaSearch"])
    rows = []
    for way, values in times.items():
        mean = statistics.mean(values) * 1000
        std = statistics.stdev(values) * 1000 if len(values) > 1 else 0.0
        median = statistics.median(values) * 1000
        runs = ", ".join(f"{v * 1000:.0f}" for v in values)
        rows.append(f"| {way} | {mean:.0f} ± {std:.0f} | {median:.0f} "
                    f"| {statistics.mean(values) / base:.2f}x | {runs} |")  # fmt: skip
    ratio, ratio_sqlite, met = ratios(times)
    verdict = "met" if met else "NOT met"
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        f"""# Engine overhead: time per trivial trial

Produced by `benchmarks/engine_overhead.py --trials {args.trials} --repeats {args.repeats}`.
CPU: {cpu_model_name()} ({platform.machine()}), {os.cpu_count()} cores; Python
{platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} thread), Ray
{ray.__version__}, Optuna {optuna.__version__}. One local Ray (`num_cpus=2`) for the whole run;
each trial asks 1 CPU, 2 run at a time; sampler Optuna NSGA-II (population {POPULATION}) on the
`digits-quick` space; the trial returns its objectives at once. Time per trial = wall time of a
whole run (Tuner start-up included) / {args.trials} trials; mean ± std and median over
{args.repeats} repeats after one untimed warm-up run of each way, the order of the four ways
rotating between repeats. Two cores shared by Ray's processes: single runs vary by ±20 %.

| way | ms per trial | median | vs plain Ray Tune (means) | runs (ms per trial) |
|---|---|---|---|---|
{chr(10).join(rows)}

Target: `launch` ≤ {TARGET}x plain Ray Tune (in-memory Optuna) — **{verdict}** ({ratio:.2f}x);
against plain Ray Tune on the same SQLite storage: {ratio_sqlite:.2f}x. What `launch` does on
top of plain Ray Tune: it opens (creates) the SQLite storage and checks the study against its
config; its optimiser runs on an in-memory copy of the study, as plain Ray Tune's does; each
trial is written to the storage in one transaction when it starts (parameters, trial config,
state RUNNING) and one when it ends (values, metrics, artifact, feasibility, constraints,
state), with SQLAlchemy Core on Optuna's tables (`search.record._writer`, about 1 ms per trial on
this machine when idle); the progress view is counted but silenced. The plain run on the
SQLite storage shows what Optuna's own RDB storage costs instead (its reads and
statement-per-attribute writes in Ray Tune's driver loop). Start-up is included, so the ratio
shrinks as trials get longer: a real trial takes seconds to minutes.
""",
        encoding="utf-8",
    )
    print(RESULTS.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
