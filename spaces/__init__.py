"""What is searched: the space DSL, architecture families and Shapeshifter Networks.

Names load lazily (PEP 562), so ``from spaces import NpasError`` or ``import spaces._errors``
costs no torch import: light tools (the CLI's parser, ``search.errors``) can use the errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_exports as lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from spaces import ssn as ssn
    from spaces._build import FAMILIES as FAMILIES
    from spaces._build import build_model as build_model
    from spaces._build import family_variant as family_variant
    from spaces._build import hyper_keys as hyper_keys
    from spaces._build import list_families as list_families
    from spaces._build import register_family as register_family
    from spaces._builtin import WIDTHS as WIDTHS
    from spaces._builtin import check_layouts as check_layouts
    from spaces._builtin import families_for as families_for
    from spaces._builtin import family_hyper_keys as family_hyper_keys
    from spaces._builtin import family_layouts as family_layouts
    from spaces._builtin import family_names as family_names
    from spaces._builtin import ssn_names as ssn_names
    from spaces._checks import check_int as check_int
    from spaces._checks import check_positive as check_positive
    from spaces._checks import is_int as is_int
    from spaces._checks import is_real as is_real
    from spaces._checks import options_of as options_of
    from spaces._dsl import Categorical as Categorical
    from spaces._dsl import Dimension as Dimension
    from spaces._dsl import Fixed as Fixed
    from spaces._dsl import Float as Float
    from spaces._dsl import Int as Int
    from spaces._dsl import Space as Space
    from spaces._dsl import describe_when as describe_when
    from spaces._dsl import same_value as same_value
    from spaces._errors import BudgetError as BudgetError
    from spaces._errors import ConfigError as ConfigError
    from spaces._errors import NpasError as NpasError
    from spaces._errors import UnknownNameError as UnknownNameError
    from spaces._errors import UnsupportedDependency as UnsupportedDependency
    from spaces._families._norm import BatchNorm2d as BatchNorm2d
    from spaces._families.scs import MaxAbsPool2d as MaxAbsPool2d
    from spaces._families.scs import SharpCosSim2d as SharpCosSim2d
    from spaces._hyper import Range as Range
    from spaces._hyper import check_hyper as check_hyper
    from spaces._registry import Registry as Registry
    from spaces._suggest import did_you_mean as did_you_mean


__all__ = [
    "BudgetError",
    "Categorical",
    "ConfigError",
    "Dimension",
    "Fixed",
    "Float",
    "Int",
    "MaxAbsPool2d",
    "NpasError",
    "Range",
    "Registry",
    "SharpCosSim2d",
    "Space",
    "UnknownNameError",
    "build_model",
    "families_for",
    "family_layouts",
    "family_variant",
    "hyper_keys",
    "list_families",
    "register_family",
    "ssn",
]


__getattr__ = lazy_exports(__name__)
