"""How one launch's Ray Tune run ended, read once after it: what the searcher stopped for,
which trials it resumed, adjourned or could not save, whether the time limit or a stop signal
ended it and whether the run folder filled; and what the launch says or raises about it."""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
from optuna.trial import TrialState

from search._format import note
from search.errors import RunFolderFull
from search.record import fail_interrupted, resumable, trials_counted
from search.run._interrupts import interrupted

if TYPE_CHECKING:
    from search.config import SearchConfig
    from search.run._searcher import NpasSearcher

__all__ = ["Ending", "conclude"]


@dataclass(frozen=True)
class Ending:
    """The end of one launch's Ray Tune run.

    Attributes:
        ran: Trials Ray Tune ran (fewer than ``remaining`` when it was stopped).
        remaining: Trials it was asked to run.
        stopped: Why the searcher stopped starting trials before that (a budget, a full
            disk); None if it did not.
        adjourned: Trials left RUNNING with their checkpoints for a relaunch to go on with:
            those the search's time stopped, and those an earlier launch adjourned that this
            one did not reach.
        full: Trials that could not save their results on a full disk (not counted).
        disk_full: Ray Tune could not write its own files (the run folder is full).
        time_up: The search's time limit ended it.
        signum: The stop signal that ended it (Ctrl-C, SIGTERM); None if none did.
        screened: Proposals the screen refused before training (recorded, not counted).
        narrowed: Those of them queued again narrowed (``search.config.repair``).
    """

    ran: int
    remaining: int
    stopped: str | None
    adjourned: list[int]
    full: list[int]
    disk_full: bool
    time_up: bool
    signum: int | None
    screened: int = 0
    narrowed: int = 0

    @classmethod
    def of(
        cls, searcher: NpasSearcher, *, ran: int, remaining: int, resumes: list[int],
        disk_full: bool, signum: int | None,
    ) -> Ending:  # fmt: skip
        """What ``searcher`` saw, with how the run itself ended; ``resumes``: the trials
        this launch was to resume."""
        # Trials an earlier launch adjourned that this one's time or budget did not reach
        # stay adjourned: nobody cut them short.
        adjourned = sorted({*searcher.adjourned, *(set(resumes) - set(searcher.resumed))})
        limits = searcher.limits
        return cls(ran=ran, remaining=remaining, stopped=searcher.stopped, adjourned=adjourned,
                   full=sorted(searcher.full), disk_full=disk_full,
                   time_up=limits is not None and limits.ended, signum=signum,
                   screened=len(searcher.screened),
                   narrowed=len(searcher.narrowed))  # fmt: skip


def conclude(
    ending: Ending, study: optuna.Study, config: SearchConfig, out: Path, progress: bool
) -> None:
    """Says how the run ended, or raises: ``RunFolderFull`` when the disk filled,
    ``SearchInterrupted`` when a stop signal cut trials short. Trials the time limit ended
    before their first epoch are recorded as interrupted (a relaunch runs them again)."""
    if ending.full or ending.disk_full:
        lost = "Ray Tune could not write its files"
        if ending.full:
            lost = f"trial(s) {ending.full} could not save their results (uncounted)"
        raise RunFolderFull(
            f"the run folder {out} is full (no space left on device): {lost}; the search "
            f"stopped starting trials; the {trials_counted(study)} trial(s) recorded are "
            "kept in the storage: free space and relaunch the same command to go on"
        )
    if ending.screened and progress:
        print(note(f"{ending.screened} proposal(s) refused before training by the screen "
                   "(over a constraint, or a budget Shapeshifting cannot meet): recorded as "
                   "refused trials, not started, not counted toward trials (screen: false "
                   "sends them to Ray Tune)"), file=sys.stderr, flush=True)  # fmt: skip
    if ending.narrowed and progress:
        print(note(f"{ending.narrowed} of them queued again with narrower widths that pass "
                   "the screen (npas:narrowed_from names the refused one; repair: false "
                   "turns it off)"), file=sys.stderr, flush=True)  # fmt: skip
    if ending.adjourned and progress:
        print(note(f"{len(ending.adjourned)} trial(s) {ending.adjourned} adjourned: "
                   "unfinished, kept with their checkpoints; relaunch the same command (with "
                   "more time) to go on with them"), file=sys.stderr, flush=True)  # fmt: skip
    if ending.time_up and ending.signum is None:  # the time limit ended it
        _time_up(study, progress)
    else:
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        cut = [t.number for t in running if t.number not in ending.adjourned]
        if cut or (ending.stopped is None and ending.ran < ending.remaining):  # a stop signal
            raise interrupted(study, config, ending.signum or signal.SIGINT)
    if ending.stopped is not None and progress:
        print(note(f"no further trial started: {ending.stopped}"), file=sys.stderr, flush=True)


def _time_up(study: optuna.Study, progress: bool) -> None:
    """The trials the spent time ended before their first epoch (no checkpoint to go on from)
    are recorded as interrupted, so that a relaunch runs them again: nobody stopped the search."""
    cut = fail_interrupted(study, resumable)
    if cut and progress:
        print(note(f"time is up: {len(cut)} trial(s) {cut} had reported no epoch; they are "
                   "recorded as interrupted and run again when you relaunch the same command"),
              file=sys.stderr, flush=True)  # fmt: skip
