"""A tiny network and a checkpoint round trip for the training tests (resume, levers)."""

from __future__ import annotations

import io

import torch
from torch import nn


def net(seed: int = 0) -> nn.Module:
    """Dropout (the global RNG), batch norm (buffers an average covers too) and a convolution,
    for 1×8×8 inputs (digits)."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
        nn.Dropout(0.2), nn.Linear(4 * 64, 10),
    )  # fmt: skip


def through_disk(state: dict) -> dict:
    """The state as a checkpoint file gives it back (weights only: no code runs)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)
