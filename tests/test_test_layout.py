"""The layout of the tests themselves: no module imports a test module (what tests share lives in
tests/_support/, or in a conftest.py as a fixture), and no module outside tests/_support/ writes
its own deadline loop (tests wait with tests/_support/waiting.py's ``wait_until``).

Both checks read every ``tests/**/*.py`` with ``ast``, and the code in its strings too (the
scripts a test runs in a driver process); each is shown able to fail on a small module that
breaks its rule.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "_support"
#: Calls that import a module named by a string (or load one from a file path).
IMPORTING_CALLS = {"import_module", "__import__", "spec_from_file_location", "run_module",
                   "run_path", "SourceFileLoader"}  # fmt: skip
#: The clocks a hand-written deadline loop reads.
CLOCKS = {"monotonic", "time"}


def _names_a_test_module(name: str) -> bool:
    """Whether a dotted module name or a file path has a ``test_*`` part."""
    return any(part.startswith("test_") for part in re.split(r"[./\\]", name))


def _code_in_strings(tree: ast.AST) -> Iterator[tuple[int, ast.Module]]:
    """The Python code held in the string constants of ``tree`` (a script run with
    ``python -c``, its ``str.format`` fields read as names), with the line it starts on."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not re.search(r"^\s*(import|from)\s+\w", text, flags=re.MULTILINE):
            continue
        unformatted = re.sub(r"(?<!\{)\{\w+(![rsa])?\}(?!\})", "_field_", text)
        unformatted = unformatted.replace("{{", "{").replace("}}", "}")
        try:
            yield node.lineno, ast.parse(unformatted)
        except SyntaxError:  # not code as a whole (or prose): its import lines alone
            yield node.lineno, ast.Module(body=_import_lines(unformatted), type_ignores=[])


def _import_lines(text: str) -> list[ast.stmt]:
    found = []
    for line in text.splitlines():
        if re.match(r"\s*(import|from)\s+\w", line):
            try:
                found += ast.parse(line.strip()).body
            except SyntaxError:
                continue
    return found


def imports_of_test_modules(source: str, strings: bool = True) -> list[str]:
    """Each import of a test module in ``source``: ``import``, ``from … import``, relative or
    absolute, or a call that imports a module named by a string; with ``strings``, in the code
    its strings hold too."""
    tree = ast.parse(source)
    found = _imports_in(tree)
    if strings:
        for line, code in _code_in_strings(tree):
            found += [f"{line}: in a string: {f}" for f in _imports_in(code)]
    return found


def _imports_in(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if _names_a_test_module(a.name)]  # fmt: skip
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names = [a.name for a in node.names]
            if _names_a_test_module(module) or any(n.startswith("test_") for n in names):
                found.append(f"{node.lineno}: from {module} import {', '.join(names)}")
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            named = [a.value for a in [*node.args, *(k.value for k in node.keywords)]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]  # fmt: skip
            if called in IMPORTING_CALLS and any(_names_a_test_module(n) for n in named):
                found.append(f"{node.lineno}: {called}({', '.join(map(repr, named))})")
    return found


def _reads_a_deadline(expression: ast.AST) -> bool:
    """Whether ``expression`` names a deadline or reads the clock (``time.monotonic()``)."""
    for node in ast.walk(expression):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(name, str) and "deadline" in name.lower():
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in CLOCKS and getattr(
                func.value, "id", None
            ) == "time":
                return True
            if isinstance(func, ast.Name) and func.id == "monotonic":
                return True
    return False


def deadline_loops(source: str, strings: bool = True) -> list[int]:
    """The lines of the hand-written deadline loops in ``source``: each ``while`` whose test,
    or the test of an ``if`` or ``assert`` in its body, compares with a deadline or reads the
    clock; with ``strings``, in the code its strings hold too."""
    tree = ast.parse(source)
    found = _loops_in(tree)
    if strings:
        for line, code in _code_in_strings(tree):
            found += [line + n - 1 for n in _loops_in(code)]
    return found


def _loops_in(tree: ast.AST) -> list[int]:
    found = []
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.While):
            continue
        tests = [loop.test] + [node.test for stmt in loop.body for node in ast.walk(stmt)
                               if isinstance(node, (ast.If, ast.Assert))]  # fmt: skip
        if any(_reads_a_deadline(t) for t in tests):
            found.append(loop.lineno)
    return found


