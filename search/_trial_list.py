"""Each trial's outcome as ``search status`` counts it, and the list of trials ``search trials``
prints: number, outcome, epochs, the sampled hyper-parameters, the objectives, and why it
ended where it did not simply complete (its error, the constraints it missed and by how much,
or why it was stopped)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np
import optuna
import pandas as pd

from search.pareto import frame_of
from search.record import INTERRUPTED, OUTCOMES, Column, Metric, TrialRecord, read_study

__all__ = ["outcomes", "paused", "trial_list"]


def paused(records: Iterable[TrialRecord]) -> list[int]:
    """The RUNNING trials whose last stored decision is a pause: a promotion-type scheduler
    holds them at a rung, with no worker, until they rank among the best there."""
    return [
        r.number
        for r in records
        if r.state == "RUNNING" and r.decisions and r.decisions[-1].get("outcome") == "pause"
    ]


def outcomes(
    frame: pd.DataFrame,
    *,
    live: bool = True,
    resumable: Collection[int] = (),
    held: Collection[int] = (),
) -> pd.Series:
    """Each trial's outcome (:data:`~search.record._schema.OUTCOMES`): completed within the
    constraints (feasible), completed outside them or refused untrained (infeasible), stopped
    early by the scheduler, failed, running, paused (a RUNNING trial in ``held``: see
    :func:`paused`), waiting, adjourned, interrupted.

    With no live launch nothing runs: a RUNNING trial in ``resumable`` (it has a checkpoint, as
    one the search's time stopped does) is adjourned, since a relaunch goes on with it; any
    other was cut short (interrupted), since a relaunch runs another in its place.
    """
    state = frame[Column.STATE]
    complete = state == "COMPLETE"
    empty = pd.Series("", index=frame.index)
    errors = frame[Column.ERROR] if Column.ERROR in frame.columns else empty
    running = state == "RUNNING"
    cut = (state == "FAIL") & (errors.fillna("") == INTERRUPTED)
    refused = complete & False
    if Metric.REFUSED in frame.columns:
        refused = frame[Metric.REFUSED].notna()
    pruned = state == "PRUNED"
    feasible = frame[Column.FEASIBLE].astype(bool)
    adjourned = running & False
    if not live:
        adjourned = running & frame[Column.NUMBER].isin(list(resumable))
        cut |= running & ~adjourned
        running &= False
    pausing = running & frame[Column.NUMBER].isin(list(held))
    masks = (
        complete & feasible,
        (complete & ~feasible) | (pruned & refused),
        pruned & ~refused,
        (state == "FAIL") & ~cut,
        running & ~pausing,
        pausing,
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
    or this Optuna state (:data:`~search.record._schema.TRIAL_STATES`)."""
    records = sorted(read_study(study).trials, key=lambda r: r.number)
    frame = frame_of(records)
    listed = pd.DataFrame({Column.NUMBER: frame[Column.NUMBER], Column.STATE: frame[Column.STATE],
                           Column.OUTCOME: outcomes(frame, live=live, resumable=resumable,
                                                    held=paused(records) if live else ()),
                           Column.EPOCHS: frame[Column.EPOCHS]})  # fmt: skip
    for column in frame.columns:
        if str(column).startswith(Column.PARAMS_PREFIX):
            listed[str(column).removeprefix(Column.PARAMS_PREFIX)] = frame[column]
    for name in objectives:
        listed[name] = frame[name] if name in frame.columns else np.nan
    why = [r.error or r.why_infeasible or r.stopped for r in records]
    outcome = listed[Column.OUTCOME]
    feasible = outcome == "feasible"
    listed[Column.WHY] = [None if f else w for f, w in zip(feasible, why, strict=True)]
    if state is not None:
        kept = outcome == state if state in OUTCOMES else listed[Column.STATE] == state.upper()
        listed = listed[kept]
    return listed.reset_index(drop=True)
