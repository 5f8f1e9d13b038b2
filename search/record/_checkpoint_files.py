"""Where a trial's checkpoints are on disk, whether they can be read, and how big a run
folder is: read by the search and by ``search status`` alike, so this module imports neither
Ray nor torch."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from search.record._schema import RayKey, TrialAttr

__all__ = [
    "checkpoint_folders",
    "checkpoint_problem",
    "folder_size",
    "latest_checkpoint",
    "resumable",
    "resume_checkpoint",
    "unreadable",
]

#: How a zip archive begins (a local file header).
_ZIP = b"PK\x03\x04"


def checkpoint_folders(trial_folder: str | Path) -> list[Path]:
    """A trial's checkpoint folders in Ray Tune's layout (``checkpoint_000003``), oldest
    first."""
    return sorted(Path(trial_folder).glob("checkpoint_*"))


def latest_checkpoint(trial: Any) -> Path | None:
    """The latest checkpoint folder of a study's trial (its :data:`TrialAttr.RAY_TRIAL`), or None
    when it has none (never checkpointed, deleted, or on another machine's disk)."""
    folder = trial.user_attrs.get(TrialAttr.RAY_TRIAL)
    found = checkpoint_folders(folder) if folder else []
    return found[-1] if found else None


def resume_checkpoint(trial: Any) -> Path | None:
    """The checkpoint folder a relaunch resumes a trial from: its latest that can be read
    (:func:`unreadable`), or None. An older one is there only while a newer one was being
    written (the search deletes a trial's older checkpoints once a newer one is reported), so
    a worker killed mid-copy costs the trial one epoch, not its whole schedule."""
    folder = trial.user_attrs.get(TrialAttr.RAY_TRIAL)
    found = checkpoint_folders(folder) if folder else []
    return next((f for f in reversed(found) if unreadable(f) is None), None)


def resumable(trial: Any) -> bool:
    """Whether a trial that a stopped search left RUNNING goes on when the search is relaunched
    (from :func:`resume_checkpoint`); without a checkpoint that can be read, the relaunch
    marks it interrupted and runs another in its place. The launch and ``search status`` both
    ask this."""
    return resume_checkpoint(trial) is not None


def checkpoint_problem(trial: Any) -> str | None:
    """Why a trial's latest checkpoint cannot be resumed from (:func:`unreadable`), or None
    (readable, or no checkpoint at all)."""
    found = latest_checkpoint(trial)
    return None if found is None else unreadable(found)


def unreadable(folder: str | Path) -> str | None:
    """Why a checkpoint folder cannot be read, naming the file, or None: a file lost, cut short
    or damaged (a full disk, a crash while it was copied, a careless hand) would otherwise fail
    the resumed trial, which then counts as a trial that ran.

    Checked: the folder holds a file besides the learning-curve point (the trial's state; a
    worker killed while its checkpoint was copied leaves the folder empty or with the point
    alone); every JSON file parses (the point, a trial function's own state); every zip
    archive, which is what ``torch.save`` writes (``trial_state.pt``), is whole (each member's
    CRC).
    """
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    for path in files:
        why = _damaged(path)
        if why is not None:
            return f"{path}: {why}"
    point = Path(folder) / RayKey.POINT_FILE
    if not files:
        return f"{folder} is empty: no trial state"
    if files == [point]:
        return f"{folder} holds the learning-curve point ({RayKey.POINT_FILE}) but no trial state"
    return None


def _damaged(path: Path) -> str | None:
    """Why one checkpoint file cannot be read (JSON, or a zip archive), or None."""
    try:
        if path.suffix == ".json":
            json.loads(path.read_bytes())
            return None
        with path.open("rb") as file:
            head = file.read(len(_ZIP))
        if not head:
            return "the file is empty"
        if head == _ZIP:
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            if bad is not None:
                return f"cut short or damaged (its member {bad} fails its CRC)"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    except (ValueError, zipfile.BadZipFile) as err:  # JSONDecodeError is a ValueError
        return f"cut short or damaged ({type(err).__name__}: {err})"
    return None


def folder_size(folder: str | Path) -> int:
    """Bytes of the files under ``folder`` (0 when it does not exist)."""
    root = Path(folder)
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
