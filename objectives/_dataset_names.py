"""The names of the built-in datasets, known without importing their loaders (which load
torch), so that a config's misspelt dataset is answered before torch loads.

``tests/objectives_tests/test_builtin_names.py`` keeps :data:`BUILTIN_DATASETS` equal to what
``objectives.datasets`` registers.
"""

from __future__ import annotations

import sys

__all__ = ["BUILTIN_DATASETS", "dataset_names"]

BUILTIN_DATASETS = ("cifar10", "digits", "fashion-mnist", "mnist")


def dataset_names() -> list[str]:
    """The registered datasets' names, sorted: the registry's once it is loaded, else the
    built-ins' (a user's dataset registers through ``objectives.datasets``, which loads the
    registry first, so none can be missing)."""
    if "objectives.datasets" in sys.modules:
        from objectives.datasets import DATASETS

        return DATASETS.names()
    return sorted(BUILTIN_DATASETS)
