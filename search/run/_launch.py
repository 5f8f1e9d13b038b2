"""``launch``: run a search on Ray Tune, every trial recorded in one Optuna study.

Flow: open (or resume) the study → build the optimiser → our Ray searcher over it
(``search.run._searcher``) → ``tune.Tuner`` runs the trainable, which calls
``trial_fn(trial_config)`` on a worker with the trial's CPU/GPU share and reports its metrics,
or the exception's message: a crashing trial is recorded as FAIL and the search goes on.

The optimiser works on an in-memory copy of the study, and each trial is written to the storage
in one transaction when it starts and one when it ends (``search.record._writer``); the trainable
lives in ``search.run._trainable``, which imports no more than the standard library on the
workers. With a ``finalists`` section, the search's best trials are retrained after it, in
this process, and its recommendation recorded (``search.run._finalists``); the search itself
then has the rest of ``limits.time``. This module holds the steps of one launch in order; the
Ray it runs on is ``search.run._ray_session``'s, the Ray Tune run ``search.run._tuner``'s, and a
stop (Ctrl-C, SIGTERM) is handled by ``search.run._interrupts``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna

from search._compat import check as check_dependencies
from search._format import note
from search._urls import masked_url
from search.config import TrialConfig
from search.errors import StorageLost, StorageWriteError
from search.record import (
    DataCheck,
    Lease,
    StorageIdentity,
    StudyWriter,
    checkpoint_problem,
    enqueue_start,
    latest_checkpoint,
    lost_report,
    open_storage,
    open_study,
    record_cost,
    resume_checkpoint,
    trials_counted,
)
from search.run._bound import bound_optimiser, constraint_keys
from search.run._cost import SearchCost
from search.run._deaths import WorkerDeaths
from search.run._ending import Ending, conclude
from search.run._finalists import run_finalists
from search.run._interrupts import (
    STOP_GRACE_S,
    SigtermHeld,
    StopRequested,
    interrupted,
    ray_exit,
    sigterm_as_sigint,
)
from search.run._limits import TrialLimits
from search.run._outcome import OutcomeReader
from search.run._ray_session import (
    auto_address,
    check_address,
    check_local_resources,
    ray_logs,
    slots,
    start_ray,
    starting,
    stop_ray,
)
from search.run._recorder import StudyRecorder
from search.run._run_folder import no_room, run_folder
from search.run._searcher import NpasSearcher, ScreenFn
from search.run._stages import Stage
from search.run._trainable import TrialFn, checkpoints
from search.run._tuner import run_tuner
from search.screening import Screen, budget_warning, check_user_code

if TYPE_CHECKING:
    import sqlalchemy

    from search.config import SearchConfig

__all__ = ["launch"]


def launch(
    config: SearchConfig,
    *,
    trials: int | None = None,
    name: str | None = None,
    storage: str | None = None,
    address: str | None = None,
    out: str | Path | None = None,
    trial_fn: TrialFn | None = None,
    progress: bool = True,
    data_changed: bool = False,
    on_start: Callable[[], None] | None = None,
) -> optuna.Study:
    """Runs (or resumes) a search on Ray Tune and returns its Optuna study.

    Relaunching with the same name and storage resumes: trials already ended count toward
    ``trials`` and only the rest run; trials a killed search left RUNNING are marked FAIL
    (``interrupted``) and re-run. Optuna samplers read the history from the study; pymoo
    algorithms are told it again. With ``config.finalists`` on, the finalists follow the
    trials (only the runs the study does not hold yet) and the recommendation is recorded.

    Args:
        config: A ``SearchConfig``.
        trials, name, storage, address, out: Override the config's (see
            :meth:`SearchConfig.with_overrides`); ``trials`` may be 0 (record the search only).
        trial_fn: The trainable, ``trial_config -> metrics`` (default
            ``search.trial.run_trial``); it runs on the Ray workers.
        progress: Print one line per finished trial and a summary to stderr.
        data_changed: Go on with a search whose user dataset changed since it was launched
            (recorded; its unfinished trials start again); without it that is refused.
        on_start: Called once every check passed, before the storage is opened (``search
            launch`` says what it launches then: never before a refusal).

    Raises:
        ConfigError: bad overrides or data, or a stored search of that name with another
            config or, unless ``data_changed``, other data.
        SearchInterrupted: Ray Tune was stopped (Ctrl-C) before every trial ran; the trials
            it cut short are marked interrupted and the search resumes when relaunched. Or a
            stop during the finalists: the runs that ended are kept.
        StorageWriteError: a trial could not be written to the storage (the search stopped).
    """
    config = config.with_overrides(
        trials=trials, name=name, storage=storage, address=address, out=out
    )
    if trial_fn is None:
        from search.trial import run_trial

        trial_fn = run_trial
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the progress view says enough
    try:
        return _launch(config, trial_fn, progress, data_changed, on_start or (lambda: None))
    finally:
        optuna.logging.set_verbosity(verbosity)


def _launch(
    config: SearchConfig,
    trial_fn: TrialFn,
    progress: bool,
    data_changed: bool,
    on_start: Callable[[], None],
) -> optuna.Study:
    import ray

    check_dependencies()  # the private Optuna and Ray APIs npas relies on, before anything runs
    # before a run folder, a storage or Ray exists
    data = DataCheck(check_user_code(config), data_changed)
    out = run_folder(config.out)
    address = config.address
    if address == "auto" and not ray.is_initialized():
        address = auto_address()
    if address not in (None, "local", "auto"):
        check_address(address)
    local = address in (None, "local") and not ray.is_initialized()
    if local:  # the Ray this launch starts (once the search is leased) has this machine's
        check_local_resources(config.resources.cpu, config.resources.gpu)
    # A cluster's resources are known once it is joined, so it is joined before the storage is
    # opened: a share it cannot hold is refused with nothing created.
    joined = False if local else start_ray(address, config.imports)
    try:
        if not local:
            slots(config.resources.ray())
        warning = budget_warning(config)
        if warning is not None:
            print(note(f"warning: {warning}"), file=sys.stderr, flush=True)
        on_start()
        return _launch_stored(config, out, trial_fn, progress, data=data)
    finally:
        if joined:
            ray.shutdown()


def _launch_stored(
    config: SearchConfig, out: Path, trial_fn: TrialFn, progress: bool, *, data: DataCheck
) -> optuna.Study:
    rdb = open_storage(config.storage_url)
    identity = StorageIdentity(rdb.engine)  # the file opened: later writes check it is still
    lease = Lease(rdb.engine, config.name, fence=identity.check)
    lease.acquire()  # before anything is marked or a local Ray starts: one launch at a time
    try:
        study = _launch_leased(config, rdb, out, trial_fn, progress, lease, identity, data=data)
    except BaseException:
        lease.release()  # never raises: the error in flight is the one the user sees
        raise
    failure = lease.release()
    if failure is not None:
        raise StorageWriteError(
            f"the search ended, but its storage {masked_url(config.storage_url)} failed when "
            f"freeing its lease ({failure}); every trial was written, and the lease lapses "
            "now that this launch is gone: check the storage before relaunching"
        )
    return study


def _launch_leased(
    config: SearchConfig,
    rdb: optuna.storages.RDBStorage,
    out: Path,
    trial_fn: TrialFn,
    progress: bool,
    lease: Lease | None = None,
    identity: StorageIdentity | None = None,
    data: DataCheck | None = None,
) -> optuna.Study:
    started = time.monotonic()  # the launch's clock: the finalists end by its time limit
    resumable = _Resumable()
    study = open_study(
        name=config.name,
        storage=rdb,
        sampler=optuna.samplers.RandomSampler(),
        config={**config.to_dict(), "storage": masked_url(config.storage)},
        objectives=config.objectives,
        constraints=config.constraint_texts,
        optimiser=config.algorithm.name,
        resumable=resumable,
        data=data,
    )
    held = len(study.get_trials(deepcopy=False))  # what the storage holds before this launch
    # What a killed search left RUNNING with a checkpoint goes on from it, before new trials:
    # those open_study left RUNNING, as it saw them (never read twice).
    resumes = dict(resumable.chosen)
    remaining = config.trials - trials_counted(study)
    fences = [f.check for f in (identity, lease) if f is not None]
    holds: list[Callable[[sqlalchemy.Connection], None]] = [] if lease is None else [lease.hold]
    if remaining > 0:
        if held == 0:  # a new search: the trial folders of a deleted one of its name stay whole
            _set_aside(out / config.name / "trials", config.name)
        _search(config, rdb, study, out, trial_fn, progress, resumes, remaining, held,
                (fences, holds), started)  # fmt: skip
    deadline = None if config.limits.time is None else started + config.limits.time
    writer = StudyWriter(rdb, config.name, fences=fences, holds=holds)
    run_finalists(study, config, trial_fn, deadline=deadline, write=writer.study_attrs,
                  progress=progress, folder=out / config.name / "finalists")  # fmt: skip
    return optuna.load_study(study_name=config.name, storage=rdb)


def _search(
    config: SearchConfig,
    rdb: optuna.storages.RDBStorage,
    study: optuna.Study,
    out: Path,
    trial_fn: TrialFn,
    progress: bool,
    resumes: dict[int, Path],
    remaining: int,
    held: int,
    fencing: tuple[list[Callable[[], None]], list[Callable[[sqlalchemy.Connection], None]]],
    launched_at: float,
) -> None:
    """The search itself: Ray Tune runs ``remaining`` trials (with finalists, under the
    search's share of the time limit, on the launch's clock: ``launched_at``, ``time.monotonic``
    when the launch started), each recorded as it starts and ends, after ``fencing``'s checks
    (before each write, and inside its transaction: ``StudyWriter``'s fences and holds)."""
    if config.finalists.on and config.limits.time is not None:
        share = config.finalists.search_time(config.limits.time)
        config = dataclasses.replace(config, limits=dataclasses.replace(config.limits, time=share))
    keys = constraint_keys(config)
    # A resumed search must not replay the first launch's random stream.
    optimiser = bound_optimiser(
        config, study, seed=config.seed + len(study.trials), scheduler=config.scheduler.name
    )
    enqueue_start(optimiser.study, config.start)  # the points a user knows, before any proposal
    received: dict[str, Any] = {}  # the stop signal and its timer; whether the disk filled

    def stuck(signum: int) -> None:  # the stop did not end: end it here, honestly
        # Ends with 128 + signum even when recording the cut trials fails or hangs (a
        # storage a loaded machine answers slowly): the exit code is the promise.
        last = threading.Timer(STOP_GRACE_S, os._exit, args=(128 + signum,))
        last.daemon = True
        last.start()
        try:
            print(note(f"stopped: {interrupted(study, config, signum)}"), file=sys.stderr,
                  flush=True)  # fmt: skip
        finally:
            os._exit(128 + signum)

    # A SIGTERM while Ray starts, or after Ray Tune's run, stops the search as one during it
    # does (exit 143, the summary): ray.init's own handler would exit with code 15.
    held_term = SigtermHeld(received, stuck)
    started = False
    try:
        started = _start_ray(config, progress, received, held_term)
        writer = StudyWriter(rdb, config.name, fences=fencing[0], holds=fencing[1])
        cost = SearchCost(config.limits, started=launched_at)
        deaths = WorkerDeaths(ray_logs())
        recorder = StudyRecorder(writer)
        searcher = NpasSearcher(
            optimiser,
            outcomes=OutcomeReader(
                config.objectives, keys, logs=str(out / "ray" / config.name), deaths=deaths
            ),
            trial_config=_TrialConfigOf(config, out / config.name / "trials"),
            recorder=recorder,
            limits=TrialLimits(config.limits, cost, adjourn=checkpoints(trial_fn)),
            resumes=resumes,
            screen=_screen(config, trial_fn),
            repair=config.repair,
        )

        try:
            with sigterm_as_sigint(received, stuck), deaths:
                ran = run_tuner(config, searcher, recorder, study, out, remaining, trial_fn,
                                progress)  # fmt: skip
        except Exception:
            if "signum" in received:  # what Ray raised on its way down after a stop (its GCS
                ran = 0  # killed with the process group) is the stop's: it ends as stopped
            # Ray Tune reads back files it wrote to the run folder (a trial's error), and one
            # written to a full disk is empty: its error is the disk's, the search has ended.
            elif searcher.full or no_room(out):
                ran, received["full"] = 0, True
            else:
                raise
        finally:
            with contextlib.suppress(StorageWriteError):  # kept in writer.error
                writer.confirm()  # nothing below writes to a storage that is not the search's
            if writer.error is None:
                with contextlib.suppress(StorageWriteError):  # kept in writer.error
                    record_cost(study, cost, writer.study_attrs)  # held: none after a take-over
        if isinstance(writer.error, StorageLost):
            raise lost_report(writer.error, search=config.name, held=held,
                              started=writer.numbers, ray_folder=out / "ray" / config.name,
                              trials_folder=out / config.name / "trials") from None  # fmt: skip
        if writer.error is not None:
            raise writer.error
        ending = Ending.of(searcher, ran=ran, remaining=remaining, resumes=list(resumes),
                           disk_full=bool(received.get("full")), signum=received.get("signum"))
        conclude(ending, study, config, out, progress)
    except StopRequested as stop:
        raise interrupted(study, config, stop.signum) from None
    finally:
        held_term.ending()
        if started:
            stop_ray()
        if "timer" in received:  # the stop ended in time
            received["timer"].cancel()
        held_term.restore()


def _set_aside(folder: Path, name: str) -> None:
    """Moves ``folder`` (a search's trial folders) to a name of its own when it holds files
    while the storage holds no trial of the search: they are a deleted search's (``search
    delete`` keeps them, and says so), whose ``model.pt`` files the new trials 0, 1, …
    would overwrite."""
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = folder.with_name(f"{folder.name}-before-{stamp}")
    for n in range(1, 100):
        if not target.exists():
            break
        target = folder.with_name(f"{folder.name}-before-{stamp}-{n}")
    folder.rename(target)
    print(note(f"{folder} held the trials of an earlier search {name!r} that its storage "
               f"no longer holds (deleted): moved to {target}, so that no file of it is "
               "overwritten"), file=sys.stderr, flush=True)  # fmt: skip


def _start_ray(
    config: SearchConfig, progress: bool, received: dict[str, Any], held: SigtermHeld
) -> bool:
    """:func:`start_ray`, its SIGTERM taken as a stop: ``ray.init`` installs a handler that
    calls ``sys.exit(15)`` (npas's put back once it returns); a Ray half
    started when the signal came is shut down before the stop is raised."""
    import ray

    before = ray.is_initialized()
    try:
        with Stage(starting(config.address), enabled=progress):
            started = start_ray(config.address, config.imports)
    except (StopRequested, SystemExit) as err:
        held.hold()  # a second SIGTERM meanwhile is the same stop's
        if isinstance(err, SystemExit) and not ray_exit(err):
            raise
        received.setdefault("signum", signal.SIGTERM)
        if not before:
            if ray.is_initialized():
                stop_ray()
            else:  # killed mid-start: the processes it started, if any
                ray.shutdown()
        raise StopRequested(received["signum"]) from None
    held.hold()
    return started


class _Resumable:
    """Whether a relaunch resumes a RUNNING trial, with a warning naming the file and the
    reason when its latest checkpoint cannot be read: it goes on from the one before when that
    one is whole, else it is treated as a trial without one (resumed, it would fail, and
    count). Keeps the folder it chose for each, so no checkpoint is read twice."""

    def __init__(self) -> None:
        self.chosen: dict[int, Path] = {}

    def __call__(self, trial: optuna.trial.FrozenTrial) -> bool:
        problem = checkpoint_problem(trial)
        folder = latest_checkpoint(trial) if problem is None else resume_checkpoint(trial)
        if problem is not None:
            then = (f"it goes on from the one before ({folder.name})" if folder is not None
                    else "it is recorded as interrupted (not counted) and another trial runs "
                    "in its place, as for a trial without one")  # fmt: skip
            print(note(f"warning: trial {trial.number}'s checkpoint cannot be read "
                       f"({problem}); {then}"), file=sys.stderr, flush=True)  # fmt: skip
        if folder is not None:
            self.chosen[trial.number] = folder
        return folder is not None


def _screen(config: SearchConfig, trial_fn: TrialFn) -> ScreenFn | None:
    """The screen of a search that screens (``screen: true``) with ``run_trial``, whose
    refusals it tells in advance; None otherwise (another trial function refuses its own)."""
    from search.trial import run_trial

    return Screen() if config.screen and trial_fn is run_trial else None


class _TrialConfigOf:
    """``(point, number) -> trial config`` with the trial's artifact folder."""

    def __init__(self, config: SearchConfig, folder: Path) -> None:
        self.config = config
        self.folder = folder

    def __call__(self, point: dict[str, Any], number: int) -> TrialConfig:
        return self.config.trial_config(point, artifact_dir=str(self.folder / str(number)))
