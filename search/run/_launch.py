"""``launch``: run a search on Ray Tune, every trial recorded in one Optuna study.

Flow: open (or resume) the study → build the optimiser → our Ray searcher over it
(``search.run._searcher``) → ``tune.Tuner`` runs the trainable, which calls
``trial_fn(trial_config)`` on a worker with the trial's CPU/GPU share and reports its metrics,
or the exception's message: a crashing trial is recorded as FAIL and the search goes on.

The optimiser works on an in-memory copy of the study, and each trial is written to the storage
in one transaction when it starts and one when it ends (``search.run._writer``); the trainable
lives in ``search.run._trainable``, which imports no more than the standard library on the
workers.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from search._urls import masked_url
from search._usercode import runtime_env
from search.config import TrialConfig
from search.config._floor import budget_warning
from search.config._user_checks import check_user_code
from search.errors import RunFolderFull, SearchInterrupted, StorageWriteError
from search.run._budget import SearchCost
from search.run._checkpoint_files import resumable
from search.run._checkpoints import CheckpointJanitor
from search.run._deaths import WorkerDeaths
from search.run._lease import Lease
from search.run._limits import TrialLimits
from search.run._moasha import PromotionMOASHA
from search.run._rungview import RungView
from search.run._searcher import DECISIONS_KEY, NpasSearcher
from search.run._storage import (
    FEASIBLE_KEY,
    counts,
    fail_interrupted,
    open_storage,
    open_study,
    record_cost,
    rung_history,
)
from search.run._trainable import TrialFn, checkpoints, trainable
from search.run._writer import StudyWriter, in_memory_copy
from spaces._errors import ConfigError

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["RETRIES", "launch", "trials_counted"]

#: How often a checkpointing trial whose worker died is restarted from its last checkpoint.
RETRIES = 2


def trials_counted(study: optuna.Study) -> int:
    """Trials of a study that count toward ``trials``: all that ended on their own.

    COMPLETE and FAIL count; a trial interrupted by a killed search does not (it is re-run).
    """
    return sum(counts(t) for t in study.get_trials(deepcopy=False))


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
) -> optuna.Study:
    """Runs (or resumes) a search on Ray Tune and returns its Optuna study.

    Relaunching with the same name and storage resumes: trials already ended count toward
    ``trials`` and only the rest run; trials a killed search left RUNNING are marked FAIL
    (``interrupted``) and re-run. Optuna samplers read the history from the study; pymoo
    algorithms are told it again.

    Args:
        config: A ``SearchConfig``.
        trials, name, storage, address, out: Override the config's (see
            :meth:`SearchConfig.with_overrides`); ``trials`` may be 0 (record the search only).
        trial_fn: The trainable, ``trial_config -> metrics`` (default
            ``search.trial.run_trial``); it runs on the Ray workers.
        progress: Print one line per finished trial and a summary to stderr.

    Raises:
        ConfigError: bad overrides, or a stored search of that name with another config.
        SearchInterrupted: Ray Tune was stopped (Ctrl-C) before every trial ran; the trials
            it cut short are marked interrupted and the search resumes when relaunched.
        StorageWriteError: a trial could not be written to the storage (the search stopped).
    """
    config = config.with_overrides(
        trials=trials, name=name, storage=storage, address=address, out=out
    )
    if trial_fn is None:
        from search.trial import run_trial as trial_fn
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the progress view says enough
    try:
        return _launch(config, trial_fn, progress)
    finally:
        optuna.logging.set_verbosity(verbosity)


def _launch(config: SearchConfig, trial_fn: TrialFn, progress: bool) -> optuna.Study:
    import ray

    check_user_code(config)  # before a run folder, a storage or Ray exists
    out = _run_folder(config.out)
    address = config.address
    if address == "auto" and not ray.is_initialized():
        address = _auto_address()
    if address not in (None, "local", "auto"):
        _check_address(address)
    local = address in (None, "local") and not ray.is_initialized()
    if local:  # the Ray this launch starts (once the search is leased) has this machine's
        _check_local_resources(config.resources.cpu, config.resources.gpu)
    # A cluster's resources are known once it is joined, so it is joined before the storage is
    # opened: a share it cannot hold is refused with nothing created.
    joined = False if local else _start_ray(address, runtime_env(config.imports))
    try:
        if not local:
            _slots(config.resources.ray())
        warning = budget_warning(config)
        if warning is not None:
            print(f"[npas] warning: {warning}", file=sys.stderr, flush=True)
        return _launch_stored(config, out, trial_fn, progress)
    finally:
        if joined:
            ray.shutdown()


def _launch_stored(
    config: SearchConfig, out: Path, trial_fn: TrialFn, progress: bool
) -> optuna.Study:
    rdb = open_storage(config.storage_url)
    lease = Lease(rdb.engine, config.name)
    lease.acquire()  # before anything is marked or a local Ray starts: one launch at a time
    try:
        study = _launch_leased(config, rdb, out, trial_fn, progress, lease)
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
) -> optuna.Study:
    from search.optimisers import OPTIMISERS

    constraint_keys = [*config.constraint_texts, FEASIBLE_KEY]
    study = open_study(
        name=config.name,
        storage=rdb,
        sampler=optuna.samplers.RandomSampler(),
        config={**config.to_dict(), "storage": masked_url(config.storage)},
        objectives=config.objectives,
        constraints=config.constraint_texts,
        optimiser=config.optimiser.name,
        resumable=resumable,
    )
    # What a killed search left RUNNING with a checkpoint goes on from it, before new trials.
    resumes = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    remaining = config.trials - trials_counted(study)
    if remaining <= 0:
        return study
    # A resumed search must not replay the first launch's random stream.
    optimiser = OPTIMISERS.get(config.optimiser.name)(
        config.space,
        config.directions,
        seed=config.seed + len(study.trials),
        constraints=constraint_keys,
        **config.optimiser.options,
    )
    sampler = optimiser.sampler()
    if optimiser.models_rungs and config.scheduler.name != "fifo":
        sampler = RungView(sampler, config.objective_names)
    optimiser.bind(in_memory_copy(study, sampler))
    started = _start_ray(config.address, runtime_env(config.imports))
    received: dict[str, Any] = {}  # the stop signal and its timer; whether the disk filled
    try:
        writer = StudyWriter(rdb, config.name, fence=None if lease is None else lease.check)
        cost = SearchCost(config.budget)
        deaths = WorkerDeaths(_ray_logs())
        searcher = NpasSearcher(
            optimiser,
            objectives=config.objectives,
            constraints=constraint_keys,
            trial_config=_TrialConfigOf(config, out / config.name / "trials"),
            writer=writer,
            cost=cost,
            logs=str(out / "ray" / config.name),
            deaths=deaths,
            limits=TrialLimits(config.budget, cost, adjourn=checkpoints(trial_fn)),
            resumes=resumes,
        )
        def stuck(signum: int) -> None:  # the stop did not end: end it here, honestly
            print(f"[npas] stopped: {_interrupted(study, config, signum)}", file=sys.stderr,
                  flush=True)  # fmt: skip
            os._exit(128 + signum)

        try:
            with _sigterm_as_sigint(received, stuck), deaths:
                ran = _run_tuner(config, searcher, study, out, remaining, trial_fn, progress)
        except Exception:
            # Ray Tune reads back files it wrote to the run folder (a trial's error), and one
            # written to a full disk is empty: its error is the disk's, the search has ended.
            if not (searcher.full or _no_room(out)):
                raise
            ran, received["full"] = 0, True
        finally:
            if writer.error is None:
                record_cost(study, cost)
        if writer.error is not None:
            raise writer.error
        if searcher.full or received.get("full"):
            lost = "Ray Tune could not write its files"
            if searcher.full:
                lost = f"trial(s) {sorted(searcher.full)} could not save their results (uncounted)"
            raise RunFolderFull(
                f"the run folder {out} is full (no space left on device): {lost}; the search "
                f"stopped starting trials; the {trials_counted(study)} trial(s) recorded are "
                "kept in the storage: free space and relaunch the same command to go on"
            )
        if searcher.adjourned and progress:
            print(f"[npas] time is up: {len(searcher.adjourned)} unfinished trial(s) "
                  f"{searcher.adjourned} kept with their checkpoints; relaunch the same command "
                  "(with more time) to go on with them", file=sys.stderr)  # fmt: skip
        cut = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
               if t.number not in searcher.adjourned]  # fmt: skip
        if cut or (searcher.stopped is None and ran < remaining):  # a stop signal ended it
            raise _interrupted(study, config, received.get("signum", signal.SIGINT))
        if searcher.stopped is not None and progress:
            print(f"[npas] no further trial started: {searcher.stopped}", file=sys.stderr)
    finally:
        if started:
            import ray

            ray.shutdown()
        if "timer" in received:  # the stop ended in time
            received["timer"].cancel()
    return optuna.load_study(study_name=config.name, storage=rdb)


#: Free bytes below which a run folder's disk counts as full.
_ROOM = 1 << 20


def _no_room(out: Path) -> bool:
    """Whether the run folder's disk is (nearly) full."""
    try:
        return shutil.disk_usage(out).free < _ROOM
    except OSError:
        return False


