"""Where a search config comes from, checked before anything heavy is imported: a preset that
is shipped, or a YAML file that exists and is not too large. ``search launch`` and ``search
check`` answer a mistyped preset or a missing file from here in a fraction of a second, before
torch or Ray load (they took 5-10 s)."""

from __future__ import annotations

import os
from pathlib import Path

from search.config._presets import list_presets, preset_text, unknown_preset
from spaces import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "check_source", "config_file"]

#: The largest config file (or text) read: a config is a page of YAML, not a data file.
MAX_CONFIG_BYTES = 1 << 20


def config_file(source: str | os.PathLike[str]) -> Path:
    """``source`` as the path of a config file that exists and may be read.

    Raises:
        ConfigError: no such file, or one larger than :data:`MAX_CONFIG_BYTES`.
    """
    path = Path(source)
    if not path.is_file():
        raise ConfigError(
            f"config file {str(path)!r} does not exist; pass a YAML file or one of the presets "
            f"{list_presets()} with --preset"
        )
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {str(path)!r} holds {size:,} bytes; a config may hold at most "
            f"{MAX_CONFIG_BYTES:,}"
        )
    return path


def check_source(config: str | None, preset: str | None) -> None:
    """Refuses a command's config source: CONFIG and --preset together, a preset not shipped,
    or a config file :func:`config_file` refuses.

    Raises:
        ConfigError: one line naming what is wrong and what is allowed.
    """
    if config and preset:
        raise ConfigError(
            f"CONFIG and --preset: got both ({config!r}, {preset!r}); "
            "allowed: one of them, or neither (the digits-quick preset)"
        )
    if config:
        config_file(config)
    elif preset is not None and preset_text(preset) is None:
        raise unknown_preset(preset)
