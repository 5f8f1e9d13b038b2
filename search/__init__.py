"""How it is searched: configuration, optimisers, execution, fronts, reports and export.

Subpackages, one per noun: ``config`` (YAML → validated objects, presets), ``optimisers``
(Optuna and pymoo behind one ask/tell interface), ``run`` (Ray Tune execution and the storage),
``pareto`` (fronts, hypervolume, selectors), ``report``, ``bundle`` (export a trial, load it,
train it again); and the modules ``trial`` (one trial as a plain function), ``errors``. Names
load lazily (as Optuna's heavy subpackages do): a Ray worker that imports ``search.trial`` must
not pay for pandas, matplotlib or Ray's Tune modules it never uses. The errors are light and
load at once.
"""

from __future__ import annotations

from search.errors import (
    BudgetError,
    ConfigError,
    DashboardError,
    ExportError,
    MissingExtraError,
    NpasError,
    SearchInterrupted,
    SearchLocked,
    StorageWriteError,
    UnknownNameError,
)
from spaces._lazy import lazy_getattr

_EXPORTS = {
    "SearchConfig": "search.config",
    "TrialConfig": "search.config",
    "Objective": "search.config",
    "Constraint": "search.config",
    "load_config": "search.config",
    "load_preset": "search.config",
    "list_presets": "search.config",
    "check_trial_config": "search.config",
    "launch": "search.run",
    "OPTIMISERS": "search.optimisers",
    "Optimiser": "search.optimisers",
    "Proposal": "search.optimisers",
    "trials_frame": "search.pareto",
    "write_report": "search.report",
    "export_bundle": "search.bundle",
    "load_bundle": "search.bundle",
    "train_bundle": "search.bundle",
    "start_dashboard": "search._dashboard",
    "stop_dashboard": "search._dashboard",
}
_MODULES = ("bundle", "config", "errors", "optimisers", "pareto", "report", "run", "trial")
__all__ = [
    "OPTIMISERS",
    "BudgetError",
    "ConfigError",
    "Constraint",
    "DashboardError",
    "ExportError",
    "MissingExtraError",
    "NpasError",
    "Objective",
    "Optimiser",
    "Proposal",
    "SearchConfig",
    "SearchInterrupted",
    "SearchLocked",
    "StorageWriteError",
    "TrialConfig",
    "UnknownNameError",
    "bundle",
    "check_trial_config",
    "config",
    "errors",
    "export_bundle",
    "launch",
    "list_presets",
    "load_bundle",
    "load_config",
    "load_preset",
    "optimisers",
    "pareto",
    "report",
    "run",
    "start_dashboard",
    "stop_dashboard",
    "train_bundle",
    "trial",
    "trials_frame",
    "write_report",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, _MODULES)
