"""The names of the built-in families and their hyper-parameters, and of Shapeshifting's
generators, upsamplers and mappings, known without importing their modules (which load torch),
so that a config's misspelt name is answered before torch loads.

``tests/test_builtin_names.py`` keeps :data:`BUILTIN_FAMILIES`, :data:`BUILTIN_HYPER` and
:data:`BUILTIN_SSN` equal to what the modules register.
"""

from __future__ import annotations

import sys

__all__ = [
    "BUILTIN_FAMILIES",
    "BUILTIN_HYPER",
    "BUILTIN_SSN",
    "WIDTHS",
    "family_hyper_keys",
    "family_names",
    "ssn_names",
]

BUILTIN_FAMILIES = (
    "convmixer", "convmixer-256-8", "convnet", "minimal", "mlp", "record-1936", "record-697",
    "record-997", "resnet", "resnet-110", "resnet-20", "resnet-32", "resnet-44", "resnet-56",
    "scs", "scs-cifar-47643", "scs-fashion-7659", "sepnet", "wrn", "wrn-16-4", "wrn-16-8",
    "wrn-28-10", "wrn-40-4",
)  # fmt: skip

#: The hyper-parameters of each built-in family that are widths (channels, units, their
#: per-stage lists): what a narrowing or widening of a network scales, and nothing else.
WIDTHS: dict[str, tuple[str, ...]] = {
    "convmixer": ("dim",), "convnet": ("width",), "minimal": ("stem", "width", "hidden"),
    "mlp": ("width", "hidden"), "resnet": ("width",), "scs": ("widths",),
    "sepnet": ("stem", "width", "widths"), "wrn": ("widen",),
}  # fmt: skip

#: Each built-in family's hyper-parameters, in its builder's order (the test named above keeps
#: them equal to :func:`spaces.hyper_keys` of the registered family).
BUILTIN_HYPER: dict[str, tuple[str, ...]] = {
    "convmixer": ("dim", "depth", "kernel", "patch"),
    "convmixer-256-8": (),
    "convnet": (
        "depth",
        "width",
        "kernel",
        "pooling",
        "bn",
        "growth",
        "activation",
        "separable",
        "negative_slope",
        "head",
    ),
    "minimal": ("stem", "width", "reuse", "hidden", "activation", "negative_slope", "dropout"),
    "mlp": ("hidden", "depth", "width", "activation", "dropout"),
    "record-1936": (),
    "record-697": (),
    "record-997": (),
    "resnet": ("depth", "shortcut", "width"),
    "resnet-110": ("shortcut", "width"),
    "resnet-20": ("shortcut", "width"),
    "resnet-32": ("shortcut", "width"),
    "resnet-44": ("shortcut", "width"),
    "resnet-56": ("shortcut", "width"),
    "scs": ("widths", "kernel", "paddings", "depthwise", "head_bias"),
    "scs-cifar-47643": ("paddings", "depthwise", "head_bias"),
    "scs-fashion-7659": ("paddings", "depthwise", "head_bias"),
    "sepnet": (
        "stem",
        "stem_kernel",
        "stem_pool",
        "stages",
        "blocks",
        "width",
        "growth",
        "kernel",
        "separable",
        "expansion",
        "reuse",
        "residual",
        "norm",
        "activation",
        "dropout",
        "padding",
        "dropout_every",
        "negative_slope",
        "dropout_at",
        "head",
        "widths",
        "stem_padding",
    ),
    "wrn": ("depth", "widen", "dropout"),
    "wrn-16-4": ("dropout",),
    "wrn-16-8": ("dropout",),
    "wrn-28-10": ("dropout",),
    "wrn-40-4": ("dropout",),
}

#: The names in each of Shapeshifting's registries (``spaces.ssn.GENERATORS``...), sorted.
BUILTIN_SSN: dict[str, tuple[str, ...]] = {
    "GENERATORS": ("avg", "emb", "rr", "wavg"),
    "MAPPINGS": ("auto", "manual", "random", "single"),
    "UPSAMPLERS": ("inter", "mask", "repeat"),
}


def family_names() -> list[str]:
    """The registered families' names, sorted: the registry's once it is loaded, else the
    built-ins' (a user's family registers through :func:`spaces.register_family`, which loads
    the registry first, so none can be missing)."""
    if "spaces._build" in sys.modules:
        from spaces._build import FAMILIES

        return FAMILIES.names()
    return sorted(BUILTIN_FAMILIES)


def family_hyper_keys(family: str) -> tuple[str, ...]:
    """The hyper-parameter names of a registered family: the registry's once it is loaded (a
    user's family among them), else the built-ins' table, so that a misspelt hyper-parameter
    of a built-in family is answered before torch loads."""
    if "spaces._build" in sys.modules or family not in BUILTIN_HYPER:
        from spaces._build import FAMILIES, hyper_keys

        return hyper_keys(FAMILIES.get(family))
    return BUILTIN_HYPER[family]


def ssn_names(registry: str) -> list[str]:
    """The names in one of Shapeshifting's registries (``GENERATORS``, ``UPSAMPLERS``,
    ``MAPPINGS``): the registry's once its module is loaded (a user's registrations among
    them), else the built-ins'."""
    module = _SSN_MODULES[registry]
    if module in sys.modules:
        return list(getattr(sys.modules[module], registry).names())
    return list(BUILTIN_SSN[registry])


#: Where each of Shapeshifting's registries lives (importing it loads torch).
_SSN_MODULES = {
    "GENERATORS": "spaces.ssn._generators",
    "MAPPINGS": "spaces.ssn._mappings",
    "UPSAMPLERS": "spaces.ssn._upsamplers",
}
