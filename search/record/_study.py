"""The study of a search: created, or loaded and checked when a search is relaunched, and the
study-wide records (metric names, what every launch spent).

Conventions: one study per search name; directions and metric names from the objectives; study
user attrs ``config``, ``objectives``, ``constraints``, ``optimiser``, ``npas_version``, the
search's cost (``StudyAttr.COST``), the trials' measurement conditions ``cond_*`` and the data's
fingerprints (``data_fingerprints``, :mod:`search.record._data_record`). What each trial holds is
said in :mod:`search.run._outcome`.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from search._compat import enqueued_params, storage_of, trial_id_of
from search.config import RENAMED_KEYS
from search.errors import ConfigError
from search.record._counting import INTERRUPTED
from search.record._data_record import DataCheck, record_data
from search.record._schema import StudyAttr, TrialAttr

__all__ = [
    "enqueue_start",
    "fail_interrupted",
    "open_study",
    "record_cost",
    "set_metric_names",
]

#: Config keys that may change between launches of one search (how much and where it runs,
#: what it logs to, whether proposals are screened before they start, or narrowed, and its
#: finalists).
_MAY_CHANGE = frozenset(
    {"trials", "storage", "address", "out", "name", "resources", "limits", "start", "loggers",
     "screen", "repair", "finalists"}
)  # fmt: skip


def _npas_version() -> str:
    try:
        return metadata.version("npas")
    except metadata.PackageNotFoundError:
        return "unknown"


def _comparable(config: Mapping[str, Any]) -> dict[str, Any]:
    named = {RENAMED_KEYS.get(k, k): v for k, v in config.items()}  # stored before a rename
    return {k: v for k, v in named.items() if k not in _MAY_CHANGE}


def open_study(
    *,
    name: str,
    storage: optuna.storages.BaseStorage,
    sampler: optuna.samplers.BaseSampler,
    config: Mapping[str, Any],
    objectives: Sequence[tuple[str, str]],
    constraints: Sequence[str],
    optimiser: str,
    resumable: Callable[[FrozenTrial], bool] | None = None,
    data: DataCheck | None = None,
) -> optuna.Study:
    """Creates the study of a search, or loads it to resume after checking it is the same search.

    A loaded study's RUNNING trials belong to a search that was killed: they are marked FAIL
    with the error ``interrupted`` (:func:`fail_interrupted`), except those ``resumable``
    says a relaunch continues from their checkpoints.

    Args:
        name: The search (study) name.
        storage: Where it is recorded.
        sampler: The sampler of the study object returned.
        config: ``SearchConfig.to_dict()``, stored to check later launches against.
        objectives: ``(name, direction)`` per objective.
        constraints: The constraint expressions.
        optimiser: The optimiser's registry name.
        resumable: Which RUNNING trials of a loaded study stay RUNNING (to be resumed).
        data: The data's fingerprint, recorded (:func:`search.record._data_record.record_data`);
            when the data changed, no RUNNING trial is resumed from its checkpoint.

    Raises:
        ConfigError: the stored search has other objectives or another config (except for
            how many trials, where and how it runs), or ran on other data and ``data`` does
            not say they changed; the message lists what differs.
    """
    plain = json.loads(json.dumps(dict(config), default=str))
    study = optuna.create_study(
        storage=storage,
        sampler=sampler,
        study_name=name,
        directions=[StudyDirection[d.upper()] for _, d in objectives],
        load_if_exists=True,
    )
    stored = study.user_attrs
    if "objectives" not in stored:  # a new study
        set_metric_names(study, [n for n, _ in objectives])
        study.set_user_attr(StudyAttr.CONFIG, plain)
        study.set_user_attr(StudyAttr.OBJECTIVES, [[n, d] for n, d in objectives])
        study.set_user_attr(StudyAttr.CONSTRAINTS, list(constraints))
        study.set_user_attr(StudyAttr.OPTIMISER, optimiser)
        study.set_user_attr(StudyAttr.VERSION, _npas_version())
        if data is not None:
            record_data(study, data)
        return study
    check_same_search(name, stored, plain, objectives)
    changed = data is not None and record_data(study, data)
    fail_interrupted(study, None if changed else resumable)  # old data's checkpoints: not resumed
    return study


def enqueue_start(study: optuna.Study, points: Sequence[Mapping[str, Any]]) -> int:
    """Queues the start points that no trial of ``study`` has trained or is training, and
    returns how many: Optuna's ``ask`` hands queued points out first, whatever the algorithm.
    A relaunch queues only the points added since, and again those whose trial failed (an
    interrupted one among them); each queued trial carries its index and its point
    (``TrialAttr.START``, ``TrialAttr.START_POINT``)."""
    taken = [
        _start_point(t) for t in study.get_trials(deepcopy=False) if t.state != TrialState.FAIL
    ]
    queued = 0
    for i, point in enumerate(points):
        if dict(point) not in taken:
            attrs = {TrialAttr.START: i, TrialAttr.START_POINT: dict(point)}
            study.enqueue_trial(dict(point), user_attrs=attrs)
            queued += 1
    return queued


def _start_point(trial: FrozenTrial) -> dict[str, Any] | None:
    """The start point ``trial`` trains, or None; a study recorded before npas kept the point
    (``TrialAttr.START_POINT``) has it only where Optuna's ``enqueue_trial`` put it."""
    if TrialAttr.START_POINT in trial.user_attrs:
        return trial.user_attrs[TrialAttr.START_POINT]
    return enqueued_params(trial) if TrialAttr.START in trial.user_attrs else None


