"""The packages of ``search`` import in one direction (docs/development.md draws it): the
config declares and checks keys and reads none of them (issue 62: the registries whose names
it checks are its own, and screening is a package above it); the record reads the config
only; the schedulers read both; Ray execution reads them and is read by the command line and
the lab alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Every subpackage of ``search`` but the config: what the config must never import.
_ABOVE_CONFIG = ("record", "schedulers", "run", "lab", "pareto", "report", "bundle", "cli",
                 "trial", "optimisers", "screening", "derive")  # fmt: skip
#: package -> the packages of ``search`` it must never import (at any depth of a module).
FORBIDDEN = {
    "config": _ABOVE_CONFIG,
    "screening": ("run", "lab", "pareto", "report", "bundle", "cli", "derive", "optimisers"),
    "record": ("run", "schedulers", "lab", "pareto", "report", "bundle", "cli", "trial",
               "screening", "derive"),
    "schedulers": ("run", "lab", "pareto", "report", "bundle", "cli", "trial"),
    "pareto": ("run", "schedulers", "lab", "report", "bundle", "cli"),
    "report": ("run", "lab", "bundle", "cli"),
    "bundle": ("run", "schedulers", "lab", "report", "cli"),
    "run": ("lab", "report", "bundle", "cli"),
    "lab": ("report", "bundle", "cli"),
    "optimisers": ("run", "record", "schedulers", "lab", "pareto", "report", "bundle", "cli"),
}
#: The project's packages: one never imports another's private modules.
TOP_PACKAGES = ("spaces", "objectives", "search")


def _imported(path: Path) -> set[str]:
    """The subpackages of ``search`` a module imports (``search.run._launch`` -> ``run``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {n.split(".")[1] for n in names if n.startswith("search.") and "." in n}
    return found


def test_the_check_sees_an_import_at_any_depth(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from search.run._launch import launch\nimport search.lab\n")
    assert _imported(module) == {"run", "lab"}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_in_one_direction(package: str) -> None:
    wrong = {
        f"{path.relative_to(ROOT)} imports search.{name}"
        for path in (ROOT / "search" / package).rglob("*.py")
        for name in _imported(path) & set(FORBIDDEN[package])
    }
    assert sorted(wrong) == []


def _private_crossings(path: Path, package: tuple[str, ...]) -> list[str]:
    """The imports in a module of ``package`` that reach into another package's private module
    (``from search.record._schema import …`` outside ``search.record``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] not in TOP_PACKAGES:
                continue
            private = next((i for i, p in enumerate(parts) if p.startswith("_")), None)
            if private is not None and package[:private] != tuple(parts[:private]):
                found.append(f"line {node.lineno}: {name}")
    return found


def test_the_private_import_check_knows_its_own_package(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from search.record._schema import TrialAttr\n"  # another package's private module
        "from search.record import TrialAttr\n"  # through the package: fine
        "from search.run._tuner import x\n"  # its own package's: fine
        "def f():\n    import spaces._dsl\n"  # at any depth
        "from . import _y\n"  # relative: its own package
    )
    assert _private_crossings(module, ("search", "run")) == [
        "line 1: search.record._schema",
        "line 5: spaces._dsl",
    ]


@pytest.mark.parametrize("top", TOP_PACKAGES)
def test_a_package_is_imported_through_its_init_never_its_private_modules(top: str) -> None:
    """A package's private modules are its own; what other packages use it exports (the user
    API in ``__all__``, the rest beside it in its ``if TYPE_CHECKING:`` block), so it can move
    its code around."""
    wrong = [
        f"{path.relative_to(ROOT)} {crossing}"
        for path in sorted((ROOT / top).rglob("*.py"))
        for crossing in _private_crossings(path, path.relative_to(ROOT).parent.parts)
    ]
    assert wrong == []
