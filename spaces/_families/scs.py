"""Sharpened-Cosine-Similarity nets: the models that hold the parameter-efficiency leaderboard.

Sharpened cosine similarity (Rohrer, Pisoni; 2022) replaces a convolution's dot product by a
cosine similarity between each input patch and the kernel, sharpened by a learned exponent:

    s = conv(x, w) / ((‖x_patch‖ + q) · ‖w‖),     out = sign(s) · |s|^p

The learned noise floor ``q`` keeps near-empty patches from reaching a similarity of ±1. Nets
pair the layer with max-abs pooling, which keeps the strongest response of either sign.

:class:`SharpCosSim2d` subclasses ``nn.Conv2d`` and reads ``self.weight`` in ``forward``, so
anything that takes over Conv2d weights (Shapeshifter Networks) shares SCS layers too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from spaces._build import family_variant, register_family
from spaces._errors import ConfigError
from spaces._families._common import check_bool, check_int, image_shape


class SharpCosSim2d(nn.Conv2d):
    """A 2-D sharpened-cosine-similarity layer (no bias, zero padding).

    ``p`` (one per output channel) and ``q`` (one per layer) are stored in Rohrer's log
    parametrisation, which keeps both positive with smooth gradients: the exponent is
    ``exp(p / p_scale)`` and the noise floor ``exp(-q / q_scale)``; see :attr:`exponent` and
    :attr:`floor`. The defaults start at an exponent of 2 and a floor of e⁻¹.

    Args:
        in_channels: Input channels.
        out_channels: Output channels (kernels).
        kernel_size: Square or ``(kh, kw)`` kernel.
        stride: As in ``nn.Conv2d``.
        padding: As in ``nn.Conv2d`` (int or tuple; zeros).
        dilation: As in ``nn.Conv2d``.
        groups: As in ``nn.Conv2d`` (``groups=in_channels`` for the depthwise form).
        p_init: Initial exponent (> 0).
        q_init: Initial noise floor (> 0).
        eps: Added under the square roots and to ``|s|`` so values and gradients stay finite
            at ``x = 0``, ``w = 0`` and ``s = 0``.
    """

    p_scale = 5.0
    q_scale = 0.3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        *,
        p_init: float = 2.0,
        q_init: float = math.exp(-1.0),
        eps: float = 1e-6,
    ) -> None:
        if isinstance(padding, str):
            raise ConfigError(f"padding must be an int or a tuple for SCS, got {padding!r}")
        if p_init <= 0 or q_init <= 0:
            raise ConfigError(f"p_init and q_init must be > 0, got {p_init!r} and {q_init!r}")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias=False
        )
        self.p = nn.Parameter(torch.full((out_channels,), self.p_scale * math.log(p_init)))
        self.q = nn.Parameter(torch.full((1,), -self.q_scale * math.log(q_init)))
        self.eps = eps
        ones = torch.ones(groups, in_channels // groups, *self.kernel_size)
        self.register_buffer("_ones", ones, persistent=False)

    @property
    def exponent(self) -> torch.Tensor:
        """The sharpening exponent p > 0, one per output channel."""
        return torch.exp(self.p / self.p_scale)

    @property
    def floor(self) -> torch.Tensor:
        """The noise floor q > 0 added to each patch norm."""
        return torch.exp(-self.q / self.q_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        w_norm = torch.sqrt(w.square().sum(dim=(1, 2, 3)) + self.eps)
        dot = self._conv_forward(x, w / w_norm.view(-1, 1, 1, 1), None)
        # Patch norms per group, by convolving x² with an all-ones kernel.
        sq = F.conv2d(
            x.square(),
            self._ones.to(x.dtype),
            None,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )
        x_norm = torch.sqrt(sq + self.eps) + self.floor
        s = dot / x_norm.repeat_interleave(self.out_channels // self.groups, dim=1)
        return torch.sign(s) * (s.abs() + self.eps) ** self.exponent.view(1, -1, 1, 1)


class MaxAbsPool2d(nn.Module):
    """Max pooling on |x| that keeps the sign of the winner (SCS responses are signed)."""

    def __init__(self, kernel_size: int, *, ceil_mode: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = F.max_pool2d(x, self.kernel_size, ceil_mode=self.ceil_mode)
        neg = F.max_pool2d(-x, self.kernel_size, ceil_mode=self.ceil_mode)
        return torch.where(pos >= neg, pos, -neg)


@register_family("scs")
class SCSNet(nn.Module):
    """SCS layers with max-abs pooling, a global max-abs pool and a linear head.

    The defaults are Rohrer's three-layer leaderboard nets: 5×5 kernels, padding 0 then 1, a
    2×2 pool after every layer but the last, and a head without bias. A layer whose padded
    input is smaller than its kernel switches to "same" padding, and pooling stops at 1×1, so
    8×8 digits work too.

    Args:
        in_shape: ``(channels, height, width)``.
        num_classes: Outputs of the head.
        widths: Output channels of each SCS layer.
        kernel: Odd kernel size of each layer.
        paddings: Padding of each layer; ``None`` gives (0, 1, 1, ...).
        depthwise: Pisoni's paired form: after the first layer, each layer is a depthwise
            k×k SCS followed by a pointwise 1×1 SCS (far fewer parameters).
        head_bias: Bias in the linear head (the leaderboard counts exclude it).
    """

    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        widths: Sequence[int] = (30, 30, 30),
        kernel: int = 5,
        paddings: Sequence[int] | None = None,
        depthwise: bool = False,
        head_bias: bool = False,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        if isinstance(widths, int | str) or not isinstance(widths, Sequence) or not widths:
            raise ConfigError(f"widths must be a non-empty sequence of ints, got {widths!r}")
        widths = [check_int("widths", c) for c in widths]
        if check_int("kernel", kernel) % 2 == 0:
            raise ConfigError(f"kernel must be an odd int >= 1, got {kernel!r}")
        check_bool("depthwise", depthwise)
        check_bool("head_bias", head_bias)
        paddings = [0] + [1] * (len(widths) - 1) if paddings is None else list(paddings)
        if len(paddings) != len(widths):
            raise ConfigError(f"paddings must have one entry per width, got {paddings!r}")
        layers: list[nn.Module] = []
        for i, (out, pad) in enumerate(zip(widths, paddings, strict=True)):
            pad = check_int("paddings", pad, low=0)
            if min(h, w) + 2 * pad < kernel:
                pad = kernel // 2
            h, w = h + 2 * pad - kernel + 1, w + 2 * pad - kernel + 1
            if depthwise and i > 0:
                layers += [
                    SharpCosSim2d(channels, channels, kernel, padding=pad, groups=channels),
                    SharpCosSim2d(channels, out, 1),
                ]
            else:
                layers.append(SharpCosSim2d(channels, out, kernel, padding=pad))
            if i < len(widths) - 1 and min(h, w) >= 2:
                layers.append(MaxAbsPool2d(2))
                h, w = -(-h // 2), -(-w // 2)
            channels = out
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels, num_classes, bias=head_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        o = self.features(x).flatten(2)
        idx = o.abs().argmax(dim=2, keepdim=True)
        return self.head(o.gather(2, idx).squeeze(2))


# Leaderboard nets (counts exclude the head bias, as the leaderboard does):
# Fashion-MNIST 90 %: 12 kernels 5×5 per layer, 7,659 params on 1×28×28.
register_family("scs-fashion-7659")(family_variant(SCSNet, widths=(12, 12, 12), kernel=5))
# CIFAR-10 80 %: 30 kernels 5×5 per layer, 47,643 params on 3×32×32.
register_family("scs-cifar-47643")(family_variant(SCSNet, widths=(30, 30, 30), kernel=5))
