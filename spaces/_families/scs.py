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
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import FunctionCtx, once_differentiable

from spaces._errors import ConfigError
from spaces._families._box import box_sum
from spaces._families._common import check_odd, image_shape
from spaces._families._layout import channel_sums, scale_channels
from spaces._families._pool import max_abs_pool2
from spaces._family_registry import family_variant, register_family
from spaces._hyper import Range, checked


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
    _ones: torch.Tensor  # a buffer: the patch-sum kernel of a strided or dilated layer

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
        x_norm = torch.sqrt(self._patch_squares(x) + self.eps) + self.floor
        per_group = self.out_channels // self.groups
        if 1 < per_group < self.out_channels:
            x_norm = x_norm.repeat_interleave(per_group, dim=1)
        return _Sharpen.apply(dot, x_norm, self.exponent, self.eps)

    def _patch_squares(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of x² over each patch and group: ``(N, groups, H', W')``."""
        padding = self.padding
        assert not isinstance(padding, str)  # __init__ refuses "same" and "valid"
        if self.stride != (1, 1) or self.dilation != (1, 1):
            ones = self._ones.to(x.dtype)
            return F.conv2d(
                x.square(), ones, None, self.stride, padding, self.dilation, self.groups
            )
        sq = x.square()
        if self.groups < self.in_channels:  # sum each group's channels first
            sq = sq.unflatten(1, (self.groups, -1)).sum(2)
        (kh, kw), (ph, pw) = self.kernel_size, padding
        return box_sum(sq, (kh, kw), (ph, pw))


class _Sharpen(torch.autograd.Function):
    """``sign(s) · (|s| + eps)^p`` with ``s = dot / norm``, ``p`` one exponent per channel.

    Written out, autograd records about 12 elementwise ops forward and 20 backward (``pow``
    with a per-channel exponent alone costs 5x a flat op on a channels-last CPU tensor). Here
    the power is ``exp(p · log a)`` with ``a = |s| + eps``, and the backward reuses what the
    forward kept: ``∂out/∂s = p · out · sign(s) / a`` (0 at s = 0, as autograd has it through
    ``sign``) and ``∂out/∂p = out · log a``.
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx, dot: Tensor, norm: Tensor, p: Tensor, eps: float
    ) -> Tensor:
        s = dot / norm
        a = s.abs().add_(eps)
        log_a = a.log()
        out = scale_channels(log_a, p).exp_()
        slope = s.sign()
        out.mul_(slope)
        if any(ctx.needs_input_grad):  # type: ignore[attr-defined]
            slope.div_(a)  # sign(s) / a
            ctx.save_for_backward(s, norm, p, out, log_a, slope)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, ...]:
        s, norm, p, out, log_a, slope = ctx.saved_tensors  # type: ignore[attr-defined]
        need_dot, need_norm, need_p, _ = ctx.needs_input_grad  # type: ignore[attr-defined]
        grad_out = grad * out
        grad_p = channel_sums(grad_out * log_a) if need_p else None
        grad_dot = scale_channels(grad_out.mul_(slope), p).div_(norm)
        grad_norm = None
        if need_norm:
            grad_norm = grad_dot * s
            grad_norm = -(grad_norm if norm.shape[1] > 1 else grad_norm.sum(1, keepdim=True))
        return grad_dot if need_dot else None, grad_norm, grad_p, None


class MaxAbsPool2d(nn.Module):
    """Max pooling on |x| that keeps the sign of the winner (SCS responses are signed)."""

    def __init__(self, kernel_size: int, *, ceil_mode: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.ceil_mode = ceil_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        even = x.shape[-2] % 2 == x.shape[-1] % 2 == 0
        if self.kernel_size == 2 and x.dim() == 4 and (even or not self.ceil_mode):
            return max_abs_pool2(x)
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

    @checked
    def __init__(
        self,
        in_shape: Sequence[int],
        num_classes: int,
        *,
        widths: Sequence[int] = (30, 30, 30),
        kernel: int = 5,
        paddings: Annotated[Sequence[int], Range(0, 2**20)] | None = None,
        depthwise: bool = False,
        head_bias: bool = False,
    ) -> None:
        super().__init__()
        channels, h, w = image_shape(in_shape)
        if isinstance(widths, int | str) or not isinstance(widths, Sequence) or not widths:
            raise ConfigError(f"widths must be a non-empty sequence of ints, got {widths!r}")
        widths = list(widths)
        check_odd("kernel", kernel)
        paddings = [0] + [1] * (len(widths) - 1) if paddings is None else list(paddings)
        if len(paddings) != len(widths):
            raise ConfigError(f"paddings must have one entry per width, got {paddings!r}")
        layers: list[nn.Module] = []
        for i, (out, pad) in enumerate(zip(widths, paddings, strict=True)):
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
