"""How a model is Shapeshifted (:class:`SSNOptions`), apart from the code that does it, so
that a search's config checks its ``ssn`` section without loading torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spaces._checks import check_int
from spaces._errors import ConfigError

__all__ = ["SSNOptions"]


@dataclass(frozen=True)
class SSNOptions:
    """How a model is Shapeshifted: the one declaration of :func:`shapeshift`'s options and
    their defaults (:func:`minimum_budget` and :class:`ShapeshiftNet` take the same).

    Attributes:
        stores: Number of parameter stores.
        mapping: ``"single"``, ``"random"``, ``"auto"`` (pretrain one store, then k-means on
            the layers' coefficients), a registered name, or a ``{layer/module name or glob:
            store}`` dict (``"manual"``).
        generator: ``"wavg"``, ``"emb"``, ``"avg"``, ``"rr"`` or a registered name.
        upsampler: ``"mask"``, ``"repeat"``, ``"inter"`` or a registered name.
        templates: Most templates per layer ``P``; raised automatically (see
            ``net.template_limits``) when a large store would otherwise leave parameters unused.
        seed: Seeds every initial value; the same seed gives the same module.
        generator_options: Extra generator options, e.g. ``{"dim": 16}`` for ``"emb"``.
        upsampler_options: Extra upsampler options, e.g. ``{"window": 4}`` for ``"mask"``.
    """

    stores: int = 1
    mapping: str | Mapping[str, int] = "single"
    generator: str = "wavg"
    upsampler: str = "mask"
    templates: int = 4
    seed: int = 0
    generator_options: Mapping[str, Any] | None = None
    upsampler_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        check_int("stores", self.stores)
        check_int("templates", self.templates)
        check_int("seed", self.seed, low=0)
        if not isinstance(self.mapping, str | Mapping):
            raise ConfigError(f"mapping={self.mapping!r}; expected a mapping name or a dict")

    @property
    def gen_options(self) -> dict[str, Any]:
        return dict(self.generator_options or {})

    @property
    def ups_options(self) -> dict[str, Any]:
        return dict(self.upsampler_options or {})
