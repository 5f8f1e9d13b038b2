"""Where the data live: ``NPAS_DATA`` or a cache folder. Torch-free, so a search's config
can pin a relative root without loading torch."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """npas's data cache: ``$XDG_CACHE_HOME/npas/data`` (``~/.cache/npas/data``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "npas" / "data"


def default_root() -> Path:
    """``NPAS_DATA`` if set, else ``$XDG_CACHE_HOME/npas/data`` (``~/.cache/npas/data``)."""
    env = os.environ.get("NPAS_DATA")
    return Path(env).expanduser() if env else cache_home()


def pinned_root(root: str | None) -> str | None:
    """``root`` as an absolute path when it, or ``NPAS_DATA`` standing in for a None, is
    relative; else ``root`` unchanged. A search pins the root this way where it is launched,
    because Ray Tune runs each trial in the trial's own folder, where a relative path names
    nothing."""
    given = root if root is not None else os.environ.get("NPAS_DATA")
    if not given or Path(given).expanduser().is_absolute():
        return root
    return str(Path(given).expanduser().resolve())
