"""The ``search`` argument parser: every subcommand, its options and the command it runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from search.cli._launch import _check, _launch
from search.cli._lists import _families, _indicators, _presets, _selectors
from search.cli._manage import _dashboard, _delete, _stop
from search.cli._options import (
    DATA_CHANGED_HELP,
    FORMATS,
    SELECT_HELP,
    Renamed,
    count,
    flag,
    import_options,
    port,
    positive,
    storage_options,
    study_options,
)
from search.cli._results import _export, _pareto, _replay, _report, _train
from search.cli._status import _status, _trials
from search.config import TRUST_EVIDENCE
from search.record import TRIAL_STATES

#: Adds one subcommand: its name, the function it runs and its help; the parser it made.
_Add = Callable[[str, Callable[[argparse.Namespace], int], str], "_Parser"]


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

    for command in _COMMANDS:
        command(add)
    return parser


def _launch_command(add: _Add) -> None:
    cmd = add("launch", _launch, "Run or resume a search; no arguments: the digits-quick preset.")
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    cmd.add_argument(
        "--trials",
        type=positive,
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
    flag(cmd, "--quiet", "no live progress lines")
    flag(cmd, "--data-changed", DATA_CHANGED_HELP)
    import_options(cmd, reads=False)


def _check_command(add: _Add) -> None:
    cmd = add(
        "check",
        _check,
        "Check a config and your code as launch does, then print the resolved search (space, "
        "objectives, budgets, what one trial costs); create, start and train nothing.",
    )
    cmd.add_argument("config", nargs="?", metavar="CONFIG", help="search config YAML file")
    cmd.add_argument("--preset", metavar="NAME", help="a packaged preset (see `search presets`)")
    flag(cmd, "--data-changed", DATA_CHANGED_HELP)
    import_options(cmd, reads=False)
    cmd.set_defaults(**dict.fromkeys(("trials", "name", "storage", "address", "out",
                                      "time_limit")))  # fmt: skip


def _status_command(add: _Add) -> None:
    cmd = add("status", _status, "Every search in a storage: trials, objectives, front, best.")
    storage_options(cmd)
    cmd.add_argument("--format", choices=FORMATS, default="table", help="output format")
    cmd.add_argument(
        "--trial", type=int, metavar="N", help="one trial: why it ended, the rung decisions"
    )
    cmd.add_argument("--name", help="the search of --trial, when the storage holds several")


def _trials_command(add: _Add) -> None:
    cmd = add("trials", _trials, "Every trial of a search: outcome, hyper-parameters, why.")
    study_options(cmd)
    cmd.add_argument("--state", choices=TRIAL_STATES, metavar="Column.STATE",
                     help=f"only these: {', '.join(TRIAL_STATES)}")  # fmt: skip
    cmd.add_argument("--format", choices=FORMATS, default="table", help="output format")


def _delete_command(add: _Add) -> None:
    cmd = add("delete", _delete, "Delete one search from its storage (its files stay).")
    cmd.add_argument("--name", required=True, help="the search (study) to delete")
    storage_options(cmd)
    flag(cmd, "--yes", "do not ask (required without a terminal)")


def _stop_command(add: _Add) -> None:
    cmd = add("stop", _stop, "Stop a running search from another shell, as Ctrl-C would.")
    cmd.add_argument("--name", required=True, help="the search (study) to stop")
    storage_options(cmd)


def _pareto_command(add: _Add) -> None:
    cmd = add("pareto", _pareto, "The feasible non-dominated trials with every indicator.")
    study_options(cmd, objectives="front on these metrics")
    cmd.add_argument("--format", choices=FORMATS, default="table", help="output format")


def _report_command(add: _Add) -> None:
    cmd = add("report", _report, "Write the efficiency report (HTML, Markdown, PNG, CSV).")
    study_options(cmd, writes=True)
    cmd.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    cmd.add_argument("--select", default="knee", metavar="SPEC", help=SELECT_HELP)


def _export_command(add: _Add) -> None:
    cmd = add("export", _export, "Write a training-ready bundle of one trial.")
    study_options(cmd, objectives="front for knee/pepr on these metrics", writes=True)
    cmd.add_argument("--select", default=None, metavar="SPEC",
                     help="which trial: a selection spec (default: the search's recommendation, "
                     "else knee); `search selectors` lists the forms")  # fmt: skip
    cmd.add_argument("--out", required=True, metavar="DIR", help="bundle folder")
    flag(
        cmd,
        "--from-checkpoint",
        "weights from the trial's latest checkpoint, kept in the bundle for `search train`",
    )
    flag(cmd, "--replace", "replace the npas bundle in --out (never a folder of other files)")


def _train_command(add: _Add) -> None:
    cmd = add("train", _train, "Retrain a bundle at a full schedule (or from its checkpoint).")
    cmd.add_argument("bundle", metavar="BUNDLE", help="folder written by `search export`")
    cmd.add_argument(
        "--epochs", type=positive, metavar="N", help="epochs (default: 4x the search's)"
    )
    cmd.add_argument(
        "--out",
        metavar="DIR",
        help="where train.json and trained/model.pt go (default: the bundle folder)",
    )
    cmd.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    import_options(cmd)
    cmd.add_argument(
        "--seed", type=count, metavar="N",
        help="seed of initialisation, data order and validation split (default: the bundle's)",
    )  # fmt: skip
    flag(
        cmd,
        "--from-checkpoint",
        "start from the checkpoint the bundle holds (`search export --from-checkpoint`)",
    )
    flag(
        cmd,
        "--with-val",
        "train on the training and validation splits (the model was chosen on validation; "
        "train.json says train_on: train+val)",
    )


def _replay_command(add: _Add) -> None:
    cmd = add(
        "replay",
        _replay,
        "Replay a finished search's own learning curves under other schedulers on a simulated "
        "clock: how long each would have taken to reach the search's final hypervolume.",
    )
    study_options(cmd)
    cmd.add_argument("--scheduler", choices=("moasha", "asha", "fifo"), default="moasha",
                     help="the scheduler to compare with FIFO (default: moasha)")  # fmt: skip
    cmd.add_argument("--type", choices=("stopping", "promotion"), dest="kind",
                     help="MOASHA's type (default: both)")  # fmt: skip
    cmd.add_argument("--trust-by", choices=TRUST_EVIDENCE, dest="trust_by",
                     help="also replay stopping MOASHA with its rungs trusted this way "
                     "(scheduler: {trust_rungs: true, trust_by: ...}): chain, audit, pooled, "
                     "or own (a lab design)")  # fmt: skip
    cmd.add_argument("--algorithm", metavar="NAME",
                     help="the optimiser replayed, as the config's algorithm (default: the "
                     "search's own)")  # fmt: skip
    renamed = cmd.add_argument("--optimiser", dest="algorithm", action=Renamed,
                               help=argparse.SUPPRESS)  # fmt: skip
    renamed.metavar_new = "--algorithm"  # type: ignore[attr-defined]
    cmd.add_argument("--workers", type=positive, default=2, metavar="N",
                     help="trials trained at once in the replay (default: 2)")  # fmt: skip
    cmd.add_argument("--seeds", type=positive, default=20, metavar="N",
                     help="replays per scheduler (default: 20)")  # fmt: skip
    cmd.add_argument("--jobs", type=positive, metavar="N",
                     help="replays run at once, at most the CPU cores this command may use "
                     "(default: 2, or 1 on one core)")  # fmt: skip
    cmd.add_argument("--plot", metavar="PNG", help="also draw hypervolume against time here")
    cmd.add_argument("--format", choices=("table", "json"), default="table",
                     help="output format")  # fmt: skip


def _dashboard_command(add: _Add) -> None:
    cmd = add("dashboard", _dashboard, "Serve optuna-dashboard on a storage until Ctrl-C.")
    storage_options(cmd)
    cmd.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    cmd.add_argument(
        "--port", type=port, default=8080, help="TCP port; 0: any free one (default: 8080)"
    )
    flag(cmd, "--expose", "allow a --host beyond loopback (the dashboard has no authentication)")
    flag(
        cmd,
        "--writable",
        "let the dashboard change the storage (notes, deleting studies); default read-only",
    )


def _families_command(add: _Add) -> None:
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
    import_options(cmd, reads=False)


def _indicators_command(add: _Add) -> None:
    add("indicators", _indicators, "List the cost indicators: unit, direction, phase.")


def _presets_command(add: _Add) -> None:
    cmd = add("presets", _presets, "List the packaged search presets, or print one's YAML.")
    cmd.add_argument("--show", metavar="NAME", help="print this preset's YAML file")


def _selectors_command(add: _Add) -> None:
    add("selectors", _selectors, "List the --select forms: knees, PePR, epsilon, best, trial.")


#: The subcommands, in the order ``search --help`` lists them.
_COMMANDS: tuple[Callable[[_Add], None], ...] = (
    _launch_command,
    _check_command,
    _status_command,
    _trials_command,
    _delete_command,
    _stop_command,
    _pareto_command,
    _report_command,
    _export_command,
    _train_command,
    _replay_command,
    _dashboard_command,
    _families_command,
    _indicators_command,
    _presets_command,
    _selectors_command,
)
