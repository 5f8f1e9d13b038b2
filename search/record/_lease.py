"""One live launch per search: a lease row in the search's storage, taken before Ray starts.

A second launch of the same search is refused at once, naming the live one (host, pid, since
when). The owner renews the lease's heartbeat from a thread; a lease whose heartbeat is older
than its time to live, or whose owner process is gone (same host), is free again, and only then
may the new owner mark the old one's RUNNING trials interrupted (as Optuna's
``heartbeat_interval``/``fail_stale_trials`` does for trials). The row lives in a table of its
own (``npas_leases``) next to Optuna's, written with SQLAlchemy Core: an insert wins or fails
atomically on the primary key, and taking over an expired lease is a compare-and-swap update; a
launch that finds the lease changed hands between the two looks again. Launches that start
together on a new storage each create the table; those that lose that race use it.

Lease times are the database's clock, never a host's (hosts' clocks differ). The holder is
fenced: a heartbeat that updates no row means another launch took the search over (this one
was stopped, or cut off from the storage, longer than the time to live), and :meth:`Lease.check`
-- called before every write of the search -- then raises; it also confirms the lease first
when the last confirmation is older than half the time to live (a process resumed after
SIGSTOP learns it before its first write, not at its next heartbeat).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import NamedTuple

import sqlalchemy

from search.errors import SearchLocked, StorageWriteError
from search.record._process import same_process, start_token
from search.record._storage import created_meanwhile

__all__ = ["Lease", "LeaseOwner", "lease_busy", "lease_holder", "lease_owner"]

_METADATA = sqlalchemy.MetaData()
_LEASES = sqlalchemy.Table(
    "npas_leases",
    _METADATA,
    sqlalchemy.Column("study_name", sqlalchemy.String(512), primary_key=True),
    sqlalchemy.Column("owner", sqlalchemy.String(64), nullable=False),
    sqlalchemy.Column("host", sqlalchemy.String(255), nullable=False),
    sqlalchemy.Column("pid", sqlalchemy.Integer, nullable=False),
    sqlalchemy.Column("since", sqlalchemy.DateTime, nullable=False),
    sqlalchemy.Column("heartbeat", sqlalchemy.DateTime, nullable=False),
    # The holder's process start (``_process.start_token``): a pid names a process only
    # together with it, since a dead launch's pid can be another process's now. Added after
    # the table's first release, so nullable and added to older tables by the first holder.
    sqlalchemy.Column("started", sqlalchemy.String(32), nullable=True),
    # Why the search is held: "launch" (None in older rows) or "delete" (``search delete``).
    sqlalchemy.Column("purpose", sqlalchemy.String(16), nullable=True),
)
#: Columns added after the table's first release: (name, SQL type), added by the first holder.
_ADDED = (("started", "VARCHAR(32)"), ("purpose", "VARCHAR(16)"))
#: What a holder is doing to the search, by its ``purpose``.
_DOING = {None: "launched", "launch": "launched", "delete": "deleted"}
#: Seconds without a heartbeat after which a lease is free (``NPAS_LEASE_TTL_S`` sets it).
TTL_S = 60.0
#: Seconds between heartbeats (at most a sixth of the time to live).
BEAT_S = 10.0


def _ttl() -> float:
    return float(os.environ.get("NPAS_LEASE_TTL_S", TTL_S))


def _db_now(engine: sqlalchemy.Engine) -> sqlalchemy.ColumnElement:
    """The database's clock, as a naive UTC timestamp (the column's form)."""
    name = engine.dialect.name
    if name == "sqlite":
        clock = sqlalchemy.func.strftime("%Y-%m-%d %H:%M:%f", "now")  # UTC, milliseconds
    elif name == "postgresql":
        clock = sqlalchemy.func.timezone("UTC", sqlalchemy.func.clock_timestamp())
    elif name in ("mysql", "mariadb"):
        clock = sqlalchemy.func.utc_timestamp(6)
    else:
        clock = sqlalchemy.func.current_timestamp()
    return sqlalchemy.type_coerce(clock, sqlalchemy.DateTime)


def _read_now(db: sqlalchemy.Connection) -> datetime.datetime:
    return db.execute(sqlalchemy.select(_db_now(db.engine))).scalar_one()


def _alive(row: sqlalchemy.Row, ttl_s: float, now: datetime.datetime) -> bool:
    """A lease is held while its heartbeat is recent (by the database's clock, ``now``) and,
    on this host, its process lives."""
    if (now - row.heartbeat).total_seconds() > ttl_s:
        return False
    if row.host == socket.gethostname():
        return same_process(int(row.pid), getattr(row, "started", None))
    return True


def lease_holder(
    engine: sqlalchemy.Engine, study_name: str, *, ttl_s: float | None = None
) -> str | None:
    """Who runs the search now (``host pid N since T``), or None; reads only, creates nothing."""
    row = _live_row(engine, study_name, ttl_s)
    return None if row is None else _describe(row)


class LeaseOwner(NamedTuple):
    """Who holds a search's lease: where, which process (its pid and start), and why."""

    host: str
    pid: int
    started: str | None  # None: an older npas wrote the lease, without it
    purpose: str  # "launch" or "delete"


def lease_owner(engine: sqlalchemy.Engine, study_name: str) -> LeaseOwner | None:
    """The holder of the search's lease now, or None; reads only."""
    row = _live_row(engine, study_name, None)
    if row is None:
        return None
    purpose = getattr(row, "purpose", None) or "launch"
    return LeaseOwner(str(row.host), int(row.pid), getattr(row, "started", None), purpose)


def lease_busy(engine: sqlalchemy.Engine, study_name: str) -> str | None:
    """What holds the search now, as the start of a sentence (``search 'x' is being launched
    by host h pid N since T UTC``), or None; reads only."""
    row = _live_row(engine, study_name, None)
    return None if row is None else _busy(study_name, row)


def _busy(study_name: str, row: sqlalchemy.Row) -> str:
    doing = _DOING.get(getattr(row, "purpose", None), "held")
    return f"search {study_name!r} is being {doing} by {_describe(row)}"


def _live_row(
    engine: sqlalchemy.Engine, study_name: str, ttl_s: float | None
) -> sqlalchemy.Row | None:
    """The search's lease row while its launch is alive, else None."""
    inspector = sqlalchemy.inspect(engine)
    if not inspector.has_table(_LEASES.name):
        return None
    present = {c["name"] for c in inspector.get_columns(_LEASES.name)}
    columns = [c for c in _LEASES.c if c.name in present]  # an older table lacks _ADDED
    with engine.connect() as db:
        row = db.execute(
            sqlalchemy.select(*columns).where(_LEASES.c.study_name == study_name)
        ).one_or_none()
        now = _read_now(db)
    alive = row is not None and _alive(row, _ttl() if ttl_s is None else ttl_s, now)
    return row if alive else None


def _describe(row: sqlalchemy.Row) -> str:
    since = row.since.replace(microsecond=0).isoformat(sep=" ")
    return f"host {row.host} pid {row.pid} since {since} UTC"


class Lease:
    """The lease of one search in one storage, held by this process while it launches.

    Args:
        engine: The storage's SQLAlchemy engine.
        study_name: The search.
        ttl_s: Seconds without a heartbeat after which the lease is free (None: TTL_S, or
            ``NPAS_LEASE_TTL_S``).
        beat_s: Seconds between heartbeats (None: BEAT_S, at most a sixth of ``ttl_s``).
        fence: Called before each heartbeat and before freeing the lease; once it raises
            ``StorageWriteError`` (the storage is not the one opened: ``StorageIdentity``)
            the lease writes no more.
        purpose: "launch", or "delete" (``search delete`` holds the search while it asks and
            deletes, so that no launch starts on a search being deleted).
    """

    def __init__(
        self,
        engine: sqlalchemy.Engine,
        study_name: str,
        *,
        ttl_s: float | None = None,
        beat_s: float | None = None,
        fence: Callable[[], None] | None = None,
        purpose: str = "launch",
    ) -> None:
        self.engine = engine
        self.purpose = purpose
        self.fence = fence
        self.study_name = study_name
        self.ttl_s = _ttl() if ttl_s is None else ttl_s
        self.beat_s = min(BEAT_S, self.ttl_s / 6) if beat_s is None else beat_s
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Why this launch may not write any more (another launch took the search over).
        self.lost: str | None = None
        self._confirmed = time.monotonic()  # when the lease was last seen to be ours

    def acquire(self) -> None:
        """Takes the lease and starts the heartbeat.

        Raises:
            SearchLocked: another live launch holds it; the message names it.
        """
        _create_table(self.engine)
        now = _db_now(self.engine)
        row = {
            "study_name": self.study_name,
            "owner": self.owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "since": now,
            "heartbeat": now,
            "started": start_token(os.getpid()),
            "purpose": self.purpose,
        }
        while not (self._insert(row) or self._take_over(row)):
            pass  # the lease changed hands meanwhile: look again
        self._confirmed = time.monotonic()
        self._thread = threading.Thread(target=self._beat, name="npas-lease", daemon=True)
        self._thread.start()

    def _insert(self, row: dict) -> bool:
        """Takes a free lease: whether no row held it (the insert wins atomically)."""
        try:
            with self.engine.begin() as db:
                db.execute(_LEASES.insert().values(**row))
        except sqlalchemy.exc.IntegrityError:
            return False
        return True

    def _take_over(self, row: dict) -> bool:
        """Takes an expired lease (compare-and-swap on its owner), or raises naming its live
        holder. False: the lease changed hands meanwhile (its holder let go, or another launch
        took it over first)."""
        with self.engine.begin() as db:
            held = db.execute(
                sqlalchemy.select(_LEASES).where(_LEASES.c.study_name == self.study_name)
            ).one_or_none()
            if held is None:
                return False
            now = _read_now(db)
            if not _alive(held, self.ttl_s, now):
                taken = db.execute(
                    _LEASES.update()
                    .where(_LEASES.c.study_name == self.study_name, _LEASES.c.owner == held.owner)
                    .values(**row)
                ).rowcount
                return taken == 1
        raise SearchLocked(
            f"{_busy(self.study_name, held)} (heartbeat "
            f"{(now - held.heartbeat).total_seconds():.0f} s ago): one launch or delete of a "
            "search at a time. Wait for it to end or stop it; a crashed one frees the search "
            f"once its process is gone, or {self.ttl_s:.0f} s after its last heartbeat"
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                if self.fence is not None:
                    self.fence()
                if not self._renew():
                    return  # lost: check() says so before the next write
            except StorageWriteError:  # not the storage opened: the search's writes say so
                return
            except sqlalchemy.exc.SQLAlchemyError:  # the storage's own writes will say so
                continue

    def _renew(self) -> bool:
        """One heartbeat: False (and :attr:`lost` set) when the lease is not this launch's
        any more."""
        with self.engine.begin() as db:
            renewed = db.execute(
                _LEASES.update()
                .where(_LEASES.c.study_name == self.study_name)
                .where(_LEASES.c.owner == self.owner)
                .values(heartbeat=_db_now(self.engine))
            ).rowcount
        if renewed == 1:
            self._confirmed = time.monotonic()
            return True
        self._lose()
        return False

    def _lose(self) -> str:
        """Records (:attr:`lost`) and returns why this launch may not write any more."""
        holder = lease_holder(self.engine, self.study_name, ttl_s=self.ttl_s)
        self.lost = (
            f"this launch lost the lease of search {self.study_name!r}: it was stopped or cut "
            f"off from the storage for more than {self.ttl_s:g} s and "
            f"{holder or 'another launch'} took the search over; it stopped writing, so that "
            "two launches never write one search: let that launch run, or stop it and relaunch"
        )
        return self.lost

    def hold(self, db: sqlalchemy.Connection) -> None:
        """Fencing inside a write's own transaction, first in it: :meth:`check` runs before
        the transaction, so a launch stopped (SIGSTOP, a long pause) between the two could
        write after another launch took the search over. Here an update of this launch's
        own lease row (changing nothing) takes the lock a take-over needs, SQLite's write
        lock or PostgreSQL's row lock, until the write commits; no row: the lease is lost.

        Raises:
            StorageWriteError: another launch holds the lease now (the write rolls back).
        """
        mine = db.execute(
            _LEASES.update()
            .where(_LEASES.c.study_name == self.study_name, _LEASES.c.owner == self.owner)
            .values(owner=self.owner)
        ).rowcount
        if mine != 1:
            raise StorageWriteError(self._lose())

    def check(self) -> None:
        """Fencing, before each write of the search: raises once the lease is lost, confirming
        it first when the last confirmation is older than half the time to live.

        Raises:
            StorageWriteError: another launch holds the lease now.
        """
        if self.lost is None and time.monotonic() - self._confirmed > self.ttl_s / 2:
            with contextlib.suppress(sqlalchemy.exc.SQLAlchemyError):
                self._renew()  # if the storage fails, the write itself will say so
        if self.lost is not None:
            raise StorageWriteError(self.lost)

    def release(self) -> str | None:
        """Stops the heartbeat and frees the lease (only if it is still this process's).

        Returns:
            None, or why the storage could not free it (the lease then lapses once this
            process is gone): it never raises, so a launch's own error is never masked.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            if self.fence is not None:
                self.fence()
            with self.engine.begin() as db:
                db.execute(
                    _LEASES.delete().where(
                        _LEASES.c.study_name == self.study_name, _LEASES.c.owner == self.owner
                    )
                )
        except sqlalchemy.exc.SQLAlchemyError as err:
            return first_line(err)
        except StorageWriteError as err:
            return str(err)
        return None


def _create_table(engine: sqlalchemy.Engine) -> None:
    """The lease table, with the columns added since its first release (an older storage's
    table gains them); holders that start together each try, and those that lose use it."""
    try:
        _METADATA.create_all(engine, tables=[_LEASES])
    except sqlalchemy.exc.DBAPIError as err:
        if not created_meanwhile(err):  # else another holder created the table just now
            raise
    present = {c["name"] for c in sqlalchemy.inspect(engine).get_columns(_LEASES.name)}
    for name, kind in _ADDED:
        if name in present:
            continue
        try:
            with engine.begin() as db:
                db.execute(sqlalchemy.text(f"ALTER TABLE {_LEASES.name} ADD COLUMN {name} {kind}"))
        except sqlalchemy.exc.DBAPIError as err:
            if not (created_meanwhile(err) or "duplicate column" in str(err.orig)):
                raise  # else another holder added it just now


def first_line(err: sqlalchemy.exc.SQLAlchemyError) -> str:
    """A database error in one line: the driver's own message, without SQLAlchemy's SQL and
    background link."""
    text = str(getattr(err, "orig", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__
