"""What a search keeps of its trials' checkpoints: Ray Tune writes one after every epoch (the
trainable reports it with the epoch); this callback keeps the latest
``scheduler.keep_checkpoints`` of a trial, and deletes a trial's checkpoints once it can never
be resumed, so the run folder holds checkpoints only of trials that ran their full schedule
(the front's, which ``search export --from-checkpoint`` reads), that are paused, or that a
killed search left running (a relaunch resumes those).

The latest are kept here, not by Ray Tune's ``CheckpointConfig(num_to_keep=...)``: with it, Ray
Tune saves its whole experiment state (every trial's) after each ``num_to_keep`` trial
checkpoints, that is after every epoch of every trial by default, a cost that grows with the
search (1.4 s of the driver's CPU in the 20 s quick run). A search resumes from its study, not
from that state."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray.tune import Callback

from search.record import RayKey, checkpoint_folders, folder_size, latest_checkpoint

__all__ = [
    "CheckpointJanitor",
    "checkpoint_folders",
    "folder_size",
    "latest_checkpoint",
]


class CheckpointJanitor(Callback):
    """Tells ``on_folder`` each trial's Ray Tune folder when it starts (recorded, a relaunch
    finds its checkpoints there); deletes the checkpoints of a trial that ended without its
    full schedule: stopped by a scheduler (at a rung, or paused and never promoted) or failed,
    unless ``keep`` says otherwise (a trial a time limit stopped). A trial a relaunch resumed
    runs in a new folder: the checkpoints of the one it resumed from (``on_folder`` returns
    it) are deleted when it ends, once they are no trial's latest.
    """

    def __init__(
        self,
        on_folder: Callable[[str, str], str | None] | None = None,
        keep: Callable[[str], bool] = lambda trial_id: False,
        latest: int = 1,
    ) -> None:
        self.on_folder = on_folder
        self.keep = keep  # a stopped trial (Ray trial id) whose checkpoints stay
        self.latest = latest  # checkpoints kept per trial
        self.deleted = 0
        self._former: dict[str, str] = {}  # Ray trial id -> the folder it was resumed from

    def on_checkpoint(
        self, iteration: int, trials: list, trial: Any, checkpoint: Any, **info: Any
    ) -> None:
        """Deletes the trial's checkpoints older than its ``latest`` up to this one (a later
        one may be being written)."""
        if not _ours(trial.path):
            return
        folders = checkpoint_folders(trial.path)
        this = Path(checkpoint.path).name
        names = [f.name for f in folders]
        if this not in names:
            return
        for folder in folders[: max(0, names.index(this) + 1 - self.latest)]:
            shutil.rmtree(folder, ignore_errors=True)

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if self.on_folder is not None and trial.path is not None:
            former = self.on_folder(trial.trial_id, trial.path)
            if former is not None:
                self._former[trial.trial_id] = former

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if RayKey.METRICS not in (trial.last_result or {}):
            self._delete(trial)
        self._retire(trial)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._delete(trial)
        self._retire(trial)

    def _delete(self, trial: Any) -> None:
        if not _ours(trial.path) or self.keep(trial.trial_id):
            return
        for folder in checkpoint_folders(trial.path):
            shutil.rmtree(folder, ignore_errors=True)
            self.deleted += 1

    def _retire(self, trial: Any) -> None:
        """Deletes the checkpoints of the folder an ended trial was resumed from, unless they
        are still what a relaunch would go on from (it was adjourned without one of its own)."""
        former = self._former.pop(trial.trial_id, None)
        if former is None or not _ours(former) or not _ours(trial.path):
            return
        if self.keep(trial.trial_id) and not checkpoint_folders(trial.path):
            return
        for folder in checkpoint_folders(former):
            shutil.rmtree(folder, ignore_errors=True)
            self.deleted += 1


def _ours(path: str | None) -> bool:
    """Whether a trial folder is on this machine's disk (a storage URI is not ours to clean)."""
    return path is not None and "://" not in path
