"""Lazy package attributes (PEP 562): a package names what it exports and where it lives, and
loads a module only when one of its names is first used, as Optuna loads its heavy parts."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_getattr(
    package: str,
    exports: Mapping[str, str],
    modules: Sequence[str] = (),
    *,
    shared: Mapping[str, str] | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps a name to the module that
    holds it; ``modules`` are subpackages or modules loaded by name; ``shared`` maps, like
    ``exports``, the names npas's other packages import from ``package`` (they import a
    package's names from the package, never from its private modules), outside its user API."""
    exports = {**exports, **(shared or {})}

    def __getattr__(name: str) -> Any:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
