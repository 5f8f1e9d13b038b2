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

from search.errors import SearchInterrupted
from search.record import fail_interrupted, resumable, trials_counted

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["STOP_GRACE_S", "interrupted", "sigint_kept", "sigterm_as_sigint"]

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
        if "signum" not in received:
            received["signum"] = signum
            received["timer"] = threading.Timer(STOP_GRACE_S, stuck, args=(signum,))
            received["timer"].daemon = True
            received["timer"].start()
        signal.raise_signal(signal.SIGINT)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


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
    return SearchInterrupted(
        f"search {config.name!r} stopped by {signal.Signals(signum).name} after {ended} of "
        f"{config.trials} trials; "
        f"{len(cut)} trial(s) cut short {cut} are recorded as interrupted and run again, and "
        f"{len(kept)} {kept} go on from their last checkpoints, when you relaunch the same "
        "command, which resumes the search",
        signum=signum,
    )
