"""ConvMixer-h/d (Trockman & Kolter, "Patches Are All You Need?", 2022).

Patch embedding (conv p×p, stride p → GELU → BN), then ``d`` blocks of a residual depthwise
k×k conv (→ GELU → BN) followed by a pointwise conv (→ GELU → BN); GAP and a linear head.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from spaces._families._common import image_shape
from spaces._family_registry import family_variant, register_family
from spaces._hyper import checked


def _mix(conv: nn.Conv2d) -> nn.Sequential:
    return nn.Sequential(conv, nn.GELU(), nn.BatchNorm2d(conv.out_channels))


class _Block(nn.Module):
    def __init__(self, dim: int, kernel: int) -> None:
        super().__init__()
        self.spatial = _mix(nn.Conv2d(dim, dim, kernel, groups=dim, padding="same"))
        self.channel = _mix(nn.Conv2d(dim, dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.channel(x + self.spatial(x))


@register_family("convmixer")
class ConvMixer(nn.Module):
    """ConvMixer-``dim``/``depth``.

    Args:
        in_shape: ``(channels, height, width)``; the patch size is capped at the image size.
        num_classes: Outputs of the head.
        dim: Hidden channels ``h``.
        depth: Number of mixer blocks ``d``.
        kernel: Depthwise kernel size.
        patch: Patch size ``p``.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        dim: int = 256,
        depth: int = 8,
        kernel: int = 5,
        patch: int = 2,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        patch = min(patch, h, w)
        self.embed = _mix(nn.Conv2d(channels, dim, patch, stride=patch))
        self.blocks = nn.Sequential(*[_Block(dim, kernel) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(x)).mean(dim=(2, 3)))


# The authors' CIFAR-10 setting (kernel 5, patch 2): 0.59M parameters.
register_family("convmixer-256-8")(family_variant(ConvMixer, dim=256, depth=8, kernel=5, patch=2))
