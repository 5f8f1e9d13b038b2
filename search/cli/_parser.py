"""The ``search`` argument parser: every subcommand, its options and the command it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from search.cli._launch import _check, _launch
from search.cli._lists import _families, _indicators, _presets, _selectors
from search.cli._manage import _dashboard, _delete, _stop
from search.cli._results import _export, _pareto, _replay, _report, _train
from search.cli._status import _status, _trials
from search.record import RUN_FOLDER, TRIAL_STATES

_FORMATS = ("table", "csv", "json")


def _positive(text: str) -> int:
    return _integer(text, 1)


def _count(text: str) -> int:
    return _integer(text, 0)


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: an integer >= {low}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 65536:
        raise argparse.ArgumentTypeError(
            f"got {text!r}; allowed: an integer in [1, 65535], or 0 for any free port"
        )
    return value


class _Moved(argparse.Action):
    """``--out`` given to a command that only reads a search: it now names where a command
    writes, so it is refused with the flag to use instead of being taken for a run folder."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.error("--out names where a command writes; give the run folder with --run DIR")


class _Renamed(argparse.Action):
    """A flag renamed to the config key it sets (``--optimiser`` is ``--algorithm``, as
    ``algorithm:`` in a config): still taken, with a one-line note on stderr."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:  # fmt: skip
        new = self.metavar_new  # type: ignore[attr-defined]
        print(f"[npas] {option_string} is deprecated: use {new} (the config key's name)",
              file=sys.stderr)  # fmt: skip
        setattr(namespace, self.dest, values)


def _flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    """An on/off option (off unless given)."""
    parser.add_argument(name, action="store_true", help=text)


def _storage_options(parser: argparse.ArgumentParser, *, writes: bool = False) -> None:
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
        parser.add_argument("--out", action=_Moved, nargs=0, help=argparse.SUPPRESS)


def _import_options(parser: argparse.ArgumentParser, *, reads: bool = True) -> None:
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
        _flag(
            parser,
            "--no-imports",
            "import none of the modules the search recorded (importing runs their code); "
            "what needs one then says which",
        )


def _study_options(
    parser: argparse.ArgumentParser, *, objectives: str | None = None, writes: bool = False
) -> None:
    """--name, --storage, --run and the import options; with ``objectives``, --objectives."""
    parser.add_argument(
        "--name", help="search (study) name; may be left out when the storage holds one search"
    )
    _storage_options(parser, writes=writes)
    _import_options(parser)
    if objectives is not None:
        parser.add_argument(
            "--objectives",
            metavar="A,B",
            help=f"{objectives} (default: the search's objectives)",
        )


#: ``--select``'s help; the forms themselves live on the registered selectors.
_SELECT_HELP = "which trial: a selection spec (default: knee); `search selectors` lists the forms"
_DATA_CHANGED_HELP = (
    "your dataset changed since this search was launched (launch refuses that otherwise): go "
    "on with the new data, the change recorded in the study and its unfinished trials started "
    "again"
)


class _Parser(argparse.ArgumentParser):
    """Errors name the argument, the value and what is allowed, as one paragraph (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def _version() -> str:
    from importlib import metadata

    try:
        return f"(npas) {metadata.version('npas')}"
    except metadata.PackageNotFoundError:
        return "(npas) unknown"


def build_parser() -> argparse.ArgumentParser:
    """The ``search`` argument parser with every subcommand."""
    parser = _Parser(
        prog="search",
        description="npas: Neural Parameter Allocation Search. Launch a multi-objective search "
        "over architectures x parameter budgets x Shapeshifter mappings on Ray Tune, then look "
        "at its Pareto front, export a trial and train it again. Every search is recorded in "
        "an Optuna storage.",
        epilog="Exit codes: 0 done, 2 bad argument or config, 1 other error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, run: Callable[[argparse.Namespace], int], text: str) -> _Parser:
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.set_defaults(run=run)
        return cmd

    cmd = add("launch", _launch, "Run or resume a search; no arguments: the digits-quick preset.")
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    cmd.add_argument(
        "--trials",
        type=_positive,
        metavar="N",
        help="total trials (a resumed search counts those already done)",
    )
    cmd.add_argument("--name", help="search (study) name; relaunching a name resumes it")
    cmd.add_argument(
        "--storage",
        metavar="URL",
        help="Optuna storage (SQLAlchemy URL); default: sqlite:///<out>/npas.db",
    )
    cmd.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster to join: HOST:PORT, or auto (RAY_ADDRESS, else the head `ray start` "
        "started on this machine); default: a local Ray, on loopback only",
    )
    cmd.add_argument(
        "--out",
        metavar="DIR",
        help="run folder: storage, Ray files, trained models (default: the config's, runs)",
    )
    cmd.add_argument(
        "--time-limit",
        "--time-budget",  # its name before the rename to limits; kept for one release
        dest="time_limit",
        metavar="T",
        help="start no trial once it would pass this wall-clock limit (45m, 2h, 90s); the "
        "trials in flight finish (limits.time)",
    )
    _flag(cmd, "--quiet", "no live progress lines")
    _flag(cmd, "--data-changed", _DATA_CHANGED_HELP)
    _import_options(cmd, reads=False)

    cmd = add(
        "check",
        _check,
        "Check a config and your code as launch does, then print the resolved search (space, "
        "objectives, budgets, what one trial costs); create, start and train nothing.",
    )
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    _flag(cmd, "--data-changed", _DATA_CHANGED_HELP)
    _import_options(cmd, reads=False)
    cmd.set_defaults(**dict.fromkeys(("trials", "name", "storage", "address", "out",
                                      "time_limit")))  # fmt: skip

    cmd = add("status", _status, "Every search in a storage: trials, objectives, front, best.")
    _storage_options(cmd)
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")
    cmd.add_argument(
        "--trial", type=int, metavar="N", help="one trial: why it ended, the rung decisions"
    )
    cmd.add_argument("--name", help="the search of --trial, when the storage holds several")

    cmd = add("trials", _trials, "Every trial of a search: outcome, hyper-parameters, why.")
    _study_options(cmd)
    cmd.add_argument("--state", choices=TRIAL_STATES, metavar="Column.STATE",
                     help=f"only these: {', '.join(TRIAL_STATES)}")  # fmt: skip
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")

    cmd = add("delete", _delete, "Delete one search from its storage (its files stay).")
    cmd.add_argument("--name", required=True, help="the search (study) to delete")
    _storage_options(cmd)
    _flag(cmd, "--yes", "do not ask (required without a terminal)")

    cmd = add("stop", _stop, "Stop a running search from another shell, as Ctrl-C would.")
    cmd.add_argument("--name", required=True, help="the search (study) to stop")
    _storage_options(cmd)

    cmd = add("pareto", _pareto, "The feasible non-dominated trials with every indicator.")
    _study_options(cmd, objectives="front on these metrics")
    cmd.add_argument("--format", choices=_FORMATS, default="table", help="output format")

    cmd = add("report", _report, "Write the efficiency report (HTML, Markdown, PNG, CSV).")
    _study_options(cmd, writes=True)
    cmd.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    cmd.add_argument("--select", default="knee", metavar="SPEC", help=_SELECT_HELP)

    cmd = add("export", _export, "Write a training-ready bundle of one trial.")
    _study_options(cmd, objectives="front for knee/pepr on these metrics", writes=True)
    cmd.add_argument("--select", default=None, metavar="SPEC",
                     help="which trial: a selection spec (default: the search's recommendation, "
                     "else knee); `search selectors` lists the forms")  # fmt: skip
    cmd.add_argument("--out", required=True, metavar="DIR", help="bundle folder")
    _flag(
        cmd,
        "--from-checkpoint",
        "weights from the trial's latest checkpoint, kept in the bundle for `search train`",
    )
    _flag(cmd, "--replace", "replace the npas bundle in --out (never a folder of other files)")

    cmd = add("train", _train, "Retrain a bundle at a full schedule (or from its checkpoint).")
    cmd.add_argument("bundle", metavar="BUNDLE", help="folder written by `search export`")
    cmd.add_argument(
        "--epochs", type=_positive, metavar="N", help="epochs (default: 4x the search's)"
    )
    cmd.add_argument(
        "--out",
        metavar="DIR",
        help="where train.json and trained/model.pt go (default: the bundle folder)",
    )
    cmd.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    _import_options(cmd)
    cmd.add_argument(
        "--seed", type=_count, metavar="N",
        help="seed of initialisation, data order and validation split (default: the bundle's)",
    )  # fmt: skip
    _flag(
        cmd,
        "--from-checkpoint",
        "start from the checkpoint the bundle holds (`search export --from-checkpoint`)",
    )
    _flag(
        cmd,
        "--with-val",
        "train on the training and validation splits (the model was chosen on validation; "
        "train.json says train_on: train+val)",
    )

    cmd = add(
        "replay",
        _replay,
        "Replay a finished search's own learning curves under other schedulers on a simulated "
        "clock: how long each would have taken to reach the search's final hypervolume.",
    )
    _study_options(cmd)
    cmd.add_argument("--scheduler", choices=("moasha", "asha", "fifo"), default="moasha",
                     help="the scheduler to compare with FIFO (default: moasha)")  # fmt: skip
    cmd.add_argument("--type", choices=("stopping", "promotion"), dest="kind",
                     help="MOASHA's type (default: both)")  # fmt: skip
    cmd.add_argument("--algorithm", metavar="NAME",
                     help="the optimiser replayed, as the config's algorithm (default: the "
                     "search's own)")  # fmt: skip
    renamed = cmd.add_argument("--optimiser", dest="algorithm", action=_Renamed,
                               help=argparse.SUPPRESS)  # fmt: skip
    renamed.metavar_new = "--algorithm"  # type: ignore[attr-defined]
    cmd.add_argument("--workers", type=_positive, default=2, metavar="N",
                     help="trials trained at once in the replay (default: 2)")  # fmt: skip
    cmd.add_argument("--seeds", type=_positive, default=20, metavar="N",
                     help="replays per scheduler (default: 20)")  # fmt: skip
    cmd.add_argument("--jobs", type=_positive, metavar="N",
                     help="replays run at once, at most the CPU cores this command may use "
                     "(default: 2, or 1 on one core)")  # fmt: skip
    cmd.add_argument("--plot", metavar="PNG", help="also draw hypervolume against time here")
    cmd.add_argument("--format", choices=("table", "json"), default="table",
                     help="output format")  # fmt: skip

    cmd = add("dashboard", _dashboard, "Serve optuna-dashboard on a storage until Ctrl-C.")
    _storage_options(cmd)
    cmd.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    cmd.add_argument(
        "--port", type=_port, default=8080, help="TCP port; 0: any free one (default: 8080)"
    )
    _flag(cmd, "--expose", "allow a --host beyond loopback (the dashboard has no authentication)")
    _flag(
        cmd,
        "--writable",
        "let the dashboard change the storage (notes, deleting studies); default read-only",
    )

    cmd = add(
        "families",
        _families,
        "List the architecture families: the layouts each takes (image, signal, table) and "
        "its hyper-parameters.",
    )
    cmd.add_argument(
        "--layout",
        metavar="LAYOUT",
        help="only the families that take this layout: image, signal or table",
    )
    _import_options(cmd, reads=False)
    add("indicators", _indicators, "List the cost indicators: unit, direction, phase.")
    cmd = add("presets", _presets, "List the packaged search presets, or print one's YAML.")
    cmd.add_argument("--show", metavar="NAME", help="print this preset's YAML file")
    add("selectors", _selectors, "List the --select forms: knees, PePR, epsilon, best, trial.")
    return parser
