"""One training loop for every trial: SGD-Nesterov or AdamW, a per-step schedule, bf16 on GPU.

The data stay on the device and are batched by ``torch.randperm`` indexing
(:func:`objectives.datasets.iterate`); image batches reach the model in channels-last memory
format unless the :class:`Recipe` says otherwise. Wall time and energy cover the whole loop,
per-epoch validation included, with CUDA synchronised at both ends. A non-finite loss stops
the run with :class:`NonFiniteLossError`, which the search records as a failed trial with its
message.

Example:
    >>> import torch.nn as nn
    >>> from objectives.datasets import load
    >>> data = load("digits")
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    >>> result = fit(model, data, Recipe(epochs=1))
    >>> sorted(result.history[0])
    ['elapsed_s', 'epoch', 'lr', 'train_accuracy', 'train_loss', 'val_accuracy', 'val_loss']
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from objectives._distill import (
    distill_loss,
    provenance,
    read_targets,
    targets_path,
    teacher_lock,
    write_targets,
)
from objectives._energy import EnergyMeter
from objectives._recipe import DEFAULT_LR, SCHEDULES, TORCH_OPTIMIZERS, Recipe, Teacher
from objectives.datasets import Augment, Data, Split, StreamedSplit
from spaces import ConfigError, NpasError, build_model, check_int

__all__ = [
    "DEFAULT_LR",
    "SCHEDULES",
    "STATE_FORMAT",
    "TORCH_OPTIMIZERS",
    "FitResult",
    "NonFiniteLossError",
    "Recipe",
    "evaluate",
    "fit",
    "trained_weights",
]


class NonFiniteLossError(NpasError):
    """The training loss became NaN or infinite.

    Attributes:
        epoch: 1-based epoch where it happened.
        step: 1-based optimiser step, counted over the whole run.
        value: The loss value.
    """

    def __init__(self, *, epoch: int, step: int, value: float) -> None:
        super().__init__(
            f"non-finite training loss {value} at epoch {epoch}, step {step}; "
            "lower the learning rate or check the model's initialisation"
        )
        self.epoch = epoch
        self.step = step
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only __init__: rebuild from the attributes (Ray pickles trial errors).
        return (_nonfinite, (self.epoch, self.step, self.value))


def _nonfinite(epoch: int, step: int, value: float) -> NonFiniteLossError:
    return NonFiniteLossError(epoch=epoch, step=step, value=value)


@dataclass
class FitResult:
    """What a training run produced.

    Attributes:
        history: One dict per epoch: epoch, train_loss, train_accuracy (running, on augmented
            batches), val_loss, val_accuracy, lr (the rate at the epoch's last step),
            elapsed_s (wall seconds since the loop started, validation included).
        train_time_s: Wall clock of the loop, validation included, CUDA synchronised.
        energy_j: Energy of the same span.
        energy_source: "nvml", "rapl" or "estimate".
        epochs: Epochs run (a last one cut by ``max_steps`` counts).
        steps: Optimiser steps run.
        config: The options used, the device, torch version and thread count.
    """

    history: list[dict[str, float]]
    train_time_s: float
    energy_j: float
    energy_source: str
    epochs: int
    steps: int
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def val_accuracy(self) -> float:
        """Validation accuracy after the last epoch."""
        return self.history[-1]["val_accuracy"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager[Any]:
    if bf16:
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _full_fp32(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager[Any]:
    """cuDNN convolutions in full float32, not TF32 (its default on Ampere and later GPUs), so
    that an accuracy measured on a GPU is the deployed float32 model's."""
    if device.type != "cuda" or bf16:
        return contextlib.nullcontext()
    cudnn = torch.backends.cudnn
    return cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark,
                       deterministic=cudnn.deterministic, allow_tf32=False)  # fmt: skip


