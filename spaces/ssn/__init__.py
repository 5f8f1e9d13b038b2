"""Shapeshifter Networks: layer weights generated from a parameter budget shared across layers.

Front door: :func:`shapeshift`; :func:`minimum_budget` says how small a budget it can meet,
:func:`check_budget` whether it meets one.
Generators, upsamplers and mappings are registries, so a new one is a subclass (or function)
plus one ``register`` decorator. Names load lazily (PEP 562), as ``spaces``'s do, so that a
search's config reads :class:`SSNOptions` without loading torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from spaces.ssn._generators import GENERATORS as GENERATORS
    from spaces.ssn._generators import Generator as Generator
    from spaces.ssn._layers import SUPPORTED as SUPPORTED
    from spaces.ssn._mappings import MAPPINGS as MAPPINGS
    from spaces.ssn._mappings import MappingContext as MappingContext
    from spaces.ssn._net import LayerInfo as LayerInfo
    from spaces.ssn._net import ShapeshiftNet as ShapeshiftNet
    from spaces.ssn._net import check_budget as check_budget
    from spaces.ssn._net import minimum_budget as minimum_budget
    from spaces.ssn._net import shapeshift as shapeshift
    from spaces.ssn._options import SSNOptions as SSNOptions
    from spaces.ssn._upsamplers import UPSAMPLERS as UPSAMPLERS
    from spaces.ssn._upsamplers import Upsampler as Upsampler


__all__ = [
    "GENERATORS",
    "MAPPINGS",
    "SUPPORTED",
    "UPSAMPLERS",
    "Generator",
    "LayerInfo",
    "MappingContext",
    "SSNOptions",
    "ShapeshiftNet",
    "Upsampler",
    "check_budget",
    "minimum_budget",
    "shapeshift",
]
__getattr__ = lazy_exports(__name__)
