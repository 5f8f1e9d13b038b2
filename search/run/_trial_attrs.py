"""The attribute keys the search stores on a trial beside Optuna's own: its constraints, its
feasibility, why it was refused, and what its multi-fidelity scheduler and its time limits
decided. Written by :mod:`search.run._searcher` and :mod:`search.run._outcome`, read by the
report and ``search status``, so this module imports nothing (neither Ray nor torch)."""

from __future__ import annotations

__all__ = [
    "CONSTRAINTS_ATTR",
    "DECISIONS_KEY",
    "FEASIBLE_KEY",
    "REFUSED_KEY",
    "START_KEY",
    "STOPPED_KEY",
]

#: A trial's user attribute: the scheduler's decisions on it, one dict per rung decision.
DECISIONS_KEY = "npas:decisions"
#: A trial's user attribute: which point of the config's ``start`` list it trains (0-based).
START_KEY = "npas:start"
#: A pruned trial's user attribute: why a time limit stopped it (a trial timeout).
STOPPED_KEY = "npas:stopped"

#: Name of the constraint that is violated (1.0) by every infeasible trial, whatever the reason
#: (a violated user constraint, a budget below the model's minimum).
FEASIBLE_KEY = "feasible"

#: The metric a trial refused before training carries (why it was not trained).
REFUSED_KEY = "infeasible_reason"

#: The system attribute holding a trial's constraint values (Optuna's and the dashboard's).
CONSTRAINTS_ATTR = "constraints"
