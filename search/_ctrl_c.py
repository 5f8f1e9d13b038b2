"""Ctrl-C that is never lost. Python raises KeyboardInterrupt wherever the main thread is, and
one raised inside a weakref callback or a ``__del__`` (matplotlib's figures have both) is
printed as "Exception ignored" and dropped: ``search report`` then wrote its whole report and
exited 0 after a Ctrl-C. The handler here also records the signal, so that a command checks
it before it publishes what it wrote (:func:`raise_if_interrupted`)."""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["install", "raise_if_interrupted"]

_RECEIVED: list[bool] = []


def install() -> None:
    """Records each Ctrl-C and raises KeyboardInterrupt as Python's own handler does; nothing
    when SIGINT is ignored (a process started in the background keeps ignoring it) or handled
    by someone else already."""
    _RECEIVED.clear()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _RECEIVED.append(True)
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """KeyboardInterrupt when a Ctrl-C arrived, even one dropped where it was raised."""
    if _RECEIVED:
        raise KeyboardInterrupt
