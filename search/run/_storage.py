"""The Optuna storage every search writes to, and how one trial's outcome is recorded there.

Conventions: one study per search name; directions and metric names from the objectives; study
user attrs ``config``, ``objectives``, ``constraints``, ``optimiser``, ``npas_version``, and
the trials' measurement conditions ``cond_*``. Each trial: params = the sampled point, values =
the objective values, user attrs ``trial_config`` (set when the trial starts), the
``run_trial`` dict as ``metric_<name>`` attributes (``search.run._records``: read them with
``metrics_of``), ``constraints`` (violation per constraint, ≤ 0 met), ``feasible``,
``artifact`` and, for a FAIL, ``error``. The constraint values are also the system attribute
``constraints``, one list in the search's order (expressions, then ``feasible``): where
Optuna's samplers and ``study.best_trials`` read them and optuna-dashboard shows them.

A trial's Ray result (``search.run._trainable.report_of``) is read back with :func:`outcome_of`.
"""

from __future__ import annotations

import functools
import json
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import optuna
import sqlalchemy
from optuna.trial import FrozenTrial, TrialState

from search._imports import EXTRAS, require
from search._urls import connect_url, masked_url
from search.config._keys import RENAMED_KEYS
from search.errors import ConfigError, MissingExtraError
from search.run._records import CONSTRAINTS_KEY, metrics_of, record_metrics
from search.run._trainable import (
    CURVE_KEY,
    EPOCH_KEY,
    ERROR_KEY,
    FEASIBLE_KEY,
    METRICS_KEY,
    REFUSED_KEY,
    report_of,
)
from search.run._trainable import is_number as _is_number

__all__ = [
    "ERROR_KEY",
    "FEASIBLE_KEY",
    "INTERRUPTED",
    "METRICS_KEY",
    "EpochPoint",
    "Outcome",
    "counts",
    "created_meanwhile",
    "epoch_values",
    "fail_interrupted",
    "open_storage",
    "open_study",
    "outcome_of",
    "read_storage",
    "record",
    "record_cost",
    "report_of",
    "rung_history",
    "set_metric_names",
]

#: The system attribute holding a trial's constraint values (Optuna's and the dashboard's key,
#: the same name as npas's user attribute, declared once in search.run._records).
CONSTRAINTS_ATTR = CONSTRAINTS_KEY

#: The error recorded on the trials a killed search left RUNNING.
INTERRUPTED = "interrupted: the search stopped before this trial ended"
#: How the error of a trial that could not save its results on a full disk begins: such a
#: trial is not counted toward ``trials`` (relaunching runs another in its place).
DISK_FULL = "the run folder is full"


def disk_full(error: str | None) -> bool:
    """Whether a trial's error is a full disk (ENOSPC, errno 28, as Python or Arrow say it)."""
    text = (error or "").lower()
    return "no space left on device" in text or "[errno 28]" in text

#: Tries to open a new storage that other launches are creating at the same time.
_OPEN_TRIES = 5

#: Config keys that may change between launches of one search (how much and where it runs).
_MAY_CHANGE = frozenset({"trials", "storage", "address", "out", "name", "resources", "limits"})


