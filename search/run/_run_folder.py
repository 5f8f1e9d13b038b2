"""The run folder of a search: created and writable before anything runs, and whether its disk
filled while the search ran."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from spaces import ConfigError

__all__ = ["no_room", "run_folder"]

#: Free bytes below which a run folder's disk counts as full.
_ROOM = 1 << 20


def no_room(out: Path) -> bool:
    """Whether the run folder's disk is (nearly) full."""
    try:
        return shutil.disk_usage(out).free < _ROOM
    except OSError:
        return False


def run_folder(out: str) -> Path:
    """The run folder, created and writable, or a ConfigError naming what is wrong (a symlink
    loop among them: ``Path.resolve`` raised a RuntimeError there)."""
    folder = Path(os.path.realpath(Path(out).expanduser()))
    if folder.is_symlink():  # realpath stops at a link only when it loops
        raise ConfigError(f"out: got {out!r}, a symlink loop (a link that leads back to itself); "
                          "allowed: a folder")  # fmt: skip
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"out: got {out!r}, which is a file; allowed: a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".npas-write-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise ConfigError(
            f"out: got {out!r}, which cannot be written ({err.strerror or err}); allowed: a "
            "folder this user can create and write"
        ) from None
    return folder
