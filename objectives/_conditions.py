"""The conditions of one measurement: the options, the models and inputs every probe runs on.

Hardware-dependent numbers (latency, memory, energy) mean nothing without the setup that
produced them (efficiency-misnomer §4), so everything here also ends up in the result as flat
``cond_*`` keys with JSON-serialisable values, ready to be stored as Optuna user attributes.
"""

from __future__ import annotations

import contextlib
import copy
import os
import platform
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from objectives._measure_options import MeasureOptions


@dataclass
class MeasureContext:
    """What a probe measures: the train form, the deployed (infer) form and the example batch.

    Attributes:
        model: The model as given, on ``device``; train-phase probes use :meth:`train_model`.
        infer_model: The deployed form (``model.materialize()`` when it has one, else ``model``).
        example: The example input batch on ``device``; its rows are the samples.
        device: Where everything runs.
        infer_form: ``"materialized"`` or ``"as-is"``.
        options: Budgets and settings.
    """

    model: nn.Module
    infer_model: nn.Module
    example: torch.Tensor
    device: torch.device
    infer_form: str
    options: MeasureOptions
    _train_copy: nn.Module | None = field(default=None, repr=False)

    @property
    def infer_batch(self) -> int:
        return self.options.infer_batch or len(self.example)

    def train_model(self) -> nn.Module:
        """A private deep copy for training steps: measuring never changes the caller's weights."""
        if self._train_copy is None:
            self._train_copy = copy.deepcopy(self.model)
        return self._train_copy

    def batch(self, n: int) -> torch.Tensor:
        """``n`` samples cycled from the example batch (a batch sweep needs any size)."""
        index = torch.arange(n, device=self.example.device) % len(self.example)
        return self.example[index].contiguous()

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity: what Ray or a container gives it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


@contextlib.contextmanager
def threads_fixed(threads: int | None) -> Iterator[int]:
    """Fixes torch's intra-op thread count for the block (restored after), at most the
    cores this process may use (more threads only contend); yields the count."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(min(threads, usable_cores()))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def module_mode(module: nn.Module, *, training: bool) -> Iterator[nn.Module]:
    """Puts every submodule in train or eval mode for the block, then restores each one's flag."""
    flags = [(m, m.training) for m in module.modules()]
    module.train(training)
    try:
        yield module
    finally:
        for m, flag in flags:
            m.training = flag


def surrogate_loss(out: torch.Tensor) -> torch.Tensor:
    """Cross-entropy against class 0 for logits, mean square otherwise: a training step's shape.

    The loss itself is negligible next to the model; it only has to start a full backward pass.
    """
    if out.ndim == 2 and out.is_floating_point():
        target = torch.zeros(len(out), dtype=torch.long, device=out.device)
        return nn.functional.cross_entropy(out.float(), target)
    return out.float().square().mean()


def cpu_model_name() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def _cuda_driver() -> str:
    try:
        import pynvml  # optional: nvidia-ml-py

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return f"nvidia {version.decode() if isinstance(version, bytes) else version}"
    except Exception:  # not installed, no driver access: say what we do know
        return f"cuda runtime {torch.version.cuda} (driver version unread: no pynvml)"


def general_conditions(ctx: MeasureContext, threads: int) -> dict[str, Any]:
    """The conditions every result carries, whichever indicators were asked for."""
    device = ctx.device
    if device.type == "cuda":
        name, driver = torch.cuda.get_device_name(device), _cuda_driver()
    else:
        name, driver = cpu_model_name(), f"{platform.system().lower()} {platform.release()}"
    params = list(ctx.model.parameters())
    dtype = str(params[0].dtype).removeprefix("torch.") if params else "none"
    return {
        "cond_device": str(device),
        "cond_device_name": name,
        "cond_driver": driver,
        "cond_torch": torch.__version__,
        "cond_python": sys.version.split()[0],
        "cond_threads": threads,
        "cond_dtype": dtype,
        "cond_sample_shape": list(ctx.example.shape[1:]),
        "cond_infer_form": ctx.infer_form,
    }


class TrainStep:
    """One optimiser step (zero grads, forward, surrogate loss, backward, step) on the train copy.

    The caller puts the model in train mode; the optimiser is built fresh, so its state exists
    only after the first call, which is why memory is measured after a warm-up step.
    """

    def __init__(self, ctx: MeasureContext, batch: int) -> None:
        self.model = ctx.train_model()
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = ctx.options.make_optimizer(trainable)
        self.x = ctx.batch(batch)

    def __call__(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        surrogate_loss(self.model(self.x)).backward()
        self.optimizer.step()


def is_out_of_memory(err: BaseException) -> bool:
    """CUDA's OutOfMemoryError, or the CPU allocator's RuntimeError, or Python's MemoryError."""
    if isinstance(err, torch.OutOfMemoryError | MemoryError):
        return True
    return isinstance(err, RuntimeError) and "can't allocate memory" in str(err)
