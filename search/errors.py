"""Every error ``search`` raises, rooted in :class:`NpasError` (light: no torch, no Ray).

The configuration errors come from ``spaces`` (one root for the three packages); the rest are
the search's own. The CLI maps them to exit codes: ``ConfigError``/``UnknownNameError`` 2,
``SearchInterrupted`` 130, any other ``NpasError`` 1.
"""

from __future__ import annotations

from spaces import BudgetError, ConfigError, NpasError, UnknownNameError, UnsupportedDependency

__all__ = [
    "BudgetError",
    "ConfigError",
    "DashboardError",
    "ExportError",
    "MissingExtraError",
    "NpasError",
    "OutputError",
    "RunFolderFull",
    "SearchInterrupted",
    "SearchLocked",
    "StorageLost",
    "StorageWriteError",
    "UnknownNameError",
    "UnsupportedDependency",
]


class SearchInterrupted(NpasError):
    """The search was stopped (Ctrl-C, SIGTERM) before all its trials ran; relaunching
    resumes it. ``signum`` is the signal (the command exits with 128 + it)."""

    def __init__(self, message: str, *, signum: int = 2) -> None:
        super().__init__(message)
        self.signum = signum


class SearchLocked(NpasError):
    """Another live launch runs this search (one writer per search); the message names it."""


class StorageWriteError(NpasError, RuntimeError):
    """A trial could not be written to the search's storage."""


class StorageLost(StorageWriteError):
    """The storage a launch writes is not the one it opened any more (its SQLite file deleted,
    moved or replaced; its study id naming another study): nothing more is written to it."""


class RunFolderFull(NpasError, OSError):
    """The run folder's disk is full: trials could not save their results (not counted);
    the search stopped starting trials and kept what it recorded."""


class ExportError(NpasError):
    """A trial cannot be exported (no saved model), or a folder is not a bundle."""


class OutputError(NpasError):
    """Where a command was told to write (``--out``, ``--plot``) cannot take its files: a
    file where a folder belongs, a read-only folder, a full disk."""


class DashboardError(NpasError):
    """optuna-dashboard could not be started, or did not answer in time."""


class MissingExtraError(NpasError):
    """An optional dependency is not installed; the message names the npas extra that
    installs it (``pip install 'npas[report]'``)."""
