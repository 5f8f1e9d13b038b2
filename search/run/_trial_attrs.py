"""The user attributes the search stores on a trial for its multi-fidelity scheduler and its
time limits: written by :mod:`search.run._searcher`, read by the report and ``search status``,
so this module imports neither Ray nor torch."""

from __future__ import annotations

__all__ = ["DECISIONS_KEY", "STOPPED_KEY"]

#: A trial's user attribute: the scheduler's decisions on it, one dict per rung decision.
DECISIONS_KEY = "npas:decisions"
#: A pruned trial's user attribute: why a time limit stopped it (a trial timeout).
STOPPED_KEY = "npas:stopped"
