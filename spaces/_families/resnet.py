"""CIFAR ResNet-n (He et al., CVPR 2016, §4.2): n = 6k + 2, stages of 16, 32, 64 channels.

Shortcuts: option "A" (the paper's CIFAR choice, parameter-free: subsample by 2 and zero-pad the
new channels) by default; option "B" uses a 1×1 conv + BN projection where the shape changes.
With option A, ResNet-20/32/44/56/110 have 0.27M/0.46M/0.66M/0.85M/1.7M parameters (Table 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import nn

from spaces._errors import ConfigError
from spaces._families._common import check_choice, image_shape
from spaces._family_registry import family_variant, register_family
from spaces._hyper import Range, checked


class _PadShortcut(nn.Module):
    """Option A: identity on a subsampled map, with zero channels appended around it."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        self.pad = (cout - cin) // 2, cout - cin - (cout - cin) // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, *self.pad))


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, shortcut: str) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = (
                _PadShortcut(cin, cout, stride)
                if shortcut == "A"
                else nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
                )
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(o)) + self.shortcut(x))


@register_family("resnet")
class CifarResNet(nn.Module):
    """ResNet-``depth`` for small images.

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        depth: ``6k + 2`` (8, 14, 20, 32, 44, 56, 110, ...).
        shortcut: "A" (zero-padding identity, parameter-free) or "B" (1×1 conv projection).
        width: Channels of the first stage (16 in the paper); stages use ×1, ×2, ×4.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        depth: Annotated[int, Range(8, 2**20)] = 20,
        shortcut: str = "A",
        width: int = 16,
    ) -> None:
        super().__init__()
        channels, _, _ = image_shape(in_shape)
        if depth % 6 != 2:
            raise ConfigError(f"depth must be 6k + 2 (8, 14, 20, 32, ...), got {depth!r}")
        check_choice("shortcut", shortcut, ("A", "B"))
        k = (depth - 2) // 6
        self.stem = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
        )
        blocks: list[nn.Module] = []
        cin = width
        for stage in range(3):
            cout = width * 2**stage
            for i in range(k):
                blocks.append(_Block(cin, cout, 2 if stage > 0 and i == 0 else 1, shortcut))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3)))


for _depth in (20, 32, 44, 56, 110):
    register_family(f"resnet-{_depth}")(family_variant(CifarResNet, depth=_depth))
