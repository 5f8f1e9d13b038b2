"""The options several ``search`` subcommands share, and their argument types: each error
names the argument, the value and what is allowed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from search._urls import RUN_FOLDER

__all__ = [
    "DATA_CHANGED_HELP",
    "FORMATS",
    "SELECT_HELP",
    "Renamed",
    "count",
    "flag",
    "import_options",
    "port",
    "positive",
    "storage_options",
    "study_options",
]


FORMATS = ("table", "csv", "json")


def positive(text: str) -> int:
    return _integer(text, 1)


def count(text: str) -> int:
    return _integer(text, 0)


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: an integer >= {low}")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 65536:
        raise argparse.ArgumentTypeError(
            f"got {text!r}; allowed: an integer in [1, 65535], or 0 for any free port"
        )
    return value


class Moved(argparse.Action):
    """``--out`` given to a command that only reads a search: it now names where a command
    writes, so it is refused with the flag to use instead of being taken for a run folder."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.error("--out names where a command writes; give the run folder with --run DIR")


class Renamed(argparse.Action):
    """A flag renamed to the config key it sets (``--optimiser`` is ``--algorithm``, as
    ``algorithm:`` in a config): still taken, with a one-line note on stderr."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:  # fmt: skip
        new = self.metavar_new  # type: ignore[attr-defined]
        print(f"[npas] {option_string} is deprecated: use {new} (the config key's name)",
              file=sys.stderr)  # fmt: skip
        setattr(namespace, self.dest, values)


def flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    """An on/off option (off unless given)."""
    parser.add_argument(name, action="store_true", help=text)


def storage_options(parser: argparse.ArgumentParser, *, writes: bool = False) -> None:
    """--storage and --run (the run folder read); ``writes``: the command has its own --out."""
    parser.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage (SQLAlchemy URL, e.g. sqlite:///runs/npas.db or "
        "postgresql://user@host/db); default: sqlite:///<run>/npas.db",
    )
    parser.add_argument(
        "--run",
        dest="run_folder",
        default=RUN_FOLDER,
        metavar="DIR",
        help=f"run folder (launch's --out) whose npas.db is the default storage "
        f"(default: {RUN_FOLDER})",
    )
    if not writes:
        parser.add_argument("--out", action=Moved, nargs=0, help=argparse.SUPPRESS)


def import_options(parser: argparse.ArgumentParser, *, reads: bool = True) -> None:
    """--import (the user's code); for a command that reads a search, --no-imports."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module or .py file of yours (families, datasets, indicators) to import first; "
        "repeatable" + ("; the modules a search recorded are imported too" if reads else ""),
    )
    if reads:
        flag(
            parser,
            "--no-imports",
            "import none of the modules the search recorded (importing runs their code); "
            "what needs one then says which",
        )


def study_options(
    parser: argparse.ArgumentParser, *, objectives: str | None = None, writes: bool = False
) -> None:
    """--name, --storage, --run and the import options; with ``objectives``, --objectives."""
    parser.add_argument(
        "--name", help="search (study) name; may be left out when the storage holds one search"
    )
    storage_options(parser, writes=writes)
    import_options(parser)
    if objectives is not None:
        parser.add_argument(
            "--objectives",
            metavar="A,B",
            help=f"{objectives} (default: the search's objectives)",
        )


#: ``--select``'s help; the forms themselves live on the registered selectors.
SELECT_HELP = "which trial: a selection spec (default: knee); `search selectors` lists the forms"
DATA_CHANGED_HELP = (
    "your dataset changed since this search was launched (launch refuses that otherwise): go "
    "on with the new data, the change recorded in the study and its unfinished trials started "
    "again"
)
