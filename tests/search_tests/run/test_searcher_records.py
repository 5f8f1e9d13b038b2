"""The searcher's records of a running trial: each epoch of its curve and each decision on it
reach the storage once."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna

from search.record._schema import RayKey, TrialAttr
from search.run._bound import bound_optimiser, constraint_keys
from search.run._outcome import OutcomeReader
from search.run._recorder import StudyRecorder
from search.run._searcher import NpasSearcher
from tests._support.searches import make_config


class _Steps:
    """A writer that keeps the steps it is given and refuses one given twice, as the
    storage's unique (trial, step) key does."""

    error = None

    def __init__(self) -> None:
        self.steps: list[tuple[int, int]] = []

    def intermediate(self, number: int, step: int, value: float, curve: Any = None) -> None:
        assert (number, step) not in self.steps, f"step {step} of trial {number} written twice"
        self.steps.append((number, step))

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _searcher(tmp_path: Path, writer: _Steps) -> NpasSearcher:
    config = make_config(tmp_path, optimiser="random")
    study = optuna.create_study(directions=config.directions)
    recorder = StudyRecorder(writer)  # type: ignore[arg-type]
    searcher = NpasSearcher(
        bound_optimiser(config, study, seed=0, scheduler="fifo"),
        outcomes=OutcomeReader(config.objectives, constraint_keys(config)),
        trial_config=lambda point, number: SimpleNamespace(to_dict=lambda: dict(point)),
        recorder=recorder,
    )
    return searcher


def _result(epoch: int, accuracy: float) -> dict[str, Any]:
    point = {"epoch": epoch, "accuracy": accuracy, "params": 500.0}
    return {RayKey.CURVE: json.dumps(point), "accuracy": accuracy, "params": 500.0}


def test_a_trial_restarted_from_its_first_epoch_writes_no_epoch_twice(tmp_path: Path) -> None:
    """A promotion resumes a trial without checkpoints from its start: it reports epochs
    1-3 again after 1-3; the curve keeps the first run's points and no write repeats (the
    storage refused the second step 1: a CI run failed on it)."""
    writer = _Steps()
    searcher = _searcher(tmp_path, writer)
    assert isinstance(searcher.suggest("t0"), dict)
    for epoch in (1, 2, 3):
        searcher.on_trial_result("t0", _result(epoch, 0.2 * epoch))
    for epoch in (1, 2, 3, 4):  # the restart learns a little differently
        searcher.on_trial_result("t0", _result(epoch, 0.2 * epoch - 0.1))
    assert writer.steps == [(0, e) for e in (1, 2, 3, 4)]
    kept = [(p["epoch"], round(p["accuracy"], 2)) for p in searcher._curves["t0"]]
    assert kept == [(1, 0.2), (2, 0.4), (3, 0.6), (4, 0.7)]


def test_a_decision_made_again_is_logged_once(tmp_path: Path) -> None:
    """A relaunch decides a trial paused at a rung there again: a second ``pause`` at the
    same rung is the same decision (a trial once showed five, and the report counted five)."""
    searcher = _searcher(tmp_path, _Steps())
    searcher.suggest("t0")
    for rung, outcome in ((1, "pause"), (1, "pause"), (1, "promote"), (3, "pause"), (3, "pause")):
        searcher.on_decision({"trial_id": "t0", "rung": rung, "outcome": outcome, "rank": 0})
    log = searcher._live["t0"].user_attrs[TrialAttr.DECISIONS]
    assert [(d["rung"], d["outcome"]) for d in log] == [(1, "pause"), (1, "promote"), (3, "pause")]
