"""One declaration per config key: its check, default, allowed values and help, held in the
metadata of a dataclass field (:func:`key`). Reading a section, writing it back and the YAML
reference (:func:`reference`) all iterate over those fields, so a key is declared once.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from search.config import _checks as checks

__all__ = [
    "RENAMED_KEYS",
    "ConfigKey",
    "Option",
    "config_key",
    "optional_key",
    "parse_keys",
    "renamed",
    "section_key",
]

#: Top-level keys renamed in this release, old → new; the old one still works, with a
#: FutureWarning, until the next release.
RENAMED_KEYS = {"optimiser": "algorithm", "budget": "limits"}

Check = checks.Check
T = TypeVar("T")


class Option(NamedTuple):
    """One option of a ``train``, ``ssn`` or ``loading`` table (a key of a mapping whose
    defaults come from a function's signature rather than a dataclass)."""

    check: Check
    default: Any
    type: str
    help: str


def config_key(
    default: Any = dataclasses.MISSING,
    *,
    check: Check | None,
    help: str,
    allowed: str = "",
    factory: Callable[[], Any] | None = None,
    dump: Callable[[Any], Any] | None = None,
    in_yaml: bool = True,
) -> Any:
    """A dataclass field that is a config key.

    Args:
        default: The value when the key is absent (``factory`` for a mutable one).
        check: ``check(value, path)`` returns the value validated (raising ConfigError);
            None: the section's ``from_dict`` reads this key itself.
        help: One line for the reference.
        allowed: What values are allowed, in words; default what ``check`` says it allows
            (:func:`search.config._checks.described`).
        factory: Builds the default (a mutable or a section's default).
        dump: Turns the value into plain data (default: a deep copy, ``asdict`` of a section).
        in_yaml: False for a field derived from another key (not written in a file).
    """
    meta = {"check": check, "help": help, "allowed": allowed, "dump": dump, "in_yaml": in_yaml}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def optional_key(check: Check, help: str) -> Any:
    """A config key that may be null, its default: null or what ``check`` accepts."""
    return config_key(None, check=checks.optional(check), help=help)


def section_key(section: Any, help: str) -> Any:
    """A config key that is a section: its class reads it (``from_dict``) and gives its default."""
    return config_key(check=section.from_dict, factory=section, help=help)


def keys(cls: type) -> list[dataclasses.Field]:
    """The fields of ``cls`` written in a config file, in order."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("in_yaml", True)]


def names(cls: type) -> list[str]:
    """The config keys of a section class."""
    return [f.name for f in keys(cls)]


def default_of(f: dataclasses.Field) -> Any:
    """A field's default (a fresh one from its factory); MISSING when it is required."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default if f.default is dataclasses.MISSING else copy.deepcopy(f.default)


def field_of(cls: type, name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(cls) if f.name == name)


def check_of(cls: type, name: str) -> Check:
    """The check of key ``name`` of a section class."""
    return field_of(cls, name).metadata["check"]


def dumped_default(cls: type, name: str) -> Any:
    """The default of key ``name`` as plain data (what :func:`dump_keys` writes for it)."""
    f = field_of(cls, name)
    return _plain_data(default_of(f), f)


def parse_keys(cls: type, data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Every key of ``cls`` that has a check: validated from ``data``, else its default."""
    out = {}
    for f in keys(cls):
        check = f.metadata.get("check")
        if check is None:
            continue
        where = checks.join(path, f.name)
        out[f.name] = check(data[f.name], where) if f.name in data else default_of(f)
    return out


def parse_section(cls: type[T], data: Any, path: str, *, named: bool = False) -> T:
    """A section object from its plain data, every key checked and unknown ones refused;
    ``named``: the section may also be given as its ``name`` alone (``algorithm: tpe``)."""
    if named:
        data = checks.named_section(data, path, names(cls)) or {}
    else:
        data = checks.mapping({} if data is None else data, path)
        checks.known_keys(data, names(cls), path)
    return cls(**parse_keys(cls, data, path))


def dump_keys(obj: Any) -> dict[str, Any]:
    """The keys of a section object as plain data (YAML/JSON-ready)."""
    out = {}
    for f in keys(type(obj)):
        value = getattr(obj, f.name)
        dump = f.metadata.get("dump")
        if dump is not None:
            out[f.name] = dump(value)
        elif dataclasses.is_dataclass(value):
            out[f.name] = dump_keys(value)
        else:
            out[f.name] = copy.deepcopy(value)
    return out


def renamed(data: Mapping[str, Any], old: str, new: str, path: str = "") -> dict[str, Any]:
    """``data`` with a key renamed in this release read under its new name, with a
    FutureWarning naming the new key (the old name is accepted for one release)."""
    data = dict(data)
    if old not in data:
        return data
    where, now = checks.join(path, old), checks.join(path, new)
    if new in data:
        raise checks.bad(where, data[old], f"nothing: {where} is the old name of {now}, given too")
    warnings.warn(
        f"config key '{where}' is renamed '{now}'; '{where}' will stop working in the next "
        f"release",
        FutureWarning,
        stacklevel=3,
    )
    data[new] = data.pop(old)
    return data


class ConfigKey(NamedTuple):
    """One row of the YAML reference."""

    key: str
    type: str
    default: Any
    allowed: str
    help: str


def rows(cls: type, prefix: str = "") -> list[ConfigKey]:
    """The reference rows of a section class, its sub-sections' keys after their own row."""
    out = []
    for f in keys(cls):
        name = checks.join(prefix, f.name)
        default = default_of(f)
        section = dataclasses.is_dataclass(default) and not isinstance(default, type)
        allowed = f.metadata["allowed"] or checks.allowed_text(f.metadata["check"])
        allowed = allowed or ("a mapping of the keys below" if section else "")
        shown = "required" if default is dataclasses.MISSING else _plain_data(default, f)
        out.append(ConfigKey(name, str(f.type), shown, allowed, f.metadata["help"]))
        if section:
            out += rows(type(default), name)
    return out


def _plain_data(value: Any, f: dataclasses.Field) -> Any:
    dump = f.metadata.get("dump")
    if dump is not None:
        return dump(value)
    return dump_keys(value) if dataclasses.is_dataclass(value) else value


def option_rows(options: Mapping[str, Option], prefix: str) -> list[ConfigKey]:
    """Reference rows of an option table (``train``, ``ssn``, ``loading``)."""
    return [
        ConfigKey(f"{prefix}.{k}", o.type, o.default, checks.allowed_text(o.check), o.help)
        for k, o in options.items()
    ]