def _as_layout(x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """``x`` with channels-last strides when asked and 4-D; the values are unchanged."""
    if channels_last and x.dim() == 4:
        return x.to(memory_format=torch.channels_last)  # unlike contiguous(), also for C = 1
    return x


def _resolve_bf16(bf16: bool | None, device: torch.device) -> bool:
    if bf16 is None:
        return device.type == "cuda"
    if bf16 and device.type != "cuda":
        raise ConfigError(
            f"bf16=True needs a CUDA device (bf16 autocast is GPU-only), got {device}"
        )
    return bf16


@contextlib.contextmanager
def _mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Sets train/eval mode for the block and restores the previous mode (per module)."""
    before = {m: m.training for m in model.modules()}
    model.train(training)
    try:
        yield
    finally:
        for m, was in before.items():
            m.training = was


def epoch_record(
    epoch: int,
    train_loss: float,
    train_accuracy: float,
    val: Mapping[str, float],
    lr: float,
    elapsed_s: float,
) -> dict[str, float]:
    """One epoch of a training history (``FitResult.history``), the same for ``fit`` and the
    fused ``fit_seeds``: a search's learning curve is read from these keys."""
    return {
        "epoch": epoch,
        "train_loss": train_loss,
        "train_accuracy": train_accuracy,
        "val_loss": val["loss"],
        "val_accuracy": val["accuracy"],
        "lr": lr,
        "elapsed_s": elapsed_s,
    }


def evaluate(
    model: nn.Module,
    x: torch.Tensor | Split | StreamedSplit,
    y: torch.Tensor | None = None,
    *,
    batch_size: int = 256,
    bf16: bool = False,
    channels_last: bool = True,
) -> dict[str, float]:
    """Accuracy and mean cross-entropy of ``model`` on ``(x, y)``, in eval mode without grad.

    The model's train/eval mode is restored afterwards. In float32 unless ``bf16`` (CUDA only)
    autocasts the forward pass, unlike training: a recorded accuracy is then the one the
    deployed float32 model (a bundle's model.pt or model.onnx) gives, on any device — bf16
    moved a trial's test accuracy by a sample on an H100. The loss is summed in float32.
    ``channels_last`` feeds 4-D batches in that memory format, as :func:`fit` does. The
    default batch keeps a small net's activations in a CPU's caches (1024 was up to 2x slower
    for the mnist-tiny nets on one thread, benchmarks/results/trial_throughput.md); it changes
    only the float rounding of the loss. ``x`` may be a whole split (``y`` None), in memory or
    streamed.
    """
    check_int("batch_size", batch_size)
    split: Split | StreamedSplit
    if y is None:
        if isinstance(x, torch.Tensor):
            raise ConfigError("evaluate needs the labels y with a tensor x (or a split as x)")
        split = x
    else:
        if not isinstance(x, torch.Tensor):
            raise ConfigError("evaluate takes labels y only with a tensor x: a split has its own")
        split = Split(x, y)
    if len(split) == 0 or len(x) != len(split):  # a split's length is its labels'
        raise ConfigError(
            f"evaluate needs equal, non-zero lengths; got x {len(x)}, y {len(split)}"
        )
    device = split.device
    use_bf16 = _resolve_bf16(bf16, device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    with _mode(model, training=False), torch.no_grad(), _full_fp32(device, use_bf16):
        for xb, yb in split.batches(batch_size, shuffle=False):
            with _autocast(device, use_bf16):
                logits = model(_as_layout(xb, channels_last))
            logits = logits.float()
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").double()
            correct += (logits.argmax(dim=1) == yb).sum()
    return {"accuracy": correct.item() / len(split), "loss": loss_sum.item() / len(split)}


def fit(
    model: nn.Module,
    data: Data,
    recipe: Recipe,
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
    bf16: bool | None = None,
    progress: bool | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    on_state: Callable[[dict[str, Any]], None] | None = None,
    resume: Mapping[str, Any] | None = None,
) -> FitResult:
    """Trains ``model`` in place on ``data.train`` with ``recipe`` and validates after each
    epoch.

    With ``recipe.ema`` the epochs are validated with the weights' moving average, and
    ``model`` ends holding it (what a caller saves, exports and measures is what was
    validated). With ``recipe.teacher`` the teacher's logits on ``data.train`` are read from
    the cache, or the teacher is trained first (on ``data.train`` alone: its own validation is
    on that split too) and they are cached; its time counts in neither ``train_time_s`` nor
    ``energy_j``, and ``config["teacher_targets"]`` names the file.

    Args:
        model: Any module mapping (N, C, H, W) inputs to (N, num_classes) logits.
        data: From :func:`objectives.datasets.load`; moved to ``device`` if elsewhere.
        recipe: The training options (:class:`Recipe`: epochs, batch size, optimizer, learning
            rate and schedule, augmentation, ...), checked when it was made.
        seed: Seeds the batch order, the augmentation and dropout (the caller's global RNG
            state is restored afterwards). Model initialisation is the caller's business.
        device: Default: where ``data`` lives.
        bf16: bf16 autocast; default on CUDA, refused on CPU.
        progress: tqdm bar over epochs; default when stderr is a terminal.
        on_epoch: Called after each epoch's validation with a copy of its history record, so
            a search can report learning curves (e.g. Ray Tune's ``tune.report``) as they
            come. To stop early, raise from it: the exception propagates out of ``fit``
            unchanged (the caller's RNG state is still restored), and no result is returned.
        on_state: Called after each epoch, before ``on_epoch``, with everything that resumes
            the run after that epoch: weights (and the average's, with ``ema``), optimiser
            and schedule state, step, history, the batch-order generator and the global RNGs.
            Tensors are copies on the CPU; ``torch.save`` it for a checkpoint, and read the
            weights a model of that epoch holds with :func:`trained_weights`.
        resume: A state ``on_state`` received, from a run with the same recipe, seed, bf16
            and data: training continues after its epoch and ends with the weights, history
            and RNG states an uninterrupted run has (bit-identical on the CPU). Time and
            energy add to the saved run's.

    Raises:
        NonFiniteLossError: The loss became NaN/inf; carries epoch, step and value.
        ConfigError: bf16 on a CPU; a ``resume`` state of another format or of a run with
            other options; or a teacher with a streamed training split.
        Exception: Whatever ``on_epoch`` raises, unchanged.
    """
    dev = torch.device(device) if device is not None else data.device
    use_bf16 = _resolve_bf16(bf16, dev)
    if data.device != dev:
        data = data.to(dev)
    model.to(dev)
    aug = recipe.augmentation(data.augment)
    soft, made_by = (None, None) if recipe.teacher is None else _soft_targets(recipe.teacher, data)
    total = recipe.total_steps(len(data.train))
    opt = recipe.optimizer_for(model.parameters())
    sched = recipe.schedule_for(opt, total)
    config = {
        **recipe.recorded(aug),
        "seed": seed,
        "device": str(dev),
        "bf16": use_bf16,
        "dataset": data.name,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    if made_by is not None:
        config["teacher_targets"] = str(made_by)
    loop = _Loop(model, data, opt, sched, recipe, use_bf16, aug, soft)
    rng_devices = [dev] if dev.type == "cuda" else []
    show = sys.stderr.isatty() if progress is None else progress
    with torch.random.fork_rng(devices=rng_devices), _fork_host_rngs(), EnergyMeter(dev) as meter:
        torch.manual_seed(seed)
        generator = torch.Generator(device=dev).manual_seed(seed)
        if resume is not None:
            loop.restore(resume, config, generator)
        history = loop.run(recipe.epochs, total, generator, show, on_epoch,
                           on_state=on_state, options=config, meter=meter)  # fmt: skip
    loop.finish()
    return FitResult(
        history=history,
        train_time_s=loop.spent[0] + meter.seconds,
        energy_j=loop.spent[1] + meter.joules,
        energy_source=meter.source,
        epochs=len(history),
        steps=loop.steps,
        config=config,
    )


def _soft_targets(teacher: Teacher, data: Data) -> tuple[torch.Tensor, Path]:
    """The teacher's logits on ``data.train``, in its order, on its device, and their file:
    read from the cache, else the teacher is built, trained and cached first. The teacher's
    ``fit`` gets a dataset whose validation and test splits are the training split, so those
    never reach it."""
    if not isinstance(data.train, Split):
        raise ConfigError(
            "teacher: distillation needs the training split in memory, not streamed; load the "
            "dataset with stream=False"
        )
    device = data.device
    made_by = provenance(teacher, data, device)
    path = targets_path(made_by)
    shape = (len(data.train), data.num_classes)
    logits = read_targets(path, made_by, shape)  # a damaged file is a miss: trained again
    if logits is None:
        with teacher_lock(path):  # another trial may be training it: then read what it wrote
            logits = read_targets(path, made_by, shape)
            if logits is None:
                logits = _train_teacher(teacher, data, path, made_by)
    return logits.to(device), path


def _train_teacher(
    teacher: Teacher, data: Data, path: Path, made_by: Mapping[str, Any]
) -> torch.Tensor:
    """Trains ``teacher`` on ``data``'s training split only and caches its logits there."""
    assert isinstance(data.train, Split)  # _soft_targets refuses a streamed one
    with torch.random.fork_rng(devices=[data.device] if data.device.type == "cuda" else []):
        torch.manual_seed(teacher.seed)
        model = build_model(teacher.family, data.in_shape, data.num_classes, **teacher.hyper)
    train_only = dataclasses.replace(data, val=data.train, test=data.train)
    result = fit(model, train_only, teacher.recipe, seed=teacher.seed, progress=False)
    logits = _logits(model, data.train, channels_last=teacher.recipe.channels_last)
    write_targets(path, made_by, logits, {"trained_on": "train", "history": result.history,
                                          "train_time_s": result.train_time_s})  # fmt: skip
    return logits


def _logits(model: nn.Module, split: Split, *, channels_last: bool) -> torch.Tensor:
    """``model``'s float32 logits on ``split`` in its order, in eval mode, as :func:`evaluate`
    runs it."""
    with _mode(model, training=False), torch.no_grad(), _full_fp32(split.device, False):
        return torch.cat([model(_as_layout(xb, channels_last)).float()
                          for xb, _ in split.batches(256, shuffle=False)])  # fmt: skip


#: ``format`` of a training state (:func:`fit`'s ``on_state`` and ``resume``). States of runs
#: with ``ema`` hold ``ema`` (the average's weights) and ``ema_updates`` too.
STATE_FORMAT = "npas-fit-state/1"
#: What a training state's run must share with the run it resumes: the whole recipe, the seed,
#: bf16 and the dataset; the rest of ``config`` (device, threads, versions) may differ. A lever
#: not in use is not recorded, so the states of runs without one are as they were before.
_RESUMED_OPTIONS = (*(f.name for f in fields(Recipe)), "seed", "bf16", "dataset")


def _options_of(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: config[k] for k in _RESUMED_OPTIONS if k in config}


def trained_weights(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """The weights a model holds when its run ends after the epoch a training state
    (``fit``'s ``on_state``) was taken at: the moving average's with ``ema``, else the model's."""
    return state["ema"] if "ema" in state else state["model"]


def _rng_state() -> dict[str, Any]:
    """The global RNGs a training run draws from, as tensors and plain data (so the state
    loads with ``weights_only=True``)."""
    # legacy=True is the default; numpy's stubs type the call without it as legacy=False
    np_state = np.random.get_state(legacy=True)
    assert isinstance(np_state, tuple)  # the global RandomState is an MT19937
    version, internal, gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else [],
        "numpy": {"keys": torch.from_numpy(np_state[1].astype(np.int64)),
                  "pos": int(np_state[2]), "has_gauss": int(np_state[3]),
                  "cached_gaussian": float(np_state[4])},
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
    }  # fmt: skip


@contextlib.contextmanager
def _fork_host_rngs() -> Iterator[None]:
    """numpy's and Python's global RNG states restored after the block, as
    ``torch.random.fork_rng`` does for torch's: a resumed run sets them to the saved run's."""
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        yield
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


def _set_rng_state(state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    n = state["numpy"]
    np.random.set_state(("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"],
                         n["has_gauss"], n["cached_gaussian"]))  # fmt: skip
    p = state["python"]
    random.setstate((p["version"], tuple(p["internal"]), p["gauss"]))


def _cpu(value: Any) -> Any:
    """``value`` with every tensor copied to the CPU (a state outlives the step it was taken
    at, and a checkpoint is written from the CPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cpu(v) for v in value)
    return value


class _Loop:
    """The epoch/step loop of :func:`fit`; holds the step counter for error reports."""

    def __init__(
        self,
        model: nn.Module,
        data: Data,
        opt: Optimizer,
        sched: LRScheduler,
        recipe: Recipe,
        bf16: bool,
        augment: Augment | None,
        soft: torch.Tensor | None = None,
    ) -> None:
        self.model, self.data, self.opt, self.sched = model, data, opt, sched
        self.label_smoothing, self.bf16, self.augment = recipe.label_smoothing, bf16, augment
        self.batch_size, self.channels_last = recipe.batch_size, recipe.channels_last
        self.steps = 0
        self.last_lr = float(opt.param_groups[0]["lr"])
        self.grad_clip = recipe.grad_clip
        #: The weights' moving average (torch's, buffers included: batch-norm statistics).
        self.ema = None if recipe.ema is None else AveragedModel(
            model, multi_avg_fn=get_ema_multi_avg_fn(recipe.ema), use_buffers=True
        )  # fmt: skip
        #: The teacher's logits on the training split, in its order (None: no distillation).
        self.soft = soft
        self.temperature, self.distill_weight = recipe.distill_temperature, recipe.distill_weight
        self.history: list[dict[str, float]] = []
        #: Seconds and joules of the run before a resumed state (:meth:`restore`).
        self.spent = (0.0, 0.0)

    def restore(
        self, state: Mapping[str, Any], options: Mapping[str, Any], generator: torch.Generator
    ) -> None:
        """Puts the run back where ``state`` was taken (:meth:`state`)."""
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            raise ConfigError(f"resume: not a training state of format {STATE_FORMAT!r}")
        saved, now = state["options"], _options_of(options)
        differ = {k: (saved.get(k), now.get(k)) for k in dict.fromkeys([*saved, *now])
                  if saved.get(k) != now.get(k)}  # fmt: skip
        if differ:
            raise ConfigError(
                f"resume: the state is of a run with other options (saved, now): {differ}"
            )
        self.model.load_state_dict(state["model"])
        if self.ema is not None:
            self.ema.module.load_state_dict(state["ema"])
            self.ema.n_averaged.fill_(int(state["ema_updates"]))
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["schedule"])
        self.steps = int(state["steps"])
        self.last_lr = float(state["last_lr"])
        self.history = [dict(r) for r in state["history"]]
        generator.set_state(state["generator"])
        _set_rng_state(state["rng"])
        self.spent = (float(state["seconds"]), float(state["joules"]))

    def state(
        self, generator: torch.Generator, options: Mapping[str, Any], meter: EnergyMeter
    ) -> dict[str, Any]:
        """Everything :meth:`restore` needs to continue after the last epoch run."""
        seconds, joules = meter.so_far()
        averaged = {} if self.ema is None else {
            "ema": _cpu(self.ema.module.state_dict()), "ema_updates": int(self.ema.n_averaged)
        }  # fmt: skip
        return {
            **averaged,
            "format": STATE_FORMAT,
            "options": _options_of(options),
            "epoch": len(self.history),
            "steps": self.steps,
            "last_lr": self.last_lr,
            "history": [dict(r) for r in self.history],
            "model": _cpu(self.model.state_dict()),
            "optimizer": _cpu(self.opt.state_dict()),
            "schedule": self.sched.state_dict(),
            "generator": generator.get_state().cpu(),
            "rng": _rng_state(),
            "seconds": self.spent[0] + seconds,
            "joules": self.spent[1] + joules,
        }

    def run(
        self,
        epochs: int,
        total: int,
        generator: torch.Generator,
        show: bool,
        on_epoch: Callable[[dict[str, float]], None] | None,
        *,
        on_state: Callable[[dict[str, Any]], None] | None = None,
        options: Mapping[str, Any],
        meter: EnergyMeter,
    ) -> list[dict[str, float]]:
        history = self.history
        first = len(history) + 1
        offset = history[-1]["elapsed_s"] if history else 0.0
        start = time.perf_counter()
        bar = tqdm(range(first, epochs + 1), desc="fit", unit="epoch", disable=not show)
        try:
            for epoch in bar:
                if self.steps >= total:
                    break
                train_loss, train_acc = self._epoch(epoch, total, generator)
                val = evaluate(self.validated, self.data.val, channels_last=self.channels_last)
                elapsed = offset + self._elapsed(start)
                record = epoch_record(epoch, train_loss, train_acc, val, self.last_lr, elapsed)
                history.append(record)
                bar.set_postfix(loss=f"{train_loss:.4f}", val_acc=f"{val['accuracy']:.4f}")
                if on_state is not None:
                    on_state(self.state(generator, options, meter))
                if on_epoch is not None:
                    on_epoch(dict(record))  # a copy: the callback cannot alter the history
                if self.steps >= total:
                    break
        finally:
            bar.close()
        return history

    @property
    def validated(self) -> nn.Module:
        """The weights each epoch is validated with and the run ends with."""
        return self.model if self.ema is None else self.ema.module

    def finish(self) -> None:
        """Leaves the model holding the weights it was last validated with."""
        if self.ema is not None:
            self.model.load_state_dict(self.ema.module.state_dict())

    def _elapsed(self, start: float) -> float:
        """Seconds since ``start``, with queued CUDA work finished (as ``train_time_s``)."""
        device = self.data.device
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    def _epoch(self, epoch: int, total: int, generator: torch.Generator) -> tuple[float, float]:
        """One pass; returns mean loss and accuracy over the batches seen."""
        train = self.data.train
        drop_last = len(train) >= self.batch_size
        # Distilling, the batches carry each sample's position in place of its label (the same
        # order and augmentation: only the labels differ), which picks its label and targets.
        source = train
        if self.soft is not None:
            assert isinstance(train, Split)  # _soft_targets refuses a streamed split
            source = Split(train.x, torch.arange(len(train), device=train.device))
        batches = source.batches(
            self.batch_size,
            shuffle=True,
            generator=generator,
            augment=self.augment,
            drop_last=drop_last,
        )
        losses: list[torch.Tensor] = []
        correct = torch.zeros((), dtype=torch.int64, device=train.device)
        seen = 0
        check_each_step = train.device.type != "cuda"  # a GPU sync per step would cost speed
        self.model.train()
        for xb, yb in batches:
            if self.steps >= total:
                break
            soft = None if self.soft is None else self.soft[yb]
            if soft is not None:
                yb = train.y[yb]
            loss, hits = self._step(xb, yb, soft)
            losses.append(loss)
            correct += hits
            seen += len(yb)
            if check_each_step:
                self._check(losses, epoch, first=len(losses) - 1)
        if not check_each_step:
            self._check(losses, epoch, first=0)
        mean_loss = torch.stack(losses).double().mean().item() if losses else math.nan
        return mean_loss, correct.item() / max(seen, 1)

    def _step(
        self, xb: torch.Tensor, yb: torch.Tensor, soft: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with _autocast(xb.device, self.bf16):
            logits = self.model(_as_layout(xb, self.channels_last))
        if soft is None:
            loss = F.cross_entropy(logits.float(), yb, label_smoothing=self.label_smoothing)
        else:
            loss = distill_loss(logits.float(), yb, soft, temperature=self.temperature,
                                weight=self.distill_weight,
                                label_smoothing=self.label_smoothing)  # fmt: skip
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.grad_clip is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.last_lr = float(self.opt.param_groups[0]["lr"])
        self.opt.step()
        self.sched.step()
        if self.ema is not None:
            self.ema.update_parameters(self.model)
        self.steps += 1
        return loss.detach(), (logits.detach().argmax(dim=1) == yb).sum()

    def _check(self, losses: list[torch.Tensor], epoch: int, *, first: int) -> None:
        """Raises on the first non-finite loss in ``losses[first:]`` (one device sync)."""
        if not losses[first:]:
            return
        tail = torch.stack(losses[first:])
        bad = (~torch.isfinite(tail)).nonzero()
        if len(bad):
            index = int(bad[0, 0])
            step = self.steps - len(losses) + first + index + 1
            raise NonFiniteLossError(epoch=epoch, step=step, value=float(tail[index]))