def _ray_logs() -> str:
    """Ray's log folder of this session on this machine (the same path on a cluster's other
    nodes unless they were started with another ``--temp-dir``)."""
    import ray

    context = ray.get_runtime_context()
    return str(Path(context.get_temp_dir()) / context.get_session_name() / "logs")


@contextlib.contextmanager
def _sigterm_as_sigint(
    received: dict[str, Any], stuck: Callable[[int], None]
) -> Iterator[None]:
    """SIGTERM stops the search as Ctrl-C does (Ray Tune's own SIGINT handling: the trials cut
    short are marked and the search can resume), instead of Ray aborting with a stack dump;
    ``received["signum"]`` is set. A stop that has not ended :data:`STOP_GRACE_S` later calls
    ``stuck(signum)``, unless the caller cancels ``received["timer"]`` once it has: a SIGTERM
    to the whole process group stops the local Ray's own processes too (Ray blocks only SIGINT
    in them), and Ray then waits 60 s for its GCS."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        if "signum" not in received:
            received["signum"] = signum
            received["timer"] = threading.Timer(STOP_GRACE_S, stuck, args=(signum,))
            received["timer"].daemon = True
            received["timer"].start()
        signal.raise_signal(signal.SIGINT)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _kept(limits: TrialLimits | None) -> Callable[[str], bool]:
    """Which stopped trials keep their checkpoints: those a time limit stopped (a relaunch
    continues them, or the user exports them)."""
    return lambda trial_id: limits is not None and (limits.out_of_time or trial_id in limits.why)


def _promotions(scheduler: Any, trial: optuna.trial.FrozenTrial) -> dict[str, list[int]]:
    """The rungs a promotion-type scheduler let ``trial`` go on from, from its stored
    decisions (a relaunch keeps them), as ``add_history``'s keyword."""
    if not isinstance(scheduler, PromotionMOASHA):
        return {}
    log = trial.user_attrs.get(DECISIONS_KEY, [])
    return {"promoted": [d["rung"] for d in log if d["outcome"] in ("promote", "continue")]}


