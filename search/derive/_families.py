"""Which built-in families a data-only config searches, per layout, and how many parameters
and forward multiply-adds each has at a depth and a width: the one place that names them.

The counts are closed forms of each family's layers at the hyper-parameters the derivation
fixes (3×3 kernels for images, 5 for signals, batch norm, growth 1.5, a global-average-pool
head), not models built: a derivation answers in milliseconds; a test holds each form to the
built model's counts (its parameters, and FlopCounterMode's FLOPs / 2). They are estimates
for choosing ranges and pricing epochs; the screen counts every proposal exactly before it
trains (:mod:`search.screening._screen`).
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
        layers: ``(depth, width, in_shape, classes)`` → the plain model's :data:`Layers`.
        min_width: The narrowest width worth training.
        lr: SGD-Nesterov's peak learning-rate range for the family (one-cycle).
        why: One line: why this family is searched for its layout.
    """

    name: str
    depth: tuple[str, int, int]
    width: str
    layers: Callable[[int, int, tuple[int, ...], int], Layers]
    depth_step: int = 1
    fixed: dict[str, Any] = field(default_factory=dict)
    searched: dict[str, list[Any]] = field(default_factory=dict)
    min_width: int = 4
    lr: tuple[float, float] = (0.02, 0.3)
    why: str = ""

    def params(self, depth: int, width: int, in_shape: tuple[int, ...], classes: int) -> int:
        """Trainable parameters of the plain model."""
        return sum(p for p, _ in self.layers(depth, width, in_shape, classes))

    def macs(self, depth: int, width: int, in_shape: tuple[int, ...], classes: int) -> int:
        """Multiply-adds of the plain model's forward pass on one sample."""
        return sum(m for _, m in self.layers(depth, width, in_shape, classes))


#: A model's layers as closed forms: each layer's trainable parameters and the multiply-adds
#: of its forward pass on one sample (convolutions and linear maps, as FlopCounterMode counts
#: them: batch norm and activations add none).
Layers = list[tuple[int, int]]


def _grown(width: int, i: int, growth: float) -> int:
    return max(1, round(width * growth**i))


def _head(channels: int, classes: int) -> tuple[int, int]:
    """The global-average-pool head's linear map."""
    return channels * classes + classes, channels * classes


def _convnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
    """ConvNet, kernel 3, batch norm (no conv bias), growth 1.5, full convs, a pool of 2
    after each conv, GAP head."""
    channels, h, w = shape
    layers: Layers = []
    for i in range(depth):
        out = _grown(width, i, 1.5)
        layers.append((9 * channels * out + 2 * out, 9 * channels * out * h * w))
        if min(h, w) >= 2:
            h, w = h // 2, w // 2
        channels = out
    return [*layers, _head(channels, classes)]


#: SepNet's stem channels, fixed.
_STEM = 8


def _sepnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
    """SepNet with ``depth`` stages of one separable block, a stem of 8 channels (then a pool
    of 2), growth 1.5, batch norm, a pool of 2 before each stage past the first, GAP head."""
    channels, h, w = shape
    layers: Layers = [(9 * channels * _STEM + 2 * _STEM, 9 * channels * _STEM * h * w)]
    channels = _STEM
    for s in range(depth):
        if min(h, w) >= 2:  # the stem's pool before the first stage, then one before each
            h, w = h // 2, w // 2
        out = _grown(width, s, 1.5)
        layers.append((9 * channels + channels * out + 2 * out, (9 + out) * channels * h * w))
        channels = out
    return [*layers, _head(channels, classes)]


def _resnet(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
    """CIFAR ResNet-``depth`` (6k + 2), shortcut A, stages of width, 2·width, 4·width, each
    past the first opened by a stride of 2."""
    k = (depth - 2) // 6
    h, w = shape[1:]
    layers: Layers = [(9 * shape[0] * width + 2 * width, 9 * shape[0] * width * h * w)]
    cin = width
    for stage in range(3):
        cout = width * 2**stage
        for i in range(k):
            if stage > 0 and i == 0:
                h, w = (h - 1) // 2 + 1, (w - 1) // 2 + 1
            layers.append((9 * cin * cout + 9 * cout * cout + 4 * cout,
                           9 * (cin + cout) * cout * h * w))  # fmt: skip
            cin = cout
    return [*layers, _head(cin, classes)]


def _mlp(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
    """MLP of ``depth`` hidden layers of ``width``."""
    fan_in, layers = math.prod(shape), []
    for _ in range(depth):
        layers.append((fan_in * width + width, fan_in * width))
        fan_in = width
    return [*layers, _head(fan_in, classes)]


#: The signal families' kernel, fixed (their default): 5 steps see more of a sequence than 3.
_KERNEL_1D = 5


def _conv1d(separable: bool) -> Callable[..., Layers]:
    """``conv1d`` (``sepconv1d`` when ``separable``): ``depth`` blocks of a conv (kernel 5; a
    depthwise then a pointwise one past the first when separable) and batch norm, a pool of
    2 after each, growth 1.5, GAP head."""

    def layers(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
        channels, length = shape
        out_layers: Layers = []
        for i in range(depth):
            out = _grown(width, i, 1.5)
            if separable and i > 0:
                weights = _KERNEL_1D * channels + channels * out
            else:
                weights = _KERNEL_1D * channels * out
            out_layers.append((weights + 2 * out, weights * length))
            length = length // 2 if length >= 2 else length
            channels = out
        return [*out_layers, _head(channels, classes)]

    return layers


def _resnet1d(depth: int, width: int, shape: tuple[int, ...], classes: int) -> Layers:
    """``resnet1d``: a stem conv of ``width``, then ``depth`` stages of one basic block (two
    kernel-5 convs with batch norm), growth 1.5, each stage past the first opened by a stride
    of 2 and a 1×1 projection shortcut (its channels or length change), GAP head."""
    channels, length = shape
    layers: Layers = [(_KERNEL_1D * channels * width + 2 * width,
                       _KERNEL_1D * channels * width * length)]  # fmt: skip
    channels = width
    for s in range(depth):
        out = _grown(width, s, 1.5)
        weights = _KERNEL_1D * channels * out + _KERNEL_1D * out * out
        extra = 4 * out
        if s > 0:
            if length >= 2:
                length = (length - 1) // 2 + 1
            weights += channels * out
            extra += 2 * out
        layers.append((weights + extra, weights * length))
        channels = out
    return [*layers, _head(channels, classes)]


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
