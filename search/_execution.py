"""``launch``: run a search on Ray Tune, every trial recorded in one Optuna study.

Flow: open (or resume) the study → build the optimiser plug-in → a Ray searcher over it (Ray
Tune's OptunaSearch for Optuna samplers, ours for pymoo) → ``tune.Tuner`` runs the trainable,
which calls ``trial_fn(trial_config)`` on a worker with the trial's CPU/GPU share and reports its
metrics, or the exception's message: a crashing trial is recorded as FAIL and the search goes on.

The optimiser works on an in-memory copy of the study, and each trial is written to the storage
in one transaction when it starts and one when it ends (``search._writer``): the storage's
reads and Optuna's statement-per-attribute writes stay out of Ray Tune's driver loop. The
trainable lives in ``search._trainable``, which imports no more than the standard library on
the workers.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna

from search._storage import (
    FEASIBLE_KEY,
    counts,
    default_storage_url,
    fail_interrupted,
    open_storage,
    open_study,
)
from search._trainable import TrialFn, trainable
from search._writer import StudyWriter, in_memory_copy
from spaces._errors import NpasError

if TYPE_CHECKING:
    from search._config import SearchConfig

__all__ = ["SearchInterrupted", "launch", "trial_budget"]


def _default_trial_fn() -> TrialFn:
    from search.trial import run_trial

    return run_trial


@dataclass(frozen=True)
class _Plan:
    """What one launch runs, read from the config and the overrides."""

    name: str
    out: Path
    storage_url: str
    total: int
    address: str | None
    optimiser: str
    options: dict[str, Any]
    cpu: float
    gpu: float
    seed: int | None


def _plan(config: SearchConfig, **overrides: Any) -> _Plan:
    name = overrides["name"] or config.name
    out = Path(overrides["out"] or config.out).expanduser().resolve()
    url = overrides["storage"] or config.storage or default_storage_url(out)
    total = overrides["trials"] if overrides["trials"] is not None else config.trials
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        from spaces._errors import ConfigError

        raise ConfigError(f"trials must be an int >= 0, got {total!r}")
    return _Plan(
        name=name,
        out=out,
        storage_url=url,
        total=total,
        address=overrides["address"] or config.address,
        optimiser=config.optimiser.name,
        options=dict(config.optimiser.options),
        cpu=float(config.resources.cpu),
        gpu=float(config.resources.gpu),
        seed=config.seed,
    )


def trial_budget(study: optuna.Study) -> int:
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
        trials: Total trials of the search (default: the config's).
        name: Search (study) name (default: the config's).
        storage: SQLAlchemy URL (default: the config's, else ``sqlite:///<out>/npas.db``).
        address: Ray cluster to join (``HOST:PORT``; default: the config's, else a local Ray
            using every CPU of this machine). An already initialised Ray is used as it is.
        out: Run folder for the storage, Ray's files and artifacts (default: the config's).
        trial_fn: The trainable, ``trial_config -> metrics`` (default
            ``search.trial.run_trial``); it runs on the Ray workers.
        progress: Print one line per finished trial and a summary to stderr.

    Raises:
        ConfigError: bad overrides, or a stored search of that name with another config.
        SearchInterrupted: Ray Tune was stopped (Ctrl-C) before every trial ran; the trials
            it cut short are marked interrupted and the search resumes when relaunched.
        StorageWriteError: a trial could not be written to the storage (the search stopped).
    """
    plan = _plan(config, trials=trials, name=name, storage=storage, address=address, out=out)
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the progress view says enough
    try:
        return _launch(config, plan, trial_fn or _default_trial_fn(), progress)
    finally:
        optuna.logging.set_verbosity(verbosity)


def _launch(config: SearchConfig, plan: _Plan, trial_fn: TrialFn, progress: bool) -> optuna.Study:
    from search._optimisers import OPTIMISERS

    objectives = [(str(n), str(d)) for n, d in config.objectives]
    constraints = [str(c) for c in config.constraints]
    constraint_keys = [*constraints, FEASIBLE_KEY]
    rdb = open_storage(plan.storage_url)
    study = open_study(
        name=plan.name,
        storage=rdb,
        sampler=optuna.samplers.RandomSampler(),
        config=config.to_dict(),
        objectives=objectives,
        constraints=constraints,
        optimiser=plan.optimiser,
    )
    remaining = plan.total - trial_budget(study)
    if remaining <= 0:
        return study
    # A resumed search must not replay the first launch's random stream.
    seed = None if plan.seed is None else int(plan.seed) + len(study.trials)
    optimiser = OPTIMISERS.get(plan.optimiser)(
        config.space,
        [d for _, d in objectives],
        seed=seed,
        constraints=constraint_keys,
        **plan.options,
    )
    started = _start_ray(plan.address)
    try:
        writer = StudyWriter(rdb, plan.name)
        searcher = _searcher(config, plan, optimiser, study, objectives, constraint_keys, writer)
        ran = _fit(searcher, plan, study, objectives, remaining=remaining, trial_fn=trial_fn,
                   progress=progress)  # fmt: skip
        if writer.error is not None:
            raise writer.error
        if ran < remaining:
            raise _interrupted(study, plan)
    finally:
        if started:
            import ray

            ray.shutdown()
    return optuna.load_study(study_name=plan.name, storage=rdb)