#: Seconds a stopped search has to end cleanly before it ends itself (see _sigterm_as_sigint).
STOP_GRACE_S = 10.0


def _interrupted(
    study: optuna.Study, config: SearchConfig, signum: int = signal.SIGINT
) -> SearchInterrupted:
    """Marks the trials a stop cut short as interrupted (they run again on relaunch), except
    those with a checkpoint (a relaunch continues them from it)."""
    cut = fail_interrupted(study, resumable)
    kept = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    ended = trials_counted(study)
    return SearchInterrupted(
        f"search {config.name!r} stopped by {signal.Signals(signum).name} after {ended} of "
        f"{config.trials} trials; "
        f"{len(cut)} trial(s) cut short {cut} are recorded as interrupted and run again, and "
        f"{len(kept)} {kept} go on from their last checkpoints, when you relaunch the same "
        "command, which resumes the search",
        signum=signum,
    )


def _run_folder(out: str) -> Path:
    """The run folder, created and writable, or a ConfigError naming what is wrong."""
    folder = Path(out).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"out: got {out!r}, which is a file; allowed: a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".npas-write-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise ConfigError(
            f"out: got {out!r}, which cannot be written ({err.strerror or err}); allowed: a "
            "folder this user can create and write"
        ) from None
    return folder


def _check_address(address: str) -> None:
    """A Ray cluster address that answers (HOST:PORT), checked in a few seconds."""
    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not host or not port.isdigit():
        raise ConfigError(
            f"address: got {address!r}; allowed: HOST:PORT of a Ray cluster's head (ray start "
            "--head prints it); Ray Client addresses (ray://) are not supported"
        )
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise ConfigError(
            f"address: nothing answers at {address} ({err.strerror or err}); start the "
            "cluster's head there (ray start --head --port PORT) or leave --address out for a "
            "local Ray"
        ) from None


