"""What is searched: the space DSL, architecture families and Shapeshifter Networks.

Names load lazily (PEP 562), so ``from spaces import NpasError`` or ``import spaces._errors``
costs no torch import: light tools (the CLI's parser, ``search.errors``) can use the errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
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
    from spaces._lazy import lazy_getattr as lazy_getattr
    from spaces._registry import Registry as Registry
    from spaces._suggest import did_you_mean as did_you_mean

_EXPORTS = {
    "BudgetError": "spaces._errors",
    "ConfigError": "spaces._errors",
    "NpasError": "spaces._errors",
    "UnknownNameError": "spaces._errors",
    "Registry": "spaces._registry",
    "Categorical": "spaces._dsl",
    "Dimension": "spaces._dsl",
    "Fixed": "spaces._dsl",
    "Float": "spaces._dsl",
    "Int": "spaces._dsl",
    "Space": "spaces._dsl",
    "build_model": "spaces._build",
    "family_variant": "spaces._build",
    "hyper_keys": "spaces._build",
    "list_families": "spaces._build",
    "register_family": "spaces._build",
    "families_for": "spaces._builtin",
    "family_layouts": "spaces._builtin",
    "Range": "spaces._hyper",
    "MaxAbsPool2d": "spaces._families.scs",
    "SharpCosSim2d": "spaces._families.scs",
}
_MODULES = ("ssn",)

#: Names npas's other packages import from here: not the user API (not in ``__all__``),
#: free to change with them.
_SHARED = {
    "check_layouts": "spaces._builtin",
    "BatchNorm2d": "spaces._families._norm",
    "FAMILIES": "spaces._build",
    "WIDTHS": "spaces._builtin",
    "family_hyper_keys": "spaces._builtin",
    "family_names": "spaces._builtin",
    "UnsupportedDependency": "spaces._errors",
    "check_hyper": "spaces._hyper",
    "check_int": "spaces._checks",
    "check_positive": "spaces._checks",
    "describe_when": "spaces._dsl",
    "did_you_mean": "spaces._suggest",
    "is_int": "spaces._checks",
    "is_real": "spaces._checks",
    "lazy_getattr": "spaces._lazy",
    "options_of": "spaces._checks",
    "same_value": "spaces._dsl",
    "ssn_names": "spaces._builtin",
}

__all__ = sorted([*_EXPORTS, *_MODULES])


__getattr__ = lazy_getattr(__name__, _EXPORTS, _MODULES, shared=_SHARED)
