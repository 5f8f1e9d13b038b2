"""The unaided search's derivation: a data-only config (name, dataset, objectives,
constraints, limits) made whole from the data and the constraints, each derived value with
the rule that set it.

It sits above :mod:`search.config`, which never imports it: ``search check`` and ``search
launch`` call :func:`load_config` here, which derives what a config without ``space`` lacks and
validates the whole as :func:`search.config.load_config` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search.derive._derive import Derivation as Derivation
    from search.derive._derive import Derived as Derived
    from search.derive._derive import derive as derive
    from search.derive._families import LAYOUT_FAMILIES as LAYOUT_FAMILIES
    from search.derive._families import FamilySpec as FamilySpec
    from search.derive._load import load_config as load_config
    from search.derive._warnings import data_warnings as data_warnings


__all__ = [
    "LAYOUT_FAMILIES",
    "Derivation",
    "Derived",
    "FamilySpec",
    "data_warnings",
    "derive",
    "load_config",
]

__getattr__ = lazy_exports(__name__)
