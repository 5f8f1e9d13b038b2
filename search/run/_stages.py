"""Lines for the start-up stages of a launch that keep the user waiting: each says what is
happening once it has taken a second, with the time since the command started, so that a
quick run is never silent for long (a new user once waited 29-59 s with nothing on screen)."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

__all__ = ["SLOW_S", "Stage", "command_start", "count_from", "since_command"]

#: A stage says what it does once it has taken this long (seconds).
SLOW_S = 1.0
#: When the command that launches started (:func:`count_from`), on ``time.monotonic``'s clock.
_command_start: float | None = None


def count_from(moment: float | None) -> None:
    """Counts the elapsed time of the progress and stage lines from ``moment``
    (``time.monotonic()`` at the command's start, so imports and Ray's start-up are included);
    None: from each :class:`search.run._progress.Progress`'s creation."""
    global _command_start
    _command_start = moment


def command_start() -> float | None:
    """When the command started (:func:`count_from`), or None when no command said."""
    return _command_start


def since_command() -> float:
    """Seconds since the command started (0 when no command said)."""
    start = command_start()
    return 0.0 if start is None else time.monotonic() - start


class Stage:
    """``[npas] 1.3 s: starting a local Ray (2 CPUs) …`` on stderr (the time since the command,
    left out where no command said when it started: ``launch()`` called from Python), printed
    once the stage has lasted :data:`SLOW_S`, unless it ended first or ``enabled`` is false.
    A context manager; :meth:`end` may also end it from another thread (a Ray Tune
    callback)."""

    def __init__(self, what: str, *, enabled: bool = True) -> None:
        self.what = what
        self._timer = threading.Timer(SLOW_S, self._say)
        self._timer.daemon = True
        self._enabled = enabled
        self._started = False

    def start(self) -> Stage:
        if self._enabled and not self._started:  # a Ray Tune callback may be set up twice
            self._started = True
            self._timer.start()
        return self

    def end(self) -> None:
        self._timer.cancel()

    def _say(self) -> None:
        when = "" if command_start() is None else f"{since_command():.1f} s: "
        print(f"[npas] {when}{self.what} …", file=sys.stderr, flush=True)

    def __enter__(self) -> Stage:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.end()
