"""The ``search`` command's package, ``search/cli/``: one module per group of commands, each
short enough to read whole, and no module left behind at the old single-file home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import search

CLI = Path(search.__file__).resolve().parent / "cli"
#: The most lines one module of the command line may hold.
MOST_LINES = 400


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_every_module_of_the_command_line_is_at_most_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"{path.name}: {lines} lines; split it (at most {MOST_LINES})"


def test_the_command_line_is_a_package_with_no_single_file_left() -> None:
    assert (CLI / "__init__.py").is_file() and len(list(CLI.glob("*.py"))) > 2
    assert not (CLI.parent / "_cli.py").exists()


#: The most lines one function of the command line may hold.
MOST_FUNCTION_LINES = 80


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_every_function_of_the_command_line_is_at_most_80_lines(path: Path) -> None:
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MOST_FUNCTION_LINES
    ]
    assert long == [], f"{path.name}: split it (at most {MOST_FUNCTION_LINES} lines a function)"
