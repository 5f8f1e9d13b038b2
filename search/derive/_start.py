"""The derived start points: for each searched family, the plain net a careful user would try
first under the limit, trained before the optimiser proposes anything.

A short search (a few dozen trials) spends its first ten on TPE's random start-up, and a random
point of a space that reaches 4× the limit is mostly a Shapeshifted or narrow net at an
arbitrary rate. AutoGluon and auto-sklearn 2 start from configurations known to do well
before searching; here that is one rule, not a list: each family at its deepest depth whose
plain model at the limit is still twice its narrowest width, at the widest such width (no
sharing: within its budget), every lever at its first choice, the middle of each log range for
the learning rate and weight decay, and the data's augmentation on. No dataset's figures chose
it, and the optimiser learns from these trials as from its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from search.derive._families import FamilySpec

__all__ = ["start_points"]


def start_points(specs: Sequence[FamilySpec], space: Mapping[str, Any], cap: int,
                 in_shape: tuple[int, ...], classes: int
                 ) -> list[tuple[FamilySpec, dict[str, Any]]]:  # fmt: skip
    """One point per family of ``specs`` (each searched in ``space``, the derived space before
    the user's keys), its plain model within ``cap`` parameters; a family with no such model
    has none."""
    points: list[tuple[FamilySpec, dict[str, Any]]] = []
    for spec in specs:
        depth_key, width_key = f"{spec.name}.{spec.depth[0]}", f"{spec.name}.{spec.width}"
        chosen = _depth_and_width(spec, space[depth_key], space[width_key], cap, in_shape, classes)
        if chosen is None:
            continue
        point: dict[str, Any] = {depth_key: chosen[0], width_key: chosen[1]}
        if "choices" in space.get("family", {}):
            point = {"family": spec.name, **point}
        for name, choices in spec.searched.items():
            point[f"{spec.name}.{name}"] = choices[0]
        point[f"{spec.name}.train.lr"] = _middle(space[f"{spec.name}.train.lr"])
        if "train.weight_decay" in space:
            point["train.weight_decay"] = _middle(space["train.weight_decay"])
        if "train.augment" in space:
            point["train.augment"] = True
        if "budget" in space:
            point["budget"] = space["budget"]["high"]
        points.append((spec, point))
    return points


def _depth_and_width(spec: FamilySpec, depths: Mapping[str, int], widths: Mapping[str, int],
                     cap: int, in_shape: tuple[int, ...], classes: int
                     ) -> tuple[int, int] | None:  # fmt: skip
    """The deepest searched depth whose plain model within ``cap`` is at least twice the
    family's narrowest (the shallowest: at its narrowest), at the widest such width within the
    searched widths."""
    low, high, step = depths["low"], depths["high"], depths.get("step", 1)
    for depth in range(high, low - 1, -step):
        width = widths["low"] - 1
        while width < widths["high"] and spec.params(depth, width + 1, in_shape, classes) <= cap:
            width += 1
        if width >= max(widths["low"], 2 * spec.min_width if depth > low else spec.min_width):
            return depth, width
    return None


def _middle(dim: Mapping[str, float]) -> float:
    """The geometric middle of a log range, to 2 significant digits."""
    value = math.sqrt(dim["low"] * dim["high"])
    return float(f"{value:.2g}")
