"""What runs on a Ray worker: the trial and the flat result it reports to Ray Tune.

Every Ray worker imports this module, so it imports nothing beyond the standard library:
a worker that imported Optuna or SQLAlchemy here would pay ~0.4 s per process, which on a
search of short trials is a fifth of its time. The trial function brings its own imports.

A trial reports once per epoch (:func:`epoch_report`: the objective values so far at the top,
``epoch`` as Ray's time attribute, the constraint violation so far, whether the model is no
better than chance, and the learning-curve point as JSON under ``npas_curve``), then once at
the end (:func:`report_of`): the objective values at the top, the metrics as a JSON string
under ``npas_metrics`` (Ray flattens nested dicts), or the failure under ``npas_error``. A
trial a scheduler stopped ends with an epoch report: no ``npas_metrics``, so it is recorded as
PRUNED.

A trial function that takes ``on_state`` and ``resume`` (``search.trial.run_trial`` does)
checkpoints: each epoch's report carries a Ray Tune checkpoint, a folder the trial wrote its
state into, and a trial Ray Tune restores (a paused trial resumed, a relaunched search's
interrupted trial) continues from ``tune.get_checkpoint()``, or from the checkpoint folder its
config names under ``resume``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, SupportsFloat, TypeGuard

from search.record import RayKey

__all__ = [
    "TrialFn",
    "checkpoints",
    "epoch_report",
    "is_number",
    "on_given_device",
    "report_of",
    "trainable",
]


#: The trial function: a ``search.config.TrialConfig`` and an ``on_epoch`` callback (see
#: :func:`search.trial.run_trial`) in, a flat dict of metrics out.
TrialFn = Callable[..., Mapping[str, Any]]


def trainable(config: dict[str, Any], *, trial_fn: TrialFn, objectives: list[str]) -> None:
    """One Ray Tune trial: run it, reporting each epoch, then its metrics or the error message
    (never raise; a scheduler's stop ends the thread in Ray's own ``report``).

    The GPUs Ray assigned the trial are recorded (``cond_ray_gpu_ids``): Ray sets
    ``CUDA_VISIBLE_DEVICES`` to them, so the trial's ``cuda`` device is the assigned one, and a
    fractional share (``resources.gpu: 0.25``) lets four trials use one GPU at once. A trial
    given no GPU trains on the CPU (:func:`on_given_device`).
    """
    import ray
    from ray import tune

    cfg = on_given_device(config[RayKey.TRIAL_CONFIG], ray.get_gpu_ids())
    constraints = getattr(cfg, "constraints", ())
    writers: list[Callable[[str], None]] = []  # the state of the epoch about to be reported

    def on_epoch(point: dict[str, Any]) -> None:
        report = epoch_report(point, objectives, constraints)
        if not writers:
            tune.report(report)
            return
        with tempfile.TemporaryDirectory(prefix="npas-checkpoint-") as folder:
            writers.pop()(folder)
            (Path(folder) / RayKey.POINT_FILE).write_text(report[RayKey.CURVE])
            tune.report(report, checkpoint=tune.Checkpoint.from_directory(folder))

    try:
        if checkpoints(trial_fn):
            with _resume_folder(config) as resume:
                if resume is not None and tune.get_checkpoint() is None:
                    _report_again(resume, objectives, constraints)
                metrics = dict(trial_fn(cfg, on_epoch=on_epoch, on_state=writers.append,
                                        resume=resume))  # fmt: skip
        else:
            metrics = dict(trial_fn(cfg, on_epoch=on_epoch))
        metrics["cond_ray_gpu_ids"] = ",".join(str(i) for i in ray.get_gpu_ids())
        report = report_of(metrics, objectives)
    except Exception as err:  # a failed trial is a result of the search, not its end
        report = report_of(None, objectives, error=f"{type(err).__name__}: {err}")
    tune.report(report)


def on_given_device(cfg: Any, gpus: Sequence[Any]) -> Any:
    """A trial config that names no device, pinned to the CPU when the trial was given no GPU
    (``gpus``: Ray's assignment, or the search's ``resources.gpu`` share). Ray 2.x hides the
    machine's GPUs from such a trial (``CUDA_VISIBLE_DEVICES=""``); later versions do not
    (ray-project/ray#62492), and a trial left to choose would take a GPU it was not given."""
    if gpus or not dataclasses.is_dataclass(cfg) or getattr(cfg, "device", "") is not None:
        return cfg
    return dataclasses.replace(cfg, device="cpu")  # type: ignore[type-var]


def checkpoints(trial_fn: TrialFn) -> bool:
    """Whether a trial function writes and resumes checkpoints (takes ``on_state`` and
    ``resume``, as ``search.trial.run_trial`` does)."""
    try:
        names = inspect.signature(trial_fn).parameters
    except (TypeError, ValueError):
        return False
    return "on_state" in names and "resume" in names


def _report_again(folder: str, objectives: Sequence[str], constraints: Sequence[Any]) -> None:
    """Reports once more the epoch a relaunch resumes a trial from, with its checkpoint, before
    training on: the scheduler decides on the trial at that epoch as it would have (a trial
    paused at a rung is paused again, having trained nothing), and the new Ray Tune trial holds
    the checkpoint it is resumed from after a pause. A checkpoint without its point (written
    before the point was kept) is resumed without the report."""
    from ray import tune

    path = Path(folder) / RayKey.POINT_FILE
    if path.exists():
        report = epoch_report(json.loads(path.read_text()), objectives, constraints)
        tune.report(report, checkpoint=tune.Checkpoint.from_directory(folder))


@contextlib.contextmanager
def _resume_folder(config: Mapping[str, Any]) -> Iterator[str | None]:
    """The checkpoint folder a trial resumes from: Ray Tune's (a trial it paused or
    restored), else the one its config names (:data:`RayKey.RESUME`), else None."""
    from ray import tune

    checkpoint = tune.get_checkpoint()
    if checkpoint is None and config.get(RayKey.RESUME):
        checkpoint = tune.Checkpoint.from_directory(config[RayKey.RESUME])
    if checkpoint is None:
        yield None
        return
    with checkpoint.as_directory() as folder:
        yield folder


def epoch_report(
    point: Mapping[str, Any], objectives: Sequence[str], constraints: Sequence[Any] = ()
) -> dict[str, Any]:
    """What a trial reports after an epoch: objectives so far (NaN when unknown), the epoch,
    the violation of the constraints its point can evaluate, whether it is at chance, and the
    point as JSON."""
    out: dict[str, Any] = {}
    for name in objectives:
        value = point.get(name)
        out[name] = float(value) if is_number(value) else math.nan
    known = [c for c in constraints if c.indicator in point]
    out[RayKey.EPOCH] = int(point["epoch"])
    out[RayKey.VIOLATION] = sum(max(0.0, c.violation(point)) for c in known)
    out[RayKey.AT_CHANCE] = float(bool(point.get("at_chance")))
    out[RayKey.CURVE] = json.dumps(dict(point), default=_jsonable)
    return out


def report_of(
    metrics: Mapping[str, Any] | None, objectives: Sequence[str], *, error: str | None = None
) -> dict[str, Any]:
    """What a trial reports to Ray Tune: objective values, then metrics as JSON or the error."""
    if error is not None:
        return {**dict.fromkeys(objectives, math.nan), RayKey.ERROR: error}
    assert metrics is not None
    out: dict[str, Any] = {}
    for name in objectives:
        value = metrics.get(name)
        out[name] = float(value) if is_number(value) else math.nan
    out[RayKey.METRICS] = json.dumps(dict(metrics), default=_jsonable)
    return out


def is_number(value: Any) -> TypeGuard[SupportsFloat]:
    """A real number: Python int/float (not bool), or a numpy/torch scalar."""
    return (isinstance(value, int | float) and not isinstance(value, bool)) or hasattr(
        value, "item"
    )


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy and torch scalars
        return value.item()
    return str(value)
