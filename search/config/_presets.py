"""The presets shipped in ``presets/``: their names and texts, read without validating (light:
``search presets`` lists them and ``search presets --show`` prints one without loading torch)."""

from __future__ import annotations

from pathlib import Path

from search.config._checks import unknown
from spaces import ConfigError

__all__ = ["list_presets", "preset_text", "unknown_preset"]

_FOLDER = Path(__file__).parent / "presets"


def list_presets() -> list[str]:
    """Names of the presets shipped in ``search/config/presets``."""
    return sorted(p.stem for p in _FOLDER.glob("*.yaml"))


def preset_text(name: str) -> str | None:
    """The YAML text of a preset, or None when there is none of that name."""
    path = _FOLDER / f"{name}.yaml"
    return path.read_text(encoding="utf-8") if name in list_presets() else None


def unknown_preset(name: str) -> ConfigError:
    """The error for a preset name that is not shipped: the closest name and every name."""
    return unknown("preset", name, list_presets(), "search presets")
