"""Deleting a search from its storage (``search delete``): Optuna's own ``delete_study``, refused
while a launch runs the search, after the user says yes. The run folder's files (checkpoints,
the Ray run, bundles) are the user's and stay; the message names them.

The delete holds the search's lease (as a launch does) from before it counts the trials until
the study is gone: a launch started while the question waits is refused, naming the delete, so
the count asked about is the count deleted; of two deletes at once, one deletes and the other
is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import optuna

from search._urls import masked_url
from search.config import unknown
from search.errors import ConfigError, SearchLocked
from search.record import Lease, folder_size, lease_busy, read_storage

__all__ = ["delete_search"]


def delete_search(
    url: str, name: str, *, confirm: Callable[[str], bool], run_folder: Path | None = None
) -> str | None:
    """Deletes search ``name`` from the storage at ``url`` once ``confirm(question)`` says yes,
    and returns what was done (None: the user said no, nothing was deleted).

    Raises:
        ConfigError: no search of that name (the message lists the storage's searches).
        SearchLocked: a live launch runs it.
    """
    storage = read_storage(url)
    names = sorted(s.study_name for s in storage.get_all_studies())
    if name not in names:
        raise unknown("--name", name, names, "search status")
    busy = lease_busy(storage.engine, name)
    if busy is not None:
        raise SearchLocked(f"{busy}: stop that launch before deleting the search")
    lease = Lease(storage.engine, name, purpose="delete")
    lease.acquire()  # a launch or delete that took it since the look above is named here
    try:
        if name not in {s.study_name for s in storage.get_all_studies()}:
            raise ConfigError(f"--name: search {name!r} was deleted meanwhile (by another "
                              "`search delete`); nothing more to delete")  # fmt: skip
        trials = len(optuna.load_study(study_name=name, storage=storage).trials)
        where = masked_url(url)
        if not confirm(f"Delete search {name!r} ({trials} trial(s)) from {where}? [y/N] "):
            return None
        lease.check()  # still ours: not taken over while the question waited
        optuna.delete_study(study_name=name, storage=storage)
    finally:
        lease.release()
    said = f"deleted search {name!r} ({trials} trial(s)) from {where}"
    kept = [p for p in _files_of(run_folder, name) if p.exists()]
    if kept:
        size = sum(folder_size(p) for p in kept) / 2**20
        said += (f"; its files stay ({size:.1f} MiB), yours to remove: "
                 + ", ".join(str(p) for p in kept))  # fmt: skip
    return said


def _files_of(run_folder: Path | None, name: str) -> list[Path]:
    """Where a launch in ``run_folder`` wrote a search's files: its trials and its Ray run."""
    if run_folder is None:
        return []
    return [run_folder / name, run_folder / "ray" / name]
