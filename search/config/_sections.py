"""The search config's sections of their own (``resources``, ``scheduler``, ``limits``,
``algorithm``, ``loggers``) and the multi-fidelity defaults the schedulers read from here: each
name is checked against the registries of ``search.config._registries``, so that no check
imports the package that builds the entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from search.config import _checks as checks
from search.config._keys import config_key, optional_key, parse_section
from search.config._registries import LOGGERS, OPTIMISERS, SCHEDULERS

__all__ = [
    "AUDIT_EVERY",
    "FASTEST_TRIAL_S",
    "GRACE_EPOCHS",
    "REDUCTION_FACTOR",
    "SCHEDULER_TYPES",
    "TRUST_EVIDENCE",
    "WITHIN_FRONT",
    "AlgorithmConfig",
    "LimitsConfig",
    "ResourceConfig",
    "SchedulerConfig",
    "parse_loggers",
]


def _gpu(value: Any, path: str) -> float:
    gpu = checks.number(value, path, low=0.0)
    if 0 < gpu < checks.RAY_RESOLUTION:
        raise checks.bad(path, gpu, _gpu.allowed)  # type: ignore[attr-defined]
    return gpu


checks.described(_gpu, f"0, or a share >= {checks.RAY_RESOLUTION:g}")
_positive = checks.optional(checks.number_in(0.0, open_low=True))


@dataclass(frozen=True)
class ResourceConfig:
    """What one trial asks the scheduler for (Ray packs trials onto nodes by these shares)."""

    cpu: float = config_key(
        1.0,
        check=checks.number_in(checks.RAY_RESOLUTION),
        help="CPUs per trial (at least 0.0001, the finest share Ray resolves)",
    )
    gpu: float = config_key(
        0.0, check=_gpu, help="GPU share per trial; several trials share a GPU"
    )
    memory_mb: float | None = config_key(
        None,
        check=_positive,
        help="memory per trial (MiB); Ray then packs no more trials "
        "on a node than its memory holds",
    )

    @classmethod
    def from_dict(cls, data: Any, path: str = "resources") -> ResourceConfig:
        return parse_section(cls, data, path)

    def ray(self) -> dict[str, float]:
        """The share as Ray's resource request (memory in bytes)."""
        share = {"cpu": float(self.cpu), "gpu": float(self.gpu)}
        if self.memory_mb is not None:
            share["memory"] = float(self.memory_mb) * 2**20
        return share


#: Epochs every trial trains before any decision: the first rung.
GRACE_EPOCHS: Final = 1
#: η: the top 1/η of a rung go on, and the rungs are η apart.
REDUCTION_FACTOR: Final = 3.0
#: ``scheduler.type``: what ``moasha`` does with a trial outside the top of a rung.
SCHEDULER_TYPES: Final = ("stopping", "promotion")
#: ``scheduler.front_order``: how MOASHA orders the trials of one front at a rung.
WITHIN_FRONT: Final = ("hypervolume", "crowding")
#: How a rung of stopping MOASHA earns trust (``search.schedulers._rungtrust``).
TRUST_EVIDENCE: Final = ("chain", "audit", "pooled", "own")
#: ``trust_by: audit``: one in this many trials a trusted rung would stop goes on instead.
AUDIT_EVERY: Final = 4
#: The fewest seconds a trial holds a worker: a start, one report and a stop. A derived timed
#: search's count is the time over this, so that no count ends it before its time does, however
#: fast its trials turn out (a search of a 3,000-row table, derived at ten times the 144 trials
#: the rule's rate expected, stopped all of its 1,440 at their first rung in 192 s of its 600 on
#: two workers, 0.27 s a trial, and recommended nothing; with 28 expected an ItalyPowerDemand
#: search had run them in 1.5 of its 4 minutes). A count no search can reach in its time is
#: not shown as a total (:meth:`LimitsConfig.count_reachable`).
FASTEST_TRIAL_S: Final = 0.25


