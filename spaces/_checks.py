"""Argument checks of the public functions of every package (``spaces`` is the one they all
import): each returns the value or raises a ConfigError that names the argument."""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from spaces._errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "check_bool",
    "check_choice",
    "check_int",
    "check_positive",
    "is_int",
    "is_real",
    "options_of",
]

D = TypeVar("D", bound="DataclassInstance")


def is_int(value: Any, low: float, high: float | None = None) -> bool:
    """Whether ``value`` is an int (not a bool) in ``[low, high]``: the one integer test."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    n = int(value)  # exact for any Integral (a NumPy integer too)
    return n >= low and (high is None or n <= high)


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool). Returns a plain bool, so ``value`` keeps
    its type: typeshed's ``numbers.Real`` does not compare with a float."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(key: str, value: Any, *, low: int = 1) -> int:
    """``value`` as an int ≥ ``low``, else a ConfigError naming ``key``."""
    if not is_int(value, low):
        raise ConfigError(f"{key} must be an int >= {low}, got {value!r}")
    return int(value)


def check_positive(key: str, value: Any, *, strict: bool = True) -> float:
    """``value`` as a finite number > 0 (``>= 0`` unless ``strict``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (strict and value == 0):
        raise ConfigError(f"{key} must be a finite number {'> 0' if strict else '>= 0'}, "
                          f"got {value!r}")  # fmt: skip
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


def options_of(cls: type[D], options: Mapping[str, Any], what: str) -> D:
    """``cls(**options)`` for a dataclass of keyword options (a function's ``**options``); an
    unknown name is refused with the known ones listed."""
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"unknown {what} option {unknown[0]!r}; allowed: {known}")
    return cls(**options)
