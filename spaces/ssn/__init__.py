"""Shapeshifter Networks: layer weights generated from a parameter budget shared across layers.

Front door: :func:`shapeshift`; :func:`minimum_budget` says how small a budget it can meet,
:func:`check_budget` whether it meets one.
Generators, upsamplers and mappings are registries, so a new one is a subclass (or function)
plus one ``register`` decorator.
"""

from spaces.ssn._generators import GENERATORS, Generator
from spaces.ssn._layers import SUPPORTED
from spaces.ssn._mappings import MAPPINGS, MappingContext
from spaces.ssn._net import (
    LayerInfo,
    ShapeshiftNet,
    SSNOptions,
    check_budget,
    minimum_budget,
    shapeshift,
)
from spaces.ssn._upsamplers import UPSAMPLERS, Upsampler

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
