"""Loading a search config: a YAML file, a dict, or a preset shipped in ``presets/``.

YAML is read with a safe loader (no object construction) that also reads ``1e-3`` as a float.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from search.config import _checks as checks
from search.config._keys import RENAMED_KEYS, names
from search.config._presets import list_presets, preset_text, unknown_preset
from search.config._search import SearchConfig
from search.config._source import MAX_CONFIG_BYTES, config_file
from spaces import ConfigError, NpasError

__all__ = ["ConfigData", "config_data", "list_presets", "load_config", "load_preset"]


#: The largest config file read (a config is a page of YAML; a 50 MB scalar hung the parser).
#: The deepest nesting of mappings and lists a config may have.
MAX_DEPTH = 32


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3`` as a float (YAML 1.1 wants ``1.0e-3``), refuses an
    alias of a mapping or a list (a few lines of them expand exponentially: the "billion
    laughs"; an alias of a plain value is kept), nesting deeper than :data:`MAX_DEPTH` and a
    key given twice in one mapping (YAML's loader keeps the last silently: a second ``name:``
    far below the first renamed the search)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            alias = self.peek_event()
            node = self.anchors.get(alias.anchor)
            if node is not None and not isinstance(node, yaml.ScalarNode):
                raise yaml.composer.ComposerError(
                    None, None, f"the alias *{alias.anchor} repeats a mapping or a list: "
                    "configs allow aliases of plain values only", alias.start_mark,
                )  # fmt: skip
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )  # fmt: skip
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if key in first:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} is given twice in one mapping (lines "
                        f"{first[key]} and {line}); allowed: each key once", key_node.start_mark,
                    )  # fmt: skip
                first[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


class ConfigData(NamedTuple):
    """A config file as read, before it is validated: its sections, where it was read (for
    messages), the name it gives a search without ``name`` and the folder of its paths."""

    data: Mapping[str, Any]
    where: str
    name: str | None
    base: str | None

    def check_keys(self) -> None:
        """Refuses an unknown top-level key (a renamed key's old name is known), as validating
        does first: a mistyped key is named before anything is derived from the data.

        Raises:
            ConfigError: the key, the nearest known one and every known one.
        """
        try:
            checks.known_keys(self.data, [*names(SearchConfig), *RENAMED_KEYS], "")
        except ConfigError as err:
            raise ConfigError(f"{self.where}: {err}") from None

    def validated(self, data: Mapping[str, Any] | None = None) -> SearchConfig:
        """The config, validated; ``data`` in place of the sections read (a derivation's)."""
        try:
            return SearchConfig.from_dict(
                self.data if data is None else data, name=self.name, base=self.base
            )
        except NpasError as err:
            raise ConfigError(f"{self.where}: {err}") from None


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> SearchConfig:
    """A search config from a YAML file or a dict (a dict is taken as :meth:`from_dict` does).
    A file's relative ``imports`` and data paths are taken from its folder.

    Raises:
        ConfigError: a missing file, a YAML syntax error (with the file and the line) or any
            invalid value (prefixed with the file).
    """
    if isinstance(source, Mapping):
        return SearchConfig.from_dict(source)
    return config_data(source).validated()


def config_data(source: str | os.PathLike[str]) -> ConfigData:
    """A config file read and parsed, not validated (``search.derive`` completes a config
    without ``space`` before it is).

    Raises:
        ConfigError: a missing file, a YAML syntax error or a file that holds no mapping.
    """
    path = config_file(source)
    return ConfigData(_parsed(_utf8(path), where=str(path)), str(path), path.stem,
                      str(path.parent))


def _utf8(path: Path) -> str:
    """The file's text; a byte that is not UTF-8 (a Latin-1 ``é`` in a comment) is refused
    naming its line (it was a UnicodeDecodeError's traceback)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(
            f"{path}: byte 0x{data[err.start]:02x} on line {line} is not "
            "UTF-8; allowed: a file saved as UTF-8 (plain ASCII is UTF-8)"
        ) from None


def _parsed(text: str, *, where: str) -> Mapping[str, Any]:
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where}: a config may hold at most {MAX_CONFIG_BYTES:,} characters")
    stream = io.StringIO(text)
    stream.name = where  # YAML's messages then say where
    try:
        data = yaml.load(stream, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ConfigError(f"{where}: not valid YAML: {err}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must hold a mapping of sections, got {data!r}")
    return data


def load_preset(name: str) -> SearchConfig:
    """A packaged preset (``digits-quick``, ``mnist-tiny``, ``cifar10-wrn``).

    Raises:
        ConfigError: no preset of that name (the message lists them).
    """
    text = preset_text(name)
    if text is None:
        raise unknown_preset(name)
    where = f"preset {name!r}"
    return ConfigData(_parsed(text, where=where), where, name, None).validated()
