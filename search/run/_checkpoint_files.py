"""Where a trial's checkpoints are on disk and how big a run folder is: read by the search
and by ``search status`` alike, so this module imports neither Ray nor torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "RAY_TRIAL_KEY",
    "checkpoint_folders",
    "folder_size",
    "latest_checkpoint",
    "resumable",
]

#: A trial's user attribute: its Ray Tune trial folder, where its checkpoints are.
RAY_TRIAL_KEY = "npas:ray_trial"


def checkpoint_folders(trial_folder: str | Path) -> list[Path]:
    """A trial's checkpoint folders in Ray Tune's layout (``checkpoint_000003``), oldest
    first."""
    return sorted(Path(trial_folder).glob("checkpoint_*"))


def latest_checkpoint(trial: Any) -> Path | None:
    """The latest checkpoint folder of a study's trial (its :data:`RAY_TRIAL_KEY`), or None
    when it has none (never checkpointed, deleted, or on another machine's disk)."""
    folder = trial.user_attrs.get(RAY_TRIAL_KEY)
    found = checkpoint_folders(folder) if folder else []
    return found[-1] if found else None


def resumable(trial: Any) -> bool:
    """Whether a trial that a stopped search left RUNNING goes on when the search is relaunched
    (from its latest checkpoint); without a checkpoint the relaunch marks it interrupted and
    runs another in its place. The launch and ``search status`` both ask this."""
    return latest_checkpoint(trial) is not None


def folder_size(folder: str | Path) -> int:
    """Bytes of the files under ``folder`` (0 when it does not exist)."""
    root = Path(folder)
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
