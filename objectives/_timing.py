"""Indicators that run the model under a clock or an energy meter: latency, throughput, energy.

Each one warms up first, then repeats until its time budget is spent (with a minimum count), so
the whole panel stays cheap for a small model and bounded for a large one. CUDA is timed with
events; the CPU with ``time.perf_counter`` under the thread count fixed by :func:`measure`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from objectives._conditions import (
    MeasureContext,
    TrainStep,
    is_out_of_memory,
    module_mode,
)
from objectives._energy import EnergyMeter, co2_grams

_GAIN = 1.05  # a larger batch must beat the best throughput by > 5 % to count as a gain
_PATIENCE = 2  # batches in a row without such a gain end the sweep
_SWEEP_SHARE = 8  # each batch size gets at most 1/8 of the throughput budget


def _time_call(ctx: MeasureContext, fn: Callable[[], Any]) -> float:
    """Seconds of one call: CUDA events on GPU, perf_counter on CPU."""
    if ctx.device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def time_repeats(
    ctx: MeasureContext,
    fn: Callable[[], Any],
    *,
    budget_s: float,
    max_repeats: int,
    min_repeats: int = 3,
) -> list[float]:
    """Seconds of each timed call after ``options.warmup`` untimed ones, within ``budget_s``."""
    for _ in range(ctx.options.warmup):
        fn()
    ctx.synchronize()
    times: list[float] = []
    t0 = time.perf_counter()
    while len(times) < max(min_repeats, 1) or (
        len(times) < max_repeats and time.perf_counter() - t0 < budget_s
    ):
        times.append(_time_call(ctx, fn))
    return times


def _forward(ctx: MeasureContext, batch: int) -> Callable[[], Any]:
    model, x = ctx.infer_model, ctx.batch(batch)

    def run() -> Any:
        with torch.inference_mode():
            return model(x)

    return run


def probe_latency(ctx: MeasureContext) -> dict[str, Any]:
    """Batch-1 inference latency: median, 90th percentile and interquartile range in ms."""
    opts = ctx.options
    with module_mode(ctx.infer_model, training=False):
        run = _forward(ctx, 1)
        times = time_repeats(
            ctx, run, budget_s=opts.latency_budget_s, max_repeats=opts.latency_max_repeats
        )
    ms = np.asarray(times) * 1e3
    q25, q50, q75, q90 = np.percentile(ms, [25, 50, 75, 90])
    return {
        "latency_ms": float(q50),
        "latency_p90_ms": float(q90),
        "latency_iqr_ms": float(q75 - q25),
        "cond_latency_batch": 1,
        "cond_latency_repeats": len(times),
        "cond_warmup": opts.warmup,
        "cond_timer": "cuda events" if ctx.device.type == "cuda" else "perf_counter",
    }


def _samples_per_s(ctx: MeasureContext, batch: int, budget_s: float) -> float:
    times = time_repeats(ctx, _forward(ctx, batch), budget_s=budget_s, max_repeats=1000)
    return batch / float(np.median(times))


def probe_throughput(ctx: MeasureContext) -> dict[str, Any]:
    """Best inference samples/s over a batch sweep 1, 2, 4, … and the batch that reached it.

    The sweep stops at out-of-memory, after two batches in a row without a > 5 % gain, at
    ``max_throughput_batch`` or when ``throughput_budget_s`` is spent; the reason is recorded.
    """
    opts = ctx.options
    deadline = time.perf_counter() + opts.throughput_budget_s
    best, best_batch, stale, batch, stop = 0.0, 1, 0, 1, "cap"
    with module_mode(ctx.infer_model, training=False):
        while batch <= opts.max_throughput_batch:
            if batch > 1 and time.perf_counter() >= deadline:
                stop = "budget"
                break
            try:
                value = _samples_per_s(ctx, batch, opts.throughput_budget_s / _SWEEP_SHARE)
            except Exception as err:
                if batch == 1 or not is_out_of_memory(err):
                    raise
                stop = "oom"
                _release_cuda(ctx)
                break
            stale = 0 if value > best * _GAIN else stale + 1
            if value > best:
                best, best_batch = value, batch
            if stale >= _PATIENCE:
                stop = "no gain"
                break
            batch *= 2
    return {
        "throughput": best,
        "throughput_batch": best_batch,
        "cond_throughput_largest_batch": min(batch, opts.max_throughput_batch),
        "cond_throughput_stop": stop,
    }


def _release_cuda(ctx: MeasureContext) -> None:
    if ctx.device.type == "cuda":
        torch.cuda.empty_cache()


def _energy(ctx: MeasureContext, phase: str, fn: Callable[[], Any], batch: int) -> dict[str, Any]:
    """Energy and CO2 per sample of repeated calls of ``fn`` for ``energy_budget_s``.

    One untimed call first, so lazy initialisation and optimiser state are not charged.
    """
    opts = ctx.options
    fn()
    calls = 0
    with EnergyMeter(ctx.device, watts=opts.energy_watts) as meter:
        t0 = time.perf_counter()
        while calls == 0 or time.perf_counter() - t0 < opts.energy_budget_s:
            fn()
            calls += 1
    joules = meter.joules / (calls * batch)
    grams = co2_grams(joules, intensity_g_per_kwh=opts.intensity_g_per_kwh, pue=opts.pue)
    return {
        f"energy_{phase}_j": joules,
        f"co2_{phase}_g": grams,
        "energy_source": meter.source,
        f"cond_energy_{phase}_calls": calls,
        f"cond_{phase}_batch": batch,
        "cond_energy_watts": meter.watts,
        "cond_grid_intensity_g_per_kwh": opts.intensity_g_per_kwh,
        "cond_pue": opts.pue,
    }


def probe_energy_infer(ctx: MeasureContext) -> dict[str, Any]:
    """Energy and CO2 per inference sample at the inference batch, deployed form."""
    batch = ctx.infer_batch
    with module_mode(ctx.infer_model, training=False):
        return _energy(ctx, "infer", _forward(ctx, batch), batch)


def probe_energy_train(ctx: MeasureContext) -> dict[str, Any]:
    """Energy and CO2 per training sample: optimiser steps at ``train_batch``, train form."""
    batch, model = ctx.options.train_batch, ctx.train_model()
    with module_mode(model, training=True):
        result = _energy(ctx, "train", TrainStep(ctx, batch), batch)
    model.zero_grad(set_to_none=True)
    return result
