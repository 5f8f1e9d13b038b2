"""What a search's searcher and runner may call on its scheduler beyond Ray Tune's
``TrialScheduler`` interface, declared: :class:`Decides` (it decides at rungs and says so) and
:class:`Gate` (it says when a new trial may start); and :func:`attach`, the one place a
scheduler is wired to its searcher, shared by a launch on Ray Tune and the lab's replay.

A scheduler of the user's (``SCHEDULERS.register``) takes part by having the members: the
checks are structural, as Ray Tune's are for its own interfaces."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Decides", "Gate", "attach"]


@runtime_checkable
class Decides(Protocol):
    """A scheduler that decides on each trial at each rung (MOASHA): every decision goes to
    ``on_decision`` (the searcher stores it in the study), and a resumed search's trials are
    entered again with ``add_history`` before any new result."""

    on_decision: Callable[[dict[str, Any]], None] | None

    def add_history(
        self,
        curve: Mapping[int, Sequence[float]],
        violation: float = 0.0,
        at_chance: Collection[int] = (),
        number: int | None = None,
        promoted: Collection[int] = (),
    ) -> None: ...


@runtime_checkable
class Gate(Protocol):
    """A scheduler that decides when a new trial may start (promotion-type MOASHA: paused
    trials hold no slot, and a paused trial due for promotion goes first), so that Ray Tune's
    own concurrency limit, which counts paused trials as running, is not used."""

    def limit(self, *, slots: int, total: int | None) -> None: ...

    def may_start(self) -> bool: ...

    def close(self, why: str | None = None) -> None: ...


class Gated(Protocol):
    """The searcher's side: where decisions go, and the gate it asks before each trial."""

    gate: Gate | None

    def on_decision(self, decision: dict[str, Any]) -> None: ...


def attach(scheduler: object, searcher: Gated, *, slots: int, total: int | None) -> Gate | None:
    """Wires ``scheduler`` to ``searcher``: one that decides hands each decision to the
    searcher; one that gates runs at most ``slots`` trials at once (``total`` in all, None:
    until the searcher closes it) and becomes the searcher's gate.

    Returns:
        The gate, or None: the runner limits concurrency itself.
    """
    if isinstance(scheduler, Decides):
        scheduler.on_decision = searcher.on_decision
    gate = scheduler if isinstance(scheduler, Gate) else None
    if gate is not None:
        gate.limit(slots=slots, total=total)
    searcher.gate = gate
    return gate