def set_metric_names(study: optuna.Study, names: Sequence[str]) -> None:
    """``study.set_metric_names``, without its experimental warning (still one in Optuna 5)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(list(names))


def check_same_search(
    name: str, stored: Mapping[str, Any], config: Mapping[str, Any], objectives: Sequence[Any]
) -> None:
    """Refuses a relaunch of the search recorded with user attributes ``stored`` under other
    objectives or another ``config`` (``SearchConfig.to_dict()``; trials, where and how it runs
    may change), naming each key that differs.

    Raises:
        ConfigError: they differ.
    """
    config = json.loads(json.dumps(dict(config), default=str))
    wanted = [[n, d] for n, d in objectives]
    if stored.get("objectives") != wanted:
        raise ConfigError(
            f"search {name!r} already exists in this storage with objectives "
            f"{stored.get('objectives')}, not {wanted}: launch it under another --name (or "
            "another storage) instead of mixing the two"
        )
    differ = _differences(_comparable(stored.get("config") or {}), _comparable(config))
    if differ:
        details = "; ".join(f"{k}: {before!r} → {now!r}" for k, before, now in differ)
        raise ConfigError(
            f"search {name!r} already exists in this storage with a different config ({details})"
            ": relaunching resumes a search only with the same config (trials, resources, "
            "storage, address and out may change); use another --name for a new search"
        )


_MISSING = "(not set)"


def _differences(
    old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = ""
) -> list[tuple[str, Any, Any]]:
    """``(dotted key, stored value, new value)`` of every leaf that differs, in key order: a
    changed bound reads ``space.conv1d.width.high: 24 → 32``, not the two whole spaces."""
    out = []
    for key in sorted(old.keys() | new.keys(), key=str):
        before, now = old.get(key, _MISSING), new.get(key, _MISSING)
        if before == now:
            continue
        if isinstance(before, Mapping) and isinstance(now, Mapping):
            out += _differences(before, now, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", before, now))
    return out


def fail_interrupted(
    study: optuna.Study, resumable: Callable[[FrozenTrial], bool] | None = None
) -> list[int]:
    """Marks the RUNNING trials of a killed search FAIL (``error`` = interrupted), except
    those ``resumable`` says a relaunch resumes from their checkpoints (left RUNNING).

    Returns:
        The numbers of the trials marked.
    """
    numbers = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if resumable is not None and resumable(trial):
            continue
        # Optuna has no public by-number setter of user attrs; the storage's API is public.
        storage_of(study).set_trial_user_attr(
            trial_id_of(study, trial.number), TrialAttr.ERROR, INTERRUPTED
        )
        study.tell(trial.number, state=TrialState.FAIL)
        numbers.append(trial.number)
    return numbers


def record_cost(
    study: optuna.Study, cost: Any, write: Callable[[Mapping[str, Any]], None] | None = None
) -> None:
    """Adds a launch's time, energy and CO2 to the study's totals (study user attributes),
    with where the energy figures come from, in one write: ``write`` (a launch's
    ``StudyWriter.study_attrs``, held by its lease, so that a launch paused past its lease
    adds nothing once another took the search over), else the study's own
    ``set_user_attr``."""
    stored = study.user_attrs
    spent = (cost.elapsed_s, cost.energy_j, cost.co2_g)
    totals: dict[str, Any] = {
        key: float(stored.get(key, 0.0)) + float(value)
        for key, value in zip(StudyAttr.COST, spent, strict=True)
    }
    sources = sorted(set(stored.get(StudyAttr.ENERGY_SOURCE, [])) | cost.sources)
    totals[StudyAttr.ENERGY_SOURCE] = sources or ["estimate"]
    (write or functools.partial(set_study_attrs, study))(totals)


def set_study_attrs(study: optuna.Study, values: Mapping[str, Any]) -> None:
    """Study user attributes written by Optuna's own API, one by one (a study no launch's
    writer holds)."""
    for key, value in values.items():
        study.set_user_attr(key, value)
