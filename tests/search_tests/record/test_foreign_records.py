"""Studies npas did not write, or whose records were damaged: every reading command answers
from what is whole (a study made with Optuna alone; a trial's ``curve`` attribute edited in the
SQLite file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna
import pytest

from search.cli import main
from tests.search_tests.studies import ACC_PARAMS, ROWS, stored_study

#: ``curve`` attributes as a hand edit, a bad migration or other code could leave them.
DAMAGED = ["5", '"x"', '{"epoch": 1}', '[{"epoch": "two"}]',
           '[null, {"epoch": 2.5}, {"epoch": true}]',
           '[{"epoch": 1, "accuracy": "high", "violation": null}]']  # fmt: skip


@pytest.mark.parametrize("curve", DAMAGED)
def test_a_damaged_curve_attribute_is_read_as_the_points_that_are_whole(tmp_path, capsys, curve):
    """Before, ``5`` gave ``TypeError: 'int' object is not iterable`` and ``"two"`` a
    ValueError out of every command that reads the study."""
    stored_study(f"sqlite:///{tmp_path / 'npas.db'}", "s", ROWS, ACC_PARAMS)
    with sqlite3.connect(tmp_path / "npas.db") as db:  # trials 1 and 2 (ids 2 and 3)
        db.executemany("INSERT INTO trial_user_attributes (trial_id, key, value_json) "
                       "VALUES (?, 'curve', ?)", [(2, curve), (3, curve)])  # fmt: skip
    db.close()
    run = ["--run", str(tmp_path)]
    for argv in (["status", *run], ["status", *run, "--trial", "1"], ["pareto", *run],
                 ["trials", *run], ["pareto", *run, "--format", "json"]):  # fmt: skip
        assert main(argv) == 0, argv
    out = capsys.readouterr().out
    assert "front: 3 trial(s) [0, 1, 5]" in out and "Traceback" not in out


def _plain_study(folder: Path, *, names: list[str] | None = None) -> None:
    """A two-objective study written with Optuna alone (no npas attribute)."""
    study = optuna.create_study(study_name="plain", storage=f"sqlite:///{folder / 'npas.db'}",
                                directions=["minimize", "maximize"])  # fmt: skip
    if names:
        study.set_metric_names(names)
    for x in (0.1, 0.5, 0.9):  # x = 0.1 is best on both: the front is trial 0 alone
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
        study.tell(trial, [x, 1.0 - x])


@pytest.mark.parametrize("names", [None, ["loss", "score"]])
def test_a_study_made_with_optuna_alone_shows_its_front(tmp_path, capsys, names):
    """Before, `search status` said ``front: empty`` and `search pareto` ``objective
    'values_0' is not recorded``: the values were read from npas's metric attributes only."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    _plain_study(tmp_path, names=names)
    first, second = names or ["values_0", "values_1"]
    assert main(["status", "--run", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "front: 1 trial(s) [0]" in out, out
    assert f"best: {first} 0.1 (trial 0), {second} 0.9 (trial 0)" in out, out
    assert main(["pareto", "--run", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Front of 'plain': 1 trial(s) ({first}, {second})", lines
    assert lines[2].split()[:3] == ["0", "0.1", "0.9"], lines
