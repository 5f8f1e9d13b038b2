"""The user's own code, declared once (``imports:`` in a config, ``--import`` on the command line).

A search names modules (``my_pkg.models``) or ``.py`` files that register families, datasets and
cost indicators. They are imported by the driver before the config is checked, by every Ray
worker before a trial starts (:func:`search.trial.run_trial` imports a trial config's
``imports``), and by every later command that reads the study: the study records them.

A file is imported under a name of its own (:func:`import_name`: its stem and a digest of its
path), never its bare stem: a ``json.py`` or ``ray.py`` of the user's would otherwise be taken
for the module of that name already imported (and never run), and two ``plugin.py`` from
different folders for one another. The name is the same on every process, so what a worker
pickles (a user's exception) is found by the driver. The job carries each file under that name
(Ray's ``runtime_env``: :func:`job_env`), so a worker that lacks the path imports the shipped
copy. A dotted name is imported as Python imports it; one of the standard library is refused.

Importing runs code, and a study may come from a shared database: a read command says which
recorded modules it imports, and ``--no-imports`` reads a study without them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from spaces import ConfigError

__all__ = [
    "IMPORT_HINT",
    "import_modules",
    "import_name",
    "job_env",
    "module_name",
    "normalise_imports",
    "refuse_imports",
    "stand_in",
]

#: How to supply a module that a later command cannot import.
IMPORT_HINT = "pass it with --import MODULE_OR_FILE.py"


def normalise_imports(
    entries: Any, *, path: str = "imports", base: str | Path | None = None
) -> tuple[str, ...]:
    """The entries as recorded: dotted module names as given, ``.py`` files as absolute paths
    (relative to ``base``, default the working folder); duplicates dropped, order kept.

    Raises:
        ConfigError: not a list of non-empty strings, or a name that is not a module path.
    """
    if entries is None:
        return ()
    if isinstance(entries, str) or not isinstance(entries, Iterable):
        raise ConfigError(
            f"{path}: got {entries!r}; allowed: a list of module names (my_pkg.models) or "
            ".py files"
        )
    out: list[str] = []
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(f"{where}: got {entry!r}; allowed: a module name or a .py file")
        entry = entry.strip()
        if entry.endswith(".py"):
            file = Path(entry).expanduser()
            if not file.is_absolute():
                file = Path(base or Path.cwd()) / file
            entry = _user_file(file, where)
        elif not all(part.isidentifier() for part in entry.split(".")):
            raise ConfigError(
                f"{where}: got {entry!r}; allowed: a dotted module name (my_pkg.models) or a "
                "path ending in .py"
            )
        elif entry.partition(".")[0] in sys.stdlib_module_names:  # a json.py meant, not json
            raise ConfigError(
                f"{where}: got {entry!r}, a module of Python's standard library; allowed: a "
                f"module of yours or a .py file (a file {entry.partition('.')[0]}.py is imported "
                "under a name of its own)"
            )
        if entry not in out:
            out.append(entry)
    return tuple(out)


def _user_file(file: Path, where: str) -> str:
    """A ``.py`` file's absolute path, links resolved; refused in one line when it is a
    symlink loop (a RuntimeError's traceback before) or no regular file (a FIFO would keep
    the import waiting for ever). A missing file is left to the import, which names it."""
    try:
        found = file.resolve(strict=True)
    except FileNotFoundError:
        return os.path.realpath(file)
    except (OSError, RuntimeError):  # a loop: RuntimeError, or OSError ELOOP
        raise ConfigError(
            f"{where}: {file} cannot be opened: it is a symlink loop (a link that leads back to "
            "itself); allowed: a .py file"
        ) from None
    if not found.is_file():
        raise ConfigError(f"{where}: {found} is not a regular file; allowed: a .py file")
    return str(found)


#: Set by :func:`refuse_imports` (``--no-imports``): nothing more is imported in this process.
_REFUSED: list[bool] = []


def refuse_imports() -> None:
    """From now on this process imports no recorded module (``--no-imports``): what needs one
    fails naming it. Modules already imported (``--import``) stay usable."""
    _REFUSED.append(True)


def module_name(entry: str) -> str:
    """The name an entry is known by in messages and matched by (a file moved since answers to
    the same name): a file's stem, else the dotted name itself."""
    return Path(entry).stem if entry.endswith(".py") else entry


