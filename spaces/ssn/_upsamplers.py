"""Parameter upsamplers: how a store smaller than a layer still produces all its weights (§3.3).

One upsampler instance serves the upsampled layers of one store. To add one, subclass
:class:`Upsampler` and decorate it with ``@UPSAMPLERS.register(name)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from spaces._checks import check_int
from spaces._registry import Registry


def resize(rows: Tensor, size: int) -> Tensor:
    """Bilinear resize of every row of a ``(g, q)`` matrix to ``(g, size)``.

    Shrinking is antialiased (a widened triangle filter), so every input value still feeds some
    output value and gets a gradient.
    """
    g, q = rows.shape
    if q == size:
        return rows
    out = F.interpolate(
        rows.reshape(1, g, 1, q),
        size=(1, size),
        mode="bilinear",
        align_corners=False,
        antialias=size < q,
    )
    return out.reshape(g, size)


class Upsampler(nn.Module):
    """Expands a (rolled) store of ``N`` values to a layer of ``n > N`` weights.

    Args:
        pairs: ``(n, N)`` of every upsampled layer of the store, in store order.
        rng: Source of randomness for any initial values.
        **options: Upsampler-specific options (``upsampler_options`` of ``shapeshift``).
    """

    @classmethod
    def num_params(cls, pairs: Sequence[tuple[int, int]], **options: Any) -> int:
        """Trainable parameters an instance for these layers will hold (none unless a subclass
        learns some; a wrong count is caught when the network is built)."""
        return 0

    def __init__(
        self, pairs: Sequence[tuple[int, int]], *, rng: torch.Generator, **options: Any
    ) -> None:
        super().__init__()
        self.pairs = tuple(pairs)

    def forward(self, index: int, source: Tensor) -> Tensor:
        """The ``pairs[index][0]`` weights of upsampled layer ``index`` from its ``source``."""
        raise NotImplementedError


UPSAMPLERS: Registry[type[Upsampler]] = Registry("upsampler")


@UPSAMPLERS.register("repeat")
class Repeat(Upsampler):
    """Tiles the store (a baseline: the copies are identical)."""

    def forward(self, index: int, source: Tensor) -> Tensor:
        n, size = self.pairs[index]
        return source.repeat(math.ceil(n / size))[:n]


@UPSAMPLERS.register("inter")
class Inter(Upsampler):
    """Bilinear interpolation of the store to the layer's size (stretches patterns)."""

    def forward(self, index: int, source: Tensor) -> Tensor:
        n, _ = self.pairs[index]
        return resize(source.reshape(1, -1), n).reshape(n)


@UPSAMPLERS.register("mask")
class Mask(Upsampler):
    """Copy 0 is the store itself; copy k is the store times a learned mask of ``window`` values
    repeated along it, so each copy can learn its own variation.

    Options:
        window: Mask length (paper: 9, one 3x3 kernel).
    """

    @classmethod
    def num_params(
        cls, pairs: Sequence[tuple[int, int]], *, window: int = 9, **options: Any
    ) -> int:
        return sum((math.ceil(n / size) - 1) * window for n, size in pairs)

    def __init__(
        self,
        pairs: Sequence[tuple[int, int]],
        *,
        rng: torch.Generator,
        window: int = 9,
        **options: Any,
    ) -> None:
        super().__init__(pairs, rng=rng)
        self.window = check_int("upsampler_options: window", window)
        self._counts = [(math.ceil(n / size) - 1) * window for n, size in self.pairs]
        # Zero-mean masks make each copy uncorrelated with copy 0 at the start.
        self.masks = nn.Parameter(torch.randn(sum(self._counts), generator=rng))

    def forward(self, index: int, source: Tensor) -> Tensor:
        n, size = self.pairs[index]
        start = sum(self._counts[:index])
        masks = self.masks[start : start + self._counts[index]].view(-1, self.window)
        masks = masks.repeat(1, math.ceil(size / self.window))[:, :size].reshape(-1)[: n - size]
        copies = source.repeat(masks.numel() // size + 1)[: n - size]
        return torch.cat([source, copies * masks])
