"""Shapeshifter Networks: layer weights generated from a parameter budget shared across layers.

Front door: :func:`shapeshift`; :func:`minimum_budget` says how small a budget it can meet,
:func:`check_budget` whether it meets one.
Generators, upsamplers and mappings are registries, so a new one is a subclass (or function)
plus one ``register`` decorator. Names load lazily (PEP 562), as ``spaces``'s do, so that a
search's config reads :class:`SSNOptions` without loading torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
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

_EXPORTS = {
    "GENERATORS": "spaces.ssn._generators",
    "Generator": "spaces.ssn._generators",
    "SUPPORTED": "spaces.ssn._layers",
    "MAPPINGS": "spaces.ssn._mappings",
    "MappingContext": "spaces.ssn._mappings",
    "LayerInfo": "spaces.ssn._net",
    "ShapeshiftNet": "spaces.ssn._net",
    "check_budget": "spaces.ssn._net",
    "minimum_budget": "spaces.ssn._net",
    "shapeshift": "spaces.ssn._net",
    "SSNOptions": "spaces.ssn._options",
    "UPSAMPLERS": "spaces.ssn._upsamplers",
    "Upsampler": "spaces.ssn._upsamplers",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_getattr(__name__, _EXPORTS)
