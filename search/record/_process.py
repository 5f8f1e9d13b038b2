"""Which process a pid names: a pid is reused once its process is gone, so a lease records its
holder's start time beside its pid, and nothing is judged alive or signalled on the pid alone
(a dead launch's pid may be a shell's or an editor's by the time ``search stop`` reads it)."""

from __future__ import annotations

import psutil

__all__ = ["PID_MAX", "same_process", "start_token"]

#: Above any pid a system gives (Linux's ceiling is 2**22); a larger one in a lease is garbage.
PID_MAX = 2**31 - 1


def start_token(pid: int) -> str | None:
    """When process ``pid`` started (seconds since the epoch, to the clock tick), or None when
    there is no such process, or the pid cannot name one (≤ 1: ``kill`` reads 0 as its own
    group, -1 as every process, and 1 is init)."""
    if not 1 < pid <= PID_MAX:
        return None
    try:
        return f"{psutil.Process(pid).create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:  # not on Linux, where /proc/N/stat is everyone's to read
        return "?"


def same_process(pid: int, started: str | None) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (None: not recorded,
    by an older npas; then whether any process has that pid)."""
    now = start_token(pid)
    if now is None:
        return False
    return started is None or now == "?" or now == started
