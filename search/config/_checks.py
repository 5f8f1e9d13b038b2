"""The small checks every config section is built from.

Each takes the value and its key path, and returns the value (normalised) or raises
:class:`~spaces._errors.ConfigError` naming the path, the value and what is allowed.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from spaces import ConfigError, did_you_mean, is_int

#: ``check(value, key_path)``: the value validated (normalised), or a ConfigError.
Check = Callable[[Any, str], Any]


def bad(path: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{path}: got {value!r}; allowed: {allowed}")


#: Room an error line leaves the config's file name and ``search launch: error: ``.
_ERROR_PREFIX = 38
#: The most characters of a list of allowed names an error line writes out.
_NAMES_SHOWN = 64


def unknown(path: str, value: Any, names: Iterable[str], listing: str = "") -> ConfigError:
    """A name that is not one of ``names``: the closest one right after the value given, then
    the names when they are few (:data:`_NAMES_SHOWN` characters); a registry's many names
    are left to the closest one, the command that lists them (``listing``), or as many as
    fit, so that the line stays near ``WIDTH`` columns."""
    from search._format import WIDTH, clip_list

    names = list(names)
    hint = did_you_mean(value, names)
    said = f"{path}: got {value!r}{hint}"
    if len(str(names)) <= _NAMES_SHOWN:
        return ConfigError(f"{said}; allowed: one of {names}")
    if hint:
        return ConfigError(said)
    if listing:
        return ConfigError(f"{said}; allowed: see {listing}")
    said += "; allowed: one of "
    room = max(WIDTH - _ERROR_PREFIX - len(said), 22)
    return ConfigError(said + clip_list([repr(n) for n in names], room))


def join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def known_keys(data: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    """Every key of ``data`` is one of ``allowed``; else one line of at most ``WIDTH`` columns
    (a typical file name) naming the key, its value, and the closest allowed key where one is
    close, else the allowed keys (as many as fit: the YAML reference lists them all)."""
    from search._format import WIDTH, clip, clip_list

    allowed = list(allowed)
    for key in data:
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            where = f"{path}: unknown key" if path else "unknown key"
            said = f"{where} {key!r} (value {clip(repr(data[key]), 20)}){hint}"
            room = WIDTH - _ERROR_PREFIX - len(said) - len("; allowed: ")
            if not hint or room >= 20:  # else the closest key says enough
                listed = clip_list([repr(a) for a in allowed], max(room, 22))
                said += f"; allowed: {listed}"
            raise ConfigError(said)


def mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise bad(path, value, "a mapping of keys to values")
    wrong = [k for k in value if not isinstance(k, str)]
    if wrong:
        raise bad(path, wrong[0], "string keys only")
    return dict(value)


def integer(value: Any, path: str, low: int, high: int | None = None) -> int:
    if not is_int(value, low, high):
        raise bad(path, value, int_range(low, high))
    return int(value)


def int_range(low: int, high: int | None = None) -> str:
    """What :func:`integer` allows, in words (its messages and the reference say it alike)."""
    return f"an int >= {low}" + ("" if high is None else f" and <= {high}")


def at_least(low: int) -> Check:
    """The check of an int ``>= low``, with what it allows attached for the reference."""
    return described(lambda v, p: integer(v, p, low), int_range(low))


def number_in(
    low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False
) -> Check:
    """The check of a finite number in a range, with what it allows attached."""

    def check(value: Any, path: str) -> float:
        return number(value, path, low=low, high=high, open_low=open_low, open_high=open_high)

    return described(check, interval(low, high, open_low, open_high))


def one_of(names: Callable[[], Iterable[str]], listing: str = "") -> Check:
    """The check of a name among ``names()`` (a registry's, read when checked); ``listing``
    the command that lists them all, named when an error cannot."""
    return described(lambda v, p: name(v, p, names(), listing), names)


def described(check: Check, allowed: str | Callable[[], Iterable[str]]) -> Check:
    """``check`` with ``allowed`` (text, or a callable giving names) as its ``allowed``."""
    check.allowed = allowed  # type: ignore[attr-defined]
    return check


def allowed_text(check: Check | None) -> str:
    """What a check allows, in words ("" when it says nothing)."""
    allowed = getattr(check, "allowed", "")
    return allowed if isinstance(allowed, str) else "one of " + ", ".join(allowed())


#: The largest seed: numpy's and scikit-learn's generators take seeds below 2**32.
MAX_SEED = 2**32 - 1


def seed(value: Any, path: str) -> int:
    """A seed every generator of a search accepts (torch, numpy, Python, scikit-learn)."""
    return integer(value, path, 0, MAX_SEED)


described(seed, int_range(0, MAX_SEED))


#: The smallest resource share Ray resolves (it keeps 4 decimals: less rounds to nothing).
RAY_RESOLUTION = 1e-4


def number(
    value: Any,
    path: str,
    *,
    low: float,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if open_low else value >= low) and (
            value < high if open_high else value <= high
        )
    if not ok:
        raise bad(path, value, interval(low, high, open_low, open_high))
    return float(value)


def interval(low: float, high: float, open_low: bool, open_high: bool) -> str:
    left, right = "(" if open_low else "[", ")" if open_high else "]"
    return f"a finite number in {left}{low}, {high}{right}"


def name(value: Any, path: str, names: Iterable[str], listing: str = "") -> str:
    names = list(names)
    if not isinstance(value, str) or value.lower() not in names:
        raise unknown(path, value, names, listing)
    return value.lower()


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise bad(path, value, boolean.allowed)  # type: ignore[attr-defined]
    return value


described(boolean, "true or false")


def optional(check: Any) -> Any:
    def run(value: Any, path: str) -> Any:
        return None if value is None else check(value, path)

    inner = allowed_text(check)
    return described(run, inner if inner.startswith("null") or not inner else f"null or {inner}")


def text(value: Any, path: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise bad(path, value, text.allowed)  # type: ignore[attr-defined]
    return value


described(text, "a non-empty string")


def val_size(value: Any, path: str) -> int | float:
    if isinstance(value, float) and 0 < value < 1:
        return value
    if is_int(value, 1):
        return int(value)
    raise bad(path, value, val_size.allowed)  # type: ignore[attr-defined]


described(val_size, "null (the dataset's default), a fraction in (0, 1) or a count >= 1")


def named_section(value: Any, path: str, keys: Iterable[str]) -> dict[str, Any] | None:
    """A section given as a name or as a mapping of ``keys`` (``algorithm: tpe`` or
    ``algorithm: {name: tpe, options: ...}``); None when absent."""
    if value is None:
        return None
    data = mapping({"name": value} if isinstance(value, str) else value, path)
    known_keys(data, keys, path)
    return data