def _modules() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def _read(path: Path) -> tuple[str, bool]:
    """The module's text, and whether its strings are checked too (not this module's own: they
    are the known answers below)."""
    return path.read_text(encoding="utf-8"), path != Path(__file__).resolve()


def test_no_test_module_imports_another() -> None:
    found = {}
    for path in _modules():
        text, strings = _read(path)
        if imports := imports_of_test_modules(text, strings):
            found[str(path.relative_to(TESTS))] = imports
    assert not found, f"move what these share into tests/_support/: {found}"


def test_only_the_wait_helper_holds_a_deadline_loop() -> None:
    found = {}
    for path in _modules():
        if SUPPORT in path.parents:
            continue
        text, strings = _read(path)
        if loops := deadline_loops(text, strings):
            found[str(path.relative_to(TESTS))] = loops
    assert not found, f"wait with tests._support.waiting.wait_until: {found}"


def test_the_layout_checks_read_the_whole_tree() -> None:
    modules = _modules()
    assert TESTS / "_support" / "waiting.py" in modules and len(modules) > 100
    assert deadline_loops((SUPPORT / "waiting.py").read_text(encoding="utf-8")), (
        "the one wait is the one deadline loop, and the check sees it"
    )


DRIVER = '''
import sys
sys.path.insert(0, {root!r})
from tests.search_tests.run.test_chaos import TRIALS, {trial}
launch(config({out!r}), trial_fn={trial})
'''
WAIT = '''
import sys, time
deadline = time.monotonic() + 60
while len(nodes()) < 2:
    assert time.monotonic() < deadline, "the second node did not join"
    time.sleep(0.5)
'''


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("from tests.search_tests.run.test_execution import make_config", 1),
        ("from tests.search_tests.run import test_execution, test_writer", 1),
        ("from . import test_keys", 1),
        ("from ..config.test_keys import BASE", 1),
        ("import tests.objectives_tests.test_datasets as datasets", 1),
        ("import importlib\nm = importlib.import_module('tests.search_tests.test_cli')", 1),
        ("import importlib.util as u\nu.spec_from_file_location('x', 'tests/run/test_oom.py')", 1),
        (f"DRIVER = {DRIVER!r}", 1),
        ("S = 'print(1\\nfrom tests.run.test_oom import hog_trial\\n'", 1),
        ("from tests._support.searches import make_config, slow_trial", 0),
        ("import pytest\nfrom tests.search_tests.studies import stored_study", 0),
        ("import importlib\nimportlib.import_module('ray._private.services')", 0),
    ],
    ids=["from", "from package", "relative", "relative from", "import", "import_module",
         "spec_from_file_location", "a driver's script", "a broken script", "support", "helper",
         "not a test"],
)  # fmt: skip
def test_an_import_of_a_test_module_is_flagged(source: str, flagged: int) -> None:
    assert len(imports_of_test_modules(source)) == flagged, imports_of_test_modules(source)


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("deadline = time.monotonic() + 9\nwhile time.monotonic() < deadline:\n    poll()", 1),
        ("end = time.time() + 9\nwhile not ready() and time.time() < end:\n    pass", 1),
        ("d = monotonic() + 9\nwhile True:\n    if monotonic() > d:\n        break", 1),
        ("while proc.poll() is None and self.deadline > now():\n    pass", 1),
        (f"WAIT = {WAIT!r}", 1),
        ("wait_until(lambda: ready(), 9, interval_s=0.2)", 0),
        ("while todo:\n    tree.append(todo.pop())", 0),
        ("end = time.perf_counter() + 1\nwhile time.perf_counter() < end:\n    work()", 0),
    ],
    ids=["monotonic", "time.time", "if in the body", "an attribute", "a driver's script",
         "wait_until", "a worklist", "a workload"],
)  # fmt: skip
def test_a_deadline_loop_is_flagged(source: str, flagged: int) -> None:
    assert len(deadline_loops(source)) == flagged, deadline_loops(source)


def test_the_tests_of_search_are_laid_out_like_its_packages() -> None:
    """Issue 62: ``tests/search_tests/<package>/`` for each package of ``search`` and for
    nothing else, so that a package's tests are found where the package is."""
    source = TESTS.parent / "search"
    packages = {p.parent.name for p in source.glob("*/__init__.py")}
    folders = {p.parent.name for p in (TESTS / "search_tests").glob("*/__init__.py")}
    assert folders == packages
