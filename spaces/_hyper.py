"""What a family's hyper-parameters may be, read from the one place that declares them: the
family's signature. An annotated keyword argument (``width: int = 32``) is checked by its
type; ``Annotated[int, Range(0, 8)]`` narrows the range. Without a range an ``int`` is a count
or a size (1 to 2**20) and a ``float`` a finite number from 0 to 10**6; a sequence's range
applies to its elements; ``X | None`` also takes None; an unannotated argument is not checked.
A config that searches or fixes a value outside this is refused before any trial runs.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import math
import numbers
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from spaces._checks import is_int
from spaces._errors import ConfigError

__all__ = ["Range", "check_hyper", "checked"]


@dataclass(frozen=True)
class Range:
    """The closed interval a hyper-parameter (or each element of it) lies in."""

    low: float
    high: float


F = TypeVar("F", bound=Callable[..., Any])
_INT = Range(1, 2**20)
_FLOAT = Range(0.0, 1e6)
_SEQUENCES = (collections.abc.Sequence, tuple, list)


#: Each builder's resolved hints: a config of 140,000 values of one hyper-parameter resolved
#: them 140,000 times (over a minute of `search check`). Only resolved hints are kept.
_RESOLVED: dict[Any, dict[str, Any]] = {}


def _hints(builder: Any) -> dict[str, Any]:
    base = getattr(builder, "hyper_base", builder)  # a variant checks as its family
    target = base.__init__ if inspect.isclass(base) else base
    if target in _RESOLVED:
        return _RESOLVED[target]
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:  # an annotation that does not resolve: nothing is declared
        return {}
    _RESOLVED[target] = hints
    return hints


def check_hyper(family: str, builder: Any, key: str, value: Any, *, element: bool = False) -> None:
    """Refuses ``value`` for hyper-parameter ``key`` of ``family`` (an element of it with
    ``element``) when the family's signature declares otherwise.

    Raises:
        ConfigError: names the family, the key, the value and what is allowed.
    """
    hint = _hints(builder).get(key)
    if hint is not None:
        _check(hint, value, f"{family}.{key}", None, element)


def checked(init: F) -> F:
    """Checks a family's keyword arguments against their annotations before ``init`` runs, so
    a direct call refuses what a config is refused (:func:`check_hyper`): the signature is the
    one place a hyper-parameter's type and range are declared."""
    signature = inspect.signature(init)
    names = [n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY]

    @functools.wraps(init)
    def run(*args: Any, **kwargs: Any) -> Any:
        hints = _hints(init)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for name in names:
            if name in hints:
                _check(hints[name], bound.arguments[name], name, None, False)
        return init(*args, **kwargs)

    return cast(F, run)  # functools.wraps keeps init's signature


def _check(hint: Any, value: Any, where: str, declared: Range | None, element: bool) -> None:
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(hint)
        ranges = [m for m in meta if isinstance(m, Range)]
        _check(base, value, where, ranges[0] if ranges else declared, element)
        return
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return
        if len(options) == 1:
            _check(options[0], value, where, declared, element)
        return  # a union of several types: not checked
    if origin in _SEQUENCES:
        args = typing.get_args(hint)
        if element:
            if args:
                _check(args[0], value, where, declared, False)
            return
        if isinstance(value, str) or not isinstance(value, collections.abc.Sequence):
            raise ConfigError(f"{where}: got {value!r}; allowed: a list")
        for i, item in enumerate(value):
            if args:
                _check(args[0], item, f"{where}[{i}]", declared, False)
        return
    _scalar(hint, value, where, declared)


def _scalar(hint: Any, value: Any, where: str, declared: Range | None) -> None:
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: got {value!r}; allowed: true or false")
    elif hint is int:
        span = declared or _INT
        if not is_int(value, span.low, span.high):
            raise ConfigError(
                f"{where}: got {value!r}; allowed: an int in [{_n(span.low)}, {_n(span.high)}]"
            )
    elif hint is float:
        span = declared or _FLOAT
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or not span.low <= value <= span.high:
            raise ConfigError(
                f"{where}: got {value!r}; allowed: a number in [{_n(span.low)}, {_n(span.high)}]"
            )
    elif hint is str and not isinstance(value, str):
        raise ConfigError(f"{where}: got {value!r}; allowed: a string")


def _n(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"
