"""What the commands share: the storage and the study a command reads, its objectives, the
user's modules, and how a table is written as data."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from search._format import WIDTH
from search._urls import masked_url
from search.errors import ConfigError
from spaces import did_you_mean

if TYPE_CHECKING:  # loaded by the commands that need them: --help and presets stay quick
    import optuna
    import pandas as pd

_DEFAULT_PRESET = "digits-quick"
#: The widest line a command prints (:data:`search._format.WIDTH`).
_WIDTH = WIDTH


# -- storage and studies ------------------------------------------------------------------------


def _storage_url(args: argparse.Namespace) -> str:
    """``--storage``, else ``sqlite:///<--run folder>/npas.db``.

    One meaning per flag: ``--run`` is the run folder a command reads a search from (status,
    pareto, report, export, dashboard), ``--out`` where a command writes (launch's run folder,
    the report, the bundle, the retrained model).
    """
    from search.config import default_storage_url

    if args.storage:
        return str(args.storage)
    return default_storage_url(args.run_folder)


def _open(url: str) -> optuna.storages.RDBStorage:
    """The storage for reading (nothing is created in it: see ``read_storage``)."""
    from search.record import read_storage

    return read_storage(url)


def _names(storage: optuna.storages.BaseStorage) -> list[str]:
    return sorted(s.study_name for s in storage.get_all_studies())


def _quiet_optuna() -> None:
    """Optuna's INFO lines and "experimental" warnings are noise for a command-line user."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _user_code(args: argparse.Namespace, recorded: Sequence[str], whose: str) -> None:
    """Imports ``--import`` first, then the modules a search or bundle recorded, saying which
    (importing runs code, and a study may come from a shared storage); ``--no-imports``
    imports none of the recorded ones, and what needs one then names it."""
    from search._usercode import (
        import_modules,
        module_name,
        normalise_imports,
        refuse_imports,
        stand_in,
    )

    given = normalise_imports(args.imports, path="--import")
    modules = import_modules(given, path="--import")
    supplied = {module_name(e): m for e, m in zip(given, modules, strict=True)}
    pending = []
    for entry in recorded:
        if module_name(entry) in supplied:  # a file moved since: the same name, elsewhere
            stand_in(entry, supplied[module_name(entry)])
        else:
            pending.append(entry)
    if not pending:
        return
    names = ", ".join(pending)
    if args.no_imports:
        refuse_imports()
        print(f"search {args.command}: not importing {whose} modules ({names}): --no-imports",
              file=sys.stderr)  # fmt: skip
        return
    print(f"search {args.command}: importing {whose} modules: {names} (--no-imports skips "
          "them)", file=sys.stderr)  # fmt: skip
    import_modules(pending, path=f"{whose} imports")


def _study(args: argparse.Namespace) -> optuna.Study:
    """The study named by ``--name``; with no name, the storage's only study. The modules it
    recorded are imported (:func:`_user_code`)."""
    import optuna

    _quiet_optuna()
    url = _storage_url(args)
    storage = _open(url)
    names = _names(storage)
    name = args.name
    if name is None:
        if len(names) != 1:
            raise ConfigError(
                f"--name: missing; allowed: one of the studies in {masked_url(url)!r}: "
                f"{names or 'none'}"
            )
        name = names[0]
    if name not in names:
        raise ConfigError(
            f"--name: got {name!r}{did_you_mean(name, names)}; allowed: one of the studies in "
            f"{masked_url(url)}: {names}"
        )
    study = optuna.load_study(study_name=name, storage=storage)
    from search.record import stored_config  # loads Optuna: not at the CLI's import

    recorded = stored_config(study).get("imports") or []
    _user_code(args, recorded, "the search's")
    return study


def _objectives(study: optuna.Study, text: str | None) -> list[tuple[str, str]] | None:
    """``--objectives a,b`` as (name, direction) pairs (the study's direction where it has one)."""
    if text is None:
        return None
    from search.pareto import direction_of, objectives_of

    stored = objectives_of(study)
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ConfigError(
            f"--objectives: got {text!r}; allowed: comma-separated metric names such as "
            "accuracy,params"
        )
    return [(n, direction_of(n, stored)) for n in names]


def _wrote_as_data(frame: pd.DataFrame, form: str) -> bool:
    """Writes ``frame`` as CSV or as JSON records when ``form`` asks for one (integers as
    integers, missing values empty or null: :func:`search._format.data_text`); True if it
    did."""
    from search._format import data_text

    if form in ("csv", "json"):
        sys.stdout.write(data_text(frame, form))
    return form in ("csv", "json")
