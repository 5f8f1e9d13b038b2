"""The one place npas reaches into Optuna's and Ray's private APIs, and the check that they hold.

Everything else uses the libraries' public APIs (a test parses ``spaces``, ``objectives`` and
``search`` to keep it so; torch's private APIs are ``spaces._compat``'s). Each private use
below says what the public API lacks. Private APIs change without notice, so npas supports the
version ranges :data:`SUPPORTED` names (the ones ``pyproject.toml`` pins; a test keeps the two
equal), and :func:`check` refuses, with a message naming them, an installed Optuna or Ray
outside them or without an attribute npas uses: the search then stops before anything is
started or written, instead of failing half-way.

Optuna: a study's storage (``Study._storage``: a sampler is handed the study only, and writes
a trial's system attributes through its storage, as Optuna's own samplers do); Optuna's RDB
schema (``optuna.storages._rdb.models``: the writer of ``search.record._writer`` checks that
the study is still the search's and commits a trial in one transaction, which
``RDBStorage.create_new_trial`` cannot: see that module); the system attribute Optuna's samplers
read a trial's constraint values from (``optuna.study._constrained_optimization._CONSTRAINTS_KEY``,
:func:`with_constraints`: the public ``Trial.set_constraint`` writes one attribute per constraint,
which optuna-dashboard does not show); the parameters ``Study.enqueue_trial`` fixed (system
attribute ``fixed_params``, :func:`enqueued_params`: read only for the start points of a study
recorded before npas kept them itself); the generation cache of Optuna 5.1's genetic samplers
(``BaseGASampler._cached_study_id``, :func:`forget_generations`: it takes a study's finished
trials as final, which a rung view's trials are not, and Optuna has no public way to clear it).
Ray: the address ``ray start`` left (``ray._private.services.find_bootstrap_address``: Ray's
public ``auto`` also joins any Ray it finds, another program's private one included); the
flag that keeps a local Ray on loopback (``ray._private.ray_constants.ENABLE_RAY_CLUSTER``: the
environment variable Ray reads it from, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``, is read once when
``ray`` is imported, which in a launch has happened long before its Ray starts, and it would
hold for the whole process, a cluster joined later included);
Ray Tune's handling of a trial actor's failures (``RayActorManager._actor_start_failed`` and
``_actor_task_failed``, ``Trial._get_default_result_or_future``: a worker Ray's memory monitor
killed otherwise ends the whole search with a traceback, see ``search.run._deaths``); the C++
function of Ray's driver that gives back the signals Ray's failure handler took
(``RayLog::UninstallSignalAction`` in ``ray._raylet``, :func:`release_ray_signal_actions`:
``ray.shutdown`` calls it and so sets SIGTERM's default action under Python's handler).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import inspect
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple

from search.errors import UnsupportedDependency

if TYPE_CHECKING:
    import optuna
    import sqlalchemy
    from optuna.trial import FrozenTrial

__all__ = [
    "SUPPORTED",
    "OptunaSchema",
    "bootstrap_address",
    "check",
    "check_optuna",
    "check_ray",
    "enqueued_params",
    "forget_generations",
    "loopback_node",
    "no_callback_census",
    "optuna_schema",
    "quiet_token_notice",
    "release_ray_signal_actions",
    "set_constraints",
    "storage_of",
    "trial_id_of",
    "tune_actor_failures",
    "with_constraints",
]

#: The versions of Optuna and Ray npas supports: the ranges ``pyproject.toml`` pins (a test
#: keeps them equal); the lower ends are the oldest versions ``.ci/bounds`` runs the search on.
SUPPORTED = {"optuna": ">=5.0,<5.2", "ray": ">=2.55,<2.61"}

#: What Ray Tune's actor manager hands a failure hook (see :func:`tune_actor_failures`).
FailureHandler = Callable[[Callable[[Exception], Any], Exception], Any]

#: The private names npas uses, per library: module → ((attribute path, what npas uses it
#: for), ...).
Names = dict[str, tuple[tuple[str, str], ...]]
_OPTUNA_NAMES: Names = {
    "optuna.storages._rdb.models": (
        ("TrialModel", "the search's one-transaction writes"),
        ("TrialParamModel", "the search's one-transaction writes"),
        ("TrialValueModel.value_to_stored_repr", "trial values"),
        ("TrialUserAttributeModel", "trial user attributes"),
        ("TrialSystemAttributeModel", "trial system attributes"),
        ("StudyUserAttributeModel", "study user attributes"),
        ("TrialIntermediateValueModel.intermediate_value_to_stored_repr", "learning curves"),
    ),
    "optuna.study._constrained_optimization": (
        ("_CONSTRAINTS_KEY", "the constraint values samplers read"),
    ),
}
#: The system attribute Optuna's samplers read a trial's constraint values from, as one list
#: (:func:`with_constraints`; :func:`check_optuna` compares it with Optuna's own name).
_CONSTRAINTS_KEY = "constraints"
#: The system attribute ``Study.enqueue_trial`` keeps a queued trial's parameters in
#: (:func:`enqueued_params`; :func:`check_optuna` enqueues a trial to see it there).
_FIXED_PARAMS_KEY = "fixed_params"
#: The attribute naming the study whose generations a genetic sampler of Optuna 5.1 has cached
#: (:func:`forget_generations`; :func:`check_optuna` checks that 5.1 and later have it).
_GENERATION_CACHE = "_cached_study_id"
#: The private methods whose ``exception`` argument :func:`tune_actor_failures` rewrites.
_FAILURE_HOOKS = ("_actor_start_failed", "_actor_task_failed")
_KILLED = "trials whose worker Ray killed"
#: ``RayLog::UninstallSignalAction`` (exported by ``ray._raylet``): sets the default action of
#: the signals Ray's failure handler took in this process, and marks them given back.
_UNINSTALL_SIGNAL_ACTION = "_ZN3ray6RayLog21UninstallSignalActionEv"
_TAKEN_BY_RAY = (signal.SIGSEGV, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGTERM)
_RAY_NAMES: Names = {
    "ray._private.services": (("find_bootstrap_address", "--address auto"),),
    "ray._private.ray_constants": (("ENABLE_RAY_CLUSTER", "a local Ray on loopback only"),),
    "ray.air.execution._internal.actor_manager": tuple(
        (f"RayActorManager.{hook}", _KILLED) for hook in _FAILURE_HOOKS
    ),
    "ray.tune.experiment.trial": (("Trial._get_default_result_or_future", _KILLED),),
    "ray.tune.tune": (
        ("air_usage.tag_callbacks", "a search that starts without importing MLflow"),
    ),
}


def check() -> None:
    """Checks both libraries (see :func:`check_optuna`, :func:`check_ray`)."""
    check_optuna()
    check_ray()


def check_optuna() -> None:
    """Refuses an installed Optuna outside :data:`SUPPORTED` or without a private name npas
    uses.

    Raises:
        UnsupportedDependency: the message names the supported versions and what is wrong.
    """
    import optuna

    _check("optuna", optuna.__version__, _OPTUNA_NAMES)
    from optuna.storages import InMemoryStorage
    from optuna.study import StudyDirection

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # "a new study created in memory"
    try:
        storage = InMemoryStorage()
        storage.create_new_study([StudyDirection.MINIMIZE], "npas-compat-check")
        study = optuna.load_study(study_name="npas-compat-check", storage=storage)
    finally:
        optuna.logging.set_verbosity(verbosity)
    if getattr(study, "_storage", None) is not storage:
        _refuse("optuna", optuna.__version__, "Study._storage (a study's storage) is missing")
    from optuna.study import _constrained_optimization

    if _constrained_optimization._CONSTRAINTS_KEY != _CONSTRAINTS_KEY:
        _refuse("optuna", optuna.__version__, "samplers read constraints under another key")
    attrs = with_constraints({}, [0.5])
    trial = optuna.trial.create_trial(state=optuna.trial.TrialState.WAITING, system_attrs=attrs)
    if trial.constraints != {"0": 0.5}:
        _refuse("optuna", optuna.__version__, "a trial's list of constraints is not read")
    study.enqueue_trial({"x": 1})
    if enqueued_params(study.get_trials(deepcopy=False)[-1]) != {"x": 1}:
        _refuse("optuna", optuna.__version__, "an enqueued trial's fixed_params are missing")
    _check_generation_cache(optuna.__version__)


def _check_generation_cache(version: str) -> None:
    """Refuses an Optuna from 5.1 on whose genetic samplers keep their generation cache under
    another name (a rung view could not clear it: see :func:`forget_generations`)."""
    import optuna
    from packaging.version import Version

    if Version(version) < Version("5.1"):
        return  # no cache before 5.1
    if not hasattr(optuna.samplers.NSGAIISampler(), _GENERATION_CACHE):
        _refuse("optuna", version, f"BaseGASampler.{_GENERATION_CACHE} (its generation cache, "
                                   "cleared for rung views) is missing")  # fmt: skip


def check_ray() -> None:
    """Refuses an installed Ray outside :data:`SUPPORTED` or without a private name npas uses
    (the failure hooks must still take their ``exception`` argument).

    Raises:
        UnsupportedDependency: the message names the supported versions and what is wrong.
    """
    import ray

    _check("ray", ray.__version__, _RAY_NAMES)
    from ray.air.execution._internal.actor_manager import RayActorManager

    for name in _FAILURE_HOOKS:
        if "exception" not in inspect.signature(getattr(RayActorManager, name)).parameters:
            _refuse("ray", ray.__version__, f"RayActorManager.{name} takes no `exception`")


def _check(library: str, version: str, names: Names) -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    if Version(version) not in SpecifierSet(SUPPORTED[library]):
        _refuse(library, version, "that version is outside the supported range")
    for module, paths in names.items():
        for path, use in paths:
            try:
                functools.reduce(getattr, path.split("."), import_module(module))
            except (ImportError, AttributeError):
                _refuse(library, version, f"{module}.{path} (used for {use}) is missing")


def _refuse(library: str, version: str, what: str) -> None:
    supported = " and ".join(f"{name} {spec}" for name, spec in SUPPORTED.items())
    package = "ray[tune]" if library == "ray" else library
    raise UnsupportedDependency(
        f"npas supports {supported}; the installed {library} {version} does not fit: {what}. "
        f"Install a supported version: pip install '{package}{SUPPORTED[library]}'"
    )


# --- Optuna ---------------------------------------------------------------------------------


def storage_of(study: optuna.Study) -> optuna.storages.BaseStorage:
    """The storage a study reads and writes (Optuna has no public accessor; the storage's own
    API is public)."""
    return study._storage


def forget_generations(sampler: optuna.samplers.BaseSampler) -> None:
    """Makes a genetic sampler (NSGA-II, NSGA-III) read its generations from the next study it
    is handed afresh.

    Optuna 5.1's genetic samplers cache which trials make up the newest generation, by study
    id, and read only the trials added or unfinished since: a finished trial is taken as
    final. A rung view's trials are not (a trial seen complete at one epoch is pruned at
    another, and a new view's in-memory study has the id of the last one), so a cache kept
    across views handed NSGA-II's parent selection pruned trials without values (ValueError:
    inhomogeneous shape). Optuna 5.0 has no cache: nothing to clear.
    """
    if hasattr(sampler, _GENERATION_CACHE):
        setattr(sampler, _GENERATION_CACHE, None)


def trial_id_of(study: optuna.Study, number: int) -> int:
    """The storage id of trial ``number`` of a study (what the storage's API takes)."""
    storage = storage_of(study)
    study_id = storage.get_study_id_from_name(study.study_name)
    return storage.get_trial_id_from_study_id_trial_number(study_id, number)


def with_constraints(
    system_attrs: Mapping[str, Any], violations: Sequence[float]
) -> dict[str, Any]:
    """A trial's system attributes with ``violations`` (<= 0: met) where Optuna's samplers read
    a trial's constraints: one list, read as constraints ``"0"``, ``"1"``, ..., which
    optuna-dashboard shows too (the per-name form of ``Trial.set_constraint`` it does not)."""
    return {**system_attrs, _CONSTRAINTS_KEY: list(violations)}


def set_constraints(study: optuna.Study, number: int, violations: Sequence[float]) -> None:
    """Records ``violations`` on trial ``number`` of ``study`` as :func:`with_constraints`
    does, in its storage."""
    storage_of(study).set_trial_system_attr(
        trial_id_of(study, number), _CONSTRAINTS_KEY, list(violations)
    )


def enqueued_params(trial: FrozenTrial) -> dict[str, Any] | None:
    """The parameters ``Study.enqueue_trial`` fixed for ``trial``, or None (Optuna keeps them in
    a system attribute of its own, with no public accessor)."""
    return trial.system_attrs.get(_FIXED_PARAMS_KEY)


class OptunaSchema(NamedTuple):
    """The tables ``RDBStorage`` writes a trial to, and how it stores a float there."""

    studies: sqlalchemy.Table
    trials: sqlalchemy.Table
    params: sqlalchemy.Table
    values: sqlalchemy.Table
    user_attrs: sqlalchemy.Table
    system_attrs: sqlalchemy.Table
    study_user_attrs: sqlalchemy.Table
    intermediate_values: sqlalchemy.Table
    #: ``value -> (stored value, value type)`` of an objective value.
    value_repr: Callable[[float], tuple[Any, Any]]
    #: The same for an intermediate value (a learning-curve point).
    intermediate_repr: Callable[[float], tuple[Any, Any]]


def optuna_schema() -> OptunaSchema:
    """Optuna's RDB schema: the rows ``RDBStorage`` writes (no public API writes a trial in one
    transaction)."""
    from optuna.storages._rdb import models

    return OptunaSchema(
        studies=models.StudyModel.__table__,
        trials=models.TrialModel.__table__,
        params=models.TrialParamModel.__table__,
        values=models.TrialValueModel.__table__,
        user_attrs=models.TrialUserAttributeModel.__table__,
        system_attrs=models.TrialSystemAttributeModel.__table__,
        study_user_attrs=models.StudyUserAttributeModel.__table__,
        intermediate_values=models.TrialIntermediateValueModel.__table__,
        value_repr=models.TrialValueModel.value_to_stored_repr,
        intermediate_repr=models.TrialIntermediateValueModel.intermediate_value_to_stored_repr,
    )


# --- Ray ------------------------------------------------------------------------------------


def bootstrap_address() -> str | None:
    """The address of the head ``ray start`` last started on this machine (the address file in
    Ray's temp folder), or None."""
    from ray._private.services import find_bootstrap_address

    return find_bootstrap_address(None)


@contextlib.contextmanager
def loopback_node() -> Iterator[None]:
    """A Ray started inside runs in Ray's single-machine mode (its default on macOS and
    Windows): its node address is 127.0.0.1, and Ray binds its servers (GCS, raylet, workers,
    runtime-env agent) to loopback when it is.

    On Linux Ray turns 127.0.0.1, even one passed as ``_node_ip_address``, into this machine's
    network address unless this flag is off (``ray._private.services.get_node_ip_address``);
    the node keeps the address it started with, so the flag is needed only while Ray starts.
    Its environment variable (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) is no substitute: Ray
    reads it when ``ray`` is first imported (``search.run`` imports Ray Tune at its own import,
    a user's code or a test may import Ray first) and keeps it for the whole process, so a
    cluster joined later from the same process would be joined from 127.0.0.1.
    """
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def release_ray_signal_actions() -> None:
    """Gives back, once Ray has started in this process, the signals Ray's failure handler
    took, and names Python's handlers for them again.

    ``ray.shutdown`` gives them back itself: it sets their default action in C while Python
    still names its own handler, for the second Ray then takes to stop its processes, and a
    SIGTERM in that second ended the process where the handler should have run (a launch
    stopped by SIGTERM died by a second one without saying it had stopped). Given back here,
    shutdown finds nothing to give back. What goes with them: Ray's stack dump when this
    process crashes (a segfault in the launch ends it as Python's default does). Nothing
    where Ray's library lacks the function (another build): shutdown's window stays."""
    import ray._raylet

    if threading.current_thread() is not threading.main_thread():
        return
    try:
        uninstall = getattr(ctypes.CDLL(ray._raylet.__file__), _UNINSTALL_SIGNAL_ACTION)
    except (OSError, AttributeError):
        return
    uninstall.restype = None
    handlers = {signum: signal.getsignal(signum) for signum in _TAKEN_BY_RAY}
    uninstall()
    for signum, handler in handlers.items():
        if handler is not None:  # None: a handler set outside Python (Ray's own, gone now)
            signal.signal(signum, handler)


@contextlib.contextmanager
def tune_actor_failures(handle: FailureHandler) -> Iterator[None]:
    """While entered, each failed start or task of a Ray Tune trial actor is handed to
    ``handle(proceed, exception)``, which calls ``proceed(error)`` to have Ray Tune handle
    ``error`` instead (its own ``RayActorError`` fails the trial, any other error ends the
    search); and the default result of a trial whose actor died before filling it in reads as
    None (Ray Tune's "no default result") instead of raising that actor's error again.
    """
    from ray.air.execution._internal.actor_manager import RayActorManager
    from ray.exceptions import RayError
    from ray.tune.experiment.trial import Trial

    def failed(original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def hook(*args: Any, **kwargs: Any) -> Any:
            call = signature.bind(*args, **kwargs)  # Ray passes them by keyword

            def proceed(error: Exception) -> Any:
                call.arguments["exception"] = error
                return original(*call.args, **call.kwargs)

            return handle(proceed, call.arguments["exception"])

        return hook

    def none_once_dead(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def default_result(trial: Any) -> Any:
            try:
                return original(trial)
            except RayError:
                trial._default_result_or_future = None
                return None

        return default_result

    Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]  # a hook around a method
    hooks: dict[tuple[type, str], Wrap] = {
        (RayActorManager, name): failed for name in _FAILURE_HOOKS
    }
    hooks[(Trial, "_get_default_result_or_future")] = none_once_dead
    saved = []
    try:
        for (owner, name), wrap in hooks.items():
            original = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, wrap(original))
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


@contextlib.contextmanager
def no_callback_census() -> Iterator[None]:
    """While entered, Ray Tune does not count a run's callbacks by class for its usage
    statistics: to do so it imports every logging integration it knows, MLflow among them
    (1.4 s of a 20 s quick run on two cores, where MLflow is installed), for a count it
    records only where usage statistics are on."""
    from ray.tune import tune

    original = tune.air_usage.tag_callbacks
    tune.air_usage.tag_callbacks = lambda callbacks: False
    try:
        yield
    finally:
        tune.air_usage.tag_callbacks = original


#: Ray's start-up notice that token authentication is on (the default of a local Ray since
#: 2.5x), logged by a private Ray module: its logger, and what it says. It asks nothing of a
#: search's user, so it is not shown.
_TOKEN_NOTICE = (
    "ray._private.authentication.authentication_token_setup",
    "Token authentication is enabled",
)


class _NoTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _TOKEN_NOTICE[1] not in record.getMessage()


@contextlib.contextmanager
def quiet_token_notice() -> Iterator[None]:
    """Ray's token notice stays off the terminal while Ray starts (a filter on the logger
    that writes it, so whatever handlers Ray installs, the record never reaches them)."""
    logger = logging.getLogger(_TOKEN_NOTICE[0])
    notice = _NoTokenNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)
