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
"""

from __future__ import annotations

import datetime
import os
import socket
import threading
import uuid

import sqlalchemy

from search.errors import SearchLocked
from search.run._storage import created_meanwhile

__all__ = ["Lease", "lease_holder"]

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
)
#: Seconds without a heartbeat after which a lease is free.
TTL_S = 60.0
#: Seconds between heartbeats.
BEAT_S = 10.0


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _alive(row: sqlalchemy.Row, ttl_s: float) -> bool:
    """A lease is held while its heartbeat is recent and, on this host, its process lives."""
    if (_now() - row.heartbeat).total_seconds() > ttl_s:
        return False
    if row.host == socket.gethostname():
        try:
            os.kill(row.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's live process
            return True
    return True


def lease_holder(
    engine: sqlalchemy.Engine, study_name: str, *, ttl_s: float = TTL_S
) -> str | None:
    """Who runs the search now (``host pid N since T``), or None; reads only, creates nothing."""
    if not sqlalchemy.inspect(engine).has_table(_LEASES.name):
        return None
    with engine.connect() as db:
        row = db.execute(
            sqlalchemy.select(_LEASES).where(_LEASES.c.study_name == study_name)
        ).one_or_none()
    return None if row is None or not _alive(row, ttl_s) else _describe(row)


def _describe(row: sqlalchemy.Row) -> str:
    since = row.since.replace(microsecond=0).isoformat(sep=" ")
    return f"host {row.host} pid {row.pid} since {since} UTC"


class Lease:
    """The lease of one search in one storage, held by this process while it launches.

    Args:
        engine: The storage's SQLAlchemy engine.
        study_name: The search.
        ttl_s: Seconds without a heartbeat after which the lease is free.
        beat_s: Seconds between heartbeats.
    """

    def __init__(
        self,
        engine: sqlalchemy.Engine,
        study_name: str,
        *,
        ttl_s: float = TTL_S,
        beat_s: float = BEAT_S,
    ) -> None:
        self.engine = engine
        self.study_name = study_name
        self.ttl_s = ttl_s
        self.beat_s = beat_s
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Takes the lease and starts the heartbeat.

        Raises:
            SearchLocked: another live launch holds it; the message names it.
        """
        try:
            _METADATA.create_all(self.engine, tables=[_LEASES])
        except sqlalchemy.exc.DBAPIError as err:
            if not created_meanwhile(err):  # else another launch created the table just now
                raise
        now = _now()
        row = {
            "study_name": self.study_name,
            "owner": self.owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "since": now,
            "heartbeat": now,
        }
        while not (self._insert(row) or self._take_over(row)):
            pass  # the lease changed hands meanwhile: look again
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
            if not _alive(held, self.ttl_s):
                taken = db.execute(
                    _LEASES.update()
                    .where(_LEASES.c.study_name == self.study_name, _LEASES.c.owner == held.owner)
                    .values(**row)
                ).rowcount
                return taken == 1
        raise SearchLocked(
            f"search {self.study_name!r} is being launched by {_describe(held)} (heartbeat "
            f"{(_now() - held.heartbeat).total_seconds():.0f} s ago): one launch of a search "
            "at a time. Wait for it to end or stop it; a crashed launch frees the search once "
            f"its process is gone, or {self.ttl_s:.0f} s after its last heartbeat"
        )

    def _beat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                with self.engine.begin() as db:
                    db.execute(
                        _LEASES.update()
                        .where(_LEASES.c.study_name == self.study_name)
                        .where(_LEASES.c.owner == self.owner)
                        .values(heartbeat=_now())
                    )
            except sqlalchemy.exc.SQLAlchemyError:  # the storage's own writes will say so
                continue

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
            with self.engine.begin() as db:
                db.execute(
                    _LEASES.delete().where(
                        _LEASES.c.study_name == self.study_name, _LEASES.c.owner == self.owner
                    )
                )
        except sqlalchemy.exc.SQLAlchemyError as err:
            return first_line(err)
        return None


def first_line(err: sqlalchemy.exc.SQLAlchemyError) -> str:
    """A database error in one line: the driver's own message, without SQLAlchemy's SQL and
    background link."""
    text = str(getattr(err, "orig", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__
