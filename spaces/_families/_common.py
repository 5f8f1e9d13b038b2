"""What the family modules share: activations, the image shape, and the argument checks
(``spaces._checks``, with the kernel sizes' odd check)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from spaces._checks import check_choice, check_int
from spaces._errors import ConfigError

__all__ = [
    "ACTIVATIONS",
    "check_choice",
    "check_odd",
    "image_shape",
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


def image_shape(in_shape: Sequence[int]) -> tuple[int, int, int]:
    """``(C, H, W)`` of an image input; convolutional families accept nothing else."""
    if len(in_shape) != 3:
        raise ConfigError(
            f"in_shape must be (channels, height, width) for a convolutional family, "
            f"got {tuple(in_shape)!r}; allowed for a signal (C, L) or a table row (F,): "
            "mlp, or a family of your own"
        )
    c, h, w = in_shape
    return c, h, w


def check_odd(key: str, value: Any) -> int:
    """``value`` as an odd int >= 1 (a kernel size: odd keeps "same" padding symmetric)."""
    if check_int(key, value) % 2 == 0:
        raise ConfigError(f"{key} must be an odd int >= 1, got {value!r}")
    return value
