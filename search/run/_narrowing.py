"""A proposal the screen refused, narrowed until it passes: the same point with its family's
searched widths (``spaces.WIDTHS``: channels, units) scaled down together, each rounded onto
its dimension's grid and kept within its bounds: the widest such narrowing the screen lets
train, found by bisection (a few meta-device counts, not one per step). A search under a
tight ``params`` limit then trains a nearby point instead of only learning that this one was
too big (``search.config.repair``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spaces import WIDTHS, Int, Space

__all__ = ["NARROWING", "narrowed"]

#: Each step scales the widths by this factor (of the proposal's own widths, compounded).
NARROWING = 0.9


def narrowed(space: Space, point: dict[str, Any], family: str,
             fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:  # fmt: skip
    """The widest narrowing of ``point`` that ``fits``, or None: when the space searches no
    width of ``family``, or even its narrowest widths do not fit.

    Args:
        space: The search space (its integer width dimensions are narrowed).
        point: A proposal of it.
        family: The proposal's architecture family.
        fits: Whether a point would train (the searcher's screen passes it).
    """
    dims: dict[str, Int] = {}
    for name in (f"{family}.{key}" for key in WIDTHS.get(family, ())):
        dim = space[name] if name in point and name in space else None
        if isinstance(dim, Int):
            dims[name] = dim
    if not dims:
        return None
    ladder = _ladder(point, dims)
    if not ladder or not fits(ladder[-1]):
        return None
    low, high = 0, len(ladder) - 1  # ladder[high] fits; the widest that does is at or before it
    while low < high:  # narrower fits wherever wider does (params grow with widths)
        middle = (low + high) // 2
        if fits(ladder[middle]):
            high = middle
        else:
            low = middle + 1
    return ladder[high]


def _ladder(point: dict[str, Any], dims: dict[str, Int]) -> list[dict[str, Any]]:
    """The narrowings of ``point``, widest first: its widths times NARROWING, NARROWING², …
    on their grids, each distinct, down to every width at its lower bound."""
    ladder: list[dict[str, Any]] = []
    scale, last = 1.0, point
    while any(last[n] > dim.low for n, dim in dims.items()):
        scale *= NARROWING
        candidate = {**point, **{n: _on_grid(dim, point[n] * scale) for n, dim in dims.items()}}
        if candidate != last:
            ladder.append(candidate)
            last = candidate
    return ladder


def _on_grid(dim: Int, value: float) -> int:
    """``value`` rounded onto an integer dimension's values (``low + i * step``), within it."""
    steps = round((value - dim.low) / dim.step)
    return int(min(max(dim.low + steps * dim.step, dim.low), dim.high))