def _auto_address() -> str:
    """The cluster ``auto`` names: ``RAY_ADDRESS``, else the head ``ray start`` last started on
    this machine (the address file in Ray's temp folder), or a ConfigError at once.

    Ray's own ``auto`` also falls back to any Ray it finds running here, which may be another
    program's private Ray; and with none it fails with a traceback.
    """
    from ray._private.services import find_bootstrap_address

    address = os.environ.get("RAY_ADDRESS") or find_bootstrap_address(None)
    if not address:
        raise ConfigError(
            "address: got 'auto', but no Ray cluster is running on this machine (RAY_ADDRESS is "
            "unset and `ray start` left no address); start one (ray start --head) or leave "
            "--address out for a local Ray"
        )
    return address


def _check_local_resources(cpu: float, gpu: float) -> None:
    """A trial's share must fit the local Ray this launch will start."""
    import torch

    cpus, gpus = os.cpu_count() or 1, torch.cuda.device_count()
    if cpu > cpus or gpu > gpus:
        raise ConfigError(
            f"resources: a trial asks for cpu={cpu:g}, gpu={gpu:g}, but this machine has "
            f"{cpus} CPU and {gpus} GPU; allowed: at most those (or --address a cluster)"
        )


def _start_ray(address: str | None, env: dict[str, Any] | None = None) -> bool:
    """Starts (or joins) Ray unless it runs already; True when this call started it.

    A Ray started here (no address, or ``local``) listens on loopback only; a cluster that
    ``address`` names is joined as it is. ``env`` is the job's ``runtime_env`` (the user's
    code, shipped to every worker).
    """
    import ray

    if ray.is_initialized():
        return False
    with _loopback_node() if address in (None, "local") else contextlib.nullcontext():
        ray.init(
            address=address or "local",  # never a cluster some `ray start` left as the default
            num_cpus=None if address else os.cpu_count(),
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            configure_logging=True,
            runtime_env=env,
        )
    return True


@contextlib.contextmanager
def _loopback_node() -> Iterator[None]:
    """A Ray started inside runs in Ray's single-machine mode (its default on macOS and
    Windows): its node address is 127.0.0.1, and Ray binds its servers (GCS, raylet, workers,
    runtime-env agent) to loopback when it is.

    On Linux Ray turns 127.0.0.1, even one passed as ``_node_ip_address``, into this machine's
    network address unless this flag is off (``ray._private.services.get_node_ip_address``);
    the node keeps the address it started with, so the flag is needed only while Ray starts.
    """
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


def _slots(share: dict[str, float]) -> int:
    """How many trials the Ray cluster can run at once with this share (Ray's keys)."""
    import ray

    total = ray.cluster_resources()
    have = {"cpu": total.get("CPU", 1.0), "gpu": total.get("GPU", 0.0),
            "memory": total.get("memory", 0.0)}  # fmt: skip
    slots = min((math.floor(have[k] / v) for k, v in share.items() if v > 0), default=10**6)
    if slots < 1:
        asked = ", ".join(f"{k}={v:g}" for k, v in share.items())
        held = ", ".join(f"{k}={v:g}" for k, v in have.items())
        raise ConfigError(
            f"resources: a trial asks for {asked}, but the Ray cluster has {held} in all "
            "(memory in bytes)"
        )
    return slots


