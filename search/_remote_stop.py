"""Stopping a running search from another shell (``search stop``): the launch that holds the
search's lease is sent SIGTERM, which it takes as Ctrl-C: it stops its trials at their next
epoch, records them (those with a checkpoint go on from it on relaunch) and exits 143. Only a
launch on this machine can be signalled; for another the message says where to stop it.

Only the launch is ever signalled: the lease names it by pid *and* start time, the process is
pinned by a pidfd (Linux) before its start time is compared, and the signal goes through that
pidfd, so a pid reused by another process after the launch died (or a lease row edited by
hand, or a pid of 0, -1 or 1) is never signalled."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable, Iterator

from search.config import unknown
from search.record import LeaseOwner, lease_owner, read_storage, start_token
from spaces import ConfigError

__all__ = ["stop_search"]


def stop_search(url: str, name: str) -> str:
    """Signals the launch running search ``name`` to stop; returns what was done.

    Raises:
        ConfigError: no such search, none runs it now, it runs on another machine, or the
            process the lease names cannot be confirmed to be that launch.
    """
    storage = read_storage(url)
    names = sorted(s.study_name for s in storage.get_all_studies())
    if name not in names:
        raise unknown("--name", name, names, "search status")
    owner = lease_owner(storage.engine, name)
    if owner is None:
        raise ConfigError(f"--name: no launch runs search {name!r} now; nothing to stop")
    if owner.purpose != "launch":
        raise ConfigError(
            f"--name: search {name!r} is being deleted (`search delete`, pid {owner.pid} on "
            f"host {owner.host}), not launched; nothing to stop"
        )
    if owner.host != socket.gethostname():
        raise ConfigError(
            f"--name: search {name!r} runs on host {owner.host} (pid {owner.pid}), not on this "
            f"one: stop it there (`search stop` on that host, or kill -TERM {owner.pid})"
        )
    _terminate(name, owner)
    return (f"asked the launch of {name!r} (pid {owner.pid}) to stop: its trials stop at their "
            "next epoch and are recorded; relaunch the same command to go on")  # fmt: skip


def _terminate(name: str, owner: LeaseOwner) -> None:
    """SIGTERM to the launch, only once its pid is pinned and its start time is the lease's."""
    pid = owner.pid
    gone = ConfigError(f"--name: the launch of {name!r} (pid {pid}) has just ended")
    if owner.started is None:
        raise ConfigError(
            f"--name: the lease of {name!r} was written by an older npas and names pid {pid} "
            "without its start time, so it cannot be confirmed that pid is the launch; if "
            f"`ps -p {pid} -o args` shows `search launch`, stop it with kill -TERM {pid}"
        )
    try:
        with _pinned(pid) as send:
            now = start_token(pid)
            if now is None:
                raise gone
            if now != owner.started:
                raise ConfigError(
                    f"--name: pid {pid}, named by the lease of {name!r}, is not its launch any "
                    f"more (that process started at {owner.started}, this one at {now}): "
                    "nothing was signalled; the launch has ended, and its lease lapses within "
                    "a minute"
                )
            send(signal.SIGTERM)
    except ProcessLookupError:
        raise gone from None
    except PermissionError:
        raise ConfigError(
            f"--name: the launch of {name!r} (pid {pid}) belongs to another user, whom this "
            "user may not signal: run `search stop` as that user (or as root)"
        ) from None


@contextlib.contextmanager
def _pinned(pid: int) -> Iterator[Callable[[int], None]]:
    """A function that signals process ``pid`` as it was when pinned: through a pidfd where
    the system has them (a pid reused meanwhile then gets nothing), else ``os.kill``.

    Raises:
        ProcessLookupError: no such process (it ended just now).
    """
    if not hasattr(os, "pidfd_open"):
        yield lambda signum: os.kill(pid, signum)
        return
    fd = os.pidfd_open(pid)
    try:
        yield lambda signum: signal.pidfd_send_signal(fd, signum)
    finally:
        os.close(fd)