def import_name(entry: str) -> str:
    """The name an entry is imported under: a dotted name as it is; a ``.py`` file (recorded
    absolute) under ``npas_user_<stem>_<digest of its path>``, which shadows no other module
    and is the same on every process."""
    if not entry.endswith(".py"):
        return entry
    stem = re.sub(r"\W", "_", Path(entry).stem)
    return f"npas_user_{stem}_{hashlib.sha256(entry.encode()).hexdigest()[:10]}"


def stand_in(entry: str, module: ModuleType) -> None:
    """From now on ``module`` (given with ``--import``) answers for the recorded ``entry`` in
    this process: a file moved since the search recorded it, supplied from where it is now."""
    sys.modules.setdefault(import_name(entry), module)


def import_modules(
    entries: Sequence[str], *, path: str = "imports", shipped_first: bool = False
) -> list[ModuleType]:
    """Imports every entry once per process (a module already imported is not run again, so
    its registrations do not clash with themselves).

    A ``.py`` entry is imported from its file when the file is here, else by its import name
    (the copy a cluster job shipped); with ``shipped_first`` (a Ray worker), by that name
    whenever a module of that name is importable, so every worker runs the copy the job
    carried.

    Raises:
        ConfigError: one line naming the entry and why it failed: not found, an error while
            it ran (a name registered twice, a syntax error, ...), or ``sys.exit()`` called
            while it was imported (which would otherwise end the command silently).
    """
    modules = []
    for i, entry in enumerate(entries):
        name = import_name(entry)
        if name in sys.modules:
            modules.append(sys.modules[name])
            continue
        if _REFUSED:
            raise ConfigError(
                f"{path}[{i}]: needs module {module_name(entry)!r}, not imported (--no-imports); "
                f"{IMPORT_HINT}, or leave out --no-imports"
            )
        shown = f"module {module_name(entry)!r}" + (f" ({entry})" if entry != name else "")
        try:
            modules.append(_import(entry, name, shipped_first))
        except BaseException as err:  # user code raises anything, SystemExit included
            sys.modules.pop(name, None)
            if isinstance(err, KeyboardInterrupt):
                raise
            why = (
                f"it called sys.exit({err.code!r}), which a module npas imports must not do"
                if isinstance(err, SystemExit)
                else f"{type(err).__name__}: {_first_line(err)}; {IMPORT_HINT}"
            )
            raise ConfigError(f"{path}[{i}]: {shown} cannot be imported: {why}") from None
    return modules


def _import(entry: str, name: str, shipped_first: bool) -> ModuleType:
    file = Path(entry)
    by_name = shipped_first and importlib.util.find_spec(name) is not None
    if not entry.endswith(".py") or not file.is_file() or by_name:
        if entry.endswith(".py") and importlib.util.find_spec(name) is None:
            raise FileNotFoundError(f"no file {entry} here, and no copy of it shipped")
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None  # a .py file always has one
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up while it runs
    spec.loader.exec_module(module)
    return module


def _first_line(err: BaseException) -> str:
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


@contextlib.contextmanager
def job_env(entries: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Ray's ``runtime_env`` for a job that runs the user's code, valid while the context is
    open (``ray.init`` uploads it).

    ``working_dir`` is a fresh folder holding a copy of each ``.py`` file under its import
    name; ``py_modules`` the top-level package folder (or file) of each named module that is
    not installed (not under the interpreter's ``site-packages`` or standard library). A
    working folder of its own also keeps the driver's off the workers' ``sys.path``: without
    one Ray puts it first there, so that a ``search.py`` or ``random.py`` in the folder the
    user launched from would replace npas's or the standard library's module in every trial.
    """
    installed = {Path(p).resolve() for p in sysconfig.get_paths().values() if p}
    packages: list[str] = []
    with tempfile.TemporaryDirectory(prefix="npas-code-") as folder:
        for entry in entries:
            if entry.endswith(".py"):
                if Path(entry).is_file():  # else the driver failed to import it already
                    shutil.copyfile(entry, Path(folder) / f"{import_name(entry)}.py")
                continue
            top = sys.modules.get(entry.partition(".")[0])
            where = getattr(top, "__path__", None)
            file = Path(next(iter(where))) if where else Path(getattr(top, "__file__", "") or "")
            if file.name and not any(file.resolve().is_relative_to(p) for p in installed):
                packages.append(str(file.resolve()))
        env: dict[str, Any] = {"working_dir": folder}
        if packages:
            env["py_modules"] = list(dict.fromkeys(packages))
        yield env
