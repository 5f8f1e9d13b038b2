"""What a promotion-type scheduler's pause and resume cost a real trial, and what a trial's start
costs on a reused worker: the ``pause_s``, ``resume_s`` and ``start_s`` the scheduler lab
(``search.lab``) charges on its simulated clock.

Runs real Ray Tune trials on this machine: npas's Ray trainable (``search.run._trainable``)
around ``search.trial.run_trial``, wired as ``search.run._tuner`` wires a search
(``tune.with_parameters``, ``tune.with_resources``, ``reuse_actors=True``, one checkpoint
kept), on a ``digits-quick`` trial config (a small ConvNet Shapeshifted into 1,500 parameters,
a few epochs on the embedded digits data, 1 CPU). One trial runs at a time
(``max_concurrent_trials=1``): a tiny scheduler (:class:`PauseOnce`, a ``FIFOScheduler``)
pauses each trial the first time it reports epoch ``--pause-at`` and, as FIFO would, hands the
paused trial back to Ray Tune at once. Every time is taken on the driver (``time.perf_counter``)
when Ray Tune tells it something; a trial's own epoch seconds are its curve points'
``train_time_s`` (cumulative, validation included, carried over a resume), so an epoch's own
seconds are the difference of two points.

- ``pause_s``: from the driver's receipt of the epoch-``k`` result to the moment the scheduler
  sees the trial PAUSED (its ``choose_trial_to_run``, called on every step of Ray Tune's loop):
  Ray Tune asks the worker for the checkpoint (``on_trial_save``), then stops the trial and
  caches its worker. Split into ``save`` and ``stop`` in the table.
- ``resume_s``: from that moment (the scheduler returns the paused trial) to the driver's
  receipt of the epoch ``k + 1`` result, less that epoch's own seconds: the worker is reset
  (the paused trial's thread is ended) and the trial restarts (``on_trial_start`` again), then
  ``run_trial`` resumes from the checkpoint (reads it, rebuilds the model, measures what it
  measures before training). Split into ``reset`` and ``restore`` in the table.
- ``start_s``: from the moment the scheduler first returns a new trial to the driver's receipt
  of its first epoch result, less the first epoch's own seconds (worker reset, data, model,
  Shapeshifting, the indicators measured before training). The time from ``on_trial_start``
  is reported too (it leaves out the worker's reset).

Also recorded, for comparison: ``epoch_overhead_s`` (gap between two consecutive results of
uninterrupted epochs less the later epoch's own seconds: what every epoch costs beyond its
``train_time_s``; near zero, as ``train_time_s`` runs on through the report) and ``end_s``
(last epoch result to the final metrics report: the final measurement).

Trials: a warm-up (worker process start, imports, data; left out), ``--repeats`` measured
trials, and a last one. Each result carries its worker's pid, so a resume is classed by
whether it ran on the worker the trial paused on. Ray Tune keeps (caches) a paused trial's
worker only while its searcher may still suggest trials: once the last trial is suggested
(``num_samples`` reached, as at the end of a search), a paused trial's worker is stopped, and
its resume starts a new worker process. The last trial measures that case (``resume_fresh_s``);
``resume_s`` is taken over the trials resumed on their own worker.

Run (under a minute or two on a laptop; writes ``benchmarks/results/pause_resume.{md,json}``)::

    python benchmarks/pause_resume.py [--repeats 5] [--pause-at 2] [--epochs 6]

``--table CURVES.json.gz [--row N]`` measures where the scheduler lab charges these costs: on
that curve table's own recorded search (its data, recipe and indicators) and the point of its
row ``N`` (default 0), written to ``pause_resume-<table name>.{md,json}``, which
``benchmarks/record_curves.py`` puts into that table's overheads in place of the preset's.

``--point '{"ssn.mapping": "auto", "ssn.stores": 2}'`` changes the trained point (a start then
includes the ``auto`` mapping's pretraining epoch; a resume does not repeat it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PRESET = "digits-quick"
#: The point of the preset's space that is trained: a small ConvNet, one shared store.
POINT: dict[str, Any] = {
    "family": "convnet",
    "convnet.depth": 2,
    "convnet.width": 16,
    "budget": 1500,
    "ssn.mapping": "single",
    "ssn.generator": "wavg",
    "convnet.train.lr": 0.1,
}


@dataclass
class Marks:
    """Driver-side times (``perf_counter`` seconds) of one Ray Tune trial."""

    number: int = -1
    chosen: float | None = None  # the scheduler first returned it (PENDING)
    resumed: float | None = None  # the scheduler returned it PAUSED
    starts: list[float] = field(default_factory=list)  # on_trial_start (a resume starts again)
    saves: list[float] = field(default_factory=list)  # on_trial_save
    #: (time, epoch, cumulative train_time_s, worker pid) of each epoch result.
    results: list[tuple[float, int, float, int]] = field(default_factory=list)
    final: float | None = None  # the final metrics report
    final_pid: int | None = None
    error: str | None = None


def _marks(book: dict[str, Marks], trial_id: str) -> Marks:
    return book.setdefault(trial_id, Marks())


def _make_scheduler(book: dict[str, Marks], pause_at: int) -> Any:
    from ray.tune.schedulers import FIFOScheduler, TrialScheduler

    class PauseOnce(FIFOScheduler):
        """FIFO that pauses each trial once, at its first result of epoch ``pause_at``, and
        then prefers paused trials to pending ones (a promotion, at once)."""

        def __init__(self) -> None:
            super().__init__()
            self.paused: set[str] = set()

        def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
            if result.get("epoch") == pause_at and trial.trial_id not in self.paused:
                self.paused.add(trial.trial_id)
                return TrialScheduler.PAUSE
            return TrialScheduler.CONTINUE

        def choose_trial_to_run(self, tune_controller: Any) -> Any:
            now = time.perf_counter()
            trials = tune_controller.get_trials()
            for status in ("PAUSED", "PENDING"):
                for trial in trials:
                    if trial.status != status:
                        continue
                    marks = _marks(book, trial.trial_id)
                    if status == "PAUSED" and marks.resumed is None:
                        marks.resumed = now
                    elif status == "PENDING" and marks.chosen is None:
                        marks.chosen = now
                    return trial
            return None

    return PauseOnce()


def _make_callback(book: dict[str, Marks]) -> Any:
    from ray import tune

    from search.record._schema import RayKey

    class Clock(tune.Callback):
        """Records when the driver hears of each trial's start, save and results."""

        def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _marks(book, trial.trial_id).starts.append(time.perf_counter())

        def on_trial_save(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _marks(book, trial.trial_id).saves.append(time.perf_counter())

        def on_trial_result(
            self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
        ) -> None:
            now = time.perf_counter()
            marks = _marks(book, trial.trial_id)
            marks.number = int(trial.config["number"])
            if RayKey.CURVE in result:
                point = json.loads(result[RayKey.CURVE])
                marks.results.append(
                    (now, int(point["epoch"]), float(point["train_time_s"]), int(result["pid"]))
                )
            elif RayKey.METRICS in result or RayKey.ERROR in result:
                marks.final, marks.final_pid = now, int(result["pid"])
                marks.error = result.get(RayKey.ERROR)

    return Clock()


def _make_searcher(configs: Sequence[dict[str, Any]]) -> Any:
    from ray.tune.search import Searcher

    class Points(Searcher):
        """Hands out the given trial configs in order, then finishes."""

        def __init__(self) -> None:
            super().__init__()
            self.left = list(configs)

        def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
            return self.left.pop(0) if self.left else Searcher.FINISHED

        def on_trial_complete(
            self, trial_id: str, result: dict | None = None, error: bool = False
        ) -> None:
            pass

    return Points()


def search_config(table: Path | None) -> Any:
    """The search whose trials are measured: the preset's, or a curve table's recorded one."""
    from search.config import load_config
    from search.config._load import load_preset
    from search.lab import CurveTable

    if table is None:
        return load_preset(PRESET)
    data = {k: v for k, v in CurveTable.load(table).config.items() if k not in ("storage", "out")}
    return load_config(data)


def trial_configs(
    n: int, epochs: int, folder: Path, point: dict[str, Any], config: Any
) -> list[dict[str, Any]]:
    """``n`` Ray configs of a point of ``config``'s space (``epochs`` epochs, each trial its
    artifact folder)."""
    configs = []
    for number in range(n):
        cfg = config.trial_config(point, artifact_dir=str(folder / "trials" / str(number)))
        cfg = cfg.replace(train={**cfg.train, "epochs": epochs})
        configs.append({"trial_config": cfg, "number": number})
    return configs


def run(
    configs: Sequence[dict[str, Any]], config: Any, pause_at: int, folder: Path
) -> dict[str, Marks]:
    """Runs the trials one at a time on a fresh local Ray; their marks by trial id."""
    import ray
    from ray import tune

    from search.run._ray_session import stop_ray
    from search.run._trainable import trainable
    from search.trial import run_trial

    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    book: dict[str, Marks] = {}
    resourced = tune.with_resources(
        tune.with_parameters(trainable, trial_fn=run_trial, objectives=config.objective_names),
        config.resources.ray(),
    )
    # address="local": a fresh Ray of its own, never one another job on this machine runs.
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")  # fmt: skip
    try:
        tuner = tune.Tuner(
            resourced,
            tune_config=tune.TuneConfig(
                search_alg=_make_searcher(configs),
                scheduler=_make_scheduler(book, pause_at),
                num_samples=len(configs),
                max_concurrent_trials=1,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                storage_path=str(folder / "ray"),
                name="pause_resume",
                verbose=0,
                callbacks=[_make_callback(book)],
                checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
            ),
        )
        tuner.fit()
    finally:
        stop_ray()
    return book


@dataclass
class Sample:
    """One trial's measured seconds (driver times, epoch seconds taken off)."""

    start_s: float
    start_from_callback_s: float
    pause_s: float
    pause_save_s: float
    pause_stop_s: float
    resume_s: float
    resume_reset_s: float
    resume_restore_s: float
    pause_resume_s: float
    epoch_overhead_s: list[float]
    end_s: float
    pids: list[int]  # the worker of each epoch result, then of the final report
    fresh: bool  # resumed on another worker than the one it paused on


def measure(marks: Marks, pause_at: int) -> Sample:
    """The seconds of one trial (raises ValueError when a mark is missing)."""
    if marks.error:
        raise ValueError(f"trial {marks.number} failed: {marks.error}")
    if marks.chosen is None or marks.resumed is None or marks.final is None:
        raise ValueError(f"trial {marks.number}: missing marks {marks}")
    results = sorted(marks.results, key=lambda r: r[0])
    epochs = [r[1] for r in results]
    if epochs != list(range(1, len(epochs) + 1)) or len(epochs) <= pause_at:
        raise ValueError(f"trial {marks.number}: epochs reported {epochs}")
    first, at_k, after = results[0], results[pause_at - 1], results[pause_at]
    own = after[2] - at_k[2]  # epoch k + 1's own seconds
    saves = [t for t in marks.saves if at_k[0] <= t <= marks.resumed]
    starts = [t for t in marks.starts if marks.resumed <= t <= after[0]]
    if not saves or not starts or len(marks.starts) < 2:
        raise ValueError(f"trial {marks.number}: no save or restart around the pause {marks}")
    gaps = [
        b[0] - a[0] - (b[2] - a[2]) for a, b in itertools.pairwise(results) if a[1] != pause_at
    ]
    return Sample(
        start_s=first[0] - marks.chosen - first[2],
        start_from_callback_s=first[0] - marks.starts[0] - first[2],
        pause_s=marks.resumed - at_k[0],
        pause_save_s=saves[-1] - at_k[0],
        pause_stop_s=marks.resumed - saves[-1],
        resume_s=after[0] - marks.resumed - own,
        resume_reset_s=starts[0] - marks.resumed,
        resume_restore_s=after[0] - starts[0] - own,
        pause_resume_s=after[0] - at_k[0] - own,
        epoch_overhead_s=gaps,
        end_s=marks.final - results[-1][0],
        pids=[r[3] for r in results] + [marks.final_pid or -1],
        fresh=after[3] != at_k[3],
    )


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max (and the values) of some seconds; None for none."""
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None, "values": []}
    return {"n": len(values), "median": statistics.median(values), "min": min(values),
            "max": max(values), "values": [round(v, 4) for v in values]}  # fmt: skip


def conditions(
    args: argparse.Namespace,
    load: tuple[tuple[float, ...], tuple[float, ...]],
    trial_cfg: Any,
    point: dict[str, Any],
    seconds: float,
) -> dict[str, Any]:
    """How the numbers were taken."""
    import ray
    import torch

    from objectives._conditions import cpu_model_name

    return {
        "cpu": cpu_model_name(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "ray": ray.__version__,
        "python": platform.python_version(),
        "config": f"{_measured(args)}, point {json.dumps(point)}, {args.epochs} epochs, "
        f"batch {trial_cfg.train['batch_size']}, 1 CPU per trial, one trial at a time, "
        f"paused once after epoch {args.pause_at}, reuse_actors=True, "
        "CheckpointConfig(num_to_keep=1), local Ray num_cpus=2",
        "indicators": list(trial_cfg.indicators),
        "loadavg_start": [round(x, 2) for x in load[0]],
        "loadavg_end": [round(x, 2) for x in load[1]],
        "wall_s": round(seconds, 1),
        "run_by": f"python benchmarks/pause_resume.py --repeats {args.repeats} "
        f"--pause-at {args.pause_at} --epochs {args.epochs}"
        + (f" --point '{args.point}'" if args.point else "")
        + (f" --table {args.table} --row {args.row}" if args.table else ""),
    }


def _measured(args: argparse.Namespace) -> str:
    """What was measured, in words."""
    if args.table is None:
        return f"preset {PRESET}"
    return f"the recorded search of curve table {args.table.name}, its row {args.row}"


#: (key, Sample attribute, trials it is taken over, label). Trials: every measured one
#: ("all"), those resumed on the worker they paused on ("reused"), those resumed on another
#: ("fresh": Ray Tune keeps no worker for a paused trial once the searcher is finished).
ROWS: list[tuple[str, str, str, str]] = [
    ("start_s", "start_s", "all",
     "start (scheduler picks a new trial → its first result, less epoch 1)"),
    ("start_from_callback_s", "start_from_callback_s", "all",
     "  of which after `on_trial_start` (the worker's reset left out)"),
    ("pause_s", "pause_s", "all", "pause (epoch-k result → trial PAUSED)"),
    ("pause_save_s", "pause_save_s", "all", "  save (epoch-k result → `on_trial_save`)"),
    ("pause_stop_s", "pause_stop_s", "all",
     "  stop (`on_trial_save` → PAUSED seen by the scheduler)"),
    ("resume_s", "resume_s", "reused",
     "resume, same worker (scheduler picks the paused trial → epoch k+1 result, less it)"),
    ("resume_reset_s", "resume_reset_s", "reused",
     "  reset (→ `on_trial_start`: the paused thread ended, the worker reset)"),
    ("resume_restore_s", "resume_restore_s", "reused",
     "  restore (`on_trial_start` → epoch k+1 result, less the epoch)"),
    ("pause_resume_s", "pause_resume_s", "reused",
     "pause + resume, same worker (epoch-k result → epoch k+1 result, less the epoch)"),
    ("resume_fresh_s", "resume_s", "fresh",
     "resume on a new worker (the last trial: no worker kept for it)"),
    ("resume_fresh_reset_s", "resume_reset_s", "fresh",
     "  new worker (→ `on_trial_start`: process start)"),
    ("resume_fresh_restore_s", "resume_restore_s", "fresh",
     "  restore (`on_trial_start` → epoch k+1 result, less the epoch)"),
    ("epoch_overhead_s", "epoch_overhead_s", "all",
     "per-epoch overhead (uninterrupted epochs: gap less `train_time_s`)"),
    ("end_s", "end_s", "all", "end (last epoch result → final metrics report)"),
]  # fmt: skip


#: The costs a curve table's overheads take from this measurement.
OVERHEADS = ("start_s", "pause_s", "resume_s", "resume_fresh_s")


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def markdown(summary: dict[str, Any]) -> str:
    """The results as a small Markdown page."""
    lines = [
        "# Pause, resume and start costs of a real npas trial on Ray Tune",
        "",
        "`python benchmarks/pause_resume.py`: what the scheduler lab (`search.lab`) charges a "
        "trial's start (`start_s`), a pause (`pause_s`) and a resume (`resume_s`). Driver-side "
        "times of real Ray Tune trials (npas's trainable around `run_trial`), one at a time, "
        "each paused once after an epoch k and resumed at once; a trial's own epoch seconds "
        "(`train_time_s`) are taken off. The warm-up trial is left out; see the module "
        "docstring for each definition.",
        "",
        f"Trials: 1 warm-up, {summary['repeats']} measured, 1 last (the searcher finished: "
        "Ray Tune caches no worker for it when it pauses). Worker of each trial's results "
        f"(trial: pids): {summary['workers']}.",
        "",
        "| seconds | n | median | min | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, _, _, label in ROWS:
        s = summary["spread"][key]
        lines.append(
            f"| {label} | {s['n']} | {_cell(s['median'])} | {_cell(s['min'])} "
            f"| {_cell(s['max'])} |"
        )
    lines += [
        "",
        "For the lab's curve table (`CurveTable.overheads`), medians: "
        + ", ".join(f"`{k}` = {_cell(summary.get(k))}" for k in OVERHEADS)
        + ".",
        "",
        "## Conditions",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in summary["conditions"].items()]
    return "\n".join(lines) + "\n"


def summarise(samples: Sequence[Sample]) -> dict[str, dict[str, Any]]:
    """Each row's spread over the trials it is taken over."""
    chosen = {
        "all": list(samples),
        "reused": [s for s in samples if not s.fresh],
        "fresh": [s for s in samples if s.fresh],
    }
    out = {}
    for key, attr, subset, _ in ROWS:
        values = [getattr(s, attr) for s in chosen[subset]]
        if values and isinstance(values[0], list):
            values = [v for vs in values for v in vs]
        out[key] = spread(values)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5,
                        help="measured trials, between the warm-up and the last")  # fmt: skip
    parser.add_argument("--pause-at", type=int, default=2, help="epoch after which to pause")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument(
        "--point", default="", help="JSON: changes to the trained point of the preset's space"
    )
    parser.add_argument("--table", type=Path, help="a curve table: measure its own search")
    parser.add_argument("--row", type=int, default=0, help="the table's row whose point runs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    config = search_config(args.table)
    base = POINT if args.table is None else _row_point(args.table, args.row)
    point = {**base, **(json.loads(args.point) if args.point else {})}
    if not 1 <= args.pause_at < args.epochs:
        parser.error("--pause-at must be at least 1 and less than --epochs")
    began = time.perf_counter()
    load_start = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="npas-pause-resume-"))
    try:
        configs = trial_configs(args.repeats + 2, args.epochs, folder, point, config)
        book = run(configs, config, args.pause_at, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    load_end = os.getloadavg()
    measured = {m.number: measure(m, args.pause_at) for m in book.values()}
    if sorted(measured) != list(range(len(configs))):
        raise RuntimeError(f"trials measured: {sorted(measured)} of {len(configs)}")
    samples = [measured[n] for n in range(1, len(configs))]  # 0: the warm-up
    spreads = summarise(samples)
    summary: dict[str, Any] = {
        "start_s": spreads["start_s"]["median"],
        "pause_s": spreads["pause_s"]["median"],
        "resume_s": spreads["resume_s"]["median"],
        "resume_fresh_s": spreads["resume_fresh_s"]["median"],
        "repeats": args.repeats,
        "spread": spreads,
        "workers": {n: sorted(set(measured[n].pids)) for n in sorted(measured)},
        "conditions": conditions(
            args,
            (load_start, load_end),
            configs[0]["trial_config"],
            point,
            time.perf_counter() - began,
        ),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "pause_resume" if args.table is None else f"pause_resume-{_name(args.table)}"
    (args.out / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(summary))
    print(markdown(summary))


def _row_point(table: Path, row: int) -> dict[str, Any]:
    from search.lab import CurveTable

    rows = CurveTable.load(table).rows
    if not 0 <= row < len(rows):
        raise SystemExit(f"--row {row}: the table has rows 0..{len(rows) - 1}")
    return dict(rows[row].point)


def _name(table: Path) -> str:
    """A curve table's name from its file (``mnist-r27.json.gz`` → ``mnist-r27``)."""
    return table.name.split(".")[0]


if __name__ == "__main__":
    main()
