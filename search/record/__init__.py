"""The study record: every search is one Optuna study in its storage, and its run folder the
trials' checkpoints. Opening the storage (to write or to read), the one live launch's lease,
the in-memory study and its one-transaction writes, the study's own attributes, each trial
read back as one typed :class:`TrialRecord`, and the names all of it is stored under
(``search.record._schema``).

Read by ``search.run`` (which writes it), ``search.schedulers``, ``search.pareto``,
``search.report``, ``search.bundle`` and the command line; imports neither Ray nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces._lazy import lazy_getattr

# What the lazy map below exports, for type checkers and editors (tests/test_static_exports.py
# keeps the two the same); at run time each name still loads when first used.
if TYPE_CHECKING:
    from search.record._counting import trials_counted as trials_counted
    from search.record._records import TrialRecord as TrialRecord
    from search.record._records import read_study as read_study
    from search.record._records import read_trial as read_trial
    from search.record._storage import read_storage as read_storage


_EXPORTS = {
    "TrialRecord": "search.record._records",
    "read_study": "search.record._records",
    "read_trial": "search.record._records",
    "read_storage": "search.record._storage",
    "trials_counted": "search.record._counting",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
