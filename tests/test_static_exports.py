"""Every lazy package declares each name it exports once, in its ``if TYPE_CHECKING:`` block:
mypy (``.ci/run``) checks that those imports resolve, and these tests that the same block is
what the package gives at run time (``spaces._lazy.lazy_exports``), that ``__all__`` names only
what it gives, and that no second map of names is left beside the block."""

from __future__ import annotations

import ast
import importlib
import sys
import types
from pathlib import Path

import pytest

from spaces._lazy import exported_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spaces", "objectives", "search")


def _lazy_packages() -> list[str]:
    found = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            if "lazy_exports(__name__)" in init.read_text(encoding="utf-8"):
                found.append(".".join(init.parent.relative_to(ROOT).parts))
    return found


def _init(package: str) -> Path:
    return ROOT / package.replace(".", "/") / "__init__.py"


def test_the_lazy_packages_are_found() -> None:
    found = _lazy_packages()
    assert {"spaces", "objectives", "search", "search.config", "search.pareto"} <= set(found)


@pytest.mark.parametrize("package", _lazy_packages())
def test_each_declared_name_loads_from_where_it_is_declared(package: str) -> None:
    module = importlib.import_module(package)
    names = exported_names(_init(package))
    assert names, f"{package} declares nothing under TYPE_CHECKING"
    for name, source in names.items():
        got = getattr(module, name)
        if source == package:
            assert got is importlib.import_module(f"{package}.{name}"), name
        else:
            assert got is getattr(importlib.import_module(source), name), name


@pytest.mark.parametrize("package", _lazy_packages())
def test_all_names_only_what_the_package_gives(package: str) -> None:
    module = importlib.import_module(package)
    declared = set(exported_names(_init(package)))
    eager = {name for name, value in vars(module).items() if not name.startswith("_")}
    assert sorted(set(module.__all__) - declared - eager) == []
    assert len(module.__all__) == len(set(module.__all__)), "a name twice in __all__"


@pytest.mark.parametrize("package", _lazy_packages())
def test_no_second_map_of_names(package: str) -> None:
    tree = ast.parse(_init(package).read_text(encoding="utf-8"))
    assigned = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert assigned <= {"__all__", "__getattr__"}, sorted(assigned)


def _package(tmp_path: Path, block: str) -> str:
    """A throwaway package ``lazytest`` whose ``__init__`` holds ``block`` and the helper."""
    folder = tmp_path / "lazytest"
    folder.mkdir()
    (folder / "_held.py").write_text("VALUE = 41\n", encoding="utf-8")
    (folder / "sub.py").write_text("X = 1\n", encoding="utf-8")
    (folder / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from spaces._lazy import lazy_exports\n"
        f"if TYPE_CHECKING:\n{block}"
        "__getattr__ = lazy_exports(__name__)\n",
        encoding="utf-8",
    )
    return str(tmp_path)


@pytest.fixture
def lazytest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def make(block: str) -> types.ModuleType:
        monkeypatch.syspath_prepend(_package(tmp_path, block))
        for name in [m for m in sys.modules if m.split(".")[0] == "lazytest"]:
            monkeypatch.delitem(sys.modules, name)
        return importlib.import_module("lazytest")

    yield make
    for name in [m for m in sys.modules if m.split(".")[0] == "lazytest"]:
        del sys.modules[name]


def test_a_name_loads_only_when_first_used(lazytest) -> None:
    package = lazytest("    from lazytest._held import VALUE as VALUE\n"
                       "    from lazytest import sub as sub\n")  # fmt: skip
    assert "lazytest._held" not in sys.modules and "lazytest.sub" not in sys.modules
    assert package.VALUE == 41
    assert "lazytest._held" in sys.modules and "lazytest.sub" not in sys.modules
    assert package.sub.X == 1


def test_an_undeclared_name_is_an_attribute_error(lazytest) -> None:
    package = lazytest("    from lazytest._held import VALUE as VALUE\n")
    with pytest.raises(AttributeError, match="module 'lazytest' has no attribute 'OTHER'"):
        package.OTHER  # noqa: B018


def test_a_block_with_anything_but_imports_is_refused(lazytest) -> None:
    package = lazytest("    from lazytest._held import VALUE as VALUE\n    X = 2\n")
    with pytest.raises(ImportError, match=r"line 5: under TYPE_CHECKING, only `from"):
        package.VALUE  # noqa: B018
