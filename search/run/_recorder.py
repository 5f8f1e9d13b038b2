"""Writing the search's study while Ray Tune runs it.

The searcher (:mod:`search.run._searcher`) works on the in-memory copy of the study its
optimiser is bound to; what it records there (a trial's start, each epoch's curve point, a
scheduler's decision, the trial's Ray folder, its end) it hands to this recorder, which writes
it to the storage at once, in that order: a trial's start before the trial runs (a trial that
cannot be recorded is not run: the searcher asks :meth:`StudyRecorder.admit`), the rest as the
searcher sees it, so that a driver killed at any moment loses nothing it had seen.

(A Ray Tune callback that wrote at its next hook was tried: the writes came a step later, and a
fault test that SIGKILLs the driver mid-schedule began to fail; see the session note of
2026-11-27.)

A write that fails is kept in the writer's ``error`` (the searcher then proposes nothing more,
and ``launch`` raises it once the running trials are done).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from optuna.trial import FrozenTrial

from search.errors import StorageWriteError
from search.record import StudyWriter

__all__ = ["StudyRecorder", "Write"]

#: One write of the study (given the writer).
Write = Callable[[StudyWriter], None]


class StudyRecorder:
    """Writes what the searcher recorded to the search's storage (see module doc).

    Args:
        writer: Records each trial in the search's storage, one transaction per write.
    """

    def __init__(self, writer: StudyWriter) -> None:
        self.writer = writer

    @property
    def failed(self) -> bool:
        """Whether a write failed (nothing more should start)."""
        return self.writer.error is not None

    def admit(self, trial: FrozenTrial) -> bool:
        """Writes a new trial as RUNNING before it runs; False if it cannot be recorded."""
        return self.write(lambda writer: writer.started(trial))

    def adopt(self, number: int) -> bool:
        """Takes over trial ``number``, which a killed search left RUNNING, to resume it;
        False if the storage refuses."""
        return self.write(lambda writer: writer.adopt(number))

    def write(self, write: Write) -> bool:
        """Writes ``write`` now; False if it failed (kept in the writer's ``error``)."""
        with contextlib.suppress(StorageWriteError):  # kept in writer.error, raised by launch
            write(self.writer)
            return True
        return False
