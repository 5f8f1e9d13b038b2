"""What a search keeps of its trials' checkpoints: Ray Tune writes one after every epoch (the
trainable reports it with the epoch) and keeps the latest ``scheduler.keep_checkpoints`` of a
trial; this callback deletes a trial's checkpoints once it can never be resumed, so the run
folder holds checkpoints only of trials that ran their full schedule (the front's, which
``search export --from-checkpoint`` reads), that are paused, or that a killed search left
running (a relaunch resumes those)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ray.tune import Callback

from search.run._trainable import METRICS_KEY

__all__ = ["CheckpointJanitor", "checkpoint_folders", "folder_size"]


def checkpoint_folders(trial_folder: str | Path) -> list[Path]:
    """A trial's checkpoint folders in Ray Tune's layout (``checkpoint_000003``), oldest
    first."""
    return sorted(Path(trial_folder).glob("checkpoint_*"))


def folder_size(folder: str | Path) -> int:
    """Bytes of the files under ``folder`` (0 when it does not exist)."""
    root = Path(folder)
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


class CheckpointJanitor(Callback):
    """Deletes the checkpoints of a trial that ended without its full schedule: stopped by a
    scheduler (at a rung, or paused and never promoted) or failed."""

    def __init__(self) -> None:
        self.deleted = 0

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if METRICS_KEY not in (trial.last_result or {}):
            self._delete(trial)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._delete(trial)

    def _delete(self, trial: Any) -> None:
        if trial.path is None or "://" in trial.path:  # a storage URI: not ours to clean
            return
        for folder in checkpoint_folders(trial.path):
            shutil.rmtree(folder, ignore_errors=True)
            self.deleted += 1
