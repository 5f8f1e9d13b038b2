"""SepNet: the design of the public tiny-MNIST records — a 3×3 stem pooled early,
depthwise-separable blocks, a block reused several times, a global-average-pooled head."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import torch
from torch import nn

from spaces._build import register_family
from spaces._families._common import ACTIVATIONS, check_choice, check_odd, image_shape
from spaces._families._norm import BatchNorm2d
from spaces._hyper import Range, checked

NORMS = ("none", "batch", "layer")


@dataclass(frozen=True)
class _Blocks:
    """How the net's convs and blocks are made: one recipe for the stem and every stage."""

    norm: str
    act: type[nn.Module]
    kernel: int
    separable: bool
    expansion: float

    def conv(self, c_in: int, c_out: int, k: int) -> nn.Conv2d:
        """A "same" conv, with a bias only where no norm follows."""
        return nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=self.norm == "none")

    def tail(self, channels: int) -> list[nn.Module]:
        """[norm] → act; ``layer`` normalises each sample over its whole tensor (one group)."""
        norm = {"batch": [BatchNorm2d(channels)], "layer": [nn.GroupNorm(1, channels)]}
        return [*norm.get(self.norm, []), self.act()]

    def block(self, c_in: int, c_out: int) -> nn.Sequential:
        k = self.kernel
        if not self.separable:
            return nn.Sequential(self.conv(c_in, c_out, k), *self.tail(c_out))
        mid = max(1, round(c_in * self.expansion))
        widen = [self.conv(c_in, mid, 1), *self.tail(mid)] if mid != c_in else []
        depthwise = nn.Conv2d(mid, mid, k, padding=k // 2, groups=mid, bias=False)
        return nn.Sequential(*widen, depthwise, self.conv(mid, c_out, 1), *self.tail(c_out))


class _Reused(nn.Module):
    """One block applied ``times`` times with the same weights (plain weight tying), with a
    skip around each application when ``residual``."""

    def __init__(self, block: nn.Module, times: int, residual: bool) -> None:
        super().__init__()
        self.block, self.times, self.residual = block, times, residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            x = x + self.block(x) if self.residual else self.block(x)
        return x


@register_family("sepnet")
class SepNet(nn.Module):
    """stem (conv k×k → [norm] → act → [2×2 max pool]) → stages → GAP → [dropout] → Linear.

    Stage ``s`` has ``round(width * growth**s)`` channels and ``blocks`` blocks; every stage
    after the first starts with a 2×2 max pool (only while both sides are at least 2). A block
    is a depthwise k×k conv then a pointwise 1×1 conv (``separable``; with ``expansion`` > 1 a
    pointwise conv widens the input first, as in MobileNetV2) or one full k×k conv, then
    [norm] → act. A block whose input and output channels match is applied ``reuse`` times with
    the same weights, so reuse adds depth and FLOPs but no parameters.

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        stem: Channels of the stem conv.
        stem_kernel: Odd kernel size of the stem conv.
        stem_pool: A 2×2 max pool right after the stem (early pooling: a quarter of the work).
        stages: Number of stages.
        blocks: Distinct blocks per stage.
        width: Channels of the first stage.
        growth: Channel multiplier per stage.
        kernel: Odd kernel size of the blocks' depthwise (or full) conv.
        separable: Depthwise-separable blocks, else full convs.
        expansion: Widening of a separable block's input before its depthwise conv (1: none).
        reuse: Applications of each block whose input and output channels match.
        residual: A skip around each such application.
        norm: ``none``, ``batch`` or ``layer`` (the whole tensor of each sample).
        activation: Nonlinearity name (``prelu`` learns one slope per activation).
        dropout: Dropout before the head.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        stem: int = 8,
        stem_kernel: int = 3,
        stem_pool: bool = True,
        stages: int = 2,
        blocks: int = 1,
        width: int = 12,
        growth: Annotated[float, Range(0.25, 16)] = 1.5,
        kernel: int = 3,
        separable: bool = True,
        expansion: Annotated[float, Range(1, 16)] = 1.0,
        reuse: Annotated[int, Range(1, 64)] = 1,
        residual: bool = False,
        norm: str = "none",
        activation: str = "leaky_relu",
        dropout: Annotated[float, Range(0, 0.9)] = 0.0,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        check_odd("stem_kernel", stem_kernel)
        check_odd("kernel", kernel)
        make = _Blocks(check_choice("norm", norm, NORMS),
                       ACTIVATIONS[check_choice("activation", activation, ACTIVATIONS)],
                       kernel, separable, expansion)  # fmt: skip
        layers: list[nn.Module] = [make.conv(channels, stem, stem_kernel), *make.tail(stem)]
        if stem_pool and min(h, w) >= 2:
            layers.append(nn.MaxPool2d(2))
            h, w = h // 2, w // 2
        channels = stem
        for s in range(stages):
            out = max(1, round(width * growth**s))
            if s > 0 and min(h, w) >= 2:
                layers.append(nn.MaxPool2d(2))
                h, w = h // 2, w // 2
            for _ in range(blocks):
                block = make.block(channels, out)
                layers.append(_Reused(block, reuse, residual) if channels == out else block)
                channels = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.pool(self.features(x)).flatten(1)))
