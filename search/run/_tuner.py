"""One launch's Ray Tune run: the trainable with each trial's CPU/GPU share, the searcher, the
scheduler (told what a resumed search saw), the progress view, checkpoints and time limits."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from ray.tune.stopper import CombinedStopper, Stopper

from search._compat import no_callback_census
from search.errors import StorageLost
from search.record import StudyWriter, read_trial, rung_history
from search.run._checkpoints import CheckpointJanitor
from search.run._interrupts import sigint_kept
from search.run._loggers import logger_callbacks
from search.run._ray_session import slots as cluster_slots
from search.run._recorder import StudyRecorder
from search.run._searcher import NpasSearcher
from search.run._trainable import TrialFn, checkpoints, trainable
from search.schedulers import PromotionMOASHA

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["RETRIES", "run_tuner"]

#: How often a checkpointing trial whose worker died is restarted from its last checkpoint.
RETRIES = 2


def run_tuner(
    config: SearchConfig,
    searcher: NpasSearcher,
    recorder: StudyRecorder,
    study: optuna.Study,
    out: Path,
    remaining: int,
    trial_fn: TrialFn,
    progress: bool,
) -> int:
    """Runs ``remaining`` trials on Ray Tune, each with its CPU/GPU share: ``searcher``
    proposes them, ``recorder`` writes what it records to the storage.

    Returns:
        How many trials Ray Tune ran: fewer than ``remaining`` when it was stopped (Ctrl-C).
    """
    from ray import tune

    from search.run._progress import Progress
    from search.schedulers import SCHEDULERS, Decides, attach

    share = config.resources.ray()
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # with verbose=0: no tables, no tips
    # A trial whose worker died is recorded with its cause: no stack dump on the terminal.
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
    # Trials checkpoint every epoch by design: no advice to checkpoint less often.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    resourced = tune.with_resources(
        tune.with_parameters(trainable, trial_fn=trial_fn, objectives=config.objective_names),
        share,
    )
    for name in ("ray.tune.tune", "ray.tune.analysis.experiment_analysis",
                 "ray.tune.logger.logger"):  # fmt: skip
        logging.getLogger(name).addFilter(_no_tune_noise)
    capacity = cluster_slots(share)
    # a count the time limit cannot let the search reach (a derived timed search's) is no total
    total = config.trials if config.limits.count_reachable(config.trials, capacity) else None
    view = Progress(config.objectives, prior=study, total=total, enabled=progress,
                    time_limit=config.limits.time, adjourned=searcher.is_adjourned,
                    screened=lambda: len(searcher.screened))  # fmt: skip
    scheduler = SCHEDULERS.get(config.scheduler.name)(config)
    if isinstance(scheduler, Decides):  # a resumed search ranks its rungs on what it saw
        trials = study.get_trials(deepcopy=False)  # index = number
        for curve, violation, at_chance, number in rung_history(study, config.objective_names):
            scheduler.add_history(curve, violation, at_chance, number,
                                  **_promotions(scheduler, trials[number]))  # fmt: skip
    slots = min(remaining, capacity)
    attach(scheduler, searcher, slots=slots, total=remaining)
    lost = _StorageLostStopper(recorder.writer)
    stoppers = [s for s in (searcher.limits, lost) if s is not None]
    tuner = tune.Tuner(
        resourced,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=remaining,
            max_concurrent_trials=None if searcher.gate is not None else slots,
            reuse_actors=True,  # a fresh worker process per trial costs seconds of imports
        ),
        run_config=tune.RunConfig(
            storage_path=str(out / "ray"),
            name=config.name,
            verbose=0,
            callbacks=[
                view,
                CheckpointJanitor(
                    on_folder=searcher.on_folder,
                    keep=_kept(searcher),
                    latest=config.scheduler.keep_checkpoints,
                ),
                *logger_callbacks(config, out),
            ],
            stop=CombinedStopper(*stoppers),
            # A trial whose worker died goes on from its last checkpoint (when it has them).
            failure_config=tune.FailureConfig(
                max_failures=RETRIES if checkpoints(trial_fn) else 0
            ),
        ),
    )
    # Without max_concurrent_trials Ray Tune keeps one trial pending for a searcher; the gate
    # admits slots + 1 (PromotionMOASHA.may_start says why), so Ray Tune must keep them.
    pending = {} if searcher.gate is None else {"TUNE_MAX_PENDING_TRIALS_PG": str(slots + 1)}
    with _environ(**pending), sigint_kept(), no_callback_census():
        return len(tuner.fit())


class _StorageLostStopper(Stopper):
    """A Ray Tune stopper that ends the whole search once its storage is lost
    (``StorageLost``): no trial's result could be recorded any more."""

    def __init__(self, writer: StudyWriter) -> None:
        self.writer = writer

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False

    def stop_all(self) -> bool:
        return isinstance(self.writer.error, StorageLost)


def _kept(searcher: NpasSearcher) -> Callable[[str], bool]:
    """Which stopped trials keep their checkpoints: those a time limit stopped or the searcher
    adjourned (a relaunch continues them, or the user exports them)."""
    limits = searcher.limits

    def kept(trial_id: str) -> bool:
        if searcher.is_adjourned(trial_id):
            return True
        return limits is not None and (limits.out_of_time or trial_id in limits.why)

    return kept


def _promotions(scheduler: Any, trial: optuna.trial.FrozenTrial) -> dict[str, list[int]]:
    """The rungs a promotion-type scheduler let ``trial`` go on from, from its stored
    decisions (a relaunch keeps them), as ``add_history``'s keyword."""
    if not isinstance(scheduler, PromotionMOASHA):
        return {}
    log = read_trial(trial).decisions
    return {"promoted": [d["rung"] for d in log if d.get("outcome") in ("promote", "continue")]}


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Ray Tune settings read from the environment, set for one search only."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: What Ray Tune logs that a search says better: how to resume ("Tuner.restore": relaunching
#: resumes a search), and the trials that failed or never reported (the study records each, with
#: its error).
# "Stop signal received …": Ray Tune's own timestamped line on a Ctrl-C or `search stop`,
# whose end the launch says itself (what was cut short, what goes on, how to resume).
# "Remote file not found: …/result.json": Ray Tune's file loggers, on every resume of a
# paused trial (promotion-type MOASHA), look for the trial's result file where its storage
# keeps none yet; the study records every epoch (26 such lines in a 10-minute MNIST search).
_TUNE_NOISE = ("Tuner.restore", "Trials did not complete", "Failed to fetch metrics",
               "Stop signal received", "Remote file not found")  # fmt: skip


def _no_tune_noise(record: logging.LogRecord) -> bool:
    """Drops the lines of ``_TUNE_NOISE`` (a logging filter)."""
    message = record.getMessage()
    return not any(text in message for text in _TUNE_NOISE)
