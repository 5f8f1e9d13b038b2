"""Per-channel arithmetic on channels-last tensors at the speed of a flat elementwise op.

The memory of a channels-last ``(N, C, H, W)`` tensor is an ``(N·H·W, C)`` matrix. Broadcasting a
per-channel vector over it, or summing it per channel, runs an inner loop of only ``C``
values, about half the speed of a flat pass for 3-8 channels on a CPU (torch 2.13). Read as
``(N·H·W / k, k·C)`` rows instead, with the vector repeated ``k`` times, each row holds 64+
values and the loops vectorise.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def is_channels_last(x: Tensor) -> bool:
    """True for a 4-D tensor stored channels-last and not also contiguous (C > 1, H·W > 1)."""
    channels_last = x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last)
    return channels_last and not x.is_contiguous()


def row_layout(x: Tensor) -> bool:
    """Whether to compute on ``x`` as :func:`channel_rows`: it is channels-last and not being
    traced (``torch.export``, ``torch.compile``), where a ``k`` chosen for the traced batch
    would fix the batch size of the program."""
    return is_channels_last(x) and not torch.compiler.is_compiling()


def channel_rows(x: Tensor) -> tuple[Tensor, int]:
    """A channels-last ``(N, C, H, W)`` tensor as ``(N·H·W / k, k·C)`` rows (a view), and k."""
    n, c, h, w = x.shape
    pixels = n * h * w
    k = 64 // math.gcd(c, 64)
    while pixels % k:
        k //= 2
    return x.permute(0, 2, 3, 1).reshape(pixels // k, k * c), k


def from_rows(rows: Tensor, shape: tuple[int, ...]) -> Tensor:
    """The channels-last tensor of ``shape`` (N, C, H, W) whose memory is ``rows`` (a view)."""
    n, c, h, w = shape
    return rows.view(n, h, w, c).permute(0, 3, 1, 2)


def fold(columns: Tensor, k: int) -> Tensor:
    """Per-channel sums from the column sums of :func:`channel_rows`."""
    return columns.view(k, -1).sum(0)


def scale_channels(x: Tensor, v: Tensor) -> Tensor:
    """``x * v`` with ``v`` one value per channel (dim 1) of a 4-D ``x``."""
    if not row_layout(x):
        return x * v.view(1, -1, 1, 1)
    rows, k = channel_rows(x)
    return from_rows(rows * v.repeat(k), x.shape)


def channel_sums(x: Tensor) -> Tensor:
    """``x.sum((0, 2, 3))`` for a 4-D ``x``."""
    if not row_layout(x):
        return x.sum((0, 2, 3))
    rows, k = channel_rows(x)
    return fold(rows.sum(0), k)
