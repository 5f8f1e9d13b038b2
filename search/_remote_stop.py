"""Stopping a running search from another shell (``search stop``): the launch that holds the
search's lease is sent SIGTERM, which it takes as Ctrl-C: it stops its trials at their next
epoch, records them (those with a checkpoint go on from it on relaunch) and exits 143. Only a
launch on this machine can be signalled; for another the message says where to stop it."""

from __future__ import annotations

import os
import signal
import socket

from search.config import unknown
from search.record import lease_owner, read_storage
from spaces import ConfigError

__all__ = ["stop_search"]


def stop_search(url: str, name: str) -> str:
    """Signals the launch running search ``name`` to stop; returns what was done.

    Raises:
        ConfigError: no such search, none runs it now, or it runs on another machine.
    """
    storage = read_storage(url)
    names = sorted(s.study_name for s in storage.get_all_studies())
    if name not in names:
        raise unknown("--name", name, names)
    owner = lease_owner(storage.engine, name)
    if owner is None:
        raise ConfigError(f"--name: no launch runs search {name!r} now; nothing to stop")
    host, pid = owner
    if host != socket.gethostname():
        raise ConfigError(
            f"--name: search {name!r} runs on host {host} (pid {pid}), not on this one: stop it "
            f"there (`search stop` on that host, or kill -TERM {pid})"
        )
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        raise ConfigError(f"--name: the launch of {name!r} (pid {pid}) has just ended") from None
    return (f"asked the launch of {name!r} (pid {pid}) to stop: its trials stop at their next "
            "epoch and are recorded; relaunch the same command to go on")  # fmt: skip
