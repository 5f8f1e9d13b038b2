"""Which trials count toward a search's ``trials``: those that were started and ended on
their own.

A trial a killed search left RUNNING is marked FAIL with :data:`INTERRUPTED`, and one that
could not save its results on a full disk FAILs with an error starting :data:`DISK_FULL`:
neither counts, and a relaunch runs another in its place. A proposal the screen refused before
training (``search.config.screen``, marked :attr:`TrialAttr.SCREENED`) is recorded as a refused
trial but never started: it does not count either, so ``trials``, a relaunch's "N done, M to
run" and the progress view count trials trained or started.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from search.record._schema import TrialAttr

__all__ = ["DISK_FULL", "INTERRUPTED", "counts", "disk_full", "screened", "trials_counted"]

#: The error recorded on the trials a killed search left RUNNING.
INTERRUPTED = "interrupted: the search stopped before this trial ended"
#: How the error of a trial that could not save its results on a full disk begins: such a
#: trial is not counted toward ``trials`` (relaunching runs another in its place).
DISK_FULL = "the run folder is full"


def disk_full(error: str | None) -> bool:
    """Whether a trial's error is a full disk (ENOSPC, errno 28, as Python or Arrow say it)."""
    text = (error or "").lower()
    return "no space left on device" in text or "[errno 28]" in text


def counts(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether a trial counts toward a search's ``trials``: it ended on its own.

    COMPLETE, PRUNED (stopped early by the scheduler, or refused untrained by the trial) and
    FAIL count; a trial interrupted by a killed search, or one that could not save its results
    on a full disk, does not (it is re-run), nor does a proposal the screen refused (it never
    started).
    """
    if screened(trial):
        return False
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    error = str(trial.user_attrs.get(TrialAttr.ERROR) or "")
    return (
        trial.state == TrialState.FAIL and error != INTERRUPTED and not error.startswith(DISK_FULL)
    )


def screened(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether the screen refused a trial before training (it was never started)."""
    return bool(trial.user_attrs.get(TrialAttr.SCREENED))


def trials_counted(study: optuna.Study) -> int:
    """Trials of a study that count toward ``trials`` (see :func:`counts`)."""
    return sum(counts(t) for t in study.get_trials(deepcopy=False))
