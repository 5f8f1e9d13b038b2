"""Argument checks and small layers shared by the family modules."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from torch import nn

from spaces._errors import ConfigError

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
            f"got {tuple(in_shape)!r}"
        )
    c, h, w = in_shape
    return c, h, w


def check_int(key: str, value: Any, *, low: int = 1) -> int:
    """``value`` as an int ≥ ``low``, else a ConfigError naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{key} must be an int >= {low}, got {value!r}")
    return value


def check_odd(key: str, value: Any) -> int:
    """``value`` as an odd int >= 1 (a kernel size: odd keeps "same" padding symmetric)."""
    if check_int(key, value) % 2 == 0:
        raise ConfigError(f"{key} must be an odd int >= 1, got {value!r}")
    return value


def check_float(key: str, value: Any, *, low: float, high: float) -> float:
    """``value`` as a float in ``[low, high)``, else a ConfigError naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value < high:
        raise ConfigError(f"{key} must be a number in [{low}, {high}), got {value!r}")
    return float(value)


def check_choice(key: str, value: Any, allowed: Collection[Any]) -> Any:
    """``value`` if it is one of ``allowed``, else a ConfigError listing them."""
    try:
        known = value in allowed
    except TypeError:  # an unhashable value is never a valid choice
        known = False
    if not known:
        raise ConfigError(f"{key} must be one of {list(allowed)}, got {value!r}")
    return value


def check_bool(key: str, value: Any) -> bool:
    """``value`` if it is a bool (``1`` or ``"yes"`` are refused, not guessed)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value
