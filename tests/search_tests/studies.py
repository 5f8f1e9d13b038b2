"""Studies written the way ``search launch`` records them, built from rows of metrics.

One helper for every test that needs a study without running a search, so the storage
conventions (search.record._study, search.run._outcome) are spelled once: study user attr
``objectives``; per COMPLETE trial its metrics as ``search.record._records`` stores them
(``legacy=True``: the one nested ``metrics`` attribute of studies recorded before),
``feasible`` and ``constraints``; per FAIL the ``error``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import optuna
import pandas as pd
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from search.pareto._frame import trials_frame
from search.record._records import conditions_of, metric_attrs

optuna.logging.set_verbosity(optuna.logging.WARNING)

#: ``(name, direction)`` per objective.
Objectives = Sequence[Sequence[str]]

ACC_PARAMS = (("accuracy", "maximize"), ("params", "minimize"))

#: Three front trials, one dominated, one infeasible (better than all) and one failed.
ROWS = [
    {"accuracy": 0.90, "params": 4000.0, "latency_ms": 4.0},  # 0 front
    {"accuracy": 0.85, "params": 1000.0, "latency_ms": 1.0},  # 1 front
    {"accuracy": 0.80, "params": 3000.0, "latency_ms": 3.0},  # 2 dominated by 1
    {"accuracy": 0.99, "params": 10.0, "latency_ms": 0.5, "feasible": False},  # 3 infeasible
    {"state": "FAIL"},  # 4 failed
    {"accuracy": 0.88, "params": 2000.0, "latency_ms": 2.5},  # 5 front
]


def npas_study(
    rows: Sequence[Mapping[str, Any]],
    objectives: Objectives = ACC_PARAMS,
    *,
    study: optuna.Study | None = None,
    attrs: Mapping[str, Any] | None = None,
    legacy: bool = False,
) -> optuna.Study:
    """A study holding one trial per row, with the npas storage conventions.

    A row is the trial's metrics plus optional keys: ``state`` (``"COMPLETE"`` or ``"FAIL"``),
    ``feasible`` (default True), ``width`` (the one sampled parameter, default the trial's
    position + 1: every trial a config of its own) and, for a FAIL, ``error``. An objective
    missing from a complete row is recorded as its worst value (±inf), as outcome_of does for
    infeasible trials.

    Args:
        rows: One dict per trial, in trial-number order.
        objectives: ``(name, direction)`` per objective; the values are read from the rows.
        study: Add the trials to this study (e.g. one in SQLite storage) instead of a new
            in-memory one.
        attrs: Extra user attrs of every complete trial (e.g. ``artifact``).
        legacy: Record the metrics the old way, one nested ``metrics`` user attribute.
    """
    if study is None:
        study = optuna.create_study(directions=[d for _, d in objectives])
    study.set_user_attr("objectives", [list(o) for o in objectives])
    dist = {"width": IntDistribution(1, 1000)}
    for i, row in enumerate(rows):
        row = dict(row)
        state = row.pop("state", "COMPLETE")
        feasible = bool(row.pop("feasible", True))
        error = row.pop("error", "NonFiniteLossError: loss is nan")
        width = int(row.pop("width", i + 1))
        if state == "FAIL":
            trial = create_trial(
                state=TrialState.FAIL,
                params={"width": width},
                distributions=dist,
                user_attrs={"error": error},
            )
        else:
            metrics = {**row, "feasible": float(feasible)}
            metrics.setdefault("cond_device", "cpu")
            if legacy:
                stored = {"metrics": metrics}
            else:
                stored, new = metric_attrs(metrics, conditions_of(study))
                for key, value in new.items():
                    study.set_user_attr(key, value)
            worst = {"minimize": math.inf, "maximize": -math.inf}
            trial = create_trial(
                state=TrialState.COMPLETE,
                values=[row.get(n, worst[d]) for n, d in objectives],
                params={"width": width},
                distributions=dist,
                user_attrs={
                    **stored,
                    "feasible": feasible,
                    "constraints": [],
                    **(attrs or {}),
                },
            )
        study.add_trial(trial)
    return study


def stored_study(
    url: str, name: str, rows: Sequence[Mapping[str, Any]], objectives: Objectives = ACC_PARAMS
) -> optuna.Study:
    """:func:`npas_study` in the storage at ``url``, opened as ``search launch`` opens one."""
    from search.record._storage import open_storage
    from search.record._study import open_study

    study = open_study(
        name=name,
        storage=open_storage(url),
        sampler=optuna.samplers.RandomSampler(),
        config={"name": name},
        objectives=objectives,
        constraints=[],
        optimiser="random",
    )
    return npas_study(rows, objectives, study=study)


def npas_frame(
    rows: Sequence[Mapping[str, Any]], objectives: Objectives = ACC_PARAMS
) -> pd.DataFrame:
    """:func:`trials_frame` of :func:`npas_study` ``(rows, objectives)``."""
    return trials_frame(npas_study(rows, objectives))
