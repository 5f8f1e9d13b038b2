"""``search launch`` as a program runs the search in a child of its own process group.

A signal sent to the launch's whole process group (a shell's ``kill %1``, ``kill -TERM -PGID``,
a supervisor that signals groups) would otherwise reach Ray's own processes too: the local
raylet and GCS die with the group, and Ray then ends the search with exit 1 (or waits 60 s for
its GCS) before the search can record its stop. Here the group holds this parent alone; it
passes each stop signal to the search once, as a signal to the launch alone is handled (the
trials cut short are recorded, the exit code is 130 or 143), and returns the search's exit code.
Ctrl-Z stops the search's whole group (its Ray too) with this parent, and ``fg``/``bg``
continues it, as when they shared one group. If this parent is killed, the search dies with it
(Linux's parent-death signal), as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SUPERVISED", "child_command", "die_with_parent", "supervise", "supervised"]

#: Set in the child's environment: the parent's pid and its start (``time.monotonic()``).
SUPERVISED = "NPAS_LAUNCH_PARENT"
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


def supervised() -> tuple[int, float] | None:
    """The parent's pid and start when this process is the supervised search, else None.
    Read once and removed from the environment, so that nothing the search starts (Ray's
    processes, a trial's own ``search launch``) takes itself for a supervised search."""
    value = os.environ.pop(SUPERVISED, None)
    if not value:
        return None
    pid, started = value.split()
    return int(pid), float(started)


def supervise(argv: Sequence[str], started: float) -> int | None:
    """Runs ``search *argv`` in a child process group and returns its exit code (128 + N for a
    child ended by signal N); None where a parent-death signal is unavailable (not Linux): the
    caller then runs the command itself."""
    if not sys.platform.startswith("linux"):
        return None
    command, env = child_command(argv, {**os.environ, SUPERVISED: f"{os.getpid()} {started!r}"})
    child = subprocess.Popen(command, env=env, process_group=0)

    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    def suspend(_signum: int, _frame: Any) -> None:  # Ctrl-Z: the search's group, then this
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)

    def resume(_signum: int, _frame: Any) -> None:  # fg, bg or kill -CONT
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGCONT)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    signal.signal(signal.SIGTSTP, suspend)
    signal.signal(signal.SIGCONT, resume)
    code = child.wait()  # a forwarded signal interrupts the wait, which then goes on (PEP 475)
    return 128 - code if code < 0 else code


def child_command(argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """``python -P -m search *argv`` and its environment: ``-P`` keeps the user's working folder
    off the child's ``sys.path`` (``-m`` puts it first, where a ``json.py`` or ``random.py``
    there would replace the standard library's module), as it is off the ``search`` script's.
    Where this process found npas in that folder (``python -m search`` in a source checkout),
    the folder goes on the child's ``PYTHONPATH``: the child runs this very code."""
    env = dict(env)
    root = Path(__file__).resolve().parents[1]
    if not sys.flags.safe_path and sys.path and Path(sys.path[0] or ".").resolve() == root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return [sys.executable, "-P", "-m", "search", *argv], env


def die_with_parent(parent: int) -> None:
    """The supervised search is killed when its parent dies (SIGKILLed: nothing can pass the
    signal on), so that a killed launch leaves no search running; exits at once if the parent
    is already gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(128 + signal.SIGKILL)