def _run_tuner(
    config: SearchConfig,
    searcher: NpasSearcher,
    study: optuna.Study,
    out: Path,
    remaining: int,
    trial_fn: TrialFn,
    progress: bool,
) -> int:
    """Runs ``remaining`` trials on Ray Tune, each with its CPU/GPU share.

    Returns:
        How many trials Ray Tune ran: fewer than ``remaining`` when it was stopped (Ctrl-C).
    """
    from ray import tune

    from search.run._progress import Progress
    from search.run._schedulers import SCHEDULERS

    share = config.resources.ray()
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # with verbose=0: no tables, no tips
    # A trial whose worker died is recorded with its cause: no stack dump on the terminal.
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
    # Trials checkpoint every epoch by design: no advice to checkpoint less often.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    resourced = tune.with_resources(
        tune.with_parameters(trainable, trial_fn=trial_fn, objectives=config.objective_names),
        share,
    )
    for name in ("ray.tune.tune", "ray.tune.analysis.experiment_analysis"):
        logging.getLogger(name).addFilter(_no_tune_noise)
    view = Progress(config.objectives, prior=study, total=config.trials, enabled=progress,
                    time_budget=config.budget.time)  # fmt: skip
    scheduler = SCHEDULERS.get(config.scheduler.name)(config)
    if hasattr(scheduler, "add_history"):  # a resumed search ranks its rungs on what it saw
        trials = study.get_trials(deepcopy=False)  # index = number
        for curve, violation, at_chance, number in rung_history(study, config.objective_names):
            scheduler.add_history(curve, violation, at_chance, number,
                                  **_promotions(scheduler, trials[number]))  # fmt: skip
        scheduler.on_decision = searcher.on_decision
    slots = min(remaining, _slots(share))
    if hasattr(scheduler, "may_start"):  # paused trials hold no slot: the scheduler says when
        scheduler.limit(slots=slots, total=remaining)
        searcher.gate = scheduler
    tuner = tune.Tuner(
        resourced,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=remaining,
            max_concurrent_trials=None if searcher.gate is not None else slots,
            reuse_actors=True,  # a fresh worker process per trial costs seconds of imports
        ),
        run_config=tune.RunConfig(
            storage_path=str(out / "ray"),
            name=config.name,
            verbose=0,
            callbacks=[
                view,
                CheckpointJanitor(on_folder=searcher.on_folder, keep=_kept(searcher.limits)),
            ],
            stop=searcher.limits,
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=config.scheduler.keep_checkpoints
            ),
            # A trial whose worker died goes on from its last checkpoint (when it has them).
            failure_config=tune.FailureConfig(
                max_failures=RETRIES if checkpoints(trial_fn) else 0
            ),
        ),
    )
    # Without max_concurrent_trials Ray Tune keeps one trial pending for a searcher; the gate
    # admits slots + 1 (PromotionMOASHA.may_start says why), so Ray Tune must keep them.
    pending = {} if searcher.gate is None else {"TUNE_MAX_PENDING_TRIALS_PG": str(slots + 1)}
    with _environ(**pending), _sigint_kept():
        return len(tuner.fit())


@contextlib.contextmanager
def _sigint_kept() -> Iterator[None]:
    """Ctrl-C means what it meant before the search: Ray Tune's fit() installs its own
    SIGINT handler and restores the caller's only when a SIGINT arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Ray Tune settings read from the environment, set for one search only."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: What Ray Tune logs that a search says better: how to resume ("Tuner.restore": relaunching
#: resumes a search), and the trials that failed or never reported (the study records each, with
#: its error).
_TUNE_NOISE = ("Tuner.restore", "Trials did not complete", "Failed to fetch metrics")


def _no_tune_noise(record: logging.LogRecord) -> bool:
    """Drops the lines of ``_TUNE_NOISE`` (a logging filter)."""
    message = record.getMessage()
    return not any(text in message for text in _TUNE_NOISE)


class _TrialConfigOf:
    """``(point, number) -> trial config`` with the trial's artifact folder."""

    def __init__(self, config: SearchConfig, folder: Path) -> None:
        self.config = config
        self.folder = folder

    def __call__(self, point: dict[str, Any], number: int) -> TrialConfig:
        return self.config.trial_config(point, artifact_dir=str(self.folder / str(number)))
