"""The user's own code, declared once (``imports:`` in a config, ``--import`` on the command line).

A search names modules (``my_pkg.models``) or ``.py`` files that register families, datasets and
cost indicators. They are imported by the driver before the config is checked, by every Ray
worker before a trial starts (:func:`search.trial.run_trial` imports a trial config's
``imports``), and by every later command that reads the study: the study records them. A file
is imported under its stem, so the same code answers to the same name on every process; on a
cluster it travels with the job (Ray's ``runtime_env`` ``py_modules``: :func:`shipped`), so a
worker that lacks the path imports the shipped copy by that name.

Importing runs code, and a study may come from a shared database: a read command says which
recorded modules it imports, and ``--no-imports`` reads a study without them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from spaces._errors import ConfigError

__all__ = [
    "IMPORT_HINT",
    "import_modules",
    "module_name",
    "normalise_imports",
    "refuse_imports",
    "runtime_env",
    "shipped",
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
            entry = str(file.resolve())
        elif not all(part.isidentifier() for part in entry.split(".")):
            raise ConfigError(
                f"{where}: got {entry!r}; allowed: a dotted module name (my_pkg.models) or a "
                "path ending in .py"
            )
        if entry not in out:
            out.append(entry)
    return tuple(out)


#: Set by :func:`refuse_imports` (``--no-imports``): nothing more is imported in this process.
_REFUSED: list[bool] = []


def refuse_imports() -> None:
    """From now on this process imports no recorded module (``--no-imports``): what needs one
    fails naming it. Modules already imported (``--import``) stay usable."""
    _REFUSED.append(True)


def module_name(entry: str) -> str:
    """The name an entry is imported under: a file's stem, else the dotted name itself."""
    return Path(entry).stem if entry.endswith(".py") else entry


def import_modules(
    entries: Sequence[str], *, path: str = "imports", shipped_first: bool = False
) -> list[ModuleType]:
    """Imports every entry once per process (a module already imported is not run again, so
    its registrations do not clash with themselves).

    A ``.py`` entry is imported from its file when the file is here, else by its stem (the copy
    a cluster job shipped); with ``shipped_first`` (a Ray worker), by its stem whenever a
    module of that name is importable, so every worker runs the copy the job carried.

    Raises:
        ConfigError: one line naming the entry and why it failed: not found, an error while
            it ran (a name registered twice, a syntax error, ...), and how to supply it.
    """
    modules = []
    for i, entry in enumerate(entries):
        name = module_name(entry)
        if name in sys.modules:
            modules.append(sys.modules[name])
            continue
        if _REFUSED:
            raise ConfigError(
                f"{path}[{i}]: needs module {name!r}, not imported (--no-imports); "
                f"{IMPORT_HINT}, or leave out --no-imports"
            )
        try:
            modules.append(_import(entry, name, shipped_first))
        except Exception as err:  # user code raises anything; one line says what and where
            sys.modules.pop(name, None)
            raise ConfigError(
                f"{path}[{i}]: module {name!r}"
                + (f" ({entry})" if entry != name else "")
                + f" cannot be imported: {type(err).__name__}: {_first_line(err)}; "
                + IMPORT_HINT
            ) from None
    return modules


def _import(entry: str, name: str, shipped_first: bool) -> ModuleType:
    file = Path(entry)
    by_name = shipped_first and importlib.util.find_spec(name) is not None
    if not entry.endswith(".py") or not file.is_file() or by_name:
        if entry.endswith(".py") and importlib.util.find_spec(name) is None:
            raise FileNotFoundError(f"no file {entry} here, and no module {name!r} shipped")
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


def shipped(entries: Sequence[str]) -> list[str]:
    """What a cluster job must carry (Ray ``runtime_env`` ``py_modules``): each ``.py`` file,
    and the top-level package folder (or file) of each imported module that is not installed
    (not under the interpreter's ``site-packages`` or standard library)."""
    installed = {Path(p).resolve() for p in sysconfig.get_paths().values() if p}
    out: list[str] = []
    for entry in entries:
        if entry.endswith(".py"):
            out.append(entry)
            continue
        top = sys.modules.get(entry.partition(".")[0])
        where = getattr(top, "__path__", None)
        file = Path(next(iter(where))) if where else Path(getattr(top, "__file__", "") or "")
        if not file.name or any(file.resolve().is_relative_to(p) for p in installed):
            continue
        out.append(str(file.resolve()))
    return list(dict.fromkeys(out))


def runtime_env(entries: Sequence[str]) -> dict[str, Any] | None:
    """Ray's ``runtime_env`` that carries the user's code to every worker of the job (None:
    nothing to carry). ``py_modules`` rather than ``working_dir``: it ships only those
    modules, importable by name, and leaves each worker's working folder as it is."""
    modules = shipped(entries)
    return {"py_modules": modules} if modules else None