@dataclass(frozen=True)
class SchedulerConfig:
    """Multi-fidelity: the Ray Tune scheduler that decides after each epoch whether a trial
    goes on (``search.schedulers._named``); ``fifo`` trains every trial to its end."""

    name: str = config_key(
        "fifo",
        check=checks.one_of(SCHEDULERS.names),
        help="fifo trains every trial to its end; moasha stops the trials outside "
        "the top 1/η of a rung",
    )
    type: str = config_key(
        "stopping",
        check=checks.one_of(lambda: SCHEDULER_TYPES),
        help="how moasha holds back a trial: stopping ends it; promotion pauses it "
        "(checkpoint kept, worker freed) and resumes it when enough trials behind "
        "it reach the rung",
    )
    grace_epochs: int = config_key(
        GRACE_EPOCHS,
        check=checks.at_least(1),
        help="epochs every trial trains before any stop (the first rung)",
    )
    reduction_factor: float = config_key(
        REDUCTION_FACTOR,
        check=checks.number_in(1.0, open_low=True),
        help="1/η of the trials at a rung go on to the next",
    )
    max_epochs: int | None = optional_key(
        checks.at_least(1),
        "the most epochs a trial trains (>= grace_epochs); "
        "null: the largest train.epochs of the search",
    )
    keep_checkpoints: int = config_key(
        1, check=checks.at_least(1), help="checkpoints kept per trial, the latest"
    )
    front_order: str = config_key(
        "crowding",
        check=checks.one_of(lambda: WITHIN_FRONT),
        help="how moasha orders the trials of one front at a rung: crowding keeps both ends "
        "(the cheapest net however poor); hypervolume keeps those that add most to it",
    )
    early_promotion: bool = config_key(
        False,
        check=checks.boolean,
        help="promotion type: promote the top ceil(n/η) of a rung, not floor(n/η), so a "
        "rung's first trial goes on at once",
    )
    chance_from: int | None = optional_key(
        checks.at_least(1),
        "the first epoch at which moasha stops a trial no better than chance (a constant "
        "guess); at an earlier rung it goes on, ranked last; null: the first rung",
    )
    trust_rungs: bool = config_key(
        False,
        check=checks.boolean,
        help="moasha: a rung stops (promotion: pauses) trials only while the search's own curves "
        "show it ranks the next (trust_by says how); a promotion rung not trusted promotes every "
        "trial it paused",
    )
    trust_by: str = config_key(
        "chain",
        check=checks.one_of(lambda: TRUST_EVIDENCE),
        help="with trust_rungs: chain trusts a rung once 8 trials show it and every rung above "
        "rank the next (Spearman >= 0.6); audit trusts every rung at first, lets one in four "
        "trials it would stop go on, and stops trusting it while its best third fails to beat "
        "the rest at the next rung (chance < 0.79); pooled audits alike but refutes every rung "
        "at once while the best thirds, summed over the rungs, fail that test; own: a lab design",
    )

    @classmethod
    def from_dict(cls, data: Any, path: str = "scheduler") -> SchedulerConfig:
        """From a name or ``{name: ..., grace_epochs: ..., ...}``."""
        config = parse_section(cls, data, path, named=True)
        if config.max_epochs is not None and config.max_epochs < config.grace_epochs:
            where = f"{path}.max_epochs"
            raise checks.bad(where, config.max_epochs, checks.int_range(config.grace_epochs))
        if config.trust_by != "chain" and not config.trust_rungs:
            raise checks.bad(f"{path}.trust_by", config.trust_by, "chain unless trust_rungs")
        return config


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(value: Any, path: str) -> float:
    """Seconds from a number or ``<number>s|m|h``."""
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text and text[-1] in _UNITS:
        try:
            seconds = float(text[:-1]) * _UNITS[text[-1]]
        except ValueError:
            seconds = -1.0
        if seconds > 0 and seconds < float("inf"):
            return seconds
        raise checks.bad(path, value, _duration.allowed)  # type: ignore[attr-defined]
    if isinstance(value, str):
        raise checks.bad(path, value, _duration.allowed)  # type: ignore[attr-defined]
    return checks.number(value, path, low=0.0, open_low=True)


checks.described(_duration, "a duration such as 45m, 2h, 90s, or seconds > 0")


@dataclass(frozen=True)
class LimitsConfig:
    """The search's own limits (section ``limits``, called ``budget`` before), each per launch
    (a relaunch has the whole of each again; the study keeps the search's totals): no trial
    starts once one would pass a limit, and the trials in flight are stopped at their next
    epoch once ``time`` is spent (None: no limit)."""

    time: float | None = optional_key(
        _duration,
        "wall-clock seconds of each launch; a relaunch has them again (also --time-limit)",
    )
    energy_j: float | None = config_key(
        None, check=_positive, help="joules of each launch's trials' training and measurement"
    )
    co2_g: float | None = config_key(
        None, check=_positive, help="grams of CO2 of each launch's energy"
    )
    trial_timeout: float | None = optional_key(
        _duration,
        "training seconds of one trial (across its pauses): "
        "past it, a trial is stopped at its next epoch, "
        "checkpointed and recorded as pruned",
    )

    @classmethod
    def from_dict(cls, data: Any, path: str = "limits") -> LimitsConfig:
        return parse_section(cls, data, path)

    def count_reachable(self, trials: int, slots: int) -> bool:
        """Whether ``trials`` could end a launch before its ``time`` does, on ``slots`` trials
        at once at :data:`FASTEST_TRIAL_S` a trial: a derived timed search's count cannot (it
        is that ceiling), so its progress shows no total ("27/4,800 done" said nothing)."""
        return self.time is None or trials < self.time * max(1, slots) / FASTEST_TRIAL_S


def parse_loggers(value: Any, path: str) -> tuple[str, ...]:
    """Logger names, each once in the order given; one name alone or null are allowed too."""
    if value is None:
        return ()
    known = LOGGERS.names()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list | tuple):
        raise checks.bad(path, value, f"a list of {known}")
    return tuple(dict.fromkeys(checks.name(v, f"{path}[{i}]", known) for i, v in enumerate(names)))


checks.described(parse_loggers, LOGGERS.names)


@dataclass(frozen=True)
class AlgorithmConfig:
    """The search algorithm (section ``algorithm``, called ``optimiser`` before; not
    ``train.optimizer``, which trains each model): its registered name and options."""

    name: str = config_key(
        "tpe",
        check=checks.one_of(OPTIMISERS.names, "docs/running.md"),
        help="the search algorithm (search.optimisers)",
    )
    options: dict[str, Any] = config_key(
        check=lambda v, p: checks.mapping({} if v is None else v, p),
        factory=dict,
        help="the algorithm's options, e.g. population_size",
        allowed="a mapping of option names to values",
    )

    @classmethod
    def from_dict(cls, data: Any, path: str = "algorithm") -> AlgorithmConfig:
        """From a name or ``{name: ..., options: {...}}``."""
        return parse_section(cls, data, path, named=True)
