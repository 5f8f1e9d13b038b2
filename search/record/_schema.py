"""Every name the study record is written and read under, declared once with its meaning: a
trial's and a study's attributes in the Optuna storage, the keys of a trial's Ray Tune
result, the names of the metrics the search itself adds, the checkpoint file of a curve
point and the column names of every table of trials.

One name may mean several things: ``constraints`` is a trial user attribute (npas's
violations), Optuna's system attribute (what Optuna's samplers and optuna-dashboard read:
Optuna's own convention, which ``search._compat`` holds and checks) and a study user attribute
(the constraints' names); each meaning has its own constant, so a reader says which one it
reads. No other module of the package spells one of these names
(``tests/search_tests/record/test_schema.py`` checks). Imports nothing: Ray workers, the command
line and the report all read it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "OUTCOMES",
    "TRIAL_STATES",
    "Column",
    "Metric",
    "OptunaAttr",
    "RayKey",
    "StudyAttr",
    "TrialAttr",
    "TrialSystemAttr",
]


class TrialAttr:
    """A trial's user attributes (``trial.user_attrs``), written by the searcher."""

    #: The trial's config as it ran (:class:`search.config.TrialConfig` as a dict).
    CONFIG: Final = "trial_config"
    #: Its learning curve: one dict per epoch (``epoch``, objectives, violation, at chance).
    CURVE: Final = "curve"
    #: Why it failed (a one-line error).
    ERROR: Final = "error"
    #: The folder its artifacts were written to.
    ARTIFACT: Final = "artifact"
    #: True only when it completed and met every constraint.
    FEASIBLE: Final = "feasible"
    #: Its constraints' violations (<= 0: met), in the study's :attr:`StudyAttr.CONSTRAINTS` order.
    CONSTRAINTS: Final = "constraints"
    #: The epoch a multi-fidelity scheduler stopped it at.
    PRUNED_AT: Final = "pruned_at_epoch"
    #: The scheduler's decisions on it, one dict per rung decision.
    DECISIONS: Final = "npas:decisions"
    #: Which point of the config's ``start`` list it trains (0-based).
    START: Final = "npas:start"
    #: That point itself, as the config gave it: a relaunch, whose ``start`` list may differ,
    #: queues only the points no trial trains (``search.record._study.enqueue_start``).
    START_POINT: Final = "npas:start_point"
    #: Why a time limit stopped it (a pruned trial).
    STOPPED: Final = "npas:stopped"
    #: Its Ray Tune trial folder, where its checkpoints are.
    RAY_TRIAL: Final = "npas:ray_trial"
    #: True when the screen refused it before training (``search.config.screen``): recorded
    #: as a refused trial, never sent to Ray Tune, not counted toward ``trials``.
    SCREENED: Final = "npas:screened"
    #: The number of the refused proposal it is, narrowed until the screen passed it
    #: (``search.config.repair``).
    NARROWED: Final = "npas:narrowed_from"
    #: Prefix of the attribute holding one of its metrics (``metric_accuracy``).
    METRIC_PREFIX: Final = "metric_"
    #: The one nested attribute holding every metric, in studies recorded before
    #: :attr:`METRIC_PREFIX`.
    LEGACY_METRICS: Final = "metrics"


class TrialSystemAttr:
    """A trial's system attributes that npas writes (``trial.system_attrs``): notes to the
    optimiser, not results."""

    #: The epoch a rung view modelled when its sampler proposed the trial
    #: (``search.schedulers._rungview``).
    MODELLED_EPOCH: Final = "npas:modelled_epoch"


class OptunaAttr:
    """Optuna's own system attributes of a trial that npas reads (those only Optuna's internals
    define, the constraints samplers read among them, are ``search._compat``'s)."""

    #: Why Optuna failed a trial.
    FAIL_REASON: Final = "fail_reason"


class StudyAttr:
    """A study's user attributes: the search as it was launched and what it spent."""

    #: The search config as first launched (a relaunch must match it).
    CONFIG: Final = "config"
    #: ``[[name, direction], ...]`` of its objectives.
    OBJECTIVES: Final = "objectives"
    #: Its constraints' names, in the order of every trial's :attr:`TrialAttr.CONSTRAINTS`.
    CONSTRAINTS: Final = "constraints"
    #: The optimiser's name.
    OPTIMISER: Final = "optimiser"
    #: The npas version that created it.
    VERSION: Final = "npas_version"
    #: The data each launch ran on, oldest first (``search.record._data_record``).
    DATA: Final = "data_fingerprints"
    #: The totals every launch's trials spent: seconds, joules and grams of CO2.
    TIME_S: Final = "search_time_s"
    ENERGY_J: Final = "search_energy_j"
    CO2_G: Final = "search_co2_g"
    COST: Final = (TIME_S, ENERGY_J, CO2_G)
    #: Where the energy figures come from (``estimate``, a meter's name, ...).
    ENERGY_SOURCE: Final = "search_energy_source"
    #: The finalists' retrained runs (``search.run._finalists``), written after each run so a
    #: relaunch redoes none: ``{"<trial>": {"<seed>": {"accuracy", "feasible", "error",
    #: "time_s"}}}``, validation accuracy only (the test split chooses nothing).
    FINALIST_RUNS: Final = "npas:finalist_runs"
    #: The search's recommendation, the trial ``search export`` writes without ``--select``:
    #: ``trial``, ``mean``/``std``/``n`` of its seeds' validation accuracies, ``reason`` and
    #: every finalist's per-seed accuracies (``search.record._recommendation``).
    RECOMMENDATION: Final = "npas:recommendation"


