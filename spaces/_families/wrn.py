"""Wide ResNet WRN-d-k, CIFAR style (Zagoruyko & Komodakis, 2016).

Pre-activation basic blocks (BN → ReLU → conv3×3 → BN → ReLU → dropout → conv3×3) in three
groups of ``n = (d - 4) / 6`` blocks with ``16k``, ``32k``, ``64k`` channels and strides 1, 2, 2;
a 1×1 conv shortcut where the shape changes. WRN-28-10 has 36.5M parameters on CIFAR-10.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._errors import ConfigError
from spaces._families._common import image_shape
from spaces._family_registry import family_variant, register_family
from spaces._hyper import Range, checked


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, dropout: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.shortcut = (
            nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = torch.relu(self.bn1(x))
        # The projection sees the pre-activated input, as in the authors' code.
        skip = x if self.shortcut is None else self.shortcut(o)
        o = self.conv1(o)
        o = self.conv2(self.dropout(torch.relu(self.bn2(o))))
        return o + skip


@register_family("wrn")
class WideResNet(nn.Module):
    """WRN-``depth``-``widen``.

    Args:
        in_shape: ``(channels, height, width)``; any size ≥ 1×1 (strides stop at 1×1).
        num_classes: Outputs of the head.
        depth: Total depth ``6n + 4`` (10, 16, 22, 28, 40, ...).
        widen: Width multiplier ``k``.
        dropout: Dropout between the two convs of each block (the paper uses 0.3).
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        depth: Annotated[int, Range(10, 2**20)] = 16,
        widen: int = 4,
        dropout: Annotated[float, Range(0.0, 0.99)] = 0.0,
    ) -> None:
        super().__init__()
        channels, _, _ = image_shape(in_shape)
        if depth % 6 != 4:
            raise ConfigError(f"depth must be 6n + 4 (10, 16, 22, 28, 40, ...), got {depth!r}")
        n = (depth - 4) // 6
        widths = [16 * widen, 32 * widen, 64 * widen]
        self.stem = nn.Conv2d(channels, 16, 3, padding=1, bias=False)
        blocks: list[nn.Module] = []
        cin = 16
        for group, cout in enumerate(widths):
            for i in range(n):
                blocks.append(_Block(cin, cout, 2 if group > 0 and i == 0 else 1, dropout))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(cin)
        self.head = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = torch.relu(self.bn(self.blocks(self.stem(x))))
        return self.head(o.mean(dim=(2, 3)))


register_family("wrn-16-4")(family_variant(WideResNet, depth=16, widen=4))
register_family("wrn-16-8")(family_variant(WideResNet, depth=16, widen=8))
register_family("wrn-28-10")(family_variant(WideResNet, depth=28, widen=10))
register_family("wrn-40-4")(family_variant(WideResNet, depth=40, widen=4))
