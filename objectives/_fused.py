"""Several seeds of one architecture trained at once, as one fused computation.

The k models' parameters are stacked (``torch.func.stack_module_state``) and the family's
module runs on them under ``torch.vmap`` (its convolution batching rule is a grouped
convolution), so one forward, one backward and one optimiser step serve all k. Each seed keeps
what :func:`objectives.train.fit` gives it alone: its own batch order and augmentation (its own
generator), its own dropout masks (drawn from its own generator, as ``fit`` draws them from the
global one it seeds), its own validation split when each seed has its own :class:`Data`. The
per-seed losses are summed, so seed i's gradient is its own loss's; SGD and AdamW act element
by element, so one step of the stacked parameters is k separate steps; the schedule is shared.
What vmap cannot run (a custom autograd function without a vmap rule, a Shapeshifter
network's weight generation, or a convolution under CUDA's bf16 autocast, which vmap hands bf16
inputs with float32 weights) is found by a probe step on copies, and :func:`fit_seeds` then
trains the seeds one after another with ``fit`` and says so, as it does for the recipe's
levers the fused loop lacks (``ema``, ``teacher``); the family's fast batch norm of few
channels runs as ``nn.BatchNorm2d`` (the same maths) inside the fused module. On a CUDA
device dropout masks are still per seed, but not the lone run's (ATen's CUDA dropout draws
its masks with another kernel); everything else matches there too, within float rounding.

Example:
    >>> from objectives.datasets import load
    >>> from objectives import Recipe
    >>> from spaces import build_model
    >>> data = load("digits")
    >>> nets = [build_model("sepnet", data.in_shape, 10, stem=4, width=4) for _ in range(3)]
    >>> results = fit_seeds(nets, data, Recipe(epochs=1), seeds=[0, 1, 2])  # doctest: +SKIP
    >>> results[0].config["fused"]  # doctest: +SKIP
    3
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state

from objectives._energy import EnergyMeter
from objectives._recipe import Recipe
from objectives.datasets import Augment, Data, Split, StreamedSplit
from objectives.train import (
    FitResult,
    NonFiniteLossError,
    _autocast,
    _resolve_bf16,
    epoch_record,
    fit,
)
from spaces import BatchNorm2d, ConfigError

__all__ = ["fit_seeds", "fusable"]

Tensors = dict[str, torch.Tensor]


class _MaskDropout(nn.Module):
    """Dropout whose mask is a buffer set from outside: under vmap each seed multiplies by its
    own mask, drawn as ATen's CPU dropout draws it (bernoulli(1 - p), divided by 1 - p)."""

    mask: torch.Tensor  # a buffer, set before each step

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p
        self.register_buffer("mask", torch.empty(0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        return x * self.mask


#: torch's dropout layers other than ``nn.Dropout`` (which alone is fused).
_OTHER_DROPOUTS = (nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
                   nn.FeatureAlphaDropout)  # fmt: skip


class _Dropouts:
    """The model's dropout layers in call order, and the per-sample shape each one sees."""

    def __init__(self, model: nn.Module, example: torch.Tensor) -> None:
        layers: dict[nn.Module, str] = {
            m: name for name, m in model.named_modules() if isinstance(m, nn.Dropout)
        }
        odd = [n for n, m in model.named_modules()
               if isinstance(m, _OTHER_DROPOUTS) and m not in layers]  # fmt: skip
        if odd:
            raise ConfigError(f"only nn.Dropout is fused; {odd} are other kinds")
        calls: list[tuple[str, float, tuple[int, ...]]] = []
        probe = copy.deepcopy(model)
        by_probe = dict(zip(probe.modules(), model.modules(), strict=True))

        def record(module: nn.Dropout, args: tuple[torch.Tensor, ...]) -> None:
            name = layers[by_probe[module]]
            calls.append((name, float(module.p), tuple(args[0].shape[1:])))

        hooks = [m.register_forward_pre_hook(record) for m in probe.modules()
                 if by_probe[m] in layers]  # fmt: skip
        with torch.no_grad():
            probe.train()(example)
        for hook in hooks:
            hook.remove()
        names = [name for name, _, _ in calls]
        if len(set(names)) != len(names) or set(names) != set(layers.values()):
            raise ConfigError("a dropout layer is not called exactly once per forward")
        self.calls = [(name, p, shape) for name, p, shape in calls if p > 0]

    def replace(self, base: nn.Module) -> None:
        """Swaps ``base``'s dropout layers for :class:`_MaskDropout`."""
        for name, p, _ in self.calls:
            parent, _, leaf = name.rpartition(".")
            setattr(base.get_submodule(parent), leaf, _MaskDropout(p))

    def masks(self, batch: int, generators: Sequence[torch.Generator]) -> Tensors:
        """Each layer's stacked masks for a batch of ``batch``, seed by seed in call order
        (the order a lone run draws them from its RNG)."""
        device = generators[0].device
        per_seed: list[list[torch.Tensor]] = []
        for gen in generators:
            masks = []
            for _, p, shape in self.calls:
                if p == 1:
                    masks.append(torch.zeros((batch, *shape), device=device))
                else:
                    noise = torch.empty((batch, *shape), device=device)
                    masks.append(noise.bernoulli_(1 - p, generator=gen).div_(1 - p))
            per_seed.append(masks)
        return {f"{name}.mask": torch.stack([m[j] for m in per_seed])
                for j, (name, _, _) in enumerate(self.calls)}  # fmt: skip


class _Fused:
    """k stacked copies of one module, run under vmap."""

    def __init__(self, models: Sequence[nn.Module], example: torch.Tensor) -> None:
        self.k = len(models)
        self.dropouts = _Dropouts(models[0], example)
        base = copy.deepcopy(models[0]).to("meta")
        self.dropouts.replace(base)
        # BatchNorm2d's fast path asks for strides vmap hides: each becomes the nn.BatchNorm2d
        # it subclasses (the same maths, ATen's kernel)
        fast: list[nn.Module] = [m for m in base.modules() if isinstance(m, BatchNorm2d)]
        for module in fast:
            module.__class__ = nn.BatchNorm2d
        self.base = base
        params, buffers = stack_module_state(list(models))
        self.params: Tensors = params
        self.buffers: Tensors = buffers

    def logits(self, x: torch.Tensor, extra: Tensors | None = None, *, shared: bool = False
               ) -> torch.Tensor:  # fmt: skip
        """(k, B, classes) logits; ``x`` is (k, B, ...), or (B, ...) for all when ``shared``."""

        def one(params: Tensors, buffers: Tensors, xb: torch.Tensor) -> torch.Tensor:
            return functional_call(self.base, (params, buffers), (xb,))

        buffers = {**self.buffers, **(extra or {})}
        return torch.vmap(one, in_dims=(0, 0, None if shared else 0))(self.params, buffers, x)

    def train(self, mode: bool) -> None:
        self.base.train(mode)

    def write_back(self, models: Sequence[nn.Module]) -> None:
        """Seed i's trained parameters and buffers into ``models[i]``."""
        with torch.no_grad():
            for i, model in enumerate(models):
                for name, p in model.named_parameters():
                    p.copy_(self.params[name][i])
                for name, b in model.named_buffers():
                    if name in self.buffers:
                        b.copy_(self.buffers[name][i])


def _unfused_options(recipe: Recipe) -> str | None:
    """None when the fused loop runs every option ``recipe`` uses, else which it does not:
    a weights' average and distillation are ``fit``'s alone, so such seeds train one after
    another."""
    unfused = [name for name in ("ema", "teacher") if getattr(recipe, name) is not None]
    return f"the fused loop has no {' or '.join(unfused)} (recipe options)" if unfused else None


def fusable(
    model: nn.Module, data: Data, *, batch_size: int = 128, bf16: bool | None = None
) -> str | None:
    """None when the seeds of ``model`` can be trained fused, else why not: one fused
    training step of two copies of ``model`` is tried as the fused loop runs it, under bf16
    autocast when ``bf16`` resolves so (``fit``'s default on CUDA, where vmap hands some
    convolutions bf16 inputs with float32 weights); the model itself is not touched."""
    models = [copy.deepcopy(model).to(data.device) for _ in range(2)]
    x = data.train.example(min(batch_size, len(data.train)))
    y = torch.zeros(len(x), dtype=torch.int64, device=x.device)
    use_bf16 = _resolve_bf16(bf16, x.device)
    try:
        fused = _Fused(models, x)
        fused.train(True)
        gens = [torch.Generator(device=x.device).manual_seed(s) for s in range(2)]
        with _autocast(x.device, use_bf16):
            logits = fused.logits(torch.stack([x, x]), fused.dropouts.masks(len(x), gens))
        F.cross_entropy(logits.float().flatten(0, 1), y.repeat(2)).backward()
    except Exception as err:  # any failure of vmap is a reason to train seed by seed
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return None


def fit_seeds(
    models: Sequence[nn.Module],
    data: Data | Sequence[Data],
    recipe: Recipe,
    *,
    seeds: Sequence[int],
    fused: bool | None = None,
    device: torch.device | str | None = None,
    bf16: bool | None = None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
) -> list[FitResult]:
    """Trains ``models[i]`` in place with seed ``seeds[i]``, as ``fit(models[i], data[i],
    recipe, seed=seeds[i], ...)`` would, all at once when they can be fused.

    Each model is initialised by the caller, as for :func:`objectives.train.fit`; all must be
    of one architecture (same parameter names and shapes).

    Args:
        models: The k models.
        data: One dataset for all seeds, or one per seed (the search carves each seed's
            validation split with that seed); the splits must have equal lengths.
        recipe: ``fit``'s training options; ``grad_clip`` clips each seed's own gradient
            norm, as ``fit`` does. Fused, batches are fed as they are (``channels_last`` is
            recorded False).
        seeds: One seed per model: its batch order, augmentation and dropout.
        fused: True: fused or raise; False: one after another with ``fit``; None: fused when
            :func:`_unfused_options` and :func:`fusable` say so, else one after another.
        device: Default: where the data live.
        bf16: bf16 autocast, as ``fit``'s.
        on_epoch: Called with (i, seed i's history record) after each epoch's validation.

    Returns:
        One :class:`FitResult` per model. Fused, each holds its own history; time and energy
        are the fused run's, shared; ``config["fused"]`` is k, or the reason it was not fused
        (then each result is ``fit``'s own).

    Raises:
        ConfigError: models of different architectures, ``fused=True`` and the model or a
            recipe option (``ema``, ``teacher``) cannot be fused, or datasets of different
            lengths.
        NonFiniteLossError: a seed's loss became NaN/inf (the fused run stops for all).
    """
    datas = [data] * len(models) if isinstance(data, Data) else list(data)
    if not models or len(seeds) != len(models) or len(datas) != len(models):
        raise ConfigError(
            f"fit_seeds needs one seed and one dataset per model (>= 1 model); got "
            f"{len(models)} models, {len(seeds)} seeds, {len(datas)} datasets"
        )
    dev = torch.device(device) if device is not None else datas[0].device
    reason = (
        "fused=False"
        if fused is False
        else _unfused_options(recipe)
        or fusable(models[0], datas[0].to(dev), batch_size=recipe.batch_size, bf16=bf16)
    )
    if reason is not None and fused:
        raise ConfigError(f"fit_seeds(fused=True): these seeds cannot be fused ({reason})")
    if reason is not None:
        results = []
        for i, (model, d, seed) in enumerate(zip(models, datas, seeds, strict=True)):
            hook = None if on_epoch is None else (lambda r, i=i: on_epoch(i, r))
            result = fit(model, d, recipe, seed=seed, device=device, bf16=bf16, progress=False,
                         on_epoch=hook)  # fmt: skip
            result.config["fused"] = reason
            results.append(result)
        return results
    return _fit_fused(list(models), datas, list(seeds), recipe, dev, bf16, on_epoch)


def _fit_fused(
    models: list[nn.Module],
    datas: list[Data],
    seeds: list[int],
    recipe: Recipe,
    dev: torch.device,
    bf16: bool | None,
    on_epoch: Callable[[int, dict[str, float]], None] | None,
) -> list[FitResult]:
    """:func:`fit_seeds`'s fused path (the checks mirror ``fit``'s)."""
    shapes = [{n: p.shape for n, p in m.named_parameters()} for m in models]
    if any(s != shapes[0] for s in shapes):
        raise ConfigError("fit_seeds fuses models of one architecture; these differ")
    use_bf16 = _resolve_bf16(bf16, dev)
    datas = [d if d.device == dev else d.to(dev) for d in datas]
    lengths = {(len(d.train), len(d.val)) for d in datas}
    if len(lengths) != 1:
        raise ConfigError(f"fused seeds need splits of equal lengths, got {sorted(lengths)}")
    for model in models:
        model.to(dev)
    aug = recipe.augmentation(datas[0].augment)
    n = len(datas[0].train)
    total = recipe.total_steps(n)
    fusedm = _Fused(models, datas[0].train.example(min(recipe.batch_size, n)))
    opt = recipe.optimizer_for(list(fusedm.params.values()))
    sched = recipe.schedule_for(opt, total)
    config = {
        **recipe.recorded(aug), "channels_last": False, "device": str(dev), "bf16": use_bf16,
        "dataset": datas[0].name, "torch": torch.__version__,
        "threads": torch.get_num_threads(), "fused": len(models),
    }  # fmt: skip
    loop = _FusedLoop(fusedm, datas, opt, sched, recipe, use_bf16, aug, seeds)
    with EnergyMeter(dev) as meter:
        histories = loop.run(recipe.epochs, total, on_epoch)
    fusedm.write_back(models)
    return [FitResult(history=h, epochs=len(h), config={**config, "seed": seed},
                      train_time_s=meter.seconds, energy_j=meter.joules,
                      energy_source=meter.source, steps=loop.steps)
            for h, seed in zip(histories, seeds, strict=True)]  # fmt: skip


class _FusedLoop:
    """The epoch/step loop of the fused path: ``objectives.train._Loop``'s, k seeds wide."""

    def __init__(
        self,
        fused: _Fused,
        datas: list[Data],
        opt: torch.optim.Optimizer,
        sched: torch.optim.lr_scheduler.LRScheduler,
        recipe: Recipe,
        bf16: bool,
        augment: Augment | None,
        seeds: list[int],
    ) -> None:
        self.fused, self.datas, self.opt, self.sched = fused, datas, opt, sched
        self.label_smoothing, self.bf16, self.augment = recipe.label_smoothing, bf16, augment
        self.batch_size, self.grad_clip = recipe.batch_size, recipe.grad_clip
        dev = datas[0].device
        # fit seeds torch's global RNG (dropout) and a batch-order generator with the seed.
        self.orders = [torch.Generator(device=dev).manual_seed(s) for s in seeds]
        self.drops = [torch.Generator(device=dev).manual_seed(s) for s in seeds]
        self.steps = 0
        self.last_lr = float(opt.param_groups[0]["lr"])

    def run(
        self,
        epochs: int,
        total: int,
        on_epoch: Callable[[int, dict[str, float]], None] | None,
    ) -> list[list[dict[str, float]]]:
        k = self.fused.k
        histories: list[list[dict[str, float]]] = [[] for _ in range(k)]
        start = time.perf_counter()
        for epoch in range(1, epochs + 1):
            if self.steps >= total:
                break
            train = self._epoch(epoch, total)
            val = _evaluate(self.fused, [d.val for d in self.datas])
            elapsed = time.perf_counter() - start
            for i in range(k):
                record = epoch_record(epoch, *train[i], val[i], self.last_lr, elapsed)
                histories[i].append(record)
                if on_epoch is not None:
                    on_epoch(i, dict(record))
        return histories

    def _batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Each seed's batches as its lone run draws them, stacked: (k, B, ...), (k, B)."""
        drop_last = len(self.datas[0].train) >= self.batch_size
        streams = [d.train.batches(self.batch_size, shuffle=True, generator=g,
                                   augment=self.augment, drop_last=drop_last)
                   for d, g in zip(self.datas, self.orders, strict=True)]  # fmt: skip
        for pairs in zip(*streams, strict=True):
            yield torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])

    def _epoch(self, epoch: int, total: int) -> list[tuple[float, float]]:
        k = self.fused.k
        losses: list[torch.Tensor] = []
        correct = torch.zeros(k, dtype=torch.int64, device=self.datas[0].device)
        seen = 0
        self.fused.train(True)
        for xb, yb in self._batches():
            if self.steps >= total:
                break
            loss, hits = self._step(xb, yb)
            losses.append(loss)
            correct += hits
            seen += yb.shape[1]
            if not torch.isfinite(loss).all():
                bad = loss[~torch.isfinite(loss)][0]
                raise NonFiniteLossError(epoch=epoch, step=self.steps, value=float(bad))
        if not losses:
            return [(math.nan, 0.0)] * k
        mean = torch.stack(losses).double().mean(0)
        return [(float(mean[i]), int(correct[i]) / max(seen, 1)) for i in range(k)]

    def _step(self, xb: torch.Tensor, yb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fused = self.fused
        masks = fused.dropouts.masks(xb.shape[1], self.drops)
        with _autocast(xb.device, self.bf16):
            logits = fused.logits(xb, masks)
        logits = logits.float()
        per_seed = torch.vmap(
            lambda z, t: F.cross_entropy(z, t, label_smoothing=self.label_smoothing)
        )(logits, yb)
        self.opt.zero_grad(set_to_none=True)
        per_seed.sum().backward()  # seed i's parameters get the gradient of its own loss
        if self.grad_clip is not None:
            _clip_per_seed(list(fused.params.values()), self.grad_clip)
        self.last_lr = float(self.opt.param_groups[0]["lr"])
        self.opt.step()
        self.sched.step()
        self.steps += 1
        return per_seed.detach(), (logits.detach().argmax(dim=2) == yb).sum(1)


def _clip_per_seed(params: list[torch.Tensor], max_norm: float) -> None:
    """``nn.utils.clip_grad_norm_`` for each seed's slice of the stacked gradients."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads], dim=1).norm(dim=1)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))


def _evaluate(
    fused: _Fused, splits: Sequence[Split | StreamedSplit], batch_size: int = 256
) -> list[dict[str, float]]:
    """``objectives.train.evaluate`` of each seed on its own split (one split: shared)."""
    shared = all(s is splits[0] for s in splits)
    k, n = fused.k, len(splits[0])
    loss_sum = torch.zeros(k, dtype=torch.float64, device=splits[0].device)
    correct = torch.zeros(k, dtype=torch.int64, device=splits[0].device)
    fused.train(False)
    streams = [s.batches(batch_size, shuffle=False) for s in ([splits[0]] if shared else splits)]
    with torch.no_grad():
        for pairs in zip(*streams, strict=True):
            if shared:
                x, y = pairs[0][0], pairs[0][1].expand(k, -1)
            else:
                x, y = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
            logits = fused.logits(x, shared=shared).float()
            loss_sum += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none"
                                        ).view(k, -1).double().sum(1)  # fmt: skip
            correct += (logits.argmax(dim=2) == y).sum(1)
    return [{"accuracy": int(correct[i]) / n, "loss": float(loss_sum[i]) / n} for i in range(k)]
