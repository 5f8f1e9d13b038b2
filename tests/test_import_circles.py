"""No circle of module-level imports between the library's parts (issue 62): a part is a
subpackage (``search.record``, ``spaces._families``) or a module outside one
(``spaces._build``); an import inside a function or under ``if TYPE_CHECKING:`` does not
count (it runs later, or never). The circles still to break are listed, so that a new one
fails here and a broken one must be struck off."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spaces", "objectives", "search")
#: Circles left to break (none: issue 62 broke config ↔ record ↔ schedulers and
#: ``spaces._build`` ↔ ``spaces._families``).
KNOWN: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _part(module: str, modules: dict[str, Path]) -> str:
    """The part a module belongs to: its first subpackage below the top package, else itself."""
    parts = module.split(".")
    for depth in range(2, len(parts) + 1):
        name = ".".join(parts[:depth])
        if modules.get(name, Path()).name == "__init__.py":
            return name
    return module if len(parts) > 1 else parts[0]


def _top_level(tree: ast.Module, every: bool = False) -> Iterator[ast.stmt]:
    """The statements that run at import: the body, and what ``if``/``try`` hold at the top,
    except an ``if TYPE_CHECKING:`` block; with ``every``, what functions and classes hold
    too (an import that runs when they are called)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If):
            if getattr(node.test, "id", None) != "TYPE_CHECKING":
                stack += node.body
            stack += node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                stack += handler.body
        elif every and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                                  | ast.With | ast.For | ast.While):  # fmt: skip
            stack += node.body
        else:
            yield node


def _imported(module: str, path: Path, modules: dict[str, Path], every: bool = False
              ) -> set[str]:  # fmt: skip
    """The library modules ``module`` imports when it is imported (``every``: or when any of
    its functions runs)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in _top_level(ast.parse(path.read_text(encoding="utf-8")), every):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name in modules}


def graph(every: bool = False) -> dict[str, set[str]]:
    """Part → the other parts it imports at module level (``every``: anywhere)."""
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        source = _part(module, modules)
        targets = {_part(name, modules) for name in _imported(module, path, modules, every)}
        edges.setdefault(source, set()).update(targets - {source})
    return edges


def circles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one part (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                top = stack.pop()
                group.add(top)
                if top == node:
                    break
            if len(group) > 1:
                found.add(frozenset(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_circle_check_finds_a_circle_and_no_false_one() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset("abc")}
    assert circles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == set()


def test_no_module_level_import_circle_between_the_parts_but_the_known_ones() -> None:
    found = circles(graph())
    assert {tuple(sorted(c)) for c in found - KNOWN} == set(), "a new circle"
    assert {tuple(sorted(c)) for c in KNOWN - found} == set(), "broken: strike it off KNOWN"


def test_no_import_anywhere_makes_a_circle_between_the_packages_of_search() -> None:
    """Counting the imports inside functions too (they run later, but a package that reaches
    back up at run time is still tied to it): ``search``'s packages import in one direction."""
    inside = {part: targets for part, targets in graph(every=True).items()
              if part.startswith("search.")}  # fmt: skip
    edges = {part: {t for t in to if t.startswith("search.")} for part, to in inside.items()}
    assert {tuple(sorted(c)) for c in circles(edges)} == set()


def test_the_family_registry_and_the_families_import_in_one_direction() -> None:
    edges = graph()
    assert "spaces._families" in edges["spaces._build"]
    assert "spaces._build" not in edges["spaces._families"]
