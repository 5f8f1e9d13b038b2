"""The study record's names are spelt once, in ``search.record._schema``: no other module of
``search`` names a trial's or a study's attribute, a Ray Tune result key or a table's column by
a string literal, so renaming one is one edit and a reader says which meaning it reads."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from search.record import _schema

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "search" / "record" / "_schema.py"
#: Calls whose first string argument (after a trial id, for the storage's own) names an attribute.
SETTERS = {"set_user_attr": 0, "set_system_attr": 0, "set_trial_user_attr": 1,
           "set_trial_system_attr": 1, "set_study_user_attr": 1}  # fmt: skip
#: Containers of the record: an access on one of these by a literal key is a spelt name.
RECORDS = ("user_attrs", "system_attrs")
#: Variables that hold a table of trials (a frame, a row of one) or a Ray Tune result.
TABLES = ("frame", "table", "listed", "row", "shown", "front", "loc", "iloc")
#: Modules that build tables of trials: a column's name there is the record's, in a row dict
#: or a list of columns too.
TABLE_MODULES = ("pareto/", "report/", "_trial_list.py", "cli/")
RESULTS = ("result", "report", "last")


def _values() -> set[str]:
    found: set[str] = set()
    for holder in (_schema.TrialAttr, _schema.TrialSystemAttr, _schema.OptunaAttr,
                   _schema.StudyAttr, _schema.Metric, _schema.RayKey, _schema.Column):  # fmt: skip
        for name, value in vars(holder).items():
            if name.isupper():
                found.update([value] if isinstance(value, str) else value)
    return found


def _distinctive(value: str) -> bool:
    """A name no other meaning shares, so its literal is the record's wherever it appears."""
    return ":" in value or value.startswith(("npas_", "search_")) or value in {
        "infeasible_reason", "pruned_at_epoch", "data_fingerprints",
        "why_infeasible", "datetime_complete", "fail_reason"}  # fmt: skip


def _tail(node: ast.AST) -> str:
    """The last name of an expression (``trial.user_attrs`` -> ``user_attrs``)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _tail(node.func)
    if isinstance(node, ast.Subscript):
        return _tail(node.value)
    return ""


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyed(tree: ast.AST, names: set[str]) -> Iterator[tuple[int, str]]:
    """Literals naming an entry of the record: an attribute set or read, a Ray result's key,
    a table's column."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, owner = node.func.attr, _tail(node.func.value)
            at = SETTERS.get(method)
            if at is not None and len(node.args) > at and _literal(node.args[at]) is not None:
                yield node.lineno, str(_literal(node.args[at]))
            if method in ("get", "pop", "setdefault") and node.args:
                key = _literal(node.args[0])
                if key is not None and (owner in RECORDS or _is_table(owner, key, names)):
                    yield node.lineno, key
        elif isinstance(node, ast.Subscript):
            owner = _tail(node.value)
            slices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for key in filter(None, map(_literal, slices)):
                if owner in RECORDS or _is_table(owner, key, names):
                    yield node.lineno, key
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            key, owner = _literal(node.left), _tail(node.comparators[0])
            if key is not None and (owner in RECORDS or _is_table(owner, key, names)):
                yield node.lineno, key


def _columns(tree: ast.AST, columns: set[str]) -> Iterator[tuple[int, str]]:
    """Column names as a row dict's keys or in a list of columns."""
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
        if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
            for key in items:
                if _literal(key) in columns:
                    yield node.lineno, str(_literal(key))


def _is_table(owner: str, key: str, names: set[str]) -> bool:
    return key in names and owner.endswith(TABLES + RESULTS)


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, kinds) and n.body and isinstance(n.body[0], ast.Expr)}  # fmt: skip


def _spelt(path: Path, names: set[str], root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    docs = _docstrings(tree)
    found = {(line, key) for line, key in _keyed(tree, names)}
    if str(path.relative_to(root)).removeprefix("search/").startswith(TABLE_MODULES):
        named = vars(_schema.Column).items()
        columns = {v for k, v in named if k.isupper() and isinstance(v, str)}
        found |= set(_columns(tree, columns))
    found |= {(n.lineno, n.value) for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
              and n.value in names and _distinctive(n.value)}  # fmt: skip
    return [f"{path.relative_to(root)}:{line}: {key!r}" for line, key in sorted(found)]


MODULES = sorted(p for p in (ROOT / "search").rglob("*.py") if p != SCHEMA)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT / "search")))
def test_no_module_spells_a_name_of_the_record(path: Path) -> None:
    assert _spelt(path, _values()) == []


def test_the_check_finds_a_spelt_name(tmp_path: Path) -> None:
    """Known answer: each way of spelling a name is caught, a name's other meanings are not."""
    module = tmp_path / "m.py"
    module.write_text(
        'def f(trial, frame, result, config, storage):\n'
        '    trial.set_user_attr("curve", [])\n'                    # 2: an attribute set
        '    storage.set_trial_system_attr(1, "constraints", [])\n'  # 3: Optuna's, by the storage
        '    trial.user_attrs.get("anything")\n'                     # 4: any attribute read
        '    frame["state"]\n'                                       # 5: a column
        '    result.get("epoch")\n'                                  # 6: a Ray result key
        '    "npas:decisions"\n'                                     # 7: distinctive anywhere
        '    frame.loc[0, "number"]\n'                               # 8: a column, by .loc
        '    config["epochs"], frame["accuracy"]\n'                  # config key; a metric
        '    {"number": 1}, ["state"]\n'                             # a table module's only
    )  # fmt: skip
    lines = [int(s.split(":")[1]) for s in _spelt(module, _values(), root=tmp_path)]
    assert lines == [2, 3, 4, 5, 6, 7, 8]
    (tmp_path / "report").mkdir()
    table = tmp_path / "report" / "m.py"
    table.write_text(module.read_text())
    lines = [int(s.split(":")[1]) for s in _spelt(table, _values(), root=tmp_path)]
    assert lines == [2, 3, 4, 5, 6, 7, 8, 10, 10]
