"""An npas plugin: a family of its own and a cost indicator, registered on import.

A search names this file in its config (``imports: [shapes_plugin.py]``); npas imports it in
the driver, on every Ray worker (on a cluster the file travels with the job) and in every
later command that reads the search.
"""

from __future__ import annotations

import torch
from torch import nn

import objectives
import spaces


@spaces.register_family("tiny-cnn")
class TinyCNN(nn.Module):
    """conv(width) → ReLU → global average pool → linear: the smallest image classifier."""

    def __init__(self, in_shape, num_classes, *, width: int = 8, kernel: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_shape[0], width, kernel, padding=kernel // 2)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@objectives.register_indicator("weight_bytes_int8", "minimize", unit="bytes")
def weight_bytes_int8(model: nn.Module, example: torch.Tensor) -> int:
    """Bytes of the weights quantised to int8: one a value, plus a float32 scale a tensor."""
    return sum(p.numel() + 4 for p in model.parameters())
