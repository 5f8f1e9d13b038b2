"""How it is searched: configuration, optimisers, execution, fronts, reports and export.

Subpackages, one per noun: ``config`` (YAML → validated objects, presets), ``derive`` (a
data-only config made whole), ``optimisers`` (Optuna and pymoo behind one ask/tell interface),
``record`` (the study in its storage: the one record of a search), ``schedulers`` (MOASHA),
``run`` (execution on Ray Tune), ``pareto`` (fronts, hypervolume, selectors), ``report``,
``bundle`` (export a trial, load it, train it again), ``lab`` (replays on recorded curves),
``cli``; and the modules ``trial`` (one trial as a plain function), ``errors``. Names
load lazily (as Optuna's heavy subpackages do): a Ray worker that imports ``search.trial`` must
not pay for pandas, matplotlib or Ray's Tune modules it never uses. The errors are light and
load at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
# `__all__` is the user API; the other names are for npas's other packages.
if TYPE_CHECKING:
    from search import bundle as bundle
    from search import config as config
    from search import errors as errors
    from search import optimisers as optimisers
    from search import pareto as pareto
    from search import report as report
    from search import run as run
    from search import trial as trial
    from search._dashboard import start_dashboard as start_dashboard
    from search._dashboard import stop_dashboard as stop_dashboard
    from search.bundle import export_bundle as export_bundle
    from search.bundle import load_bundle as load_bundle
    from search.bundle import train_bundle as train_bundle
    from search.config import Constraint as Constraint
    from search.config import Objective as Objective
    from search.config import SearchConfig as SearchConfig
    from search.config import TrialConfig as TrialConfig
    from search.config import check_trial_config as check_trial_config
    from search.config import list_presets as list_presets
    from search.config import load_config as load_config
    from search.config import load_preset as load_preset
    from search.optimisers import OPTIMISERS as OPTIMISERS
    from search.optimisers import Optimiser as Optimiser
    from search.optimisers import Proposal as Proposal
    from search.pareto import trials_frame as trials_frame
    from search.report import write_report as write_report
    from search.run import launch as launch


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


__getattr__ = lazy_exports(__name__)
