"""A config file loaded as ``search check`` and ``search launch`` load it: one without
``space`` is completed by :func:`~search.derive.derive` first, then validated whole."""

from __future__ import annotations

import os

from search.config import SearchConfig, config_data
from search.derive._derive import Derivation, derive
from spaces import ConfigError, NpasError

__all__ = ["load_config"]


def load_config(source: str | os.PathLike[str]) -> tuple[SearchConfig, Derivation | None]:
    """The search config of a YAML file, and its derivation (None when it has a ``space``:
    loaded as :func:`search.config.load_config` loads it).

    Raises:
        ConfigError: as :func:`search.config.load_config`, or data the derivation refuses
            (prefixed with the file).
    """
    read = config_data(source)
    if "space" in read.data:
        return read.validated(), None
    read.check_keys()
    try:
        derivation = derive(read.data, base=read.base)
    except NpasError as err:
        raise ConfigError(f"{read.where}: {err}") from None
    return read.validated(derivation.config), derivation
