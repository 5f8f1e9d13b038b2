"""Opening the Optuna storage every search is recorded in: to write (a launch) or to read.

What a search stores there is said in :mod:`search.record._study` (the study) and
:mod:`search.run._outcome` (each trial).
"""

from __future__ import annotations

import atexit
import functools
import os
import sqlite3
import sys
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

import optuna
import sqlalchemy

from search._format import note
from search._imports import EXTRAS, require
from search._urls import connect_url, masked_url
from search.errors import ConfigError, MissingExtraError

__all__ = ["created_meanwhile", "open_storage", "read_storage"]

#: Tries to open a new storage that other launches are creating at the same time.
_OPEN_TRIES = 5
#: Seconds a write to a SQLite storage waits for another process's lock before it fails.
LOCK_WAIT_S = 60


def open_storage(url: str, *, checked: bool = False) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage for a SQLAlchemy URL.

    SQLite files are switched to write-ahead logging with ``synchronous=NORMAL``: a trial's
    dozen small commits then cost ~5x less (no fsync per commit; a killed process still loses
    nothing committed), readers such as the dashboard do not block the search, and writers
    wait for a lock (:data:`LOCK_WAIT_S`) instead of failing, saying so at once on stderr when
    another process holds the lock as the storage is opened. Launches that start together on a
    new storage may all open it (each is retried while another creates Optuna's tables).

    Args:
        url: The storage.
        checked: This process's search opened it a moment ago: skip creating the tables and
            checking the schema version (a second of imports and queries).

    Raises:
        ConfigError: the URL cannot be opened; the message names it.
        MissingExtraError: the URL's driver is one an npas extra installs, and it is not
            installed (``postgresql://``: psycopg, ``npas[postgres]``).
    """
    sqlite = url.startswith("sqlite")
    kwargs = {"connect_args": {"timeout": LOCK_WAIT_S}} if sqlite else None
    try:
        parsed = connect_url(url)
        if parsed.get_driver_name() in EXTRAS:  # psycopg: the postgres extra's driver
            require(parsed.get_driver_name(), purpose=f"storage {masked_url(url)!r}")
        storage = _rdb_storage(parsed.render_as_string(hide_password=False), kwargs, checked)
    except MissingExtraError:
        raise
    except ImportError:  # Optuna's word for SQLAlchemy's missing database driver
        raise ConfigError(
            f"storage {masked_url(url)!r}: its database driver is not installed; for "
            "PostgreSQL: pip install 'npas[postgres]' (psycopg 3, which postgresql://user@host/db "
            "uses)" + ("" if url.startswith("postgresql") else ", else the driver the URL names")
        ) from None
    except Exception as err:  # SQLAlchemy raises many kinds
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be opened ({type(err).__name__}: {err}); give "
            "a SQLAlchemy URL such as sqlite:///runs/npas.db or postgresql://user@host/db"
        ) from None
    if sqlite:
        if not checked:
            _say_if_locked(storage.engine.url.database, url)
        sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # reconnect with the pragmas
        _closed_at_exit(storage.engine)
    return storage


def _say_if_locked(database: str | None, url: str) -> None:
    """Says on stderr, at once, that another process holds the SQLite file's write lock (a
    long transaction, a tool that opened it): the writes that follow wait for it, and a launch
    sat silent for half a minute. A probe that waits for nothing and changes nothing."""
    if not database or database == ":memory:" or not Path(database).is_file():
        return
    try:
        probe = sqlite3.connect(f"{Path(database).absolute().as_uri()}?mode=rw", uri=True,
                                timeout=0, isolation_level=None)  # fmt: skip
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
        finally:
            probe.close()
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):
            print(note(f"storage {masked_url(url)!r} is locked by another process (a write "
                       "in progress, or a program holding it open in a transaction); waiting "
                       f"for it, up to {LOCK_WAIT_S} s …"),
                  file=sys.stderr, flush=True)  # fmt: skip


def _closed_at_exit(engine: sqlalchemy.engine.Engine) -> None:
    """Closes the engine's connections at exit (an ``atexit`` hook, which ``python -m
    search`` runs before it ends without the interpreter's teardown): SQLite then folds its
    write-ahead log into the database file, so that the file alone holds every trial."""
    ref = weakref.ref(engine)

    def close() -> None:
        engine = ref()
        if engine is not None:
            engine.dispose()

    atexit.register(close)


def _rdb_storage(
    url: str, engine_kwargs: dict[str, Any] | None, checked: bool
) -> optuna.storages.RDBStorage:
    """``RDBStorage(url)``, opened again while it fails because another process is creating
    the same new storage: Optuna creates its tables and version rows check-then-create, so of
    launches that start together on a new storage all but one would fail."""
    rdb = functools.partial(
        optuna.storages.RDBStorage,
        url,
        engine_kwargs=engine_kwargs,
        skip_compatibility_check=checked,
        skip_table_creation=checked,
    )
    for attempt in range(1, _OPEN_TRIES):
        try:
            return rdb()
        except sqlalchemy.exc.DBAPIError as err:
            if not created_meanwhile(err):
                raise
        time.sleep(0.1 * attempt)
    return rdb()


def created_meanwhile(err: sqlalchemy.exc.DBAPIError) -> bool:
    """Whether a create failed because another process created the same table, type or row
    first: PostgreSQL reports a duplicate key (in its catalog for a table) or object, SQLite
    that the table already exists (its messages are never translated)."""
    duplicate = (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError)
    return isinstance(err, duplicate) or str(err.orig).endswith("already exists")


def read_storage(url: str) -> optuna.storages.RDBStorage:
    """An existing Optuna storage opened for reading: nothing is created or switched in it.

    Raises:
        ConfigError: a SQLite file that does not exist, a database that cannot be opened, or
            one that is not an Optuna storage (its tables are not created then).
    """
    prefix = "sqlite:///"
    read_only = None
    if url.startswith(prefix) and url != prefix + ":memory:":
        path = Path(url[len(prefix) :])
        if not path.is_file():
            raise ConfigError(
                f"storage: got {masked_url(url)!r}, but {str(path)!r} does not exist; allowed: "
                "the storage of a search (`search launch` prints it; the default is "
                "sqlite:///runs/npas.db; give the launch's run folder with --run DIR)"
            )
        read_only = _read_only_url(path)
    try:
        engine_url = read_only or connect_url(url).render_as_string(hide_password=False)
        engine = sqlalchemy.create_engine(engine_url)
        tables = set(sqlalchemy.inspect(engine).get_table_names())
        engine.dispose()
    except Exception as err:  # SQLAlchemy raises many kinds
        hint = "" if read_only is None else (
            "; it is read-only here, and SQLite reads its write-ahead log (-wal) only with "
            "the log's index (-shm) beside it: copy the files to a writable folder"
        )  # fmt: skip
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be opened ({type(err).__name__}: {err}){hint}"
        ) from None
    if not {"studies", "trials", "version_info"} <= tables:
        raise ConfigError(
            f"storage {masked_url(url)!r} is not an Optuna storage (no studies, trials and "
            "version_info tables); nothing was written to it"
        )
    try:
        return optuna.storages.RDBStorage(engine_url, skip_table_creation=True)
    except Exception as err:
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be read ({type(err).__name__}: {err})"
        ) from None


def _read_only_url(path: Path) -> str | None:
    """The SQLite URI that reads ``path`` where it cannot be written (a read-only mount or
    folder, a file without write permission), else None. SQLite opens a WAL database for
    reading by creating its ``-shm`` index beside it, which a read-only folder refuses
    ("unable to open database file"): a file with no log to replay is opened ``immutable``
    (no index, no lock: nothing writes it meanwhile), one with a log ``mode=ro``. URIs are
    refused in a storage the user gives; this one is made here, for the reading commands."""
    if os.access(path.parent, os.W_OK) and os.access(path, os.W_OK):
        return None
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.is_file() and wal.stat().st_size > 0 else "immutable=1"
    return f"sqlite:///file:{quote(str(path.resolve()))}?{mode}&uri=true"


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
