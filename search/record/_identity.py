"""Whether the storage a launch writes is still the one it opened.

A SQLite storage is a file, and a file can be deleted, moved or replaced while a search runs.
SQLite notices none of it: the launch's open connections go on writing to the deleted file
(trials "recorded" where nobody can read them), and a new connection creates a new, empty
database at the path, whose first write fails on a missing table. So the launch takes the
file's identity (device and inode) when it opens the storage, checks it before every write
(:meth:`StorageIdentity.check`, one ``stat``, and whether the file, its WAL and its index can
still be written), and opens every later connection with SQLite's ``mode=rw``, which fails
instead of creating a file. Whatever the database, each write also checks in its own
transaction that the study's id still names the search (``search.record._writer``): a PostgreSQL
database dropped and restored, or another file, holds another study there or none.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy

from search.errors import StorageLost, StorageWriteError

__all__ = ["StorageIdentity", "lost_report", "sqlite_file"]


def sqlite_file(url: sqlalchemy.URL) -> str | None:
    """The absolute path of a SQLite storage's file, or None (another database, an in-memory
    one, or a ``file:`` URI, which SQLite resolves itself)."""
    database = url.database
    if url.get_backend_name() != "sqlite" or url.get_driver_name() != "pysqlite":
        return None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return os.path.abspath(database)


class StorageIdentity:
    """A launch's storage as it opened it: for a SQLite file, its device and inode.

    Args:
        engine: The storage's engine, just opened (its file exists). A SQLite file's engine
            opens every later connection without creating the file (``mode=rw``), at the
            absolute path taken now.
    """

    def __init__(self, engine: sqlalchemy.Engine) -> None:
        self.path = sqlite_file(engine.url)
        self._file = None if self.path is None else _file_id(self.path)
        if self.path is not None:
            sqlalchemy.event.listen(engine, "do_connect", _never_create(self.path))

    def check(self) -> None:
        """Before a write: raises once the SQLite file at the path is not the one opened, or
        cannot be written.

        Raises:
            StorageLost: the file is gone (deleted or moved away), cannot be looked at, or
                is another file.
            StorageWriteError: it, its WAL or its shared-memory index cannot be written any
                more (read-only, or made immutable): SQLite would fail on it, or die of SIGBUS
                writing the index it maps into memory.
        """
        if self.path is None:
            return
        try:
            now = _file_id(self.path)
        except FileNotFoundError:
            raise StorageLost(
                f"its storage file {self.path} is gone (deleted or moved away)"
            ) from None
        except OSError as err:
            raise StorageLost(
                f"its storage file {self.path} cannot be looked at ({err.strerror})"
            ) from None
        if now != self._file:
            raise StorageLost(f"its storage file {self.path} was replaced by another file")
        for path in (self.path, f"{self.path}-wal", f"{self.path}-shm"):
            # access first: a file removed in between (a backup restored over the database
            # takes its -wal away) is not writable and not there, and is no write error
            if not os.access(path, os.W_OK) and os.path.exists(path):
                raise StorageWriteError(
                    f"the search's storage file {path} cannot be written any more (made "
                    "read-only or immutable); the search stopped starting trials, and the "
                    "trials written before are in it: make it writable and relaunch the same "
                    "command to resume"
                )


def _file_id(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def _never_create(path: str) -> Callable[..., None]:
    """A ``do_connect`` hook: the connection opens ``path`` read-write, never creating it."""
    uri = f"file:{urllib.parse.quote(path)}?mode=rw"

    def connect(_dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
        cargs[:] = [uri]
        cparams["uri"] = True

    return connect


def lost_report(
    error: StorageLost,
    *,
    search: str,
    held: int,
    started: Sequence[int],
    ray_folder: Path,
    trials_folder: Path,
) -> StorageLost:
    """The launch's one message once its storage was lost: what stopped, what is recorded
    where, and what is kept.

    Args:
        error: What was noticed (:meth:`StorageIdentity.check`, or the writer's study check).
        search: The search's name.
        held: Trials the storage held when the launch opened it.
        started: Numbers of the trials this launch started or resumed, all written to it.
        ray_folder: Ray Tune's folder of this launch's trials.
        trials_folder: Where the trials save their models.
    """
    new = [n for n in started if n >= held]
    return StorageLost(
        f"search {search!r}: {error}, so the search stopped at once: no trial started after "
        "that, the trials running were stopped, nothing more was written and no database was "
        f"created in its place. Not recorded anywhere else: the {held + len(new)} trial(s) "
        f"written to the storage the launch opened ({held} before this launch, {len(new)} by "
        f"it{_numbers(new)}); if that database was moved or renamed, put it back and "
        "relaunch the same command to resume; if it was deleted, they cannot be recovered. "
        f"Kept: Ray Tune's results of this launch's trials (a folder per trial with its "
        f"result.json) in {ray_folder}, and the models the trials saved in {trials_folder}"
    )


def _numbers(numbers: Sequence[int]) -> str:
    if not numbers:
        return ""
    if list(numbers) == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f": trials {numbers[0]}-{numbers[-1]}"
    return f": trial(s) {', '.join(map(str, numbers))}"
