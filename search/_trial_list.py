"""Each trial's outcome as ``search status`` counts it, and the list of trials ``search trials``
prints: number, outcome, epochs, the sampled hyper-parameters, the objectives, and why it
ended where it did not simply complete (its error, the constraints it missed and by how much,
or why it was stopped)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import optuna
import pandas as pd

from search.pareto._columns import (
    ERROR,
    FEASIBLE,
    NUMBER,
    OUTCOMES,
    PARAMS_PREFIX,
    STATE,
)
from search.pareto._frame import frame_of
from search.run._counting import INTERRUPTED
from search.run._records import read_study
from search.run._trial_attrs import REFUSED_KEY, STOPPED_KEY

__all__ = ["outcomes", "trial_list"]

def outcomes(
    frame: pd.DataFrame, *, live: bool = True, resumable: Collection[int] = ()
) -> pd.Series:
    """Each trial's outcome (:data:`~search.pareto._columns.OUTCOMES`): completed within the
    constraints (feasible), completed outside them or refused untrained (infeasible), stopped
    early by the scheduler, failed, running, waiting, adjourned, interrupted.

    With no live launch nothing runs: a RUNNING trial in ``resumable`` (it has a checkpoint, as
    one the search's time stopped does) is adjourned, since a relaunch goes on with it; any
    other was cut short (interrupted), since a relaunch runs another in its place.
    """
    state = frame[STATE]
    complete = state == "COMPLETE"
    errors = frame[ERROR] if ERROR in frame.columns else pd.Series("", index=frame.index)
    running = state == "RUNNING"
    cut = (state == "FAIL") & (errors.fillna("") == INTERRUPTED)
    refused = frame[REFUSED_KEY].notna() if REFUSED_KEY in frame.columns else complete & False
    pruned = state == "PRUNED"
    feasible = frame[FEASIBLE].astype(bool)
    adjourned = running & False
    if not live:
        adjourned = running & frame[NUMBER].isin(list(resumable))
        cut |= running & ~adjourned
        running &= False
    masks = (
        complete & feasible,
        (complete & ~feasible) | (pruned & refused),
        pruned & ~refused,
        (state == "FAIL") & ~cut,
        running,
        state == "WAITING",
        adjourned,
        cut,
    )
    return pd.Series(
        np.select(list(masks), list(OUTCOMES), default="other"), index=frame.index, dtype=object
    )


def trial_list(
    study: optuna.Study,
    objectives: Sequence[str],
    *,
    live: bool = True,
    resumable: Collection[int] = (),
    state: str | None = None,
) -> pd.DataFrame:
    """One row per trial: ``number``, Optuna's ``state``, the ``outcome`` ``search status``
    counts it under, ``epochs``, each sampled hyper-parameter (by its name), each objective,
    and ``why``: the error of a failed trial, the constraints an infeasible one missed and by
    how much, or why a stopped one was stopped. ``state``: only the trials with this outcome,
    or this Optuna state (:data:`~search.pareto._columns.TRIAL_STATES`)."""
    records = sorted(read_study(study).trials, key=lambda r: r.number)
    frame = frame_of(records)
    stopped = {t.number: t.user_attrs.get(STOPPED_KEY) for t in study.get_trials(deepcopy=False)}
    listed = pd.DataFrame({NUMBER: frame[NUMBER], STATE: frame[STATE],
                           "outcome": outcomes(frame, live=live, resumable=resumable),
                           "epochs": frame["epochs"]})  # fmt: skip
    for column in frame.columns:
        if str(column).startswith(PARAMS_PREFIX):
            listed[str(column).removeprefix(PARAMS_PREFIX)] = frame[column]
    for name in objectives:
        listed[name] = frame[name] if name in frame.columns else np.nan
    why = [r.error or r.why_infeasible or stopped.get(r.number) for r in records]
    outcome = listed["outcome"]
    listed["why"] = [None if o == "feasible" else w for o, w in zip(outcome, why, strict=True)]
    if state is not None:
        listed = listed[outcome == state if state in OUTCOMES else listed[STATE] == state.upper()]
    return listed.reset_index(drop=True)
