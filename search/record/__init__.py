"""The study record: every search is one Optuna study in its storage, and its run folder the
trials' checkpoints. Opening the storage (to write or to read), the one live launch's lease,
the in-memory study and its one-transaction writes, the study's own attributes, each trial
read back as one typed :class:`TrialRecord`, and the names all of it is stored under
(``search.record._schema``).

Read by ``search.run`` (which writes it), ``search.schedulers``, ``search.pareto``,
``search.report``, ``search.bundle`` and the command line; imports neither Ray nor torch.
"""

from __future__ import annotations

from spaces._lazy import lazy_getattr

_EXPORTS = {
    "TrialRecord": "search.record._records",
    "read_study": "search.record._records",
    "read_trial": "search.record._records",
    "read_storage": "search.record._storage",
    "trials_counted": "search.record._counting",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
