"""The cost-indicator registry: what each indicator means, its unit, direction and phase.

No single indicator is enough (efficiency-misnomer §2, §4), so :func:`objectives.measure` can
measure them all and the user picks which become objectives. Indicators computed by one run share
a *probe*: ``latency_ms`` and ``latency_p90_ms`` come from the same timings, so each probe runs
once per measurement, and it may add companion keys (``latency_iqr_ms``, ``throughput_batch``,
``energy_source``) and ``cond_*`` conditions to the result. A user adds an indicator with
:func:`register_indicator` (a function of the built model), or with
``INDICATORS.add(name, Indicator(...))`` and a probe taking a :class:`MeasureContext`.

The built-in probes are named by module and function and imported when they first measure, so
reading the registry (``search indicators``, ``search pareto``) loads no torch.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from spaces import ConfigError, Registry

if TYPE_CHECKING:
    from objectives._conditions import MeasureContext

#: A probe measures one or more indicators; it returns a flat dict of JSON-serialisable values.
Probe = Callable[["MeasureContext"], Mapping[str, Any]]


@dataclass(frozen=True)
class Indicator:
    """One cost indicator.

    Attributes:
        name: Result key, snake_case with its unit (``latency_ms``).
        unit: Unit of the value, per sample where it says so.
        direction: ``"minimize"`` for costs, ``"maximize"`` for throughput.
        phase: ``"train"`` (measured on the model as trained) or ``"infer"`` (measured on the
            deployed form, ``model.materialize()`` when the model has one).
        description: What is counted, in one sentence.
        probe: The function that measures it (shared by indicators measured together).
        analytic: True when the value depends only on the model's structure (same on every
            machine, cheap): such indicators can be checked against constraints before training.
    """

    name: str
    unit: str
    direction: Literal["minimize", "maximize"]
    phase: Literal["train", "infer"]
    description: str
    probe: Probe
    analytic: bool = False

    def __post_init__(self) -> None:
        if self.direction not in ("minimize", "maximize"):
            raise ConfigError(
                f"indicator {self.name!r}: direction must be 'minimize' or 'maximize', "
                f"got {self.direction!r}"
            )
        if self.phase not in ("train", "infer"):
            raise ConfigError(
                f"indicator {self.name!r}: phase must be 'train' or 'infer', got {self.phase!r}"
            )


INDICATORS: Registry[Indicator] = Registry("indicator")


@dataclass(frozen=True)
class LazyProbe:
    """A probe function named by its module, imported on the first measurement (the module
    imports torch); equal names are one probe, so indicators that share it measure once."""

    module: str
    function: str

    def __call__(self, ctx: MeasureContext) -> Mapping[str, Any]:
        return getattr(importlib.import_module(self.module), self.function)(ctx)


def _lazy(module: str, function: str) -> LazyProbe:
    return LazyProbe(f"objectives.{module}", function)


def _add(
    name: str,
    unit: str,
    phase: Literal["train", "infer"],
    description: str,
    probe: Probe,
    **kw: Any,
) -> None:
    direction = kw.pop("direction", "minimize")
    INDICATORS.add(name, Indicator(name, unit, direction, phase, description, probe, **kw))


_add(
    "params",
    "count",
    "train",
    "trainable parameters of the model as given, shared tensors "
    "once (for a Shapeshifter network: its stores, coefficients, norms and biases)",
    _lazy("_flops", "probe_params"),
    analytic=True,
)
_add(
    "weights",
    "count",
    "infer",
    "effective weights of the deployed form: parameters of every "
    "module times the number of times it runs in one forward pass",
    _lazy("_flops", "probe_weights"),
    analytic=True,
)
_add(
    "flops_infer",
    "FLOP/sample",
    "infer",
    "forward FLOPs per sample, 2 per multiply-add (matmul, conv, attention)",
    _lazy("_flops", "probe_flops_infer"),
    analytic=True,
)
_add(
    "macs",
    "MAC/sample",
    "infer",
    "multiply-accumulates per sample: flops_infer / 2 by construction",
    _lazy("_flops", "probe_flops_infer"),
    analytic=True,
)
_add(
    "flops_train",
    "FLOP/sample",
    "train",
    "forward + backward FLOPs per sample of a training "
    "step (no input gradient, optimizer step not counted)",
    _lazy("_flops", "probe_flops_train"),
    analytic=True,
)
_add(
    "activations",
    "elements/sample",
    "infer",
    "elements output by conv/linear layers per sample (Dollár et al. 2021)",
    _lazy("_flops", "probe_activations"),
    analytic=True,
)
_add(
    "latency_ms",
    "ms",
    "infer",
    "median batch-1 inference time after warm-up",
    _lazy("_timing", "probe_latency"),
)
_add(
    "latency_p90_ms",
    "ms",
    "infer",
    "90th percentile of batch-1 inference time",
    _lazy("_timing", "probe_latency"),
)
_add(
    "throughput",
    "samples/s",
    "infer",
    "best inference samples per second over a batch sweep 1, 2, 4, …",
    _lazy("_timing", "probe_throughput"),
    direction="maximize",
)
_add(
    "peak_mem_infer_mb",
    "MiB",
    "infer",
    "peak memory of one no-grad forward pass at the inference batch, weights included",
    _lazy("_memory", "probe_peak_mem_infer"),
)
_add(
    "peak_mem_train_mb",
    "MiB",
    "train",
    "peak memory of one optimizer step at the training "
    "batch, after a warm-up step: weights, grads, optimizer state, activations",
    _lazy("_memory", "probe_peak_mem_train"),
)
_add(
    "energy_infer_j",
    "J/sample",
    "infer",
    "energy per inference sample at the inference batch (source in energy_source)",
    _lazy("_timing", "probe_energy_infer"),
)
_add(
    "energy_train_j",
    "J/sample",
    "train",
    "energy per training sample of optimizer steps at "
    "the training batch (source in energy_source)",
    _lazy("_timing", "probe_energy_train"),
)
_add(
    "co2_infer_g",
    "gCO2e/sample",
    "infer",
    "energy_infer_j × grid intensity × PUE",
    _lazy("_timing", "probe_energy_infer"),
)
_add(
    "co2_train_g",
    "gCO2e/sample",
    "train",
    "energy_train_j × grid intensity × PUE",
    _lazy("_timing", "probe_energy_train"),
)


#: Names of the indicators :func:`register_indicator` added (the user's, checked at launch).
USER_INDICATORS: set[str] = set()
#: The dataset of the trial being measured, for indicators that take ``data``.
_DATA: contextvars.ContextVar[Any] = contextvars.ContextVar("npas_measured_data", default=None)


@contextlib.contextmanager
def measuring_data(data: Any) -> Iterator[None]:
    """Indicators registered with a ``data`` argument get ``data`` inside the block."""
    token = _DATA.set(data)
    try:
        yield
    finally:
        _DATA.reset(token)


def register_indicator(
    name: str,
    direction: Literal["minimize", "maximize"],
    *,
    unit: str = "",
    phase: Literal["train", "infer"] = "infer",
    description: str | None = None,
    analytic: bool = True,
) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Registers a cost indicator computed by ``fn(model, example)`` (a duplicate name raises).

    It is then an indicator like ``params`` or ``flops_infer``: measured by every trial, usable
    as an objective and in constraints, stored, reported and shown in the dashboard.

    Args:
        name: The metric's name (snake_case with its unit, ``bytes_int8``).
        direction: ``"minimize"`` for a cost, ``"maximize"`` for a benefit.
        unit: The unit, shown in the report.
        phase: ``"infer"``: ``model`` is the deployed form (a Shapeshifter network
            materialised); ``"train"``: the model as trained.
        description: One sentence; default the first line of ``fn``'s docstring.
        analytic: The value depends on the model's structure only (no timing), so a
            constraint on it is checked before training, as for ``params``.

    ``fn`` receives the model and one example input batch (on the model's device); a ``data``
    parameter, when it has one, receives the trial's :class:`objectives.Data` (None outside a
    trial). It must return a real number.

    Example:
        >>> @register_indicator("bytes_int8", "minimize", unit="bytes")  # doctest: +SKIP
        ... def bytes_int8(model, example):
        ...     return sum(p.numel() for p in model.parameters())
    """

    def decorator(fn: Callable[..., float]) -> Callable[..., float]:
        wants_data = "data" in inspect.signature(fn).parameters

        def probe(ctx: MeasureContext) -> dict[str, Any]:
            model = ctx.infer_model if phase == "infer" else ctx.model
            value = fn(model, ctx.example, **({"data": _DATA.get()} if wants_data else {}))
            return {name: number_of(name, value)}

        about = description or (inspect.getdoc(fn) or name).splitlines()[0]
        INDICATORS.add(name, Indicator(name, unit, direction, phase, about, probe, analytic))
        USER_INDICATORS.add(name.lower())
        return fn

    return decorator


def number_of(name: str, value: Any) -> float:
    """``value`` as a float, or a ConfigError: an indicator must measure a real number."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ConfigError(
            f"indicator {name!r} returned {value!r} ({type(value).__name__}); allowed: a real "
            "number (int or float, not NaN)"
        )
    return float(value)


def list_indicators(pattern: str = "*") -> list[str]:
    """Sorted names of the registered indicators that match a shell-style wildcard."""
    return INDICATORS.names(pattern)
