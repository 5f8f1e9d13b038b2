"""scikit-learn's ``digits`` (1,797 8×8 images, UCI), read from the file scikit-learn ships,
without importing scikit-learn: that import (pandas, scipy.stats) cost 1.6–2 s in every process
that loads the default dataset, each Ray worker of a search included. Where the file is not
where scikit-learn 1.x keeps it, ``load_digits`` reads it; a test compares the two."""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np

__all__ = ["digits_source", "read_digits"]

_FILE = ("datasets", "data", "digits.csv.gz")


def read_digits() -> tuple[np.ndarray, np.ndarray]:
    """The images as uint8 (N, 8, 8), values 0..16, and the labels as int64 (N,)."""
    path = _shipped_file()
    if path is None:
        from sklearn.datasets import load_digits

        bunch = load_digits()
        return bunch.images.astype(np.uint8), bunch.target.astype(np.int64)
    with gzip.open(path, "rt") as text:
        table = np.loadtxt(text, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8).astype(np.uint8), table[:, -1].astype(np.int64)


def digits_source() -> str:
    """Where the digits come from, with scikit-learn's version (the provenance a study keeps)."""
    version = importlib.metadata.version("scikit-learn")
    return f"sklearn.datasets.load_digits (scikit-learn {version})"


def _shipped_file() -> Path | None:
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder).joinpath(*_FILE)
        if path.is_file():
            return path
    return None