def open_storage(url: str, *, checked: bool = False) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage for a SQLAlchemy URL.

    SQLite files are switched to write-ahead logging with ``synchronous=NORMAL``: a trial's
    dozen small commits then cost ~5x less (no fsync per commit; a killed process still loses
    nothing committed), readers such as the dashboard do not block the search, and writers
    wait for a lock (60 s) instead of failing. Launches that start together on a new storage
    may all open it (each is retried while another creates Optuna's tables).

    Args:
        url: The storage.
        checked: This process's search opened it a moment ago: skip creating the tables and
            checking the schema version (a second of imports and queries).

    Raises:
        ConfigError: the URL cannot be opened; the message names it.
        MissingExtraError: the URL's driver is one an npas extra installs, and it is not
            installed (``postgresql://``: psycopg, ``npas[postgres]``).
    """
    sqlite = url.startswith("sqlite")
    kwargs = {"connect_args": {"timeout": 60}} if sqlite else None
    try:
        parsed = connect_url(url)
        if parsed.get_driver_name() in EXTRAS:  # psycopg: the postgres extra's driver
            require(parsed.get_driver_name(), purpose=f"storage {masked_url(url)!r}")
        storage = _rdb_storage(parsed.render_as_string(hide_password=False), kwargs, checked)
    except MissingExtraError:
        raise
    except ImportError:  # Optuna's word for SQLAlchemy's missing database driver
        raise ConfigError(
            f"storage {masked_url(url)!r}: its database driver is not installed; for "
            "PostgreSQL: pip install 'npas[postgres]' (psycopg 3, which postgresql://user@host/db "
            "uses)" + ("" if url.startswith("postgresql") else ", else the driver the URL names")
        ) from None
    except Exception as err:  # SQLAlchemy raises many kinds
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be opened ({type(err).__name__}: {err}); give "
            "a SQLAlchemy URL such as sqlite:///runs/npas.db or postgresql://user@host/db"
        ) from None
    if sqlite:
        sqlalchemy.event.listen(storage.engine, "connect", _sqlite_pragmas)
        storage.engine.dispose()  # reconnect with the pragmas
    return storage


def _rdb_storage(
    url: str, engine_kwargs: dict[str, Any] | None, checked: bool
) -> optuna.storages.RDBStorage:
    """``RDBStorage(url)``, opened again while it fails because another process is creating
    the same new storage: Optuna creates its tables and version rows check-then-create, so of
    launches that start together on a new storage all but one would fail."""
    rdb = functools.partial(
        optuna.storages.RDBStorage,
        url,
        engine_kwargs=engine_kwargs,
        skip_compatibility_check=checked,
        skip_table_creation=checked,
    )
    for attempt in range(1, _OPEN_TRIES):
        try:
            return rdb()
        except sqlalchemy.exc.DBAPIError as err:
            if not created_meanwhile(err):
                raise
        time.sleep(0.1 * attempt)
    return rdb()


def created_meanwhile(err: sqlalchemy.exc.DBAPIError) -> bool:
    """Whether a create failed because another process created the same table, type or row
    first: PostgreSQL reports a duplicate key (in its catalog for a table) or object, SQLite
    that the table already exists (its messages are never translated)."""
    duplicate = (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError)
    return isinstance(err, duplicate) or str(err.orig).endswith("already exists")


def read_storage(url: str) -> optuna.storages.RDBStorage:
    """An existing Optuna storage opened for reading: nothing is created or switched in it.

    Raises:
        ConfigError: a SQLite file that does not exist, a database that cannot be opened, or
            one that is not an Optuna storage (its tables are not created then).
    """
    prefix = "sqlite:///"
    if url.startswith(prefix) and url != prefix + ":memory:":
        path = Path(url[len(prefix) :])
        if not path.is_file():
            raise ConfigError(
                f"storage: got {masked_url(url)!r}, but {str(path)!r} does not exist; allowed: "
                "the storage of a search (`search launch` prints it; the default is "
                "sqlite:///runs/npas.db; give the launch's run folder with --run DIR)"
            )
    try:
        engine_url = connect_url(url).render_as_string(hide_password=False)
        engine = sqlalchemy.create_engine(engine_url)
        tables = set(sqlalchemy.inspect(engine).get_table_names())
        engine.dispose()
    except Exception as err:  # SQLAlchemy raises many kinds
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be opened ({type(err).__name__}: {err})"
        ) from None
    if not {"studies", "trials", "version_info"} <= tables:
        raise ConfigError(
            f"storage {masked_url(url)!r} is not an Optuna storage (no studies, trials and "
            "version_info tables); nothing was written to it"
        )
    try:
        return optuna.storages.RDBStorage(engine_url, skip_table_creation=True)
    except Exception as err:
        raise ConfigError(
            f"storage {masked_url(url)!r} cannot be read ({type(err).__name__}: {err})"
        ) from None


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


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

    Raises:
        ConfigError: the stored search has other objectives or another config (except for
            how many trials, where and how it runs); the message lists what differs.
    """
    plain = json.loads(json.dumps(dict(config), default=str))
    study = optuna.create_study(
        storage=storage,
        sampler=sampler,
        study_name=name,
        directions=[d for _, d in objectives],
        load_if_exists=True,
    )
    stored = study.user_attrs
    if "objectives" not in stored:  # a new study
        set_metric_names(study, [n for n, _ in objectives])
        study.set_user_attr("config", plain)
        study.set_user_attr("objectives", [[n, d] for n, d in objectives])
        study.set_user_attr("constraints", list(constraints))
        study.set_user_attr("optimiser", optimiser)
        study.set_user_attr("npas_version", _npas_version())
        return study
    _check_same(name, stored, plain, objectives)
    fail_interrupted(study, resumable)
    return study


def set_metric_names(study: optuna.Study, names: Sequence[str]) -> None:
    """``study.set_metric_names``, without its experimental warning (still one in Optuna 5)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(list(names))


def _check_same(
    name: str, stored: Mapping[str, Any], config: dict[str, Any], objectives: Sequence[Any]
) -> None:
    wanted = [[n, d] for n, d in objectives]
    if stored.get("objectives") != wanted:
        raise ConfigError(
            f"search {name!r} already exists in this storage with objectives "
            f"{stored.get('objectives')}, not {wanted}: launch it under another --name (or "
            "another storage) instead of mixing the two"
        )
    old, new = _comparable(stored.get("config") or {}), _comparable(config)
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if differ:
        details = "; ".join(f"{k}: stored {old.get(k)!r}, now {new.get(k)!r}" for k in differ)
        raise ConfigError(
            f"search {name!r} already exists in this storage with a different config ({details})"
            ": relaunching resumes a search only with the same config (trials, resources, "
            "storage, address and out may change); use another --name for a new search"
        )


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
        # Optuna has no public by-number setter of user attrs; the storage is the public API.
        study._storage.set_trial_user_attr(trial._trial_id, "error", INTERRUPTED)
        study.tell(trial.number, state=TrialState.FAIL)
        numbers.append(trial.number)
    return numbers


def counts(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether a trial counts toward a search's ``trials``: it ended on its own.

    COMPLETE, PRUNED (stopped early by the scheduler) and FAIL count; a trial interrupted by a
    killed search, or one that could not save its results on a full disk, does not (it is
    re-run).
    """
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    error = str(trial.user_attrs.get("error") or "")
    return trial.state == TrialState.FAIL and error != INTERRUPTED and not error.startswith(
        DISK_FULL
    )


@dataclass
class Outcome:
    """One trial's result, ready to record: state, values and the user attributes."""

    state: TrialState
    values: list[float] | None = None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    feasible: bool = False
    violations: dict[str, float] = field(default_factory=dict)
    #: The epoch a scheduler stopped a PRUNED trial after.
    pruned_at: int | None = None


def outcome_of(
    result: Mapping[str, Any] | None,
    *,
    objectives: Sequence[tuple[str, str]],
    constraints: Sequence[str],
    ray_error: bool = False,
    logs: str = "the Ray folder of the run",
    cause: str | None = None,
) -> Outcome:
    """Reads a trial's Ray result (see :func:`report_of`) into an :class:`Outcome`; ``logs``
    is where Ray keeps the logs of a trial whose process died (named in its error), ``cause``
    why Ray killed that process, when known (its error then).

    A trained trial must report a finite value for every objective (otherwise it FAILs with a
    message saying which; an infeasible one missing some gets the worst value, ±inf). A trial
    refused before training (``infeasible_reason``) is PRUNED at epoch 0 with what it measured:
    samplers and optuna-dashboard treat it as not evaluated, and no value is made up.
    """
    result = result or {}
    if ERROR_KEY in result:
        return Outcome(TrialState.FAIL, error=str(result[ERROR_KEY]))
    if METRICS_KEY not in result and CURVE_KEY in result and not ray_error:
        point = json.loads(result[CURVE_KEY])
        return Outcome(TrialState.PRUNED, metrics=point, pruned_at=int(result[EPOCH_KEY]))
    if METRICS_KEY not in result and cause is not None:
        return Outcome(TrialState.FAIL, error=cause)
    if METRICS_KEY not in result:
        reason = "Ray Tune reported an error for this trial" if ray_error else "no result"
        return Outcome(
            TrialState.FAIL,
            error=f"{reason} (the trial process died; see the Ray logs under {logs})",
        )
    metrics = json.loads(result[METRICS_KEY])
    feasible = bool(metrics.get(FEASIBLE_KEY, 1.0))
    violations = _violations(metrics, constraints, feasible)
    if REFUSED_KEY in metrics:  # refused before training: measured costs, no made-up values
        return Outcome(TrialState.PRUNED, None, metrics, None, False, violations, pruned_at=0)
    values = []
    for name, direction in objectives:
        value = metrics.get(name)
        if _is_number(value) and math.isfinite(float(value)):
            values.append(float(value))
        elif not feasible:
            values.append(math.inf if direction == "minimize" else -math.inf)
        else:
            return Outcome(
                TrialState.FAIL,
                metrics=metrics,
                error=f"objective {name!r} is missing or not finite in the trial's result "
                f"(got {value!r}); reported: {sorted(metrics)}",
            )
    return Outcome(TrialState.COMPLETE, values, metrics, None, feasible, violations)


def _violations(
    metrics: Mapping[str, Any], constraints: Sequence[str], feasible: bool
) -> dict[str, float]:
    """Violation per constraint expression (``constraint_<i>``), plus the feasibility flag."""
    out = {}
    for i, expression in enumerate(constraints):
        value = metrics.get(f"constraint_{i}", 0.0)
        value = float(value) if _is_number(value) else math.nan
        out[expression] = value if math.isfinite(value) else (0.0 if feasible else 1.0)
    out[FEASIBLE_KEY] = 0.0 if feasible else 1.0
    return out


def record(trial: optuna.trial.Trial, outcome: Outcome) -> None:
    """Writes an outcome's user attributes and constraints onto a running trial.

    Call it before telling the study: Optuna's samplers read the constraints during the tell.
    """
    if outcome.metrics is not None:
        record_metrics(trial, outcome.metrics)
        trial.set_user_attr("artifact", outcome.metrics.get("artifact"))
    if outcome.state == TrialState.FAIL:
        trial.set_user_attr("error", outcome.error)
        trial.set_user_attr(FEASIBLE_KEY, False)
        return
    if outcome.state == TrialState.PRUNED:
        trial.set_user_attr("pruned_at_epoch", outcome.pruned_at)
        if outcome.metrics is not None and REFUSED_KEY in outcome.metrics:
            trial.set_user_attr(FEASIBLE_KEY, False)
            trial.set_user_attr("constraints", list(outcome.violations.values()))
        return
    trial.set_user_attr(FEASIBLE_KEY, outcome.feasible)
    trial.set_user_attr("constraints", list(outcome.violations.values()))
    # One list in the search's constraint order: what Optuna's samplers read (as "0", "1", ...)
    # and, unlike the per-key form of Trial.set_constraint, what optuna-dashboard shows.
    trial.study._storage.set_trial_system_attr(
        trial._trial_id, CONSTRAINTS_ATTR, list(outcome.violations.values())
    )


def rung_history(
    study: optuna.Study, objectives: Sequence[str]
) -> list[tuple[dict[int, list[float]], float, set[int], int]]:
    """The learning curves of a study's trials as a scheduler's rungs see them: per epoch, the
    objective vector (see :func:`epoch_values`); the trial's constraint violation; the epochs
    at which it was no better than chance; its number."""
    out = []
    for trial in study.get_trials(deepcopy=False):
        points = epoch_values(trial, objectives)
        if points:
            vectors = {epoch: point.values for epoch, point in points.items()}
            at_chance = {epoch for epoch, point in points.items() if point.at_chance}
            out.append((vectors, final_violation(trial), at_chance, trial.number))
    return out


class EpochPoint(NamedTuple):
    """A trial after one epoch, as a scheduler's rung or a sampler's view ranks it."""

    values: list[float]
    violation: float
    at_chance: bool


def epoch_values(
    trial: optuna.trial.FrozenTrial, objectives: Sequence[str]
) -> dict[int, EpochPoint]:
    """A trial after each epoch of its learning curve: its objective vector (the curve's value
    where it has one: accuracy, loss; else the trial's recorded metric: the cost indicators,
    the same at every epoch), the violation the epoch reported (else the trial's final one)
    and whether it was no better than chance. Empty when the trial recorded no curve."""
    curve = trial.user_attrs.get("curve") or []
    if not curve:
        return {}
    metrics = metrics_of(trial)
    final = final_violation(trial)
    return {
        int(p["epoch"]): EpochPoint(
            [float(p.get(n, metrics.get(n, math.nan))) for n in objectives],
            float(p.get("violation", final)),
            bool(p.get("at_chance")),
        )
        for p in curve
    }


def final_violation(trial: optuna.trial.FrozenTrial) -> float:
    """The total violation of a trial's recorded constraints (0: met or none recorded)."""
    return sum(max(0.0, v) for v in (trial.user_attrs.get("constraints") or []))


#: Study user attributes that add up what every launch of a search spent.
COST_ATTRS = ("search_time_s", "search_energy_j", "search_co2_g")


def record_cost(study: optuna.Study, cost: Any) -> None:
    """Adds a launch's time, energy and CO2 to the study's totals (study user attributes),
    with where the energy figures come from."""
    stored = study.user_attrs
    spent = (cost.elapsed_s, cost.energy_j, cost.co2_g)
    for key, value in zip(COST_ATTRS, spent, strict=True):
        study.set_user_attr(key, float(stored.get(key, 0.0)) + float(value))
    sources = sorted(set(stored.get("search_energy_source", [])) | cost.sources)
    study.set_user_attr("search_energy_source", sources or ["estimate"])
