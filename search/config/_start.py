"""The ``start`` key: points of the space a search trains first, before its algorithm proposes.

A user who knows good designs (a published network, last month's winner) writes them here and
the search starts from them instead of rediscovering them. A point names searched dimensions
as ``space`` does (nested or dotted); a dimension left out is proposed by the algorithm. Each
point is checked against the space here, so that a typo fails the config, not a trial an hour
in: every name is a searched dimension, every value one it allows, and a conditional
dimension's condition is decided by the point itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from search.config import _checks as checks
from spaces import ConfigError, Fixed, Space, did_you_mean, same_value

__all__ = ["complete", "start_points"]


def start_points(
    data: Any,
    space: Space,
    fixed: Mapping[str, Any],
    flatten: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """``start`` validated: a list of points, each a mapping of searched dimensions to values.

    Args:
        data: The key's value (None or absent: no points).
        space: The search's space.
        fixed: The config's fixed values (named in an error, never in a point).
        flatten: Turns a nested point (``{sepnet: {stem: 8}}``) into dotted names.

    Raises:
        ConfigError: naming the point (``start[i]``), the key and what is allowed.
    """
    if data is None:
        return []
    if not isinstance(data, list):
        raise checks.bad("start", data, "a list of points (mappings of dimension names to values)")
    searched = [n for n in space.names if not isinstance(space[n], Fixed)]
    constant = {n: d.value for n in space.names if isinstance(d := space[n], Fixed)}
    points: list[dict[str, Any]] = []
    for i, entry in enumerate(data):
        where = f"start[{i}]"
        point = flatten(checks.mapping(entry, where))
        if not point:
            raise checks.bad(where, entry, "a point naming at least one searched dimension")
        for name, value in point.items():
            if name in fixed:
                raise ConfigError(
                    f"{where}.{name}: fixed at {fixed[name]!r} (fixed.{name}); a start point "
                    "names searched dimensions only"
                )
            if name not in searched:
                raise ConfigError(
                    f"{where}.{name}: not a searched dimension{did_you_mean(name, searched)}; "
                    f"allowed: {searched}"
                )
            _check_value(space, constant | point, name, value, f"{where}.{name}")
        if point in points:
            raise ConfigError(f"{where}: the same point as start[{points.index(point)}]")
        points.append(point)
    return points


def _check_value(
    space: Space, known: Mapping[str, Any], name: str, value: Any, where: str
) -> None:
    """``value`` is one of ``name``'s values and its condition holds in ``known`` (the point
    and the space's fixed values)."""
    dim = space[name]
    if not dim.check(value):
        raise checks.bad(where, value, dim.allowed())
    for parent, values in dim.when:
        if parent not in known:
            raise ConfigError(
                f"{where}: {name!r} applies only when {parent} is one of {list(values)}: "
                f"give {parent} in the point too"
            )
        given = known[parent]
        if not space.is_active(parent, known) or not any(same_value(given, v) for v in values):
            raise ConfigError(
                f"{where}: {name!r} applies only when {parent} is one of {list(values)}, and "
                f"this point has {parent} = {given!r}"
            )


def complete(space: Space, point: Mapping[str, Any], filler: Mapping[str, Any]) -> dict[str, Any]:
    """The whole config of a point: its values, and ``filler``'s (a sampled config) or each
    dimension's default for the active dimensions it leaves out; used to check that a start
    point builds a trial before anything runs."""
    config: dict[str, Any] = {}
    for name in space.names:
        if not space.is_active(name, config):
            continue
        dim = space[name]
        if isinstance(dim, Fixed):
            config[name] = dim.value
        else:
            config[name] = point.get(name, filler.get(name, dim.default()))
    return config
