"""Stopping a search: Ctrl-C and SIGTERM stop it as Ray Tune's own SIGINT handling does, the
trials it cut short are marked interrupted (run again on relaunch) or kept with their
checkpoints (continued), and the error says which."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from search._stop_signals import stop_taken
from search.errors import SearchInterrupted
from search.record import fail_interrupted, resumable, trials_counted

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = [
    "STOP_GRACE_S",
    "SigtermHeld",
    "StopRequested",
    "interrupted",
    "ray_exit",
    "sigint_kept",
    "sigterm_as_sigint",
]

#: Seconds a stopped search has to end cleanly before it ends itself (see sigterm_as_sigint).
STOP_GRACE_S = 10.0


@contextlib.contextmanager
def sigterm_as_sigint(received: dict[str, Any], stuck: Callable[[int], None]) -> Iterator[None]:
    """SIGTERM stops the search as Ctrl-C does (Ray Tune's own SIGINT handling: the trials cut
    short are marked and the search can resume), instead of Ray aborting with a stack dump;
    ``received["signum"]`` is set. A stop that has not ended :data:`STOP_GRACE_S` later calls
    ``stuck(signum)``, unless the caller cancels ``received["timer"]`` once it has: a SIGTERM
    to the whole process group stops the local Ray's own processes too (Ray blocks only SIGINT
    in them), and Ray then waits 60 s for its GCS."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        if _first(received, stuck, signum):  # a second one: the stop is under way already
            signal.raise_signal(signal.SIGINT)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _first(received: dict[str, Any], stuck: Callable[[int], None], signum: int) -> bool:
    """Records the first stop signal and starts its grace timer; False for any later one."""
    if "signum" in received:
        return False
    stop_taken(signum)
    received["signum"] = signum
    received["timer"] = threading.Timer(STOP_GRACE_S, stuck, args=(signum,))
    received["timer"].daemon = True
    received["timer"].start()
    return True


class StopRequested(BaseException):
    """A SIGTERM outside Ray Tune's run (Ray starting, the search's end being recorded):
    raised where the launch is, so that it stops as for a SIGTERM during the run (a
    BaseException: no ``except Exception`` on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def ray_exit(err: SystemExit) -> bool:
    """Whether ``err`` is Ray's own SIGTERM handler ending the program (``ray.init`` installs
    one that calls ``sys.exit(signum)``, in force while Ray starts and until npas's own is
    put back): a SIGTERM the launch takes as a stop, not an exit with code 15."""
    return err.code == signal.SIGTERM


class SigtermHeld:
    """npas's SIGTERM handler for all a launch does with Ray, outside
    :func:`sigterm_as_sigint`'s window (installed when made, the one before put back by
    :meth:`restore`): the first SIGTERM raises :class:`StopRequested` (its grace timer
    started, as in the window), a later one is ignored (the stop is under way). ``ray.init``
    installs its own (``sys.exit(signum)``: an exit with code 15 and no summary, where 143
    and the summary are documented): :meth:`hold` puts npas's back."""

    def __init__(self, received: dict[str, Any], stuck: Callable[[int], None]) -> None:
        self._received, self._stuck = received, stuck
        self._main = threading.current_thread() is threading.main_thread()
        self._ending = False
        self._before = signal.signal(signal.SIGTERM, self._stop) if self._main else None

    def _stop(self, signum: int, _frame: Any) -> None:
        if _first(self._received, self._stuck, signum) and not self._ending:
            raise StopRequested(signum)

    def hold(self) -> None:
        if self._main:
            signal.signal(signal.SIGTERM, self._stop)

    def ending(self) -> None:
        """From now on a SIGTERM raises nothing (Ray is being shut down, the launch ends
        anyway; its grace timer still bounds the end)."""
        self._ending = True

    def restore(self) -> None:
        if self._main and self._before is not None:
            signal.signal(signal.SIGTERM, self._before)


@contextlib.contextmanager
def sigint_kept() -> Iterator[None]:
    """Ctrl-C means what it meant before the search: Ray Tune's fit() installs its own
    SIGINT handler and restores the caller's only when a SIGINT arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def interrupted(
    study: optuna.Study, config: SearchConfig, signum: int = signal.SIGINT
) -> SearchInterrupted:
    """Marks the trials a stop cut short as interrupted (they run again on relaunch), except
    those with a checkpoint (a relaunch continues them from it)."""
    cut = fail_interrupted(study, resumable)
    kept = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    ended = trials_counted(study)
    said = []
    if cut:
        said.append(f"trial(s) {cut} were cut short: recorded as interrupted, they run again")
    if kept:
        said.append(f"trial(s) {kept} go on from their last checkpoints")
    fates = "; ".join(said) if said else "no trial was cut short"
    return SearchInterrupted(
        f"search {config.name!r} stopped by {signal.Signals(signum).name} after {ended} of "
        f"{config.trials} trials; {fates}; relaunch the same command to resume the search",
        signum=signum,
    )
