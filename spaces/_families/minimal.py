"""MinimalNet: the design of ruslangrimov/mnist-minimal-model, whose 1,936-parameter net
reached 99.1 % on MNIST (``record-1936``, declared in ``records.yaml``).

It is its own family, not a SepNet variant: its activation comes before its norm, the norm
has one scale and shift for the whole tensor, its reused separable conv shares the conv but
not the norms, and its head has a hidden layer; none of these is a lever the searches use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
from torch import nn

from spaces._families._common import activation as make_activation
from spaces._families._common import image_shape
from spaces._family_registry import register_family
from spaces._hyper import Range, checked


class SampleNorm(nn.Module):
    """Normalises each sample over its whole tensor, then one learned scale and shift (2
    parameters): keras-contrib's ``InstanceNormalization(axis=None)``, which divides by the
    population standard deviation plus ``eps`` (not by the root of the variance plus eps;
    keras_contrib/layers/normalization/instancenormalization.py, ``call``)."""

    def __init__(self, eps: float = 1e-3) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = tuple(range(1, x.dim()))
        centred = x - x.mean(dims, keepdim=True)
        # plain ops, which ONNX exports; the floor keeps sqrt's gradient finite on a constant
        # tensor (a hidden layer's ReLUs all off) and moves std + eps by at most 0.1 %
        std = centred.square().mean(dims, keepdim=True).clamp_min(1e-12).sqrt()
        return centred / (std + self.eps) * self.weight + self.bias


def _separable(c_in: int, c_out: int, pad: int) -> nn.Sequential:
    """Keras's ``SeparableConv2D(depth_multiplier=1)``: a depthwise 3×3 conv without bias,
    then a pointwise 1×1 conv with one."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_in, 3, padding=pad, groups=c_in, bias=False), nn.Conv2d(c_in, c_out, 1)
    )


class _Tied(nn.Module):
    """One conv applied once per tail, with the same weights, each application followed by
    its own tail (act → norm → dropout): the convs are tied, the norms are not."""

    def __init__(self, conv: nn.Module, tails: list[nn.Module]) -> None:
        super().__init__()
        self.conv, self.tails = conv, nn.ModuleList(tails)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for tail in self.tails:
            x = tail(self.conv(x))
        return x


@register_family("minimal")
class MinimalNet(nn.Module):
    """stem conv 3×3 → 2×2 max pool → separable conv 3×3 → one separable conv applied
    ``reuse`` times → GAP → [hidden Linear] → Linear; every layer followed by act → SampleNorm
    → dropout (the stem's after its pool).

    The stem and the first separable conv are unpadded ("valid": 28 → 26 → 13 → 11 on MNIST),
    the reused one padded ("same"); a conv on maps narrower than 3 is padded. The defaults are
    the 1,936-parameter record (``record-1936``).

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        stem: Channels of the stem conv.
        width: Channels of the separable convs.
        reuse: Applications of the tied separable conv (each with its own norm).
        hidden: Units of the head's hidden layer (0: none).
        activation: Nonlinearity name.
        negative_slope: LeakyReLU's slope below zero (PReLU's initial one); None: PyTorch's.
        dropout: Dropout after every layer but the head's output.
    """

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        stem: int = 8,
        width: int = 26,
        reuse: Annotated[int, Range(1, 64)] = 3,
        hidden: Annotated[int, Range(0, 2**20)] = 16,
        activation: str = "relu",
        negative_slope: Annotated[float, Range(0, 1)] | None = None,
        dropout: Annotated[float, Range(0, 0.9)] = 0.1,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        act = make_activation(activation, negative_slope)

        def tail(*first: nn.Module) -> nn.Sequential:
            drop = [nn.Dropout(dropout)] if dropout > 0 else []
            return nn.Sequential(act(), SampleNorm(), *first, *drop)

        pad = 0 if min(h, w) >= 3 else 1
        h, w = h - 2 + 2 * pad, w - 2 + 2 * pad
        pool = [nn.MaxPool2d(2)] if min(h, w) >= 2 else []
        h, w = (h // 2, w // 2) if pool else (h, w)
        layers: list[nn.Module] = [nn.Conv2d(channels, stem, 3, padding=pad), tail(*pool)]
        pad = 0 if min(h, w) >= 3 else 1
        layers += [_separable(stem, width, pad), tail()]
        layers.append(_Tied(_separable(width, width, 1), [tail() for _ in range(reuse)]))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.hidden = nn.Sequential(nn.Linear(width, hidden), tail()) if hidden else nn.Identity()
        self.head = nn.Linear(hidden or width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(self.pool(self.features(x)).flatten(1)))

