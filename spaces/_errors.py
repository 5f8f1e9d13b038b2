"""One error root for npas: every error the packages raise derives from :class:`NpasError`."""

from __future__ import annotations


class NpasError(Exception):
    """Root of every npas error, so callers can catch them all at once."""


class UnknownNameError(NpasError, KeyError):
    """A registry was asked for a name it does not hold; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConfigError(NpasError, ValueError):
    """A configuration value is wrong; the message names the key, the value and what is allowed."""


class BudgetError(NpasError, ValueError):
    """A parameter budget cannot be met; the message states the smallest feasible budget."""


class UnsupportedDependency(NpasError):
    """An installed Optuna, Ray or torch is outside the versions npas supports, or lacks a
    private name npas relies on (``search._compat``, ``spaces._compat``); the message names the
    supported versions."""
