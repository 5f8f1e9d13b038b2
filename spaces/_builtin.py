"""The names of the built-in families, their hyper-parameters and the layouts they take, and of
Shapeshifting's generators, upsamplers and mappings, known without importing their modules
(which load torch), so that a config's misspelt name is answered before torch loads.

``tests/test_builtin_names.py`` keeps :data:`BUILTIN_FAMILIES`, :data:`BUILTIN_HYPER` and
:data:`BUILTIN_SSN` equal to what the modules register.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from spaces._errors import ConfigError
from spaces._suggest import did_you_mean

__all__ = [
    "BUILTIN_FAMILIES",
    "BUILTIN_HYPER",
    "BUILTIN_LAYOUTS",
    "BUILTIN_SSN",
    "LAYOUTS",
    "WIDTHS",
    "check_layouts",
    "families_for",
    "family_hyper_keys",
    "family_layouts",
    "family_names",
    "ssn_names",
]

BUILTIN_FAMILIES = (
    "conv1d", "convmixer", "convmixer-256-8", "convnet", "minimal", "mlp", "record-1936",
    "record-697", "record-997", "resnet", "resnet-110", "resnet-20", "resnet-32", "resnet-44",
    "resnet-56", "resnet1d", "scs", "scs-cifar-47643", "scs-fashion-7659", "sepconv1d", "sepnet",
    "wrn", "wrn-16-4", "wrn-16-8", "wrn-28-10", "wrn-40-4",
)  # fmt: skip

#: The layouts of one sample a family may take: an image C×H×W, a signal C×L, a table row F
#: (the dataset layouts of ``objectives``, which a test keeps the same).
LAYOUTS = ("image", "signal", "table")

#: The one place that says which layouts each built-in family takes (``register_family`` reads
#: it for a built-in name; a user's family declares its own there): ``mlp`` flattens any
#: sample, the 1-D families take signals, every other family images.
BUILTIN_LAYOUTS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(BUILTIN_FAMILIES, ("image",)),
    "mlp": LAYOUTS,
    "conv1d": ("signal",),
    "resnet1d": ("signal",),
    "sepconv1d": ("signal",),
}

#: The hyper-parameters of each built-in family that are widths (channels, units, their
#: per-stage lists): what a narrowing or widening of a network scales, and nothing else.
WIDTHS: dict[str, tuple[str, ...]] = {
    "conv1d": ("width",), "convmixer": ("dim",), "convnet": ("width",),
    "minimal": ("stem", "width", "hidden"), "mlp": ("width", "hidden"), "resnet": ("width",),
    "resnet1d": ("width",), "scs": ("widths",), "sepconv1d": ("width",),
    "sepnet": ("stem", "width", "widths"), "wrn": ("widen",),
}  # fmt: skip

#: Each built-in family's hyper-parameters, in its builder's order (the test named above keeps
#: them equal to :func:`spaces.hyper_keys` of the registered family).
BUILTIN_HYPER: dict[str, tuple[str, ...]] = {
    "conv1d": ("depth", "width", "growth", "kernel", "pooling", "bn", "activation",
        "negative_slope", "separable", "dropout", "dropout_at", "head", "stem_stride"),
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
    "resnet1d": ("depth", "blocks", "width", "growth", "kernel", "pooling", "bn", "activation",
        "negative_slope", "dropout", "dropout_at", "head", "stem_stride"),
    "scs": ("widths", "kernel", "paddings", "depthwise", "head_bias"),
    "scs-cifar-47643": ("paddings", "depthwise", "head_bias"),
    "scs-fashion-7659": ("paddings", "depthwise", "head_bias"),
    "sepconv1d": ("depth", "width", "growth", "kernel", "pooling", "bn", "activation",
        "negative_slope", "dropout", "dropout_at", "head", "stem_stride"),
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


def check_layouts(layouts: str | Iterable[str], where: str) -> tuple[str, ...]:
    """``layouts`` as a tuple of known layout names (a single name is one layout).

    Raises:
        ConfigError: empty, or a name that is not a layout (the message lists them).
    """
    named = (layouts,) if isinstance(layouts, str) else tuple(layouts)
    for name in named:
        if name not in LAYOUTS:
            raise ConfigError(
                f"{where}: got {name!r}{did_you_mean(str(name), LAYOUTS)}; allowed: "
                f"{', '.join(LAYOUTS)}"
            )
    if not named:
        raise ConfigError(f"{where}: got none; allowed: one or more of {', '.join(LAYOUTS)}")
    return tuple(dict.fromkeys(named))


def families_for(layout: str) -> list[str]:
    """The built-in families that take samples of ``layout`` (``image``, ``signal`` or
    ``table``), sorted, fixed variants included (``resnet-20``...): what a space for such data
    can draw from. Loads no torch. A user's family is not among them, whatever it declares
    (:func:`family_layouts` reads any registered family's).

    Raises:
        ConfigError: ``layout`` is not one of the three.
    """
    (layout,) = check_layouts(layout, "layout")
    return sorted(name for name, takes in BUILTIN_LAYOUTS.items() if layout in takes)


def family_layouts(family: str) -> tuple[str, ...] | None:
    """The layouts a registered family takes, as it was registered with them (a built-in's from
    :data:`BUILTIN_LAYOUTS`, without torch until the registry is loaded); None for a user's
    family that declared none (what it takes is what its code builds)."""
    if "spaces._build" in sys.modules or family not in BUILTIN_LAYOUTS:
        from spaces._build import declared_layouts

        return declared_layouts(family)
    return BUILTIN_LAYOUTS[family]


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
