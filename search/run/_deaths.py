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

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

from ray.exceptions import OutOfMemoryError, RayActorError, RayError, RayTaskError

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
    the searcher reads :attr:`cause` there.

    Args:
        logs: The folder of Ray's logs on the node that ran the trials (``raylet.out`` there
            holds the memory monitor's report).
    """

    def __init__(self, logs: str) -> None:
        self.logs = logs
        self.cause: str | None = None
        self._saved: list[tuple[type, str, Callable[..., Any]]] = []

    def __enter__(self) -> WorkerDeaths:
        from ray.air.execution._internal.actor_manager import RayActorManager
        from ray.tune.experiment.trial import Trial

        hooks = {
            (RayActorManager, "_actor_start_failed"): self._failed,
            (RayActorManager, "_actor_task_failed"): self._failed,
            (Trial, "_get_default_result_or_future"): _none_once_dead,
        }
        for (owner, name), hook in hooks.items():
            original = getattr(owner, name, None)
            if original is not None:  # a Ray without it is left as it is
                self._saved.append((owner, name, original))
                setattr(owner, name, hook(original))
        return self

    def __exit__(self, *exc_info: object) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def _failed(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """An actor's failed start or task, handled as that actor's death, with its cause."""
        signature = inspect.signature(original)
        if "exception" not in signature.parameters:  # another Ray: left as it is
            return original

        @functools.wraps(original)
        def failed(*args: Any, **kwargs: Any) -> Any:
            call = signature.bind(*args, **kwargs)  # Ray passes them by keyword
            exception = call.arguments["exception"]
            call.arguments["exception"] = as_actor_death(exception)
            self.cause = cause_of(exception, self.logs)
            try:
                return original(*call.args, **call.kwargs)
            finally:
                self.cause = None

        return failed


def _none_once_dead(original: Callable[..., Any]) -> Callable[..., Any]:
    """A trial's default result (what its actor fills in as it starts), None when the actor died
    first: Ray Tune expects that death as a ``RayActorError``, and reading the last result of a
    trial whose worker Ray killed raised its ``OutOfMemoryError`` (from Ray Tune's callbacks)."""

    @functools.wraps(original)
    def default_result(trial: Any) -> Any:
        try:
            return original(trial)
        except RayError:
            trial._default_result_or_future = None  # Ray Tune's own "no default result"
            return None

    return default_result
