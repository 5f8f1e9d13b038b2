"""The family registry: :data:`FAMILIES`, :func:`register_family` and the variants and
hyper-parameter names of a family. The built-in families import it to register themselves;
it imports none of them (``spaces._build`` imports them, so ``FAMILIES`` read from there holds
every built-in family)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from torch import nn

from spaces._builtin import BUILTIN_LAYOUTS, check_layouts
from spaces._registry import Registry

__all__ = [
    "FAMILIES",
    "FamilyBuilder",
    "declared_layouts",
    "family_variant",
    "hyper_keys",
    "register_family",
]

FamilyBuilder = Callable[..., nn.Module]

FAMILIES: Registry[FamilyBuilder] = Registry("family")
#: The layouts each registered family declared, by registered name (absent: none declared).
_LAYOUTS: dict[str, tuple[str, ...]] = {}

_LEADING = ("in_shape", "num_classes")


def register_family(
    name: str, *, layouts: str | Sequence[str] | None = None
) -> Callable[[FamilyBuilder], FamilyBuilder]:
    """Registers a family under ``name``; a duplicate name raises.

    The entry must accept ``(in_shape, num_classes, **hyper)``. Its keyword arguments after
    those two are the family's hyper-parameters: :func:`build_model` rejects any other key. An
    entry taking ``**kwargs`` declares its keys in a ``hyper_keys`` attribute (see
    :func:`family_variant`).

    Args:
        name: The family's name (case-insensitive).
        layouts: The samples it takes: ``image`` (C×H×W), ``signal`` (C×L), ``table`` (F), one
            or several; shown by ``search families`` and :func:`spaces.family_layouts`. None:
            not declared (a built-in's come from one table, ``spaces._builtin``).

    Raises:
        ConfigError: a layout that is not one of the three.

    Example:
        >>> @register_family("tiny-mlp", layouts=["signal", "table"])  # doctest: +SKIP
        ... class TinyMLP(nn.Module):
        ...     def __init__(self, in_shape, num_classes, *, width: int = 8): ...
    """
    declared = None
    if layouts is not None:
        declared = check_layouts(layouts, f"family {name!r}: layouts")
    elif name.lower() in BUILTIN_LAYOUTS:
        declared = BUILTIN_LAYOUTS[name.lower()]

    def register(builder: FamilyBuilder) -> FamilyBuilder:
        FAMILIES.add(name, builder)
        if declared is None:
            _LAYOUTS.pop(name.lower(), None)
        else:
            _LAYOUTS[name.lower()] = declared
        return builder

    return register


def declared_layouts(family: str) -> tuple[str, ...] | None:
    """The layouts the registered ``family`` declared (None: none); an unknown name raises
    :class:`UnknownNameError` listing the known ones."""
    FAMILIES.get(family)
    return _LAYOUTS.get(family.lower())


def family_variant(base: FamilyBuilder, /, **fixed: Any) -> FamilyBuilder:
    """A builder that calls ``base`` with ``fixed`` arguments; the other keys stay free.

    A variant such as ``wrn-16-4`` is a name for fixed arguments, not new code: registering
    ``family_variant(WideResNet, depth=16, widen=4)`` keeps the class the single implementation.
    """
    allowed = tuple(k for k in hyper_keys(base) if k not in fixed)

    def build(in_shape: Sequence[int], num_classes: int, **hyper: Any) -> nn.Module:
        return base(in_shape, num_classes, **fixed, **hyper)

    fixed_text = ", ".join(f"{k}={v!r}" for k, v in fixed.items())
    build.__doc__ = f"{base.__name__} with {fixed_text}."
    build.__name__ = build.__qualname__ = f"{base.__name__}_variant"
    build.hyper_keys = allowed  # type: ignore[attr-defined]
    build.hyper_base = base  # type: ignore[attr-defined]  # its declared types and ranges
    build.hyper_fixed = dict(fixed)  # type: ignore[attr-defined]  # what the name stands for
    return build


def hyper_keys(builder: FamilyBuilder) -> tuple[str, ...]:
    """The hyper-parameter names a family accepts (its keyword arguments after the first two)."""
    declared = getattr(builder, "hyper_keys", None)
    if declared is not None:
        return tuple(declared)
    params = inspect.signature(builder).parameters.values()
    return tuple(
        p.name
        for p in params
        if p.name not in _LEADING and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )
