"""The front door of the cost indicators: :func:`measure` runs the panel on one model."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from objectives._conditions import MeasureContext, general_conditions, threads_fixed
from objectives._indicators import INDICATORS, Indicator
from objectives._measure_options import MeasureOptions
from spaces import ConfigError, options_of


def measure(
    model: nn.Module,
    example_input: torch.Tensor,
    indicators: str | Iterable[str] | None = None,
    *,
    device: torch.device | str | None = None,
    **options: Any,
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
        **options: Budgets and settings, the fields of :class:`objectives.MeasureOptions`
            (their help is there): ``threads`` (the count used is recorded as
            ``cond_threads``), ``infer_batch``, ``train_batch``, ``make_optimizer``,
            ``warmup``, the ``*_budget_s`` of the timed runs, ``energy_watts``,
            ``intensity_g_per_kwh`` and ``pue``.

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
    chosen_options = options_of(MeasureOptions, options, "measure")
    _check_inputs(model, example_input)
    t0 = time.perf_counter()
    ctx = _context(model, example_input, device, chosen_options, chosen)
    result: dict[str, Any] = {}
    with threads_fixed(chosen_options.threads) as used:
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
