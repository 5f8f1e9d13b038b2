"""The names of the built-in families, known without importing their modules (which load
torch), so that a config's misspelt family is answered before torch loads.

``tests/spaces_tests/test_builtin_names.py`` keeps :data:`BUILTIN_FAMILIES` equal to what the
family modules register.
"""

from __future__ import annotations

import sys

__all__ = ["BUILTIN_FAMILIES", "family_names"]

BUILTIN_FAMILIES = (
    "convmixer", "convmixer-256-8", "convnet", "minimal", "mlp", "record-1936", "record-697",
    "record-997", "resnet", "resnet-110", "resnet-20", "resnet-32", "resnet-44", "resnet-56",
    "scs", "scs-cifar-47643", "scs-fashion-7659", "sepnet", "wrn", "wrn-16-4", "wrn-16-8",
    "wrn-28-10", "wrn-40-4",
)  # fmt: skip


def family_names() -> list[str]:
    """The registered families' names, sorted: the registry's once it is loaded, else the
    built-ins' (a user's family registers through :func:`spaces.register_family`, which loads
    the registry first, so none can be missing)."""
    if "spaces._build" in sys.modules:
        from spaces._build import FAMILIES

        return FAMILIES.names()
    return sorted(BUILTIN_FAMILIES)
