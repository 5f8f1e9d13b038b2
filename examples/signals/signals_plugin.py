"""An npas plugin: a 1-D convolutional family for signals (N×C×L), registered on import.

npas's built-in convolutional families take images (C, H, W) only; ``mlp`` flattens a signal,
so it works too, but ignores that neighbouring steps belong together. A search names this file
in its config (``imports: [signals_plugin.py]``).
"""

from __future__ import annotations

import torch
from torch import nn

import spaces


@spaces.register_family("conv1d")
class Conv1dNet(nn.Module):
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
