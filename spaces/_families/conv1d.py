"""Conv1dNet: a plain convolution stack for 1-D signals (C×L), and ``sepconv1d``, its
depthwise-separable variant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._families._common import activation as make_activation
from spaces._families._common import check_choice, check_odd, conv_layers, signal_shape
from spaces._families._signal import POOLS, Head, Placement, halve, strided
from spaces._family_registry import family_variant, register_family
from spaces._hyper import Range, checked


@register_family("conv1d")
class Conv1dNet(nn.Module):
    """``depth`` × (conv1d k "same" → [BN] → activation → [pool by 2]) → GAP (or flatten) →
    [dropout] → Linear, for signals of C channels × L steps.

    Pooling halves the length only while it is at least 2, so a 20-step sequence never
    shrinks below one step however deep the net is. For long sequences (thousands of steps)
    ``stem_stride`` strides the first conv: a stride of s divides the length, and the work of
    every later block, by s (``ceil(L / s)`` steps, at least 1).

    Args:
        in_shape: ``(channels, length)``.
        num_classes: Outputs of the head.
        depth: Number of conv blocks.
        width: Output channels of the first block.
        growth: Channel multiplier per block: block ``i`` has ``round(width * growth**i)``.
        kernel: Odd kernel size (odd keeps "same" padding symmetric).
        pooling: "max", "avg" or "none": a pool of 2 after every block.
        bn: Batch norm after each conv (the conv then has no bias).
        activation: Nonlinearity name.
        negative_slope: LeakyReLU's slope below zero (PReLU's initial one); None keeps
            PyTorch's 0.01 (0.25).
        separable: Blocks after the first are depthwise-separable: a depthwise k conv, then a
            pointwise 1×1 conv (k·c + c·c' weights instead of k·c·c'); the first block, on
            the signal's few channels, stays a full conv. ``sepconv1d`` fixes it true.
        dropout: The dropout's rate; where it runs is ``dropout_at``'s.
        dropout_at: ``head`` (before the head only), ``every`` (after every block and before
            the head), ``layers`` (after every block, not before the head) or ``between``
            (after each block but the last): the names of ``sepnet``'s.
        head: ``gap`` (global average over time) or ``flatten`` (the last maps whole:
            channels × length inputs per class, where in time a pattern lies).
        stem_stride: Stride of the first conv (1: none).
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        depth: Annotated[int, Range(1, 64)] = 3,
        width: int = 16,
        growth: Annotated[float, Range(0.25, 16)] = 2.0,
        kernel: int = 5,
        pooling: str = "max",
        bn: bool = True,
        activation: str = "relu",
        negative_slope: Annotated[float, Range(0, 1)] | None = None,
        separable: bool = False,
        dropout: Annotated[float, Range(0, 0.9)] = 0.0,
        dropout_at: str = "head",
        head: str = "gap",
        stem_stride: Annotated[int, Range(1, 64)] = 1,
    ) -> None:
        super().__init__()
        channels, length = signal_shape(in_shape)
        check_odd("kernel", kernel)
        pool = POOLS[check_choice("pooling", pooling, POOLS)]
        act = make_activation(activation, negative_slope)
        drops = Placement(dropout, dropout_at, depth)
        layers: list[nn.Module] = []
        for i in range(depth):
            out = max(1, round(width * growth**i))
            stride = stem_stride if i == 0 else 1
            layers += conv_layers(nn.Conv1d, channels, out, kernel, separable=separable and i > 0,
                                  bias=not bn, stride=stride)  # fmt: skip
            length = strided(length, stride)
            if bn:
                layers.append(nn.BatchNorm1d(out))
            layers.append(act())
            if pool is not None and halve(length):
                layers.append(pool(2))
                length //= 2
            layers += drops.after(i)
            channels = out
        self.features = nn.Sequential(*layers)
        self.head = Head(channels, length, num_classes, head, drops.head())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


register_family("sepconv1d")(family_variant(Conv1dNet, separable=True))
