"""A bundle on disk: its format, its files, and reading it back (the weights into
``spaces.build_model``, its metrics.json). See :mod:`search.bundle` for what it holds."""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import optuna
import torch
from torch import nn

from search._usercode import import_modules
from search.errors import ExportError
from search.trial import read_weights
from spaces import build_model

__all__ = ["BUNDLE_FORMAT", "FILES", "load_bundle", "metrics_json", "read_bundle", "versions"]

#: ``format`` of a bundle's model.pt and metrics.json.
BUNDLE_FORMAT = "npas-bundle/1"
#: The files every bundle has.
FILES = ("config.yaml", "model.pt", "metrics.json", "README.md")


def versions() -> dict[str, str]:
    """The versions a bundle records it was made with."""
    try:
        npas = metadata.version("npas")
    except metadata.PackageNotFoundError:
        npas = "unknown"
    return {
        "npas": npas,
        "torch": torch.__version__,
        "optuna": optuna.__version__,
        "python": platform.python_version(),
    }


def read_bundle(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A bundle's model.pt as a dict (on the CPU).

    Raises:
        ExportError: the folder holds no npas bundle.
    """
    path = Path(folder) / "model.pt"
    if not path.is_file():
        raise ExportError(
            f"{str(folder)!r} is not a bundle: no model.pt in it (make one with `search export`)"
        )
    blob = read_weights(path)
    if blob.get("format") != BUNDLE_FORMAT:
        raise ExportError(f"{str(path)!r} is not an {BUNDLE_FORMAT} model file")
    return dict(blob)


def load_bundle(folder: str | os.PathLike[str]) -> nn.Module:
    """The bundle's model: ``spaces.build_model`` plus its materialised weights, in eval mode.
    The modules its trial config imports (a family of the user's) are imported first.

    Raises:
        ExportError: the folder holds no npas bundle.
        ConfigError: a module it imports cannot be imported here.
    """
    blob = read_bundle(folder)
    import_modules(blob["trial_config"].get("imports") or [], path="the bundle's imports")
    model = build_model(blob["family"], blob["in_shape"], blob["num_classes"], **blob["hyper"])
    model.load_state_dict(blob["state_dict"])
    return model.eval()


def metrics_json(folder: Path) -> dict[str, Any]:
    """The bundle's metrics.json ({} when it has none).

    Raises:
        ExportError: it is not a JSON object.
    """
    path = folder / "metrics.json"
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ExportError(f"{path} is not valid JSON ({err}); export the bundle again") from None
    if not isinstance(record, dict):
        raise ExportError(f"{path} holds no JSON object; export the bundle again")
    return record
