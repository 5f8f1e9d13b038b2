"""A SIGTERM after a launch's stop is that stop's. The launch's own handlers hold a second
SIGTERM while the search ends (``search.run._interrupts``), but a command goes on after them
(a Ray it started early stopped, its ``interrupted:`` line printed), and a SIGTERM there killed
it without that line. Light: ``search launch`` enters it before torch and Ray load."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["hold_later_sigterms", "later_sigterms_held", "stop_taken"]

_TAKEN: list[int] = []


def stop_taken(signum: int) -> None:
    """Records that the search running in this process took a stop signal."""
    _TAKEN.append(signum)


class _Late:
    """The handler: nothing once a stop was taken, else what ``before`` does."""

    def __init__(self, before: Any) -> None:
        self.before = before

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if _TAKEN:
            return
        if callable(self.before):
            self.before(signum, frame)
        elif self.before != signal.SIG_IGN:  # the default: end as by the signal itself
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


_HELD: list[_Late] = []


@contextlib.contextmanager
def later_sigterms_held() -> Iterator[None]:
    """Around a whole ``search launch``: once the search has taken a stop signal
    (:func:`stop_taken`), a later SIGTERM is ignored until the command has ended; before
    that, a SIGTERM does what it did before (by default, ends the process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _TAKEN.clear()
    late = _Late(signal.signal(signal.SIGTERM, signal.SIG_DFL))
    signal.signal(signal.SIGTERM, late)
    _HELD.append(late)
    try:
        yield
    finally:
        _HELD.remove(late)
        signal.signal(signal.SIGTERM, late.before)


def hold_later_sigterms() -> None:
    """Puts the handler of :func:`later_sigterms_held` back where one was installed over it
    since (``ray.init``'s, which ends the process at any SIGTERM): that one becomes what it
    does before a stop."""
    if not _HELD or threading.current_thread() is not threading.main_thread():
        return
    late, current = _HELD[-1], signal.getsignal(signal.SIGTERM)
    if current is not late:
        late.before = current
        signal.signal(signal.SIGTERM, late)
