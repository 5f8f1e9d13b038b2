"""The search's ``loggers`` (``tensorboard``, ``mlflow``): Ray Tune's own logger callbacks,
each shown every trial the way a user reads it. Light to import: Ray, tensorboardX and MLflow
load when a logger is built.

Left to themselves, Ray Tune's loggers would log a trial's Ray config (an npas ``TrialConfig``
object) as its parameters, and the raw result: npas's JSON strings, Ray's bookkeeping, the
config again. Here each logger sees a :class:`TrialView` instead: named ``trial-<number>``
after the study's trial, its hyper-parameters as its config (named as the search's dimensions),
and results holding numbers only, stepped by epoch (:func:`logged_result`).

A logger that fails (its disk full, its database locked) warns once and logs nothing more:
the search, which may have hours left, goes on.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from search._format import note
from search._imports import require
from search.config import LOGGERS as _REGISTRY
from search.record import RayKey
from search.run._trainable import is_number
from spaces import Registry

if TYPE_CHECKING:
    from ray.tune.logger import LoggerCallback as _Logger

    from search.config import SearchConfig
else:
    _Logger = object

__all__ = [
    "LOGGERS",
    "Readable",
    "TrialView",
    "hyper_parameters",
    "logged_result",
    "logger_callbacks",
    "mlflow_uri",
    "tensorboard_folder",
]

#: name → (search config, run folder) → Ray Tune logger callback.
LOGGERS: Registry[Callable[[SearchConfig, Path], Any]] = _REGISTRY

#: Ray Tune's step of a result (its ``TRAINING_ITERATION``); here the epoch.
_STEP = "training_iteration"


def tensorboard_folder(out: Path, name: str) -> Path:
    """Where the ``tensorboard`` logger writes, one subfolder per trial: ``tensorboard
    --logdir`` it."""
    return out / name / "tensorboard"


def mlflow_uri(out: Path, name: str) -> str:
    """The MLflow tracking URI of the ``mlflow`` logger: a SQLite file in the run folder
    (MLflow 3 refuses its file store unless told to), read offline by ``MlflowClient`` and
    ``mlflow ui --backend-store-uri``."""
    return f"sqlite:///{(out / name / 'mlflow.db').resolve()}"


def logger_callbacks(config: SearchConfig, out: Path) -> list[Any]:
    """The Ray Tune callbacks of the search's ``loggers``, in its order.

    Raises:
        MissingExtraError: a logger's package is not installed (names ``npas[loggers]``).
    """
    return [LOGGERS.get(name)(config, out) for name in config.loggers]


@LOGGERS.register("tensorboard")
def _tensorboard(config: SearchConfig, out: Path) -> Any:
    """TensorBoard event files through tensorboardX (Ray Tune's ``TBXLoggerCallback``)."""
    require("tensorboardX", purpose="loggers: tensorboard")
    from search.run._tensorboard import TensorBoardLogger

    return TensorBoardLogger(config.objective_names, tensorboard_folder(out, config.name),
                             _dimensions(config))  # fmt: skip


@LOGGERS.register("mlflow")
def _mlflow(config: SearchConfig, out: Path) -> Any:
    """An MLflow experiment named after the search (Ray Tune's ``MLflowLoggerCallback``)."""
    require("mlflow", purpose="loggers: mlflow")
    from search.run._mlflow import MLflowLogger

    return MLflowLogger(
        config.objective_names,
        tracking_uri=mlflow_uri(out, config.name),
        experiment_name=config.name,
        artifact_location=(out / config.name / "mlflow-artifacts").resolve().as_uri(),
        dimensions=_dimensions(config),
    )


def _dimensions(config: SearchConfig) -> set[str]:
    """The names the search gives its hyper-parameters: its dimensions and fixed values."""
    return {*config.space.names, *config.fixed}


def hyper_parameters(
    ray_config: Mapping[str, Any], dimensions: Collection[str] = ()
) -> dict[str, Any]:
    """A trial's hyper-parameters from its Ray config, named as the search's dimensions:
    ``family``, ``budget``, ``<family>.<hyper>`` (``<family>.<hyper>.<i>`` per list element),
    ``ssn.<option>``, ``train.<option>`` (``<family>.train.<option>`` where ``dimensions``, the
    search's dimension and fixed names, scope it to the family), and the study's trial
    ``number``. Unset (None) values are left out, and the ``distill_*`` options of a trial
    with no teacher (they do nothing there); what is not a string, number or bool is given as
    text."""
    cfg = ray_config[RayKey.TRIAL_CONFIG]
    named: dict[str, Any] = {"number": ray_config.get(RayKey.NUMBER), "family": cfg.family,
                             "budget": cfg.budget}  # fmt: skip
    for key, value in cfg.hyper.items():
        items = enumerate(value) if isinstance(value, list | tuple) else [(None, value)]
        for i, item in items:
            named[f"{cfg.family}.{key}" + ("" if i is None else f".{i}")] = item
    named.update({f"ssn.{k}": v for k, v in cfg.ssn.items()})
    taught = cfg.train.get("teacher") is not None
    for key, value in cfg.train.items():
        if key.startswith("distill_") and not taught:
            continue
        scoped = f"{cfg.family}.train.{key}"
        named[scoped if scoped in dimensions else f"train.{key}"] = value
    return {
        k: v if isinstance(v, str | int | float | bool) else str(v)
        for k, v in named.items()
        if v is not None
    }


def logged_result(result: Mapping[str, Any], objectives: Sequence[str]) -> dict[str, float]:
    """What the loggers log of one Ray Tune result of a trial: finite numbers by name.

    After an epoch: the objectives and the learning-curve point (``epoch``, ``accuracy``,
    ``val_loss``, ``train_time_s``, the cost indicators that are objectives or constraints),
    at step = the epoch. At the end: the objectives and every number of the trial's metrics
    (the cost panel, energy, ...; a test accuracy only with ``report_test``), at the step of
    its last epoch (0 when it trained none). A failed trial's last result has none: it is {}.
    """
    if RayKey.CURVE in result:
        point = json.loads(result[RayKey.CURVE])
        step = point["epoch"]
    elif RayKey.METRICS in result:
        point = json.loads(result[RayKey.METRICS])
        step = point.get("epochs") or 0
    else:
        return {}
    values = {**point, **{name: result[name] for name in objectives if name in result}}
    numbers = {k: float(v) for k, v in values.items() if is_number(v)}
    return {k: v for k, v in numbers.items() if math.isfinite(v)} | {_STEP: int(step)}


def _one_line(err: BaseException) -> str:
    """An error as one short line: its first line (SQLAlchemy's add the statement and a
    link), at most 200 characters."""
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    return first if len(first) <= 200 else first[:199] + "…"


class TrialView:
    """A Ray Tune trial as npas's loggers show it: named ``trial-<number>`` (the study's trial
    number), its hyper-parameters as its ``config`` (:func:`hyper_parameters`), and a
    TensorBoard folder of its own under ``folder``; anything else is the trial's."""

    def __init__(self, trial: Any, folder: Path | None, dimensions: Collection[str] = ()) -> None:
        self._trial = trial
        self.name = f"trial-{trial.config.get('number')}"
        self.config = self.evaluated_params = hyper_parameters(trial.config, dimensions)
        if folder is not None:
            self.local_path = str(folder / self.name)

    def __getattr__(self, name: str) -> Any:
        # not the private or special names: copy and pickle look those up on a view that
        # has no trial yet
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._trial, name)

    def __str__(self) -> str:
        return self.name


