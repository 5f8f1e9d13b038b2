"""A trial whose Ray worker was killed (Ray's memory monitor) is a failed trial with its cause.

Ray Tune's actor manager knows two ways an actor's task can fail: ``RayActorError`` (the actor's
process died: Ray Tune fails the trial and goes on) and ``RayTaskError`` (the trainable raised).
Any other error it raises out of ``tuner.fit()`` ("Caught unexpected exception"). When Ray's
memory monitor kills a worker, Ray ends every task of its actor with ``OutOfMemoryError`` (the
actor's death cause is an ``OomContext``), which is neither: a search stopped with a traceback
and left its running trials RUNNING, whether the worker was killed while its trial ran or while
its actor started (Ray 2.60).

:class:`WorkerDeaths`, entered around ``tuner.fit()``, has Ray Tune take any other Ray system
error of a trial's actor for what it is, the death of that actor, and keeps its cause in one line
while Ray Tune fails the trial, for :class:`~search.run._searcher.NpasSearcher` to record. It
also lets Ray Tune read such a trial's last result when the actor died before its first report
(Ray Tune reads the result its actor filled in at start, and raised the same error there).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

from ray.exceptions import OutOfMemoryError, RayActorError, RayError, RayTaskError

from search._compat import tune_actor_failures

__all__ = ["WorkerDeaths", "WorkerKilled", "as_actor_death", "cause_of"]

#: The lines of Ray's memory-monitor report past what happened: the workers it weighed, a
#: process table, advice.
_DETAILS = re.compile(r"Object store memory|Ray killed|Considered workers|Selected to kill|"
                      r"Total non-selected|To see |Top \d+ memory|Refer to")  # fmt: skip


class WorkerKilled(RayActorError):
    """A trial actor's worker that Ray killed, as the actor death Ray Tune handles."""

    def __init__(self, message: str) -> None:
        super().__init__(error_msg=message)


def as_actor_death(error: Exception) -> Exception:
    """A Ray system error of an actor's task as that actor's death (``WorkerKilled``); any other
    error as it is (a dead actor's ``RayActorError``, a trainable's ``RayTaskError``)."""
    if isinstance(error, RayError) and not isinstance(error, RayActorError | RayTaskError):
        return WorkerKilled(str(error))
    return error


def cause_of(error: Exception, logs: str) -> str | None:
    """Why Ray killed a trial's worker, in one line with where Ray's logs are; None for any other
    failure (recorded as a trial whose process died)."""
    if not isinstance(error, OutOfMemoryError):
        return None
    lines = []
    for line in str(error).splitlines():
        if _DETAILS.match(line):
            break
        line = " ".join(line.split())
        lines.append(line if line.endswith(".") or not line else f"{line}.")
    said = " ".join(filter(None, lines)) or "no details."
    return (
        f"killed by Ray's memory monitor (out of memory): {said} (Ray's report: raylet.out "
        f"under {logs})"
    )


class WorkerDeaths:
    """While entered: Ray Tune fails the trial of an actor whose worker Ray killed (instead of
    raising out of ``tuner.fit()``), and :attr:`cause` says why while Ray Tune handles that
    failure (None at any other time).

    Ray Tune reports a failed trial to its searcher inside that handling, in the same thread, so
    the searcher reads :attr:`cause` there. Ray Tune's hooks are private: ``search._compat``
    holds them.

    Args:
        logs: The folder of Ray's logs on the node that ran the trials (``raylet.out`` there
            holds the memory monitor's report).
    """

    def __init__(self, logs: str) -> None:
        self.logs = logs
        self.cause: str | None = None
        self._hooks: contextlib.ExitStack | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Without Ray Tune's hooks (entered, they hold a generator): Ray Tune pickles the
        searcher that holds this."""
        return {**self.__dict__, "_hooks": None}

    def __enter__(self) -> WorkerDeaths:
        self._hooks = contextlib.ExitStack()
        self._hooks.enter_context(tune_actor_failures(self._failed))
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._hooks is not None:
            self._hooks.close()
            self._hooks = None

    def _failed(self, proceed: Callable[[Exception], Any], exception: Exception) -> Any:
        """An actor's failed start or task, handled as that actor's death, with its cause."""
        self.cause = cause_of(exception, self.logs)
        try:
            return proceed(as_actor_death(exception))
        finally:
            self.cause = None
