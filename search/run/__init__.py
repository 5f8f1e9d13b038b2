"""Running a search on Ray Tune: launch, the searcher over any optimiser, the trainable on the
workers, the progress view, and the Optuna storage every trial is written to.

Lazy (PEP 562): a Ray worker imports ``search.run._trainable``, which must stay light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "launch": "search.run._launch",
    "trials_counted": "search.run._launch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'search.run' has no attribute {name!r}")