class Metric:
    """Names in a trial's metrics (the ``run_trial`` dict) that the search itself gives."""

    #: Why a trial was refused before training (the constraints it cannot meet).
    REFUSED: Final = "infeasible_reason"
    #: The flag a trial reports: False when it cannot meet a constraint whatever its training.
    #: Also the name of the constraint every infeasible trial violates (1.0).
    FEASIBLE: Final = "feasible"
    #: The folder the trial wrote its artifacts to.
    ARTIFACT: Final = "artifact"
    #: Prefix of a measurement condition (``cond_device``): kept once per study as a study
    #: user attribute of that name, on a trial only where its value differs.
    CONDITION_PREFIX: Final = "cond_"


class RayKey:
    """Keys of what a trial reports to Ray Tune at each epoch, and of its Ray config."""

    #: The trial's metrics (a dict) in its last report.
    METRICS: Final = "npas_metrics"
    #: Why the trial failed, in its last report.
    ERROR: Final = "npas_error"
    #: The learning-curve point of the epoch (as JSON).
    CURVE: Final = "npas_curve"
    #: Ray Tune's time attribute of an epoch report (what a scheduler's rungs count).
    EPOCH: Final = "epoch"
    #: Total violation of the constraints that can be evaluated at an epoch (<= 0: met).
    VIOLATION: Final = "npas_violation"
    #: 1.0 when the epoch's model is no better than a constant guess at no cost.
    AT_CHANCE: Final = "npas_at_chance"
    #: Key of a trial's Ray config naming the checkpoint folder it resumes from (a relaunched
    #: search's interrupted trial; a trial Ray Tune restores itself has ``tune.get_checkpoint``).
    RESUME: Final = "resume"
    #: Key of a trial's Ray config: its Optuna trial number.
    NUMBER: Final = "number"
    #: Key of a trial's Ray config: its :class:`search.config.TrialConfig`.
    TRIAL_CONFIG: Final = "trial_config"
    #: The file of a checkpoint holding the learning-curve point of its epoch (as JSON).
    POINT_FILE: Final = "npas_point.json"


class Column:
    """Column names of every table of trials: the frame, ``search status``, ``search trials``
    and ``search pareto``, their CSV and JSON, ``trials.csv`` and the report. A metric keeps
    the name ``run_trial`` gave it and a sampled parameter is ``params_<name>``, as in
    Optuna's ``study.trials_dataframe()``; every name is snake_case (no space in a JSON key or
    CSV header)."""

    NUMBER: Final = "number"
    #: The Optuna state name (``COMPLETE``, ``PRUNED``, ``FAIL``, ``RUNNING``, ...).
    STATE: Final = "state"
    #: True only for a completed trial that met every constraint.
    FEASIBLE: Final = "feasible"
    #: Why a completed or refused trial is not feasible: the constraints it missed and by how much.
    WHY_INFEASIBLE: Final = "why_infeasible"
    #: Epochs the trial trained.
    EPOCHS: Final = "epochs"
    DATETIME_COMPLETE: Final = "datetime_complete"
    #: Why the trial failed.
    ERROR: Final = "error"
    #: Columns every frame has, in this order, before the metrics, conditions and parameters.
    FIXED: Final = (NUMBER, STATE, FEASIBLE, WHY_INFEASIBLE, EPOCHS, DATETIME_COMPLETE, ERROR)
    #: Prefix of a sampled parameter's column (Optuna's, in ``study.trials_dataframe()``).
    PARAMS_PREFIX: Final = "params_"
    #: ``search trials``: the trial's outcome (one of :data:`OUTCOMES`) and why.
    OUTCOME: Final = "outcome"
    WHY: Final = "why"


#: The outcome of a trial, as ``search status`` counts them and ``search trials`` lists them,
#: in the order status prints them: each trial has exactly one (``search._trial_list``).
OUTCOMES: Final = (
    "feasible",
    "infeasible",
    "stopped_early",
    "failed",
    "running",
    "paused",
    "waiting",
    "adjourned",
    "interrupted",
)
#: What ``search trials --state`` takes: an outcome, or an Optuna state.
TRIAL_STATES: Final = (*OUTCOMES, "complete", "pruned", "fail")
