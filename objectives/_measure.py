"""The front door of the cost indicators: :func:`measure` runs the panel on one model."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from objectives._conditions import (
    MeasureContext,
    MeasureOptions,
    OptimizerFactory,
    default_optimizer,
    general_conditions,
    threads_fixed,
)
from objectives._indicators import INDICATORS, Indicator
from spaces._errors import ConfigError


def measure(
    model: nn.Module,
    example_input: torch.Tensor,
    indicators: str | Iterable[str] | None = None,
    *,
    device: torch.device | str | None = None,
    threads: int | None = None,
    infer_batch: int | None = None,
    train_batch: int = 32,
    make_optimizer: OptimizerFactory = default_optimizer,
    warmup: int = 3,
    latency_budget_s: float = 1.0,
    latency_max_repeats: int = 200,
    throughput_budget_s: float = 2.0,
    max_throughput_batch: int = 1024,
    energy_budget_s: float = 0.5,
    energy_watts: float | None = None,
    intensity_g_per_kwh: float = 475.0,
    pue: float = 1.0,
) -> dict[str, Any]:
    """Measures cost indicators of one model, with the conditions they were measured under.

    Infer-phase indicators run on the deployed form: ``model.materialize()`` when the model has
    a callable ``materialize`` (a Shapeshifter network; ``cond_infer_form`` says
    ``"materialized"``), else the model itself. Train-phase indicators and ``params`` run on the
    model as given; training steps use a private copy, so the caller's weights never change.

    Args:
        model: The model; it must map ``example_input`` to its output.
        example_input: One input batch (samples along dim 0). Counts are per sample; timed runs
            cycle its rows to build batches of any size.
        indicators: Names (see :func:`list_indicators`) or None for all of them.
        device: Where to measure; default the device of the model's parameters (CPU if none).
            A model elsewhere is copied there, not moved.
        threads: Intra-op CPU threads for the measurement (restored after); None keeps the
            current setting. The count used is recorded as ``cond_threads``.
        infer_batch: Batch of the inference memory and energy runs; default the example's.
        train_batch: Batch of the training-step memory and energy runs.
        make_optimizer: Builds the optimiser of the training steps (default SGD-Nesterov).
        warmup: Untimed calls before each timed series.
        latency_budget_s: Time for the batch-1 latency repeats (at least 3 are taken).
        latency_max_repeats: Upper bound on those repeats.
        throughput_budget_s: Time for the whole batch sweep (each batch size gets 1/8).
        max_throughput_batch: Largest batch of the sweep.
        energy_budget_s: Time of each energy run (inference, training).
        energy_watts: Power for the energy estimate when no counter is readable.
        intensity_g_per_kwh: Grid carbon intensity for the CO2 indicators.
        pue: Power usage effectiveness (>= 1) for the CO2 indicators.

    Returns:
        A flat dict of JSON-serialisable values: the indicators asked for (and those measured
        by the same runs), companions (``latency_iqr_ms``, ``throughput_batch``,
        ``energy_source``) and ``cond_*`` conditions (device, driver, torch, threads, dtype,
        batches, repeats, memory method, ``cond_measure_s``). An indicator that cannot be
        measured here is None, and its ``cond_*`` says why.

    Raises:
        UnknownNameError: an indicator name is not registered (the message lists the known ones).
        ConfigError: a bad model, input or option.

    Example:
        >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> measure(net, torch.zeros(1, 4), ["params", "flops_infer"])["flops_infer"]
        36.0
    """
    chosen = _resolve(indicators)
    options = MeasureOptions(
        threads=threads, infer_batch=infer_batch, train_batch=train_batch,
        make_optimizer=make_optimizer, warmup=warmup, latency_budget_s=latency_budget_s,
        latency_max_repeats=latency_max_repeats, throughput_budget_s=throughput_budget_s,
        max_throughput_batch=max_throughput_batch, energy_budget_s=energy_budget_s,
        energy_watts=energy_watts, intensity_g_per_kwh=intensity_g_per_kwh, pue=pue,
    )  # fmt: skip
    _check_inputs(model, example_input)
    t0 = time.perf_counter()
    ctx = _context(model, example_input, device, options, chosen)
    result: dict[str, Any] = {}
    with threads_fixed(options.threads) as used:
        for probe in dict.fromkeys(ind.probe for ind in chosen):
            result.update(probe(ctx))
        result.update(general_conditions(ctx, used))
    result["cond_measure_s"] = time.perf_counter() - t0
    return dict(sorted(result.items(), key=lambda kv: kv[0].startswith("cond_")))


def _resolve(indicators: str | Iterable[str] | None) -> list[Indicator]:
    """The registered indicators asked for, checked before anything runs."""
    if indicators is None:
        names = INDICATORS.names()
    elif isinstance(indicators, str):
        names = [indicators]
    else:
        names = list(indicators)
    if not names:
        raise ConfigError("indicators must name at least one indicator, got an empty list")
    return [INDICATORS.get(name) for name in names]


def _check_inputs(model: Any, example_input: Any) -> None:
    if not isinstance(model, nn.Module):
        raise ConfigError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(example_input, torch.Tensor) or example_input.ndim < 1:
        raise ConfigError(
            "example_input must be a tensor with the samples along dim 0, got "
            f"{type(example_input).__name__} {getattr(example_input, 'shape', '')}"
        )
    if len(example_input) < 1:
        raise ConfigError(
            f"example_input must hold at least one sample, got shape {tuple(example_input.shape)}"
        )


def _model_device(model: nn.Module) -> torch.device:
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return torch.device("cpu")


def _on_device(model: nn.Module, device: torch.device) -> nn.Module:
    """``model`` itself when it already lives on ``device``, else a copy moved there."""
    tensors = (*model.parameters(), *model.buffers())
    if all(t.device == device for t in tensors):
        return model
    return copy.deepcopy(model).to(device)


def _context(
    model: nn.Module,
    example_input: torch.Tensor,
    device: torch.device | str | None,
    options: MeasureOptions,
    chosen: list[Indicator],
) -> MeasureContext:
    try:
        where = torch.device(device) if device is not None else _model_device(model)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"device must name a torch device, got {device!r} ({err})") from None
    if where.type == "cuda" and where.index is None:
        where = torch.device("cuda", torch.cuda.current_device())
    model = _on_device(model, where)
    materialize = getattr(model, "materialize", None)
    wants_infer = any(ind.phase == "infer" for ind in chosen)
    if callable(materialize) and wants_infer:
        infer_model, form = _on_device(materialize(), where), "materialized"
    else:
        infer_model, form = model, "as-is"
    x = example_input.to(where)
    return MeasureContext(model, infer_model, x, where, form, options)
