"""``search trials``: every trial of a search, one row each, with why the ones that did not
simply complete ended as they did; ``--state`` picks an outcome or an Optuna state; its CSV
and JSON read back in pandas; ``search status`` names the failed and infeasible trials."""

from __future__ import annotations

import io
import json
from pathlib import Path

import optuna
import pandas as pd
import pytest

from search._trial_list import paused, trial_list
from search.cli import main
from search.cli._status import _status_lines, _status_record
from search.record import TrialAttr, read_study
from tests.search_tests.studies import stored_study

ROWS = [
    {"accuracy": 0.90, "params": 4000.0},
    {"accuracy": 0.99, "params": 10.0, "feasible": False, "constraint_0": 0.496},
    {"state": "FAIL", "error": "Traceback ...\nValueError: no convnets today (width 3)"},
    {"accuracy": 0.85, "params": 1000.0},
]


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    study = stored_study(f"sqlite:///{tmp_path}/npas.db", "t", ROWS)
    study.set_user_attr("constraints", ["model_kib <= 8"])
    return tmp_path


def test_the_list_has_each_trial_its_outcome_and_why(run: Path, capsys) -> None:
    assert main(["trials", "--run", str(run)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "Search 't': 4 trial(s)"
    assert lines[1].split()[:4] == ["number", "outcome", "epochs", "width"]
    assert "infeasible" in lines[3] and "violates model_kib <= 8 (by 0.496)" in lines[3]
    assert "failed" in lines[4] and "ValueError: no convnets today (width 3)" in lines[4]
    assert "Traceback" not in out  # the error's last line


def test_state_picks_an_outcome_or_an_optuna_state(run: Path, capsys) -> None:
    assert main(["trials", "--run", str(run), "--state", "infeasible", "--format", "csv"]) == 0
    rows = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(rows["number"]) == [1] and rows["why"][0].startswith("violates model_kib")
    assert main(["trials", "--run", str(run), "--state", "complete", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["number"] for r in rows] == [0, 1, 3]
    assert [r["outcome"] for r in rows] == ["feasible", "infeasible", "feasible"]
    assert rows[0]["why"] is None and rows[0]["accuracy"] == 0.9


def test_a_state_that_is_not_one_is_refused_with_the_list(run: Path, capsys) -> None:
    assert main(["trials", "--run", str(run), "--state", "broken"]) == 2
    assert "infeasible" in capsys.readouterr().err


def test_status_names_the_trials_to_look_at(run: Path, capsys) -> None:
    assert main(["status", "--run", str(run)]) == 0
    out = capsys.readouterr().out
    assert "failed: [2]; infeasible: [1] (search trials --state failed|infeasible says why)" in out
    assert main(["status", "--run", str(run), "--trial", "1"]) == 0
    assert "why it ended: violates model_kib <= 8 (by 0.496)" in capsys.readouterr().out


def _running(study: optuna.Study, decisions: list[str]) -> int:
    """A RUNNING trial whose stored rung decisions have these outcomes; its number."""
    trial = study.ask()
    trial.set_user_attr(TrialAttr.DECISIONS, [{"rung": 3 * (i + 1), "outcome": outcome}
                                              for i, outcome in enumerate(decisions)])  # fmt: skip
    return trial.number


def test_a_trial_held_at_a_rung_is_paused_while_its_launch_lives(tmp_path: Path) -> None:
    """Under promotion-type MOASHA most trials wait at a rung, RUNNING in the study with no
    worker: listed (and counted) as paused, not running, while the launch lives; once it is
    gone they are what any RUNNING trial is then (here, without a checkpoint: interrupted)."""
    study = stored_study(f"sqlite:///{tmp_path}/npas.db", "t", ROWS)
    held = _running(study, ["pause"])
    going = _running(study, ["pause", "promote"])
    assert paused(read_study(study).trials) == [held]
    live = trial_list(study, ["accuracy", "params"], live=True).set_index("number")["outcome"]
    assert (live[held], live[going]) == ("paused", "running")
    assert list(trial_list(study, ["accuracy", "params"], state="paused")["number"]) == [held]
    gone = trial_list(study, ["accuracy", "params"], live=False).set_index("number")["outcome"]
    assert (gone[held], gone[going]) == ("interrupted", "interrupted")
    record = _status_record(study, holder="a launch")
    assert (record["paused"], record["running"]) == (1, 1)
    assert "1 paused" in _status_lines(record)[0] and "(paused: held at a rung" in (
        _status_lines(record)[0])  # fmt: skip
