"""Trials written through search.record._writer as ``launch`` records them, and read back
field by field through a fresh ``RDBStorage`` (record/test_writer.py, record/test_postgres.py)."""

from __future__ import annotations

import math

import optuna
from optuna.trial import FrozenTrial, TrialState

from search.record._records import record_metrics
from search.record._storage import open_storage
from search.record._study import open_study
from search.record._writer import StudyWriter, in_memory_copy

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
#: What a trial read back must have as it was written.
FIELDS = ("number", "state", "params", "distributions", "values", "user_attrs", "system_attrs",
          "datetime_start", "datetime_complete")  # fmt: skip


def fields(trial: FrozenTrial) -> dict:
    """The FIELDS of ``trial``."""
    return {name: getattr(trial, name) for name in FIELDS}


def stored_trials(url: str, name: str = "s") -> list[FrozenTrial]:
    """The trials of study ``name`` in ``url``, read through a fresh ``RDBStorage``."""
    return optuna.load_study(study_name=name, storage=optuna.storages.RDBStorage(url)).trials


def open_writer(
    url: str, sampler: optuna.samplers.BaseSampler
) -> tuple[optuna.Study, StudyWriter]:
    """Study "s" opened in ``url`` as launch opens it: its in-memory copy, and its writer."""
    storage = open_storage(url)
    study = open_study(
        name="s",
        storage=storage,
        sampler=optuna.samplers.RandomSampler(),
        config={"name": "s"},
        objectives=OBJECTIVES,
        constraints=["params <= 50"],
        optimiser="nsga2",
    )
    return in_memory_copy(study, sampler), StudyWriter(storage, "s")


def write_trials(memory: optuna.Study, writer: StudyWriter, n: int) -> None:
    """n trials as launch records them, two at a time, every kind of ending."""
    live: list[optuna.Trial] = []
    for i in range(len(memory.trials), len(memory.trials) + n):
        trial = memory.ask()
        width = trial.suggest_int("width", 4, 64, log=True)
        trial.suggest_float("lr", 1e-3, 1.0, log=True)
        trial.suggest_categorical("act", ["relu", "gelu", None])
        trial.set_user_attr("trial_config", {"width": width, "nested": [1, {"a": None}], "n": i})
        writer.started(memory._storage.get_trial(trial._trial_id))
        live.append(trial)
        if len(live) == 2 or i == n - 1:
            for done in live[::-1]:  # the later trial ends first
                finish_trial(memory, writer, done)
            live = []


def finish_trial(memory: optuna.Study, writer: StudyWriter, trial: optuna.Trial) -> None:
    """Ends ``trial`` by its number: feasible, infeasible (infinite values) or failed."""
    kind = trial.number % 3
    if kind == 2:
        trial.set_user_attr("error", "ValueError: boom")
        memory.tell(trial, state=TrialState.FAIL)
    else:
        feasible = kind == 0
        metrics = {"accuracy": 0.5, "params": 10.0 * trial.number, "cond_device": "cpu",
                   "cond_measure_s": 0.1 * trial.number}  # fmt: skip
        record_metrics(trial, metrics)  # new conditions go to the study
        trial.set_user_attr("feasible", feasible)
        trial.set_constraint("params <= 50", -1.0 if feasible else 7.5)
        trial.set_constraint("feasible", 0.0 if feasible else 1.0)
        values = [0.5 + trial.number / 100, 10.0] if feasible else [-math.inf, math.inf]
        memory.tell(trial, values)
    writer.finished(memory._storage.get_trial(trial._trial_id), memory.user_attrs)
