"""What is searched: the space DSL, architecture families and Shapeshifter Networks.

Names load lazily (PEP 562), so ``from spaces import NpasError`` or ``import spaces._errors``
costs no torch import: light tools (the CLI's parser, ``search.errors``) can use the errors.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

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
    "Range": "spaces._hyper",
    "MaxAbsPool2d": "spaces._families.scs",
    "SharpCosSim2d": "spaces._families.scs",
}
_MODULES = ("ssn",)

__all__ = sorted([*_EXPORTS, *_MODULES])


__getattr__ = lazy_getattr(__name__, _EXPORTS, _MODULES)
