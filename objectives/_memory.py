"""Peak memory of one inference batch and of one training step, after a warm-up step.

Both devices report the same quantity: the bytes of the tensors the step owns before it starts
(weights, buffers, gradients, optimiser state, input) plus how far memory rose above its level
before the step. Other tensors that happen to live on the device do not count.

CUDA: the rise is ``max_memory_allocated`` (peak reset before the step) minus
``memory_allocated`` before it.

CPU: there is no allocator counter, so the process's resident-set high-water mark is used. Free
heap memory is returned to the OS (``malloc_trim``), the mark is reset by writing ``5`` to
``/proc/self/clear_refs``, and the rise is ``VmHWM`` after the step minus ``VmRSS`` before it. It
also holds allocator and library scratch, and anything else the process allocates meanwhile.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from objectives._conditions import MeasureContext, TrainStep, module_mode

_MIB = 2**20
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")

_RESIDENT = "tensor bytes owned before the step (weights, buffers, grads, optimizer state, input)"
CUDA_METHOD = (
    f"cuda: {_RESIDENT} + rise of max_memory_allocated over memory_allocated during one step "
    "after a warm-up step"
)
CPU_METHOD = (
    f"cpu: {_RESIDENT} + rise of VmHWM over VmRSS during one step after a warm-up step "
    "(malloc_trim, clear_refs reset)"
)


def _status_kib(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+)\s+kB", _STATUS.read_text(), re.MULTILINE)
    if match is None:
        raise OSError(f"{field} not in {_STATUS}")
    return int(match.group(1))


def _trim_heap() -> None:
    """Frees garbage and hands free heap pages back to the OS, so RSS is what is live."""
    gc.collect()
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        libc = ctypes.CDLL(libc_name)
        if hasattr(libc, "malloc_trim"):  # glibc only
            libc.malloc_trim(0)


def cpu_peak_supported() -> str | None:
    """None when VmHWM can be read and reset here, else the reason it cannot."""
    try:
        _status_kib("VmHWM")
        _CLEAR_REFS.write_text("5")
    except OSError as err:
        return f"VmHWM cannot be reset ({err})"
    return None


def _cpu_rise(fn: Callable[[], Any]) -> int:
    """Bytes by which the resident set peaked above its level before ``fn``."""
    _trim_heap()
    _CLEAR_REFS.write_text("5")  # VmHWM := current VmRSS
    before = _status_kib("VmRSS")
    fn()
    return max(0, _status_kib("VmHWM") - before) * 1024


def _tensor_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of distinct storages among ``tensors`` (shared weights count once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor):
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _cuda_rise(device: torch.device, fn: Callable[[], Any]) -> int:
    """Bytes by which allocated CUDA memory peaked above its level before ``fn``."""
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    torch.cuda.synchronize(device)
    return max(0, torch.cuda.max_memory_allocated(device) - before)


def _peak_bytes(ctx: MeasureContext, fn: Callable[[], Any], resident: Callable[[], int]) -> int:
    """Peak bytes of ``fn`` after one warm-up call: resident tensors + the rise during ``fn``."""
    fn()
    owned = resident()
    if ctx.device.type == "cuda":
        return owned + _cuda_rise(ctx.device, fn)
    return owned + _cpu_rise(fn)


def _unavailable(ctx: MeasureContext, key: str) -> dict[str, Any] | None:
    if ctx.device.type == "cuda":
        return None
    reason = cpu_peak_supported()
    return None if reason is None else {key: None, "cond_mem_method": f"unavailable: {reason}"}


def probe_peak_mem_infer(ctx: MeasureContext) -> dict[str, Any]:
    """Peak memory (MiB) of one no-grad forward of the deployed form at the inference batch."""
    key = "peak_mem_infer_mb"
    missing = _unavailable(ctx, key)
    if missing is not None:
        return missing
    model, x = ctx.infer_model, ctx.batch(ctx.infer_batch)

    def forward() -> None:
        with torch.inference_mode():
            model(x)

    def resident() -> int:
        return _tensor_bytes([*model.parameters(), *model.buffers(), x])

    with module_mode(model, training=False):
        peak = _peak_bytes(ctx, forward, resident)
    return {key: peak / _MIB, "cond_infer_batch": ctx.infer_batch, "cond_mem_method": _method(ctx)}


def probe_peak_mem_train(ctx: MeasureContext) -> dict[str, Any]:
    """Peak memory (MiB) of one optimiser step of the train form at ``train_batch``."""
    key = "peak_mem_train_mb"
    missing = _unavailable(ctx, key)
    if missing is not None:
        return missing
    step = TrainStep(ctx, ctx.options.train_batch)
    model = step.model

    def resident() -> int:
        state = [t for s in step.optimizer.state.values() for t in s.values()]
        grads = [p.grad for p in model.parameters()]
        return _tensor_bytes([*model.parameters(), *model.buffers(), *grads, *state, step.x])

    with module_mode(model, training=True):
        peak = _peak_bytes(ctx, step, resident)
    model.zero_grad(set_to_none=True)
    return {
        key: peak / _MIB,
        "cond_train_batch": ctx.options.train_batch,
        "cond_optimizer": type(step.optimizer).__name__,
        "cond_mem_method": _method(ctx),
    }


def _method(ctx: MeasureContext) -> str:
    return CUDA_METHOD if ctx.device.type == "cuda" else CPU_METHOD
