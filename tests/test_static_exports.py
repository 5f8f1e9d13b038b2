"""Every package that exports through a lazy map (``_EXPORTS`` and ``spaces._lazy.lazy_getattr``)
also imports the same names from the same modules under ``if TYPE_CHECKING:``, so that type
checkers and editors see its public API (go-to-definition, mypy); at run time the map still
loads each name when first used. mypy (``.ci/run``) checks that those imports resolve; this
test checks that they name what the map names, no more and no fewer."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spaces", "objectives", "search")


def _lazy_packages() -> list[str]:
    found = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            if "lazy_getattr(" in init.read_text(encoding="utf-8"):
                found.append(".".join(init.parent.relative_to(ROOT).parts))
    return found


def _lazy_call(tree: ast.Module) -> ast.Call:
    """The module's ``__getattr__ = lazy_getattr(__name__, exports[, modules][, shared=])``."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__getattr__"]
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "lazy_getattr"
        ):
            return node.value
    raise AssertionError("no `__getattr__ = lazy_getattr(...)` at the top level")


def _lazy_names(package: str, tree: ast.Module) -> set[tuple[str, str]]:
    """(module, name) of every name the lazy map resolves, subpackages as (package, name)."""
    module = importlib.import_module(package)  # light: the package's own names load lazily
    call = _lazy_call(tree)
    args = [a.id for a in call.args[1:] if isinstance(a, ast.Name)]
    assert len(args) == len(call.args) - 1, "lazy_getattr's maps are module-level names"
    exports = getattr(module, args[0])
    names = {(source, name) for name, source in exports.items()}
    if len(args) > 1:  # the subpackages or modules loaded by name
        names |= {(package, name) for name in getattr(module, args[1])}
    for keyword in call.keywords:  # shared=: the names npas's other packages import
        assert keyword.arg == "shared" and isinstance(keyword.value, ast.Name), keyword.arg
        names |= {(source, name) for name, source in getattr(module, keyword.value.id).items()}
    return names


def _static_names(package: str, tree: ast.Module) -> set[tuple[str, str]]:
    """(module, name) of every import under the top-level ``if TYPE_CHECKING:``."""
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    ]
    assert blocks, f"{package}/__init__.py has no top-level `if TYPE_CHECKING:` block"
    names = set()
    for block in blocks:
        for node in block.body:
            assert isinstance(node, ast.ImportFrom) and node.level == 0, (
                f"line {node.lineno}: only absolute `from module import name as name` here"
            )
            for alias in node.names:
                # `name as name` marks an explicit re-export (PEP 484), for every checker
                assert alias.asname == alias.name, (
                    f"line {node.lineno}: write `{alias.name} as {alias.name}`"
                )
                names.add((str(node.module), alias.name))
    return names


def test_the_lazy_packages_are_found() -> None:
    found = _lazy_packages()
    assert {"spaces", "objectives", "search.config", "search.pareto"} <= set(found)


@pytest.mark.parametrize("package", _lazy_packages())
def test_type_checking_imports_match_the_lazy_map(package: str) -> None:
    init = ROOT / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    lazy, static = _lazy_names(package, tree), _static_names(package, tree)
    assert sorted(static - lazy) == [], "imported under TYPE_CHECKING, not in the lazy map"
    assert sorted(lazy - static) == [], "in the lazy map, not imported under TYPE_CHECKING"
