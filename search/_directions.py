"""The two directions of an objective, and the sign that turns each into minimisation (pymoo,
the non-dominated sorts and the rung ranking all minimise): declared once, here."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["DIRECTIONS", "minimisation_sign", "minimisation_signs"]

DIRECTIONS = ("minimize", "maximize")


def minimisation_sign(direction: str) -> float:
    """+1 for a minimised objective, -1 for a maximised one (values × sign are minimised)."""
    return -1.0 if direction == "maximize" else 1.0


def minimisation_signs(directions: Iterable[str]) -> list[float]:
    """:func:`minimisation_sign` of each direction, in order."""
    return [minimisation_sign(d) for d in directions]
