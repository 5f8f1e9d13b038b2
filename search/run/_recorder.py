"""Writing the search's study while Ray Tune runs it: a Ray Tune callback, as Ray Tune keeps
persistence apart from its searchers.

The searcher (:mod:`search.run._searcher`) works on the in-memory copy of the study its
optimiser is bound to; what it records there (a trial's start, each epoch's curve point, a
scheduler's decision, the trial's Ray folder, its end) it hands to this recorder, which writes
it to the storage in that order. A trial's start is written before the trial runs (a trial
that cannot be recorded is not run: the searcher asks :meth:`StudyRecorder.admit`); the rest is
written at Ray Tune's next callback, which follows the searcher's own call in the same step
(Ray Tune calls the searcher, then the callbacks, for each result, completion and error).

A write that fails is kept in the writer's ``error`` (the searcher then proposes nothing more,
and ``launch`` raises it once the running trials are done).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

from optuna.trial import FrozenTrial
from ray.tune import Callback

from search.errors import StorageWriteError
from search.record._writer import StudyWriter

__all__ = ["StudyRecorder", "Write"]

#: One pending write of the study (given the writer).
Write = Callable[[StudyWriter], None]


class StudyRecorder(Callback):
    """Writes what the searcher recorded to the search's storage (see module doc).

    Args:
        writer: Records each trial in the search's storage, one transaction per write.
    """

    def __init__(self, writer: StudyWriter) -> None:
        self.writer = writer
        self._pending: deque[Write] = deque()

    def __getstate__(self) -> dict[str, Any]:
        """Nothing pending: Ray Tune pickles its callbacks into ``tuner.pkl`` (the writer
        leaves its storage out itself)."""
        return {**self.__dict__, "_pending": deque()}

    @property
    def failed(self) -> bool:
        """Whether a write failed (nothing more should start)."""
        return self.writer.error is not None

    def admit(self, trial: FrozenTrial) -> bool:
        """Writes a new trial as RUNNING before it runs; False if it cannot be recorded."""
        self.flush()
        return self._now(lambda writer: writer.started(trial))

    def adopt(self, number: int) -> bool:
        """Takes over trial ``number``, which a killed search left RUNNING, to resume it;
        False if the storage refuses."""
        self.flush()
        return self._now(lambda writer: writer.adopt(number))

    def queue(self, write: Write) -> None:
        """Writes ``write`` at Ray Tune's next callback, after those queued before it."""
        self._pending.append(write)

    def flush(self) -> None:
        """Writes everything queued, in order."""
        while self._pending:
            self._now(self._pending.popleft())

    def _now(self, write: Write) -> bool:
        with contextlib.suppress(StorageWriteError):  # kept in writer.error, raised by launch
            write(self.writer)
            return True
        return False

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict,
                        **info: Any) -> None:  # fmt: skip
        self.flush()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.flush()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.flush()

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        self.flush()

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.flush()
