"""What the family modules share: activations, the image and signal shapes, the argument checks
(``spaces._checks``, with the kernel sizes' odd check)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from torch import nn

from spaces._builtin import families_for
from spaces._checks import check_choice, check_int
from spaces._errors import ConfigError

__all__ = [
    "ACTIVATIONS",
    "activation",
    "check_choice",
    "check_odd",
    "conv_layers",
    "image_shape",
    "signal_shape",
]

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU,
    "prelu": nn.PReLU,  # one learned slope per activation layer
}


def activation(name: str, negative_slope: float | None = None) -> Callable[[], nn.Module]:
    """What makes the activation ``name``: ``negative_slope`` is LeakyReLU's slope below zero
    (PyTorch's default is 0.01; the tiny-MNIST records use 0.2) or PReLU's initial one (0.25);
    None keeps PyTorch's. Another activation has no such slope, and is refused one rather than
    trained without it."""
    act = ACTIVATIONS[check_choice("activation", name, ACTIVATIONS)]
    if negative_slope is None:
        return act
    if act is nn.LeakyReLU:
        return functools.partial(nn.LeakyReLU, negative_slope)
    if act is nn.PReLU:
        return functools.partial(nn.PReLU, init=negative_slope)
    raise ConfigError(
        f"negative_slope is LeakyReLU's or PReLU's; activation {name!r} has none "
        f"(got negative_slope={negative_slope!r}): use leaky_relu or prelu, or leave it None"
    )


def image_shape(in_shape: Sequence[int]) -> tuple[int, int, int]:
    """``(C, H, W)`` of an image input; the 2-D convolutional families accept nothing else."""
    if len(in_shape) != 3:
        raise ConfigError(
            f"in_shape must be (channels, height, width) for a convolutional family, "
            f"got {tuple(in_shape)!r}; allowed for a signal (C, L): {_takes('signal')}; for "
            f"a table row (F,): {_takes('table')}; or a family of your own"
        )
    c, h, w = in_shape
    return c, h, w


def signal_shape(in_shape: Sequence[int]) -> tuple[int, int]:
    """``(C, L)`` of a signal input (channels × length); the 1-D families accept nothing else."""
    if len(in_shape) != 2:
        raise ConfigError(
            f"in_shape must be (channels, length) for a 1-D family, got {tuple(in_shape)!r}; "
            f"allowed for a table row (F,): {_takes('table')}; an image (C, H, W) takes a 2-D "
            "family (`search families` lists the layouts each takes)"
        )
    c, length = in_shape
    return c, length


def _takes(layout: str) -> str:
    """The built-in families that take ``layout``, as a message lists them."""
    return ", ".join(families_for(layout))


def check_odd(key: str, value: Any) -> int:
    """``value`` as an odd int >= 1 (a kernel size: odd keeps "same" padding symmetric)."""
    if check_int(key, value) % 2 == 0:
        raise ConfigError(f"{key} must be an odd int >= 1, got {value!r}")
    return value


def conv_layers(conv: type[nn.Conv1d] | type[nn.Conv2d], channels: int, out: int, kernel: int, *,
                separable: bool, bias: bool, stride: int = 1) -> list[nn.Module]:  # fmt: skip
    """A "same"-padded convolution from ``channels`` to ``out`` (1-D or 2-D: ``conv``), or
    with ``separable`` a depthwise one then a pointwise one, the bias on the last only (the
    plain conv stacks of both layouts build their layers from it)."""
    if separable:
        return [conv(channels, channels, kernel, padding=kernel // 2, groups=channels,
                     bias=False), conv(channels, out, 1, bias=bias)]  # fmt: skip
    return [conv(channels, out, kernel, stride=stride, padding=kernel // 2, bias=bias)]
