"""The family registry's front door, :func:`build_model`, with every built-in family
registered (the registry itself is ``spaces._family_registry``).

A *family* is any callable ``(in_shape, num_classes, **hyper) -> nn.Module``: a configurable
``nn.Module`` class, or a thin variant that fixes some of its arguments (timm style). Families
register on import, so ``import spaces`` is enough to list them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

import spaces._families  # noqa: F401  # importing the family modules registers them (timm style)
from spaces._checks import check_int, is_int
from spaces._errors import ConfigError
from spaces._family_registry import (
    FAMILIES,
    FamilyBuilder,
    declared_layouts,
    family_variant,
    hyper_keys,
    register_family,
)
from spaces._hyper import check_hyper

__all__ = [
    "FAMILIES",
    "FamilyBuilder",
    "build_model",
    "declared_layouts",
    "family_variant",
    "hyper_keys",
    "list_families",
    "register_family",
]


def list_families(pattern: str = "*") -> list[str]:
    """Sorted names of the registered families that match a shell-style wildcard."""
    return FAMILIES.names(pattern)


def build_model(family: str, in_shape: Sequence[int], num_classes: int, **hyper: Any) -> nn.Module:
    """Builds one model of a registered family.

    Args:
        family: Registered name, e.g. ``"wrn-16-4"`` (see :func:`list_families`).
        in_shape: Shape of one input sample without the batch, e.g. ``(3, 32, 32)``.
        num_classes: Number of outputs of the linear head.
        **hyper: The family's hyper-parameters; unknown keys raise.

    Returns:
        A freshly initialised ``nn.Module`` mapping ``(batch, *in_shape)`` to
        ``(batch, num_classes)`` logits.

    Raises:
        UnknownNameError: ``family`` is not registered (the message lists the known ones).
        ConfigError: a bad shape, class count, unknown hyper-parameter or bad value.
    """
    builder = FAMILIES.get(family)
    shape = _check_shape(in_shape)
    check_int("num_classes", num_classes)
    allowed = hyper_keys(builder)
    unknown = sorted(set(hyper) - set(allowed))
    if unknown:
        raise ConfigError(
            f"family {family!r} has no hyper-parameter {unknown[0]!r}; "
            f"allowed: {', '.join(allowed) or '(none)'}"
        )
    try:
        for key, value in hyper.items():  # the types and ranges its signature declares
            check_hyper(family, builder, key, value)
        return builder(shape, num_classes, **hyper)
    except ConfigError as err:
        raise ConfigError(f"family {family!r}: {err}") from None


def _check_shape(in_shape: Sequence[int]) -> tuple[int, ...]:
    try:
        shape = tuple(in_shape)
    except TypeError:
        shape = ()
    if not shape or not all(is_int(d, 1) for d in shape):
        raise ConfigError(
            f"in_shape must be a non-empty sequence of positive ints (one sample, no batch), "
            f"got {in_shape!r}"
        )
    return shape
