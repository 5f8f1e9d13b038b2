"""Selection specs: the one-string form of a knee selector that the CLI and the report take.

``knee`` is the default and means ``tradeoff``. The forms::

    knee | tradeoff
    pepr:<indicator>[+<indicator>...][:alpha=<a>][:normalize=minmax|max]
    pepr:<w>*<indicator>+<w>*<indicator>...        (weights, normalised to sum 1)
    best:<metric>
    trial:<number>
    asf:<w1>,<w2>,...                              (one weight per objective)
    pseudo:<w1>,<w2>,...                           (one weight per objective)
    epsilon:<indicator><=<x>  |  epsilon:<indicator>>=<x>
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pandas as pd

from search._knee import SELECTORS, Objectives, Selection
from spaces._errors import ConfigError

__all__ = ["FORMS", "parse_spec", "select"]

#: The allowed forms, as shown in error messages.
FORMS = (
    "knee",
    "tradeoff",
    "pepr:<indicator>[+<indicator>...][:alpha=<a>][:normalize=minmax|max]",
    "pepr:<w>*<indicator>+<w>*<indicator>",
    "best:<metric>",
    "trial:<number>",
    "asf:<w1>,<w2>,...",
    "pseudo:<w1>,<w2>,...",
    "epsilon:<indicator><=<x>",
    "epsilon:<indicator>>=<x>",
)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_EPSILON = re.compile(rf"^({_NAME})\s*(<=|>=)\s*(\S+)$")
_TERM = re.compile(rf"^(?:(\S+?)\*)?({_NAME})$")


def _bad(spec: str, why: str) -> ConfigError:
    return ConfigError(f"bad selection {spec!r}: {why}; allowed forms: {', '.join(FORMS)}")


def _number(spec: str, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(spec, f"{what} must be a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise _bad(spec, f"{what} must be finite, got {text!r}")
    return value


def _pepr(spec: str, body: str) -> dict[str, Any]:
    head, *opts = body.split(":")
    weights: dict[str, float] = {}
    for term in head.split("+"):
        match = _TERM.match(term.strip())
        if not match:
            raise _bad(spec, f"{term!r} is not an indicator name or <weight>*<name>")
        w, name = match.groups()
        weights[name] = _number(spec, w, "a weight") if w is not None else 1.0
    options: dict[str, Any] = {"indicators": weights}
    for opt in opts:
        key, sep, value = opt.partition("=")
        if key == "alpha" and sep:
            options["alpha"] = _number(spec, value, "alpha")
        elif key == "normalize" and value in ("minmax", "max"):
            options["normalize"] = value
        else:
            raise _bad(spec, f"unknown pepr option {opt!r} (alpha=<a>, normalize=minmax|max)")
    return options


def _weights(spec: str, body: str) -> dict[str, Any]:
    parts = [p for p in body.split(",")]
    if not body or any(not p.strip() for p in parts):
        raise _bad(spec, "weights must be a comma-separated list of numbers")
    return {"weights": [_number(spec, p, "a weight") for p in parts]}


def _epsilon(spec: str, body: str) -> dict[str, Any]:
    match = _EPSILON.match(body.strip())
    if not match:
        raise _bad(spec, "epsilon needs <indicator><=<x> or <indicator>>=<x>")
    name, op, limit = match.groups()
    return {"indicator": name, "op": op, "limit": _number(spec, limit, "the limit")}


def _trial(spec: str, body: str) -> dict[str, Any]:
    if not body.strip().isdigit():
        raise _bad(spec, f"trial number must be a non-negative integer, got {body!r}")
    return {"number": int(body)}


def _best(spec: str, body: str) -> dict[str, Any]:
    if not re.fullmatch(_NAME, body.strip()):
        raise _bad(spec, f"best needs a metric name, got {body!r}")
    return {"metric": body.strip()}


_PARSERS = {
    "pepr": _pepr,
    "asf": _weights,
    "pseudo": _weights,
    "epsilon": _epsilon,
    "trial": _trial,
    "best": _best,
}


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``(selector name, options)`` for a selection spec; ConfigError on a bad one."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "empty selection")
    text = spec.strip()
    if text in ("knee", "tradeoff"):
        return "tradeoff", {}
    kind, sep, body = text.partition(":")
    if not sep or kind not in _PARSERS:
        raise _bad(spec, f"unknown selector {kind!r}")
    return kind, _PARSERS[kind](spec, body)


def select(frame: pd.DataFrame, spec: str, objectives: Objectives) -> Selection | None:
    """Chooses a trial of a study frame by a selection spec (see the module docstring).

    Args:
        frame: A study frame (:func:`search._frame.trials_frame`).
        spec: The selection spec, e.g. ``"knee"``, ``"pepr:latency_ms:alpha=2"``.
        objectives: The objectives the front is taken on (``[(name, direction), ...]``).

    Returns:
        The :class:`Selection` (its ``selector`` is the spec as given, and ``knee`` says that
        it means ``tradeoff``), or None when no trial qualifies: the caller says so.
    """
    name, options = parse_spec(spec)
    chosen = SELECTORS.get(name).do(frame, objectives, **options)
    if chosen is None:
        return None
    reason = chosen.reason
    if spec.strip() == "knee":
        reason = f"knee (= the tradeoff selector, the default): {reason}"
    return replace(chosen, selector=spec.strip(), reason=reason)
