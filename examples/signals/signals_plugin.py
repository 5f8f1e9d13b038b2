"""An npas plugin: a 1-D convolutional family for signals (N×C×L), registered on import.

npas has built-in families for signals (``conv1d``, ``sepconv1d``, ``resnet1d``: ``search
families --layout signal``); this one shows how a family of your own joins them: its head reads
both the mean and the maximum over time, which the built-ins' ``gap`` and ``flatten`` heads do
not. A search names this file in its config (``imports: [signals_plugin.py]``); ``layouts``
says what it takes (``search families --import signals_plugin.py`` shows it).
"""

from __future__ import annotations

import torch
from torch import nn

import spaces


@spaces.register_family("meanmax1d", layouts=["signal"])
class MeanMax1d(nn.Module):
    """(conv1d(width) → ReLU) × depth → mean and max over time → linear."""

    def __init__(
        self, in_shape, num_classes, *, width: int = 8, kernel: int = 5, depth: int = 2
    ) -> None:
        super().__init__()
        if len(in_shape) != 2:
            raise spaces.ConfigError(f"in_shape must be (channels, length), got {tuple(in_shape)}")
        layers: list[nn.Module] = []
        channels = in_shape[0]
        for _ in range(depth):
            layers += [nn.Conv1d(channels, width, kernel, padding=kernel // 2), nn.ReLU()]
            channels = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(2 * channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(x)  # (batch, width, length)
        return self.head(torch.cat([h.mean(dim=2), h.amax(dim=2)], dim=1))
