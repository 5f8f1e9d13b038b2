"""Which built-in families a data-only config searches, per layout, and how many parameters
each has at a depth and a width: the one place that names them.

The counts are closed forms of each family's layers at the hyper-parameters the derivation
fixes (3×3 kernels for images, 5 for signals, batch norm, growth 1.5, a global-average-pool
head), not models built: a derivation answers in milliseconds; a test holds each form to the
built model's count. They are estimates for choosing ranges; the screen counts
every proposal exactly before it trains (:mod:`search.config._screen`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LAYOUT_FAMILIES", "FamilySpec", "families_of"]


@dataclass(frozen=True)
class FamilySpec:
    """One family as the derivation searches it.

    Attributes:
        name: The registered family.
        depth: The hyper-parameter that sets its depth, and the range searched.
        depth_step: The step of that range (a ResNet's depth is 6k + 2).
        width: The hyper-parameter that sets its (first) width.
        fixed: Hyper-parameters fixed for every trial of the family.
        searched: Non-numeric hyper-parameters searched as choices.
        params: ``(depth, width, in_shape, classes)`` → trainable parameters of the plain model.
        min_width: The narrowest width worth training.
        lr: SGD-Nesterov's peak learning-rate range for the family (one-cycle).
        why: One line: why this family is searched for its layout.
    """

    name: str
    depth: tuple[str, int, int]
    width: str
    params: Callable[[int, int, tuple[int, ...], int], int]
    depth_step: int = 1
    fixed: dict[str, Any] = field(default_factory=dict)
    searched: dict[str, list[Any]] = field(default_factory=dict)
    min_width: int = 4
    lr: tuple[float, float] = (0.02, 0.3)
    why: str = ""


def _grown(width: int, i: int, growth: float) -> int:
    return max(1, round(width * growth**i))


def _convnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
    """ConvNet, kernel 3, batch norm (no conv bias), growth 1.5, full convs, GAP head."""
    channels, total = shape[0], 0
    for i in range(depth):
        out = _grown(width, i, 1.5)
        total += 9 * channels * out + 2 * out
        channels = out
    return total + channels * classes + classes


#: SepNet's stem channels, fixed.
_STEM = 8


def _sepnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
    """SepNet with ``depth`` stages of one separable block, a stem of 8 channels, growth 1.5,
    batch norm, GAP head."""
    channels = shape[0]
    total = 9 * channels * _STEM + 2 * _STEM
    channels = _STEM
    for s in range(depth):
        out = _grown(width, s, 1.5)
        total += 9 * channels + channels * out + 2 * out
        channels = out
    return total + channels * classes + classes


def _resnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
    """CIFAR ResNet-``depth`` (6k + 2), shortcut A, stages of width, 2·width, 4·width."""
    k = (depth - 2) // 6
    total, cin = 9 * shape[0] * width + 2 * width, width
    for stage in range(3):
        cout = width * 2**stage
        for _ in range(k):
            total += 9 * cin * cout + 9 * cout * cout + 4 * cout
            cin = cout
    return total + cin * classes + classes


def _mlp(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
    """MLP of ``depth`` hidden layers of ``width``."""
    fan_in, total = math.prod(shape), 0
    for _ in range(depth):
        total += fan_in * width + width
        fan_in = width
    return total + fan_in * classes + classes


#: The signal families' kernel, fixed (their default): 5 steps see more of a sequence than 3.
_KERNEL_1D = 5


def _conv1d(separable: bool) -> Callable[..., int]:
    """``conv1d`` (``sepconv1d`` when ``separable``): ``depth`` blocks of a conv (kernel 5; a
    depthwise then a pointwise one past the first when separable) and batch norm, growth 1.5,
    GAP head."""

    def params(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
        channels, total = shape[0], 0
        for i in range(depth):
            out = _grown(width, i, 1.5)
            if separable and i > 0:
                total += _KERNEL_1D * channels + channels * out
            else:
                total += _KERNEL_1D * channels * out
            total += 2 * out
            channels = out
        return total + channels * classes + classes

    return params


def _resnet1d(depth: int, width: int, shape: tuple[int, ...], classes: int) -> int:
    """``resnet1d``: a stem conv of ``width``, then ``depth`` stages of one basic block (two
    kernel-5 convs with batch norm), growth 1.5, each stage past the first with a 1×1
    projection shortcut (its channels or length change), GAP head."""
    total = _KERNEL_1D * shape[0] * width + 2 * width
    channels = width
    for s in range(depth):
        out = _grown(width, s, 1.5)
        total += _KERNEL_1D * channels * out + _KERNEL_1D * out * out + 4 * out
        if s > 0:
            total += channels * out + 2 * out
        channels = out
    return total + channels * classes + classes


#: What every signal family fixes (the closed forms above count these).
_SIGNAL_FIXED = {"kernel": _KERNEL_1D, "growth": 1.5, "bn": True, "head": "gap"}

#: Layout → the built-in families a data-only config searches, in order. The one table to edit
#: when a family is added: ``conv1d``, ``sepconv1d`` and ``resnet1d`` are the signal families
#: (depth and width named ``depth`` and ``width``, other levers at their defaults).
LAYOUT_FAMILIES: dict[str, tuple[FamilySpec, ...]] = {
    "image": (
        FamilySpec(
            "convnet", ("depth", 2, 4), "width", _convnet,
            fixed={"kernel": 3, "growth": 1.5, "bn": True, "pooling": "max", "head": "gap"},
            searched={"separable": [False, True]}, lr=(0.02, 0.3),
            why="plain conv stack with batch norm and pooling: the first design to try",
        ),
        FamilySpec(
            "sepnet", ("stages", 1, 3), "width", _sepnet,
            fixed={"stem": _STEM, "blocks": 1, "growth": 1.5, "separable": True, "norm": "batch",
                   "kernel": 3, "stem_kernel": 3, "stem_pool": True},
            searched={"activation": ["relu", "leaky_relu"]}, lr=(0.02, 0.3),
            why="depthwise-separable stages: the design of the smallest published MNIST nets",
        ),
        FamilySpec(
            "resnet", ("depth", 8, 14), "width", _resnet, depth_step=6, fixed={"shortcut": "A"},
            min_width=4, lr=(0.02, 0.3),
            why="residual stages for deeper nets when the parameter limit holds one",
        ),
    ),
    "signal": (
        FamilySpec("conv1d", ("depth", 2, 5), "width", _conv1d(separable=False),
                   fixed=_SIGNAL_FIXED, lr=(0.02, 0.3),
                   why="plain 1-D conv stack with normalisation"),
        FamilySpec("sepconv1d", ("depth", 2, 5), "width", _conv1d(separable=True),
                   fixed=_SIGNAL_FIXED, lr=(0.02, 0.3),
                   why="depthwise-separable 1-D convs: more depth per parameter"),
        FamilySpec("resnet1d", ("depth", 1, 4), "width", _resnet1d,
                   fixed={**_SIGNAL_FIXED, "blocks": 1, "pooling": "stride"}, lr=(0.02, 0.3),
                   why="residual 1-D blocks for deeper nets"),
    ),
    "table": (
        FamilySpec("mlp", ("depth", 1, 3), "width", _mlp, min_width=8, lr=(0.01, 0.1),
                   why="rows of features have no spatial order for a conv to use"),
    ),
}  # fmt: skip


def families_of(layout: str) -> tuple[FamilySpec, ...]:
    """The families searched for samples of ``layout``."""
    return LAYOUT_FAMILIES[layout]
