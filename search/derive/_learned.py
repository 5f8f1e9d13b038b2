"""Learned start points: configurations that did well on other datasets of a layout, kept as
points of the derived space's unit box, so that each maps into any dataset's own ranges.

auto-sklearn 2.0 and AutoGluon's presets start a search from configurations known to do well
elsewhere. Here they are a few points chosen greedily for the best mean score over build sets
that no benchmark protocol or development round uses (``benchmarks/portfolio.py``, which
writes :data:`FILE`), and a search of a layout that has them trains them first. Whether a
point's standing carries over was measured before they were built: a leave-one-set-out
portfolio of 4 ranked at the 0.875-1.000 percentile of the held-out set's points, where 4
random points rank at 0.80 in expectation (``benchmarks/results/portfolio.md``).

A unit point names each searched dimension without its family (``width``, not
``conv1d.width``) and gives it a fraction of its range: of the log of the range where the
range is logarithmic, of the choices for a categorical.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from spaces import Categorical, Fixed, Float, Int, Space

__all__ = ["FILE", "generic", "in_space", "learned_points", "space_families"]

#: The learned points of each layout (``{layout: {"points": [...], "built": "..."}}``).
FILE = Path(__file__).with_name("learned_starts.yaml")


@functools.cache
def _stored() -> dict[str, Any]:
    return yaml.safe_load(FILE.read_text()) if FILE.exists() else {}


def learned_points(layout: str, space: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The layout's learned points in ``space`` (the derived space, as plain data), each once;
    a point of a family the space lacks is left out."""
    built = Space.from_dict(space)
    points: list[dict[str, Any]] = []
    for unit in (_stored().get(layout) or {}).get("points", []):
        point = in_space(built, unit)
        if point is not None and point not in points:
            points.append(point)
    return points


def generic(name: str, families: list[str]) -> str:
    """A dimension's name without its family (``conv1d.width`` -> ``width``)."""
    head, _, rest = name.partition(".")
    return rest if head in families else name


def in_space(space: Space, unit: Mapping[str, Any]) -> dict[str, Any] | None:
    """The unit point mapped into ``space``'s ranges: its searched dimensions only (None: its
    family is not in the space; a dimension the point does not name: the middle of its
    range)."""
    families = space_families(space)
    if unit.get("family") not in families:
        return None
    point: dict[str, Any] = {"family": unit["family"]} if "family" in space else {}
    for name in space.names:
        dim = space[name]
        if name == "family" or isinstance(dim, Fixed) or not space.is_active(name, point):
            continue
        if name.split(".")[0] in families and name.split(".")[0] != unit["family"]:
            continue  # another family's (a derived space before its conditions are added)
        u = min(max(float(unit.get(generic(name, families), 0.5)), 0.0), 1.0)
        if isinstance(dim, Categorical):
            point[name] = dim.choices[min(int(u * len(dim.choices)), len(dim.choices) - 1)]
        elif isinstance(dim, Int | Float):
            point[name] = _along(dim, u)
    return point


def space_families(space: Space) -> list[str]:
    """The families ``space`` searches: its ``family`` choices, or the one its dimensions
    are named after."""
    if "family" in space:
        family = space["family"]
        if isinstance(family, Categorical):
            return [str(c) for c in family.choices]
        if isinstance(family, Fixed):
            return [str(family.value)]
    return sorted({n.split(".")[0] for n in space.names if "." in n} - {"train", "ssn"})


def _along(dim: Int | Float, u: float) -> int | float:
    """The value a fraction ``u`` of the way along ``dim``'s range (its log where log): a
    float to 3 significant digits, an int snapped to its grid."""
    low, high = (math.log(dim.low), math.log(dim.high)) if dim.log else (dim.low, dim.high)
    value = low + u * (high - low)
    value = math.exp(value) if dim.log else value
    if isinstance(dim, Float):  # to 3 significant digits, within the range
        return min(dim.high, max(dim.low, float(f"{value:.3g}")))
    steps = round((value - dim.low) / dim.step)
    return min(dim.top, max(dim.low, dim.low + steps * dim.step))
