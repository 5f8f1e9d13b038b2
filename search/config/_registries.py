"""The registries whose names a config's keys take (``scheduler.name``, ``algorithm.name``,
``loggers``), kept here so that the config checks a name without importing the package that
builds the entry: each built-in is declared with the module that registers it (as a package's
entry points are), and that module is imported when the entry is first asked for. A user's
own entry registers in the same object, through the package that exports it
(``search.optimisers.OPTIMISERS``)."""

from __future__ import annotations

from typing import Any

from spaces import Registry

__all__ = ["LOGGERS", "OPTIMISERS", "SCHEDULERS"]

#: ``scheduler.name`` → (search config) → Ray Tune scheduler (``search.schedulers``).
SCHEDULERS: Registry[Any] = Registry("scheduler")
#: ``algorithm.name`` → an ``Optimiser`` subclass (``search.optimisers``).
OPTIMISERS: Registry[Any] = Registry("algorithm")
#: ``loggers`` → (search config, run folder) → a Ray Tune logger callback (``search.run``).
LOGGERS: Registry[Any] = Registry("logger")

#: The built-in entries: registry → the module that registers them → their names.
BUILT_IN: dict[Registry[Any], dict[str, tuple[str, ...]]] = {
    SCHEDULERS: {"search.schedulers._named": ("fifo", "moasha")},
    OPTIMISERS: {
        "search.optimisers._optuna": ("nsga2", "nsga3", "tpe", "gp", "random"),
        "search.optimisers._pymoo": ("pymoo-nsga2", "pymoo-smsemoa", "pymoo-nsga3"),
    },
    LOGGERS: {"search.run._loggers": ("tensorboard", "mlflow")},
}


def _declare_built_ins() -> None:
    for registry, modules in BUILT_IN.items():
        for module, names in modules.items():
            for name in names:
                registry.declare(name, module)


_declare_built_ins()
