"""ResNet1d: residual basic blocks (He et al., 2016) for 1-D signals (C×L), with a projection
shortcut (1×1 conv, [BN]) wherever a block changes the channels or the length."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._families._common import activation as make_activation
from spaces._families._common import check_choice, check_odd, signal_shape
from spaces._families._signal import POOLS, Head, Placement, halve, strided
from spaces._family_registry import register_family
from spaces._hyper import Range, checked

#: How a stage after the first halves the length: its first conv's stride, or a pool first.
POOLINGS = ("stride", *POOLS)


class _Block(nn.Module):
    """conv k (stride) → [BN] → act → conv k → [BN], plus the shortcut, → act."""

    def __init__(
        self,
        cin: int,
        cout: int,
        *,
        kernel: int,
        stride: int,
        bn: bool,
        act: Callable[[], nn.Module],
        inner: list[nn.Module],
    ) -> None:
        super().__init__()

        def conv(c_in: int, c_out: int, k: int, s: int) -> list[nn.Module]:
            norm = [nn.BatchNorm1d(c_out)] if bn else []
            return [nn.Conv1d(c_in, c_out, k, stride=s, padding=k // 2, bias=not bn), *norm]

        self.body = nn.Sequential(
            *conv(cin, cout, kernel, stride), act(), *inner, *conv(cout, cout, kernel, 1)
        )
        same = cin == cout and stride == 1
        self.shortcut = nn.Identity() if same else nn.Sequential(*conv(cin, cout, 1, stride))
        self.act = act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.body(x) + self.shortcut(x))


@register_family("resnet1d")
class ResNet1d(nn.Module):
    """stem (conv1d k → [BN] → act) → ``depth`` stages of ``blocks`` residual basic blocks →
    GAP (or flatten) → [dropout] → Linear, for signals of C channels × L steps.

    Stage ``s`` has ``round(width * growth**s)`` channels; every stage after the first halves
    the length (only while it is at least 2): by a stride of 2 in its first block's first conv
    (``pooling="stride"``, the shortcut then projects with the same stride), or by a max or
    average pool of 2 before it; ``none`` keeps the length. A block whose channels or length
    change has a 1×1 conv (and BN) shortcut, every other an identity. For long sequences
    (thousands of steps) ``stem_stride`` strides the stem: a stride of s divides the length,
    and the work of every block, by s (``ceil(L / s)`` steps, at least 1).

    Args:
        in_shape: ``(channels, length)``.
        num_classes: Outputs of the head.
        depth: Number of stages.
        blocks: Residual blocks per stage.
        width: Channels of the stem and the first stage.
        growth: Channel multiplier per stage.
        kernel: Odd kernel size of every conv but the shortcuts'.
        pooling: ``stride``, ``max``, ``avg`` or ``none`` (above).
        bn: Batch norm after each conv (the conv then has no bias).
        activation: Nonlinearity name.
        negative_slope: LeakyReLU's slope below zero (PReLU's initial one); None keeps
            PyTorch's 0.01 (0.25).
        dropout: The dropout's rate; where it runs is ``dropout_at``'s.
        dropout_at: ``head`` (before the head only), ``every`` (after every activation, inside
            the blocks too, and before the head), ``layers`` (after the stem and every block,
            not before the head) or ``between`` (after each block but the last).
        head: ``gap`` (global average over time) or ``flatten`` (the last maps whole).
        stem_stride: Stride of the stem conv (1: none).
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        depth: Annotated[int, Range(1, 16)] = 3,
        blocks: Annotated[int, Range(1, 16)] = 1,
        width: int = 16,
        growth: Annotated[float, Range(0.25, 16)] = 2.0,
        kernel: int = 5,
        pooling: str = "stride",
        bn: bool = True,
        activation: str = "relu",
        negative_slope: Annotated[float, Range(0, 1)] | None = None,
        dropout: Annotated[float, Range(0, 0.9)] = 0.0,
        dropout_at: str = "head",
        head: str = "gap",
        stem_stride: Annotated[int, Range(1, 64)] = 1,
    ) -> None:
        super().__init__()
        channels, length = signal_shape(in_shape)
        check_odd("kernel", kernel)
        check_choice("pooling", pooling, POOLINGS)
        act = make_activation(activation, negative_slope)
        drops = Placement(dropout, dropout_at, depth * blocks)
        norm = [nn.BatchNorm1d(width)] if bn else []
        layers: list[nn.Module] = [
            nn.Conv1d(channels, width, kernel, stride=stem_stride, padding=kernel // 2,
                      bias=not bn),
            *norm, act(), *drops.after(-1),
        ]  # fmt: skip
        length = strided(length, stem_stride)
        channels, count = width, 0
        for s in range(depth):
            out = max(1, round(width * growth**s))
            stride = 1
            if s > 0 and pooling != "none" and halve(length):
                pool = POOLS.get(pooling)
                if pool is None:
                    stride, length = 2, strided(length, 2)
                else:
                    layers.append(pool(2))
                    length //= 2
            for b in range(blocks):
                layers.append(_Block(channels, out, kernel=kernel, stride=stride if b == 0 else 1,
                                     bn=bn, act=act, inner=drops.inner()))  # fmt: skip
                layers += drops.after(count)
                channels, count = out, count + 1
        self.features = nn.Sequential(*layers)
        self.head = Head(channels, length, num_classes, head, drops.head())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
