"""What the 1-D families (``conv1d``, ``sepconv1d``, ``resnet1d``) share: their pools, where
their dropout runs, the length a strided or pooled map keeps, and their head.

Lengths are tracked while a net is built, so a flatten head knows its inputs and a pool is
left out once the map is one step long: a sequence of 20 steps and one of thousands take the
same hyper-parameters.
"""

from __future__ import annotations

import torch
from torch import nn

from spaces._families._common import check_choice
from spaces._families.sepnet import DROPOUT_AT, HEADS

__all__ = ["DROPOUT_AT", "HEADS", "POOLS", "Head", "Placement", "halve", "strided"]

#: The pools that halve a map (kernel 2, stride 2; an odd last step is dropped).
POOLS: dict[str, type[nn.Module] | None] = {
    "max": nn.MaxPool1d,
    "avg": nn.AvgPool1d,
    "none": None,
}


def strided(length: int, stride: int) -> int:
    """The length after an odd-kernel conv padded by ``kernel // 2`` with ``stride``: never
    below 1."""
    return (length - 1) // stride + 1


def halve(length: int) -> bool:
    """Whether a map of ``length`` steps is halved (pooled or strided): only while it has at
    least 2, so no depth shrinks it below one step."""
    return length >= 2


class Placement:
    """Where ``dropout_at`` puts the dropout (the names of ``sepnet``'s): ``head`` before the
    head only; ``every`` after every activation and before the head; ``layers`` after each
    block's output (the stem's too) and not before the head; ``between`` after each block but
    the last."""

    def __init__(self, dropout: float, dropout_at: str, blocks: int) -> None:
        self.rate = dropout
        self.place = check_choice("dropout_at", dropout_at, DROPOUT_AT)
        self.blocks = blocks

    def _drop(self, on: bool) -> list[nn.Module]:
        return [nn.Dropout(self.rate)] if on and self.rate > 0 else []

    def inner(self) -> list[nn.Module]:
        """After an activation inside a block."""
        return self._drop(self.place == "every")

    def after(self, block: int) -> list[nn.Module]:
        """After block ``block`` (0-based; -1: the stem)."""
        between = self.place == "between" and 0 <= block < self.blocks - 1
        return self._drop(self.place in ("every", "layers") or between)

    def head(self) -> list[nn.Module]:
        """Before the head."""
        return self._drop(self.place in ("head", "every"))


class Head(nn.Module):
    """Global average over time (``gap``) or the last maps whole (``flatten``) → [dropout] →
    Linear."""

    def __init__(
        self, channels: int, length: int, num_classes: int, head: str, drop: list[nn.Module]
    ) -> None:
        super().__init__()
        self.flatten = check_choice("head", head, HEADS) == "flatten"
        self.drop = nn.Sequential(*drop)
        self.fc = nn.Linear(channels * length if self.flatten else channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1) if self.flatten else x.mean(dim=2)
        return self.fc(self.drop(x))
