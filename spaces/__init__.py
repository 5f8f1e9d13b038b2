"""What is searched: the space DSL, architecture families and Shapeshifter Networks.

Names load lazily (PEP 562), so ``from spaces import NpasError`` or ``import spaces._errors``
costs no torch import: light tools (the CLI's parser, ``search.errors``) can use the errors.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "MaxAbsPool2d": "spaces._families.scs",
    "SharpCosSim2d": "spaces._families.scs",
}
_MODULES = ("ssn",)

__all__ = sorted([*_EXPORTS, *_MODULES])


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"spaces.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'spaces' has no attribute {name!r}")
