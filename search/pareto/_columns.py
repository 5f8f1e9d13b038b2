"""The column names of every table of trials: the frame, ``search status`` and ``search
pareto``, their CSV and JSON, ``trials.csv`` and the report. Declared here once, so a column
has one name wherever it appears; light (no pandas, no torch) for the command line.

A metric keeps the name ``run_trial`` gave it (``accuracy``, ``params``, ``cond_device``) and
a sampled parameter is ``params_<name>``, as in Optuna's ``study.trials_dataframe()``. Every
name is snake_case: a JSON key or CSV header never holds a space.
"""

from __future__ import annotations

__all__ = [
    "DATETIME_COMPLETE",
    "EPOCHS",
    "ERROR",
    "FEASIBLE",
    "FIXED_COLUMNS",
    "NUMBER",
    "OUTCOMES",
    "PARAMS_PREFIX",
    "STATE",
    "TRIAL_STATES",
    "WHY_INFEASIBLE",
]

NUMBER = "number"
#: The Optuna state name (``COMPLETE``, ``PRUNED``, ``FAIL``, ``RUNNING``, ...).
STATE = "state"
#: True only for a completed trial that met every constraint.
FEASIBLE = "feasible"
#: Why a completed or refused trial is not feasible: the constraints it missed and by how much.
WHY_INFEASIBLE = "why_infeasible"
#: Epochs the trial trained.
EPOCHS = "epochs"
DATETIME_COMPLETE = "datetime_complete"
#: Why the trial failed.
ERROR = "error"
#: Columns every frame has, in this order, before the metrics, conditions and parameters.
FIXED_COLUMNS = (NUMBER, STATE, FEASIBLE, WHY_INFEASIBLE, EPOCHS, DATETIME_COMPLETE, ERROR)
#: Prefix of a sampled parameter's column (Optuna's, in ``study.trials_dataframe()``).
PARAMS_PREFIX = "params_"

#: The outcome of a trial, as ``search status`` counts them and ``search trials`` lists them,
#: in the order status prints them: each trial has exactly one (``search._trial_list``).
OUTCOMES = (
    "feasible",
    "infeasible",
    "stopped_early",
    "failed",
    "running",
    "waiting",
    "adjourned",
    "interrupted",
)
#: What ``search trials --state`` takes: an outcome, or an Optuna state.
TRIAL_STATES = (*OUTCOMES, "complete", "pruned", "fail")
