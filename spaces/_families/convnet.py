"""Plain ConvNet: conv blocks with optional BN and pooling, global average pool (or the maps
flattened), linear head."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._families._common import activation as make_activation
from spaces._families._common import check_choice, check_odd, conv_layers, image_shape
from spaces._families._norm import BatchNorm2d
from spaces._family_registry import register_family
from spaces._hyper import Range, checked

_POOLS: dict[str, type[nn.Module] | None] = {
    "max": nn.MaxPool2d,
    "avg": nn.AvgPool2d,
    "none": None,
}
HEADS = ("gap", "flatten")


@register_family("convnet")
class ConvNet(nn.Module):
    """``depth`` × (conv k×k "same" → [BN] → activation → [2×2 pool]) → GAP → Linear.

    ``head="flatten"`` feeds the last maps whole to the linear head instead of their global
    average (channels × height × width inputs): at the smallest sizes a flatten head keeps
    where the digit's strokes lie, which the average loses.

    Pooling halves the feature map only while both sides are at least 2, so an 8×8 digit
    never shrinks below 1×1 however deep the net is. A ReLU runs after max pooling instead of
    before, the same function with a quarter of the work.

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        depth: Number of conv blocks.
        width: Output channels of the first block.
        kernel: Odd kernel size (odd keeps "same" padding symmetric).
        pooling: "max", "avg" or "none", applied after every block.
        bn: Batch norm after each conv (the conv then has no bias).
        growth: Channel multiplier per block: block ``i`` has ``round(width * growth**i)``.
        activation: Nonlinearity name.
        separable: Blocks after the first are depthwise-separable: a depthwise k×k conv, then
            a pointwise 1×1 conv, as the smallest MNIST nets use (k²·c + c·c' weights instead
            of k²·c·c'); the first block, on the image's few channels, stays a full conv.
        negative_slope: LeakyReLU's slope below zero (PReLU's initial one); None keeps
            PyTorch's 0.01 (0.25).
        head: ``gap`` (global average pool) or ``flatten`` (the last maps whole).
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        depth: int = 3,
        width: int = 32,
        kernel: int = 3,
        pooling: str = "max",
        bn: bool = True,
        growth: Annotated[float, Range(0.25, 1e6)] = 2.0,
        activation: str = "relu",
        separable: bool = False,
        negative_slope: Annotated[float, Range(0, 1)] | None = None,
        head: str = "gap",
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        check_odd("kernel", kernel)
        pool = _POOLS[check_choice("pooling", pooling, _POOLS)]
        act = make_activation(activation, negative_slope)
        flatten = check_choice("head", head, HEADS) == "flatten"
        layers: list[nn.Module] = []
        for i in range(depth):
            out = max(1, round(width * growth**i))
            layers += conv_layers(nn.Conv2d, channels, out, kernel, separable=separable and i > 0,
                                  bias=not bn)  # fmt: skip
            if bn:
                layers.append(BatchNorm2d(out))
            tail = [act()]
            if pool is not None and min(h, w) >= 2:
                # ReLU commutes with max pooling, values and gradients alike (ties at 0 get no
                # gradient either way): pooling first runs it on a quarter of the values.
                tail.insert(0 if pooling == "max" and act is nn.ReLU else 1, pool(2))
                h, w = h // 2, w // 2
            layers += tail
            channels = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.Identity() if flatten else nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels * h * w if flatten else channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))
