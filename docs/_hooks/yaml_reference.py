"""The YAML reference page, generated from the config's own declaration at every docs build.

Every key's type, default, allowed values and help come from ``search.config.reference()``,
which reads the one declaration of each key (``search/config/_keys.py``), the same the loader
checks a config against; a declared dataset's keys and a space dimension's fields come from
their own declarations. Nothing is typed twice, so the page cannot drift from what
``search launch`` accepts. :func:`config_keys` is the one function that reads them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    """One config key as the reference shows it."""

    path: str
    type: str
    default: str
    allowed: str
    description: str


_NO_DEFAULT = "required"


def _plain(text: str) -> str:
    """Sphinx roles as code: ``:func:`x``` → ```x```."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _shown(value: Any) -> str:
    if isinstance(value, str) and value == _NO_DEFAULT:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, tuple) and value and hasattr(value[0], "_fields"):
        value = [list(v) for v in value]  # objectives as [name, direction]
    if isinstance(value, tuple):
        value = list(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return _NO_DEFAULT


def _annotation(owner: Any, name: str) -> str:
    hints = getattr(owner, "__annotations__", {})
    if inspect.isfunction(owner):
        hints = {k: p.annotation for k, p in inspect.signature(owner).parameters.items()}
    hint = hints.get(name, "")
    if hint is inspect.Parameter.empty:
        return ""
    return hint if isinstance(hint, str) else str(hint).replace("typing.", "")


def config_keys() -> Iterator[Key]:
    """Every key of a search config, its type, default, allowed values and meaning, read from
    the config's one declaration (``search.config.reference()``), then a declared dataset's
    keys and a space dimension's fields."""
    from search import config

    for row in config.reference():
        yield Key(row.key, str(row.type), _shown(row.default), row.allowed, _plain(row.help))
    yield from _data_and_space_keys()


def _data_and_space_keys() -> Iterator[Key]:
    """A declared dataset's keys and a space dimension's fields, from their declarations."""
    from objectives._custom import _OPTIONS as DECLARED_OPTIONS
    from objectives._custom import DECLARED_KINDS
    from spaces._dsl import _KINDS, FIELD_HELP

    for kind in DECLARED_KINDS:
        yield Key(
            f"dataset.{kind}",
            "str" if kind != "npy" else "list[str]",
            "",
            DECLARED_KINDS.get(kind).about,
            f"a dataset declared in the config: exactly one of {', '.join(DECLARED_KINDS)}",
        )
    for option, (kind, default, about) in DECLARED_OPTIONS.items():
        yield Key(f"dataset.{option}", kind, default, "in a declared dataset", about)
    yield Key(
        "space.<dimension>.type",
        "str",
        "from the fields given",
        str(list(_KINDS)),
        "the dimension's kind; without it `choices` makes a categorical, `value` a fixed "
        "value, integer bounds an int, other bounds a float. A bare list is a choice and "
        "a scalar a fixed value",
    )
    kinds: dict[str, list[str]] = {}
    for kind, cls in _KINDS.items():
        for f in dataclasses.fields(cls):
            kinds.setdefault(f.name, []).append(kind)
    for name, where in kinds.items():
        fields_of = [
            next(f for f in dataclasses.fields(_KINDS[k]) if f.name == name) for k in where
        ]
        types = sorted({_annotation(_KINDS[k], name) for k in where} - {""})
        yield Key(
            f"space.<dimension>.{name}",
            " or ".join(types),
            _shown(_field_default(fields_of[0])),
            f"in a {', '.join(where)} dimension",
            FIELD_HELP[name],
        )


def _cell(text: str) -> str:
    """Text for a table cell: outside code spans, what Markdown would read as markup escaped
    (a pipe, an HTML tag such as ``<class>``, an emphasis star, and braces, which the
    ``attr_list`` extension took for attributes: ``a name or {name, options}`` lost its end);
    code spans as they are."""
    parts = text.replace("\n", " ").split("`")
    escapes = (("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*"), ("{", "&#123;"),
               ("}", "&#125;"))  # fmt: skip
    for i in range(0, len(parts), 2):
        for char, escaped in escapes:
            parts[i] = parts[i].replace(char, escaped)
    return "`".join(parts)


def _code(text: str) -> str:
    return f"`{text.replace(chr(10), ' ')}`" if text else ""


def markdown() -> str:
    """The reference page."""
    rows = list(config_keys())
    lines = [
        "# YAML reference",
        "",
        "Every key of a search config (`search launch CONFIG`), generated from the config's",
        "declaration when this site is built, so it lists what `search launch` accepts. A",
        "guide to the config is on [The search config](../config.md).",
        "",
        "`space` and `fixed` take dimension names, not these section keys: `family`, `budget`,",
        "`ssn.<option>`, `train.<option>`, `<family>.<hyper>`, `<family>.<hyper>.<i>` and",
        "`<family>.train.<option>`; the `ssn.*` and `train.*` rows below are what those options",
        "take. A family's hyper-parameters are on [Spaces](../spaces.md).",
        "",
    ]
    groups: dict[str, list[Key]] = {}  # in the order each first appears
    for key in rows:
        groups.setdefault(key.path.split(".")[0] if "." in key.path else "", []).append(key)
    for group, keys in groups.items():
        lines += [
            "",
            f"## `{group}`" if group else "## Top level",
            "",
            "| key | type | default | allowed | what |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_code(key.path)} | {_code(key.type)} | {_code(key.default)} "
            f"| {_cell(key.allowed)} | {_cell(key.description)} |"
            for key in keys
        ]
    return "\n".join(lines) + "\n"
