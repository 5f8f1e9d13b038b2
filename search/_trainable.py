"""What runs on a Ray worker: the trial and the flat result it reports to Ray Tune.

Every Ray worker imports this module, so it imports nothing beyond the standard library:
a worker that imported Optuna or SQLAlchemy here would pay ~0.4 s per process, which on a
search of short trials is a fifth of its time. The trial function brings its own imports.

A trial reports a flat dict (:func:`report_of`): the objective values at the top (Ray Tune
requires the searcher's metrics in every result), the metrics as a JSON string under
``npas_metrics`` (Ray flattens nested dicts), or the failure under ``npas_error``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["ERROR_KEY", "METRICS_KEY", "TrialFn", "is_number", "report_of", "trainable"]

METRICS_KEY = "npas_metrics"
ERROR_KEY = "npas_error"

TrialFn = Callable[[dict[str, Any]], Mapping[str, Any]]


def trainable(config: dict[str, Any], *, trial_fn: TrialFn, objectives: list[str]) -> None:
    """One Ray Tune trial: run it and report metrics, or the error message (never raise)."""
    from ray import tune

    try:
        report = report_of(trial_fn(config["trial_config"]), objectives)
    except Exception as err:  # a failed trial is a result of the search, not its end
        report = report_of(None, objectives, error=f"{type(err).__name__}: {err}")
    tune.report(report)


def report_of(
    metrics: Mapping[str, Any] | None, objectives: Sequence[str], *, error: str | None = None
) -> dict[str, Any]:
    """What a trial reports to Ray Tune: objective values, then metrics as JSON or the error."""
    if error is not None:
        return {**dict.fromkeys(objectives, math.nan), ERROR_KEY: error}
    assert metrics is not None
    out: dict[str, Any] = {}
    for name in objectives:
        value = metrics.get(name)
        out[name] = float(value) if is_number(value) else math.nan
    out[METRICS_KEY] = json.dumps(dict(metrics), default=_jsonable)
    return out


def is_number(value: Any) -> bool:
    """A real number: Python int/float (not bool), or a numpy/torch scalar."""
    return (isinstance(value, int | float) and not isinstance(value, bool)) or hasattr(
        value, "item"
    )


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy and torch scalars
        return value.item()
    return str(value)
