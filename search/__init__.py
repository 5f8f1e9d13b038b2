"""How it is searched: configuration, optimisers, execution, fronts, reports and export.

Names load lazily (as Optuna's heavy subpackages do): a Ray worker that imports
``search.trial`` must not pay for pandas, matplotlib or Ray's Tune modules it never uses.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SearchConfig": "search._config",
    "Objective": "search._config",
    "Constraint": "search._config",
    "load_config": "search._config",
    "load_preset": "search._config",
    "list_presets": "search._config",
    "check_trial_config": "search._config",
    "launch": "search._execution",
    "OPTIMISERS": "search._optimisers",
    "Optimiser": "search._optimisers",
    "Proposal": "search._optimisers",
    "trials_frame": "search._frame",
    "write_report": "search._report",
    "export_bundle": "search._export",
    "load_bundle": "search._export",
    "train_bundle": "search._export",
    "start_dashboard": "search._dashboard",
    "stop_dashboard": "search._dashboard",
}
_MODULES = ("pareto", "trial")

__all__ = sorted([*_EXPORTS, *_MODULES])


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"search.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'search' has no attribute {name!r}")