class Readable(_Logger):
    """Mixed in before a Ray Tune ``LoggerCallback``: it hands the logger each trial as its
    :class:`TrialView` and each result as :func:`logged_result`, and stops the logger, with
    one warning, at its first error.

    Args:
        objectives: The search's objective names (logged as reported).
        folder: Where a trial's files go (its view's ``local_path``); None: the logger's own.
        name: The logger, as the warning names it.
        dimensions: The search's dimension and fixed names (:func:`hyper_parameters`).
    """

    def __init__(
        self,
        objectives: Sequence[str],
        folder: Path | None,
        name: str,
        *,
        dimensions: Collection[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._dimensions = set(dimensions)
        self._objectives = list(objectives)
        self._folder = folder
        self._name = name
        self._views: dict[Any, TrialView] = {}
        self._failed = False

    def _view(self, trial: Any) -> TrialView:
        if trial not in self._views:
            self._views[trial] = TrialView(trial, self._folder, self._dimensions)
        return self._views[trial]

    def _guarded(self, call: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        if self._failed:
            return
        try:
            call(*args, **kwargs)
        except Exception as err:  # logging is a view of the search, never its end
            self._failed = True
            with contextlib.suppress(Exception):
                self._stopped()
            print(note(f"warning: loggers: {self._name} stopped logging "
                       f"({type(err).__name__}: {_one_line(err)}); the search goes on"),
                  file=sys.stderr, flush=True)  # fmt: skip

    def _stopped(self) -> None:
        """Releases what the logger holds once it failed, quietly (a logger whose files are
        left open would fail again, with a traceback, when the program ends)."""

    def _hook(self, name: str, iteration: int, trials: list, trial: Any, *rest: Any,
              **info: Any) -> None:  # fmt: skip
        """The logger's own hook ``name``, given the trial's view."""
        getattr(super(), name)(iteration, trials, self._view(trial), *rest, **info)

    def _result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        logged = logged_result(result, self._objectives)
        if len(logged) > 1:  # more than the step
            self._hook("on_trial_result", iteration, trials, trial, logged, **info)

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self._guarded(super().setup, *args, **kwargs)

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._guarded(self._hook, "on_trial_start", iteration, trials, trial, **info)

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        self._guarded(self._result, iteration, trials, trial, result, **info)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._guarded(self._hook, "on_trial_complete", iteration, trials, trial, **info)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._guarded(self._hook, "on_trial_error", iteration, trials, trial, **info)
