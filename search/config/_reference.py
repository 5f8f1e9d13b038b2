"""The YAML reference's rows: every key of a search config file, read from the one
declaration of each (the search's keys and the option tables of ``_trial``)."""

from __future__ import annotations

from search.config._keys import ConfigKey, option_rows, rows
from search.config._search import SearchConfig
from search.config._trial import LOADING_OPTIONS, SSN_OPTIONS, TRAIN_OPTIONS, measure_rows

__all__ = ["reference"]


def reference() -> list[ConfigKey]:
    """Every key of a search config file, with its type, default, allowed values and help:
    the rows of the YAML reference, read from the one declaration of each key.

    Sections come after their own row (``resources``, then ``resources.cpu``, ...);
    ``train.*``, ``ssn.*``, ``loading.*`` and ``measure.*`` list the options those sections
    (and ``space``/``fixed`` dimensions of the same names) take.
    """
    out = []
    after = {
        "train": lambda: option_rows(TRAIN_OPTIONS, "train"),
        "fixed": lambda: option_rows(SSN_OPTIONS, "ssn"),  # ssn.* are space or fixed keys
        "loading": lambda: option_rows(LOADING_OPTIONS, "loading"),
        "measure": measure_rows,
    }
    top = rows(SearchConfig)
    for row in sorted(top, key=lambda r: r.key != "name"):  # the name first, as in a file
        out.append(row)
        if row.key in after:
            out += after[row.key]()
    return out