class SearchInterrupted(NpasError):
    """The search was stopped (Ctrl-C) before all its trials ran; relaunching resumes it."""


def _interrupted(study: optuna.Study, plan: _Plan) -> SearchInterrupted:
    """Marks the trials a stop cut short as interrupted (they run again on relaunch)."""
    cut = fail_interrupted(study)
    ended = trial_budget(study)
    return SearchInterrupted(
        f"search {plan.name!r} stopped after {ended} of {plan.total} trials; "
        f"{len(cut)} trial(s) cut short {cut} are recorded as interrupted and run again when "
        "you relaunch the same command, which resumes the search"
    )


def _start_ray(address: str | None) -> bool:
    """Starts (or joins) Ray unless it runs already; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(
        address=address or "local",  # never a cluster some `ray start` left as the default
        num_cpus=None if address else os.cpu_count(),
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        configure_logging=True,
    )
    return True


def _slots(cpu: float, gpu: float) -> int:
    """How many trials the Ray cluster can run at once with these shares."""
    import ray

    total = ray.cluster_resources()
    slots = math.floor(total.get("CPU", 1.0) / cpu) if cpu > 0 else 10**6
    if gpu > 0:
        slots = min(slots, math.floor(total.get("GPU", 0.0) / gpu))
    if slots < 1:
        from spaces._errors import ConfigError

        raise ConfigError(
            f"resources: a trial asks for cpu={cpu}, gpu={gpu}, but the Ray cluster has "
            f"{total.get('CPU', 0)} CPU and {total.get('GPU', 0)} GPU in all"
        )
    return slots


def _searcher(
    config: SearchConfig,
    plan: _Plan,
    optimiser: Any,
    study: optuna.Study,
    objectives: list[tuple[str, str]],
    constraint_keys: list[str],
    writer: StudyWriter,
) -> Any:
    """Ray Tune's OptunaSearch (ours) for Optuna samplers, our adapter for the others.

    Either works on an in-memory copy of ``study``; ``writer`` records into ``study``.
    """
    from search._optimisers import OptunaOptimiser
    from search._searcher import NpasOptunaSearch, OptimiserSearcher

    make = _TrialConfig(config, plan.out / plan.name / "trials")
    memory = in_memory_copy(study, optimiser.sampler())
    if isinstance(optimiser, OptunaOptimiser):
        return NpasOptunaSearch(
            space=config.space,
            optimiser=optimiser,
            study_name=plan.name,
            storage=memory._storage,
            objectives=objectives,
            constraints=constraint_keys,
            trial_config=make,
            writer=writer,
        )
    optimiser.bind(memory)
    return OptimiserSearcher(
        optimiser, objectives=objectives, constraints=constraint_keys, trial_config=make,
        writer=writer,
    )  # fmt: skip


def _fit(
    searcher: Any,
    plan: _Plan,
    study: optuna.Study,
    objectives: list[tuple[str, str]],
    *,
    remaining: int,
    trial_fn: TrialFn,
    progress: bool,
) -> int:
    """Runs ``remaining`` trials on Ray Tune, each with its CPU/GPU share.

    Returns:
        How many trials Ray Tune ran: fewer than ``remaining`` when it was stopped (Ctrl-C).
    """
    from ray import tune

    from search._searcher import Progress

    names = [n for n, _ in objectives]
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # with verbose=0: no tables, no tips
    resourced = tune.with_resources(
        tune.with_parameters(trainable, trial_fn=trial_fn, objectives=names),
        {"cpu": plan.cpu, "gpu": plan.gpu},
    )
    logging.getLogger("ray.tune.tune").addFilter(_no_restore_advice)
    tuner = tune.Tuner(
        resourced,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            num_samples=remaining,
            max_concurrent_trials=min(remaining, _slots(plan.cpu, plan.gpu)),
            reuse_actors=True,  # a fresh worker process per trial costs seconds of imports
        ),
        run_config=tune.RunConfig(
            storage_path=str(plan.out / "ray"),
            name=plan.name,
            verbose=0,
            callbacks=[Progress(objectives, prior=study, total=plan.total, enabled=progress)],
        ),
    )
    return len(tuner.fit())


def _no_restore_advice(record: logging.LogRecord) -> bool:
    """Drops Ray's "Resume experiment with: Tuner.restore(...)": relaunching resumes a search."""
    return "Tuner.restore" not in record.getMessage()


class _TrialConfig:
    """``(point, number) -> trial config`` with the trial's artifact folder (picklable)."""

    def __init__(self, config: SearchConfig, folder: Path) -> None:
        self.config = config
        self.folder = folder

    def __call__(self, point: dict[str, Any], number: int) -> dict[str, Any]:
        return self.config.trial_config(point, artifact_dir=str(self.folder / str(number)))
