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
PADDINGS = ("same", "valid")


@dataclass(frozen=True)
class _Blocks:
    """How the net's convs and blocks are made: one recipe for the stem and every stage."""

    norm: str
    act: type[nn.Module]
    kernel: int
    separable: bool
    expansion: float
    valid: bool  # k×k convs unpadded: each shrinks the sides by k - 1
    dropout: float  # after every block's activation (0: none)

    def pad(self, k: int, side: int, times: int = 1) -> int:
        """The padding of a k×k conv applied ``times`` times from ``side``-wide maps: none
        when ``valid`` and the last application's maps still hold the kernel."""
        return 0 if self.valid and side - (k - 1) * (times - 1) >= k else k // 2

    def conv(self, c_in: int, c_out: int, k: int, pad: int = 0) -> nn.Conv2d:
        """A k×k conv with a bias only where no norm follows."""
        return nn.Conv2d(c_in, c_out, k, padding=pad, bias=self.norm == "none")

    def tail(self, channels: int) -> list[nn.Module]:
        """[norm] → act → [dropout]; ``layer`` normalises each sample over its whole tensor."""
        norm: dict[str, list[nn.Module]] = {
            "batch": [BatchNorm2d(channels)], "layer": [nn.GroupNorm(1, channels)]
        }
        drop = [nn.Dropout(self.dropout)] if self.dropout > 0 else []
        return [*norm.get(self.norm, []), self.act(), *drop]

    def block(self, c_in: int, c_out: int, pad: int) -> nn.Sequential:
        k = self.kernel
        if not self.separable:
            return nn.Sequential(self.conv(c_in, c_out, k, pad), *self.tail(c_out))
        mid = max(1, round(c_in * self.expansion))
        widen = [self.conv(c_in, mid, 1), *self.tail(mid)] if mid != c_in else []
        depthwise = nn.Conv2d(mid, mid, k, padding=pad, groups=mid, bias=False)
        return nn.Sequential(*widen, depthwise, self.conv(mid, c_out, 1), *self.tail(c_out))


class _Reused(nn.Module):
    """One block applied ``times`` times with the same weights (plain weight tying), with a
    skip around each application when ``residual`` (the input's centre, where an unpadded
    block shrank the maps)."""

    def __init__(self, block: nn.Module, times: int, residual: bool) -> None:
        super().__init__()
        self.block, self.times, self.residual = block, times, residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            y = self.block(x)
            if self.residual:
                dh, dw = (x.shape[-2] - y.shape[-2]) // 2, (x.shape[-1] - y.shape[-1]) // 2
                y = y + x[..., dh : x.shape[-2] - dh, dw : x.shape[-1] - dw]
            x = y
        return x


@register_family("sepnet")
class SepNet(nn.Module):
    """stem (conv k×k → [norm] → act → [2×2 max pool]) → stages → GAP → [dropout] → Linear.

    Stage ``s`` has ``round(width * growth**s)`` channels and ``blocks`` blocks; every stage
    after the first starts with a 2×2 max pool (only while both sides are at least 2). A block
    is a depthwise k×k conv then a pointwise 1×1 conv (``separable``; with ``expansion`` > 1 a
    pointwise conv widens the input first, as in MobileNetV2) or one full k×k conv, then
    [norm] → act → [dropout]. A block whose input and output channels match is applied
    ``reuse`` times with the same weights, so reuse adds depth and FLOPs but no parameters.
    ``padding="valid"`` leaves the k×k convs unpadded, as the 997-parameter record does: each
    shrinks the maps by k - 1 (a conv whose maps are narrower than k is padded instead).

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
        padding: ``same`` (the maps keep their size) or ``valid`` (unpadded k×k convs).
        dropout_every: The same dropout after every activation too (the stem's, each block's).
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
        padding: str = "same",
        dropout_every: bool = False,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        check_odd("stem_kernel", stem_kernel)
        check_odd("kernel", kernel)
        make = _Blocks(check_choice("norm", norm, NORMS),
                       ACTIVATIONS[check_choice("activation", activation, ACTIVATIONS)],
                       kernel, separable, expansion,
                       check_choice("padding", padding, PADDINGS) == "valid",
                       dropout if dropout_every else 0.0)  # fmt: skip
        pad = make.pad(stem_kernel, min(h, w))
        layers: list[nn.Module] = [make.conv(channels, stem, stem_kernel, pad), *make.tail(stem)]
        lost = 2 * (stem_kernel // 2 - pad)  # what an unpadded conv takes off each side
        h, w = h - lost, w - lost
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
                times = reuse if channels == out else 1
                pad = make.pad(kernel, min(h, w), times)
                block = make.block(channels, out, pad)
                layers.append(_Reused(block, reuse, residual) if channels == out else block)
                lost = times * 2 * (kernel // 2 - pad)
                h, w = h - lost, w - lost
                channels = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.pool(self.features(x)).flatten(1)))
