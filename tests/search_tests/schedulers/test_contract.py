"""The scheduler contract (``search.schedulers._contract``): which schedulers decide and which
gate, :func:`attach` wiring each to a searcher, and no other module doing that wiring."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ray.tune.schedulers import FIFOScheduler

from search.schedulers import MOASHA, Decides, Gate, PromotionMOASHA, attach

ROOT = Path(__file__).resolve().parents[3]
OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]


class _Searcher:
    """The searcher's side of the contract: keeps the decisions it is handed."""

    def __init__(self) -> None:
        self.gate: Gate | None = None
        self.decisions: list[dict[str, Any]] = []

    def on_decision(self, decision: dict[str, Any]) -> None:
        self.decisions.append(decision)


class _UsersGate:
    """A scheduler of a user's that gates by having the members, nothing inherited."""

    def __init__(self) -> None:
        self.limited: tuple[int, int | None] | None = None

    def limit(self, *, slots: int, total: int | None) -> None:
        self.limited = (slots, total)

    def may_start(self) -> bool:
        return True

    def close(self, why: str | None = None) -> None:
        pass


@pytest.mark.parametrize(
    ("scheduler", "decides", "gates"),
    [
        (MOASHA(OBJECTIVES, max_epochs=4), True, False),
        (PromotionMOASHA(OBJECTIVES, max_epochs=4), True, True),
        (FIFOScheduler(), False, False),
        (_UsersGate(), False, True),
    ],
    ids=["moasha", "promotion", "ray-fifo", "users-gate"],
)
def test_attach_wires_what_the_scheduler_declares(scheduler: Any, decides: bool, gates: bool):
    searcher = _Searcher()
    got = attach(scheduler, searcher, slots=3, total=10)
    assert isinstance(scheduler, Decides) is decides and isinstance(scheduler, Gate) is gates
    assert got is (scheduler if gates else None) and searcher.gate is got
    if decides:
        assert scheduler.on_decision == searcher.on_decision
    if isinstance(scheduler, PromotionMOASHA):
        assert (scheduler.slots, scheduler.total) == (3, 10)
    if isinstance(scheduler, _UsersGate):
        assert scheduler.limited == (3, 10)


def test_a_decision_reaches_the_searcher_it_was_attached_to() -> None:
    scheduler, searcher = MOASHA(OBJECTIVES, grace_epochs=1, max_epochs=4), _Searcher()
    attach(scheduler, searcher, slots=2, total=None)
    trial = SimpleNamespace(trial_id="t0")
    scheduler.on_trial_result(None, trial, {"epoch": 1, "accuracy": 0.5, "params": 100})
    assert [(d["rung"], d["outcome"]) for d in searcher.decisions] == [(1, "continue")]


def _wirings(path: Path) -> list[str]:
    """Assignments to ``<x>.gate`` or ``<x>.on_decision`` other than ``self.<name>``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr in ("gate", "on_decision")
                and not (isinstance(target.value, ast.Name) and target.value.id == "self")
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_only_attach_wires_a_scheduler_to_a_searcher() -> None:
    contract = ROOT / "search" / "schedulers" / "_contract.py"
    wired = [w for p in sorted((ROOT / "search").rglob("*.py")) if p != contract
             for w in _wirings(p)]  # fmt: skip
    assert wired == []
    assert _wirings(contract), "the check finds attach's own wiring"
