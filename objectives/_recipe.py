"""The training recipe: what :func:`objectives.fit` and :func:`objectives.fit_seeds` train with.

:class:`Recipe` declares each option once, with its default and a one-line meaning (the
field's ``help``): ``fit`` and ``fit_seeds`` read it, the search's ``train`` section takes its
fields (defaults and help from here), and the YAML reference shows them. The optimisers and
schedules it names are registries here too, so a recipe is checked where it is made.

Two levers change what is trained towards, and are recorded only when in use (so a run
without them records what it did before): ``ema``, an exponential moving average of the weights
that validation and the trained model use, and ``teacher``, knowledge distillation from a
:class:`Teacher` trained once on the training split.

Example:
    >>> recipe = Recipe(epochs=2, optimizer="adamw")
    >>> recipe.peak_lr, recipe.batch_size
    (0.001, 128)
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spaces import ConfigError, Registry, check_int, check_positive, did_you_mean

if TYPE_CHECKING:  # torch loads where a recipe trains: a config is checked without it
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LRScheduler

    from objectives.datasets import Augment

__all__ = ["DEFAULT_LR", "SCHEDULES", "TORCH_OPTIMIZERS", "Recipe", "Teacher"]

#: name → (params, lr, momentum, weight_decay) → a torch optimiser (``train.optimizer``; the
#: search algorithms are ``search.optimisers.OPTIMISERS``).
TORCH_OPTIMIZERS: Registry[Callable[..., Optimizer]] = Registry("optimizer")
#: name → (optimiser, total_steps) → scheduler stepped after every optimiser step.
SCHEDULES: Registry[Callable[[Optimizer, int], LRScheduler]] = Registry("schedule")
#: Learning rate used when ``lr=None``; peak rate of the one-cycle schedule.
DEFAULT_LR = {"sgd": 0.1, "adamw": 1e-3}


@TORCH_OPTIMIZERS.register("sgd")
def _sgd(params: Any, *, lr: float, momentum: float, weight_decay: float) -> Optimizer:
    import torch

    return torch.optim.SGD(
        params, lr=lr, momentum=momentum, nesterov=momentum > 0, weight_decay=weight_decay
    )


@TORCH_OPTIMIZERS.register("adamw")
def _adamw(params: Any, *, lr: float, momentum: float, weight_decay: float) -> Optimizer:
    import torch

    return torch.optim.AdamW(params, lr=lr, betas=(momentum, 0.999), weight_decay=weight_decay)


@SCHEDULES.register("onecycle")
def _onecycle(opt: Optimizer, total_steps: int) -> LRScheduler:
    # Warm up over the first 25%, then anneal (cosine) to lr/1e4; momentum is not cycled so the
    # momentum argument keeps its meaning. OneCycleLR divides by pct_start * total_steps - 1,
    # zero for a 4-step run: 30% there (the warm-up is the first step either way).
    import torch

    peak = [g["lr"] for g in opt.param_groups]
    pct_start = 0.3 if total_steps == 4 else 0.25
    return torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=peak, total_steps=total_steps, pct_start=pct_start, cycle_momentum=False
    )


@SCHEDULES.register("cosine")
def _cosine(opt: Optimizer, total_steps: int) -> LRScheduler:
    import torch

    return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total_steps)


@SCHEDULES.register("step")
def _step(opt: Optimizer, total_steps: int) -> LRScheduler:
    # The classic ResNet recipe: divide by 10 at 50% and 75% of training.
    milestones = [total_steps // 2, (3 * total_steps) // 4]
    import torch

    return torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)


@SCHEDULES.register("constant")
def _constant(opt: Optimizer, total_steps: int) -> LRScheduler:
    import torch

    return torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)


def _option(about: str, default: Any = dataclasses.MISSING) -> Any:
    """A field of :class:`Recipe` with its one-line meaning (the config reference shows it)."""
    return field(default=default, metadata={"help": about})


def _check_float(name: str, value: float, low: float, high: float, *, closed: bool) -> None:
    inside = low <= value <= high if closed else low <= value < high
    if not isinstance(value, int | float) or isinstance(value, bool) or not inside:
        bracket = "]" if closed else ")"
        raise ConfigError(f"{name} must be in [{low}, {high}{bracket}, got {value!r}")


def _known(options: Mapping[str, Any], known: list[str], what: str) -> None:
    for key in options:
        if key not in known:
            raise ConfigError(
                f"unknown {what} option {key!r}{did_you_mean(key, known)}; allowed: {known}"
            )


@dataclass(frozen=True, kw_only=True)
class Teacher:
    """The network a :class:`Recipe` distils from: the family ``family`` with ``hyper``,
    initialised with ``seed`` and trained with ``recipe`` on the student's training split only
    (never on its validation or test split), once: its logits on that split are cached with
    this spec, so every student of one search reuses them.

    ``hyper`` takes no part in the hash (a mapping is not hashable), only in equality, so a
    Recipe with a teacher is still hashable.
    """

    family: str
    hyper: Mapping[str, Any] = field(default_factory=dict, hash=False)
    recipe: Recipe
    seed: int = 0

    def __post_init__(self) -> None:
        from spaces import FAMILIES  # the families' modules load torch: only for a teacher

        FAMILIES.get(self.family)
        if not isinstance(self.hyper, Mapping):
            raise ConfigError(f"teacher.hyper must be a mapping, got {self.hyper!r}")
        if not isinstance(self.recipe, Recipe):
            raise ConfigError(f"teacher.train must be a recipe, got {self.recipe!r}")
        if self.recipe.teacher is not None:
            raise ConfigError("teacher.train.teacher: a teacher has no teacher of its own")
        check_int("teacher.seed", self.seed, low=0)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Teacher:
        """A teacher from plain data: ``{family, hyper, train, seed}`` (``train``: the
        teacher's recipe, as :meth:`Recipe.from_mapping` takes it).

        Raises:
            ConfigError: not a mapping, an unknown key, or a bad value (named).
        """
        if not isinstance(options, Mapping):
            raise ConfigError(
                f"teacher must be a mapping {{family, hyper, train, seed}}, got {options!r}"
            )
        _known(options, ["family", "hyper", "train", "seed"], "teacher")
        if "family" not in options or "train" not in options:
            raise ConfigError(f"teacher needs a family and a train section, got {dict(options)}")
        train = options["train"]
        if not isinstance(train, Recipe | Mapping):
            raise ConfigError(f"teacher.train must be a recipe's options, got {train!r}")
        recipe = train if isinstance(train, Recipe) else Recipe.from_mapping(train)
        return cls(family=options["family"], hyper=copy.deepcopy(dict(options.get("hyper") or {})),
                   recipe=recipe, seed=options.get("seed", 0))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain data that :meth:`from_mapping` reads back equal."""
        return {"family": self.family, "hyper": copy.deepcopy(dict(self.hyper)),
                "train": self.recipe.to_dict(), "seed": self.seed}  # fmt: skip


#: The distillation options' defaults: a recipe without a teacher must leave them so.
_DISTILL_DEFAULTS = {"distill_temperature": 4.0, "distill_weight": 0.5}


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """How a model is trained: the one declaration of the options :func:`objectives.fit` and
    :func:`objectives.fit_seeds` take (the run's seed, device, bf16 and callbacks are theirs).

    Checked when made: an option out of range raises :class:`ConfigError` naming it and its
    value; an unknown optimizer or schedule, :class:`UnknownNameError` listing the valid ones.
    Each field's meaning is its ``help`` (``dataclasses.fields(Recipe)``). Two need more:

    - ``channels_last`` changes float rounding, not what is computed. On one CPU thread it
      trains ConvNets of 8+ channels faster and nets of 3-6 channels or SCS nets slower than
      False does (benchmarks/results/trial_throughput.md); MNIST training used it before the
      option existed. PyTorch advises it for mixed precision on CUDA.
    - ``grad_clip`` is what keeps a network whose weights share few parameters (the ``auto``
      mapping's probe) from diverging at a learning rate its plain form trains well with.
    - ``teacher`` (a :class:`Teacher`, or its mapping in :meth:`from_mapping`): the loss becomes
      ``(1 - w) * CE(labels) + w * T**2 * KL(softmax(teacher / T) || softmax(student / T))``
      (Hinton et al., 2015) with ``w = distill_weight`` and ``T = distill_temperature``; the
      teacher's logits are those of the unaugmented training images.
    """

    epochs: int = _option("passes over the training split")
    batch_size: int = _option(
        "samples per step; a last partial batch is dropped when the split holds a full one", 128
    )
    optimizer: str = _option(
        "the torch optimizer that trains the model (not the search algorithm): Nesterov SGD, "
        "AdamW",
        "sgd",
    )
    lr: float | None = _option("peak learning rate; null: the optimizer's default", None)
    momentum: float = _option("SGD momentum (Nesterov), AdamW's beta1", 0.9)
    weight_decay: float = _option(
        "weight decay of all parameters (coupled for SGD, decoupled for AdamW)", 5e-4
    )
    schedule: str = _option("learning-rate schedule, stepped after every optimiser step",
                            "onecycle")  # fmt: skip
    label_smoothing: float = _option("cross-entropy label smoothing", 0.0)
    augment: Augment | bool | None = _option(
        "the dataset's augmentation (true or null), none (false), or an Augment", None
    )
    max_steps: int | None = _option(
        "stop after this many steps (the schedule fitted to them); null: no limit", None
    )
    channels_last: bool = _option(
        "feed 4-D batches in channels-last memory format (same values, NHWC strides)", True
    )
    grad_clip: float | None = _option(
        "clip the gradients' global norm to this before each step; null: never", None
    )
    ema: float | None = _option(
        "decay of an exponential moving average of the weights, updated after every step; "
        "validation and the trained model use the average; null: off",
        None,
    )
    teacher: Teacher | None = _option(
        "distil from this teacher, {family, hyper, train, seed}, trained once on the "
        "training split (its logits cached); null: no distillation",
        None,
    )
    distill_temperature: float = _option(
        "softmax temperature of the teacher's and the student's logits when distilling",
        _DISTILL_DEFAULTS["distill_temperature"],
    )
    distill_weight: float = _option(
        "weight of the distillation term when distilling (the labels' cross-entropy: 1 - it)",
        _DISTILL_DEFAULTS["distill_weight"],
    )

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs)
        check_int("batch_size", self.batch_size)
        if self.max_steps is not None:
            check_int("max_steps", self.max_steps)
        _check_float("momentum", self.momentum, 0.0, 1.0, closed=False)
        _check_float("weight_decay", self.weight_decay, 0.0, math.inf, closed=True)
        _check_float("label_smoothing", self.label_smoothing, 0.0, 1.0, closed=False)
        if self.grad_clip is not None:
            check_positive("grad_clip", self.grad_clip)
        if self.ema is not None:
            _check_float("ema", self.ema, 0.0, 1.0, closed=False)
        if self.teacher is not None and not isinstance(self.teacher, Teacher):
            raise ConfigError(f"teacher must be a Teacher or None, got {self.teacher!r}")
        check_positive("distill_temperature", self.distill_temperature)
        _check_float("distill_weight", self.distill_weight, 0.0, 1.0, closed=True)
        for name, default in _DISTILL_DEFAULTS.items():
            if self.teacher is None and getattr(self, name) != default:
                raise ConfigError(
                    f"{name}={getattr(self, name)!r} needs a teacher to distil from (teacher)"
                )
        TORCH_OPTIMIZERS.get(self.optimizer)
        SCHEDULES.get(self.schedule)
        check_positive("lr", self.peak_lr)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Recipe:
        """A recipe from plain data (a config's ``train`` section, a benchmark's dict).

        Raises:
            ConfigError: an unknown key, with the nearest known one and all of them.
        """
        _known(options, [f.name for f in dataclasses.fields(cls)], "recipe")
        given = dict(options)
        if isinstance(given.get("augment"), Mapping):
            from objectives.datasets import Augment

            try:
                given["augment"] = Augment(**given["augment"])
            except TypeError as err:
                raise ConfigError(f"augment: {err}") from None
        if isinstance(given.get("teacher"), Mapping):
            given["teacher"] = Teacher.from_mapping(given["teacher"])
        return cls(**given)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (an Augment and a Teacher as mappings) that :meth:`from_mapping` reads
        back equal."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.augment is not None and not isinstance(self.augment, bool):  # an Augment
            out["augment"] = self.augment.to_dict()
        if self.teacher is not None:
            out["teacher"] = self.teacher.to_dict()
        return out

    @property
    def peak_lr(self) -> float:
        """``lr``, or the optimizer's :data:`DEFAULT_LR` when None."""
        return DEFAULT_LR[self.optimizer.lower()] if self.lr is None else self.lr

    def augmentation(self, default: Augment | None) -> Augment | None:
        """The augmentation applied, given the dataset's ``default`` (None: none)."""
        from objectives.datasets import Augment

        chosen = default if self.augment is None or self.augment is True else self.augment
        return chosen if isinstance(chosen, Augment) and chosen.enabled else None

    def total_steps(self, train_size: int) -> int:
        """Optimiser steps of the run on a training split of ``train_size`` samples."""
        per_epoch = train_size // self.batch_size if train_size >= self.batch_size else 1
        steps = self.epochs * per_epoch
        return steps if self.max_steps is None else min(steps, self.max_steps)

    def optimizer_for(self, params: Iterable[Any]) -> Optimizer:
        """The recipe's optimizer over ``params`` at its peak learning rate."""
        return TORCH_OPTIMIZERS.get(self.optimizer)(
            params, lr=self.peak_lr, momentum=self.momentum, weight_decay=self.weight_decay
        )

    def schedule_for(self, opt: Optimizer, total_steps: int) -> LRScheduler:
        """The recipe's schedule of ``opt``, fitted to ``total_steps``."""
        return SCHEDULES.get(self.schedule)(opt, total_steps)

    def recorded(self, augment: Augment | None) -> dict[str, Any]:
        """The options as :attr:`FitResult.config` records them: names lower-cased, the
        learning rate resolved, ``augment`` the one applied (:meth:`augmentation`), and the
        levers (``ema``, the teacher and its options) only when in use."""
        out = {
            **self.to_dict(),
            "optimizer": self.optimizer.lower(),
            "lr": self.peak_lr,
            "schedule": self.schedule.lower(),
            "augment": augment.to_dict() if augment is not None else None,
        }
        if self.ema is None:
            del out["ema"]
        if self.teacher is None:
            for name in ("teacher", *_DISTILL_DEFAULTS):
                del out[name]
        return out
