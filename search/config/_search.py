"""The search config: a whole search (dataset, space, fixed values, training, objectives,
constraints, optimiser, trials, resources, storage), validated into a :class:`SearchConfig`.

Names of space dimensions and fixed values: ``family``; ``budget`` (None or absent: the plain
model); ``ssn.<option>``; ``train.<option>``; ``<family>.<hyper>`` (made conditional on
``family`` automatically); ``<family>.<hyper>.<i>`` for element ``i`` of a list-valued
hyper-parameter (``scs.widths.0``, ``scs.widths.1``, ...), since a dimension holds one scalar;
``<family>.train.<option>``, a training option of that family alone (SCS nets train with Adam
at rates that would stall SGD), which wins over ``train.<option>``.

``ssn.mapping: none`` (in the space or fixed) means no Shapeshifting: the plain model, whatever
``budget`` says. With ``budget`` made conditional on the other mappings, one search holds plain
and shared models, and its front answers whether sharing pays at a parameter count.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from search._urls import default_storage_url, masked_url
from search._usercode import import_modules, normalise_imports
from search.config import _checks as checks
from search.config._metrics import Constraint, Objective, parse_constraints, parse_objectives
from search.config._trial import (
    DEFAULT_EPOCHS,
    LOADING_OPTIONS,
    SSN_OPTIONS,
    TRAIN_OPTIONS,
    TRIAL_OPTIONS,
    TrialConfig,
    _indicators,
    _measure,
    _section,
    _tuple,
    declared_dataset,
)
from spaces._build import FAMILIES, hyper_keys
from spaces._dsl import Categorical, Fixed, Float, Int, Space
from spaces._errors import ConfigError
from spaces._hyper import check_hyper

__all__ = [
    "OptimiserConfig",
    "ResourceConfig",
    "SearchConfig",
    "default_storage_url",
    "masked_url",
]

#: ``ssn.mapping`` of a search point that trains the plain model (no parameter sharing).
PLAIN = "none"


@dataclass(frozen=True)
class ResourceConfig:
    """What one trial asks the scheduler for: CPUs (at least 0.0001, the finest share Ray
    resolves), a GPU share (0, or at least 0.0001) and, when given, memory in MiB (Ray then
    packs no more trials on a node than its memory holds)."""

    cpu: float = 1.0
    gpu: float = 0.0
    memory_mb: float | None = None

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "resources") -> ResourceConfig:
        data = checks.mapping({} if data is None else data, path)
        checks.known_keys(data, ("cpu", "gpu", "memory_mb"), path)
        cpu = checks.number(data.get("cpu", 1.0), f"{path}.cpu", low=checks.RAY_RESOLUTION)
        gpu = checks.number(data.get("gpu", 0.0), f"{path}.gpu", low=0.0)
        if 0 < gpu < checks.RAY_RESOLUTION:
            raise checks.bad(f"{path}.gpu", gpu, f"0, or a share >= {checks.RAY_RESOLUTION:g}")
        memory = checks.optional(lambda v, p: checks.number(v, p, low=0.0, open_low=True))
        return cls(cpu, gpu, memory(data.get("memory_mb"), f"{path}.memory_mb"))

    def ray(self) -> dict[str, float]:
        """The share as Ray's resource request (memory in bytes)."""
        share = {"cpu": float(self.cpu), "gpu": float(self.gpu)}
        if self.memory_mb is not None:
            share["memory"] = float(self.memory_mb) * 2**20
        return share


@dataclass(frozen=True)
class SchedulerConfig:
    """Multi-fidelity: the Ray Tune scheduler that decides after each epoch whether a trial
    goes on (``search.run._schedulers``); ``fifo`` trains every trial to its end.

    Attributes:
        name: ``fifo`` or ``moasha``.
        type: How ``moasha`` holds back a trial outside the top 1/η of a rung: ``stopping``
            ends it there; ``promotion`` pauses it (its checkpoint kept, its worker freed) and
            resumes it from the checkpoint once enough trials behind it reach the rung.
        grace_epochs: Epochs every trial trains before any stop (the first rung).
        reduction_factor: 1/η of the trials at a rung go on to the next.
        max_epochs: The most epochs a trial trains; None: the ``train.epochs`` of the search.
        keep_checkpoints: Checkpoints kept per trial, the latest (a trial checkpoints after
            every epoch; a stopped trial's are deleted, as it is never resumed).
    """

    name: str = "fifo"
    type: str = "stopping"
    grace_epochs: int = 1
    reduction_factor: float = 3.0
    max_epochs: int | None = None
    keep_checkpoints: int = 1

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "scheduler") -> SchedulerConfig:
        """From a name or ``{name: ..., grace_epochs: ..., ...}``."""
        data = checks.named_section(data, path, [f.name for f in dataclasses.fields(cls)])
        if data is None:
            return cls()
        from search.run._schedulers import SCHEDULER_TYPES, SCHEDULERS

        name = checks.name(data.get("name", cls.name), f"{path}.name", SCHEDULERS.names())
        kind = checks.name(data.get("type", cls.type), f"{path}.type", SCHEDULER_TYPES)
        grace = data.get("grace_epochs", cls.grace_epochs)
        grace = checks.integer(grace, f"{path}.grace_epochs", 1)
        factor = checks.number(
            data.get("reduction_factor", cls.reduction_factor),
            f"{path}.reduction_factor",
            low=1.0,
            open_low=True,
        )
        top = data.get("max_epochs")
        top = None if top is None else checks.integer(top, f"{path}.max_epochs", grace)
        keep = data.get("keep_checkpoints", cls.keep_checkpoints)
        keep = checks.integer(keep, f"{path}.keep_checkpoints", 1)
        return cls(name, kind, grace, factor, top, keep)


@dataclass(frozen=True)
class BudgetConfig:
    """The search's own budget: no trial starts once one would be passed, and the trials in
    flight are stopped at their next epoch once ``time`` is spent (None: no limit).

    Attributes:
        time: Wall-clock seconds of the launch (YAML and ``--time-budget`` take ``45m``,
            ``2h``, ``90s`` or seconds).
        energy_j: Joules of the trials' training and measurement.
        co2_g: Grams of CO2 of that energy.
        trial_timeout: Training seconds of one trial (across its pauses; same forms as
            ``time``): a trial past it is stopped at its next epoch, checkpointed, and
            recorded as pruned with the reason.
    """

    time: float | None = None
    energy_j: float | None = None
    co2_g: float | None = None
    trial_timeout: float | None = None

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "budget") -> BudgetConfig:
        data = checks.mapping({} if data is None else data, path)
        checks.known_keys(data, [f.name for f in dataclasses.fields(cls)], path)
        positive = checks.optional(lambda v, p: checks.number(v, p, low=0.0, open_low=True))
        return cls(
            time=checks.optional(_duration)(data.get("time"), f"{path}.time"),
            energy_j=positive(data.get("energy_j"), f"{path}.energy_j"),
            co2_g=positive(data.get("co2_g"), f"{path}.co2_g"),
            trial_timeout=checks.optional(_duration)(
                data.get("trial_timeout"), f"{path}.trial_timeout"
            ),
        )


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
        raise checks.bad(path, value, "a duration such as 45m, 2h, 90s, or seconds > 0")
    if isinstance(value, str):
        raise checks.bad(path, value, "a duration such as 45m, 2h, 90s, or seconds > 0")
    return checks.number(value, path, low=0.0, open_low=True)


@dataclass(frozen=True)
class OptimiserConfig:
    """The optimiser's registered name and its options (see ``search.optimisers``)."""

    name: str = "tpe"
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "optimiser") -> OptimiserConfig:
        """From a name or ``{name: ..., options: {...}}``."""
        data = checks.named_section(data, path, ("name", "options"))
        if data is None:
            return cls()
        name = checks.name(data.get("name", cls.name), f"{path}.name", _optimiser_names())
        return cls(name, checks.mapping(data.get("options") or {}, f"{path}.options"))


def _optimiser_names() -> list[str]:
    from search.optimisers import OPTIMISERS

    return OPTIMISERS.names()


def _check_optimiser(config: SearchConfig) -> None:
    """Builds the optimiser once, unbound, so that bad options fail at load time."""
    from search.optimisers import OPTIMISERS

    cls = OPTIMISERS.get(config.optimiser.name)
    try:
        cls(config.space, config.directions, seed=config.seed, **config.optimiser.options)
    except ConfigError as err:
        raise ConfigError(f"optimiser: {err}") from None


_TOP_KEYS = (
    "name",
    "imports",
    "dataset",
    "loading",
    "data_root",
    "val_size",
    "train_size",
    "space",
    "fixed",
    "train",
    "objectives",
    "constraints",
    "optimiser",
    "trials",
    "resources",
    "storage",
    "address",
    "seed",
    "out",
    "indicators",
    "measure",
    "scheduler",
    "budget",
)
#: Keys a launch may override (the command line's flags): how much, where and under what name.
_MAY_OVERRIDE = ("trials", "name", "storage", "address", "out", "time_budget", "imports")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class SearchConfig:
    """One search, validated. Build it with :func:`load_config`, :func:`load_preset` or
    :meth:`from_dict`; :meth:`to_dict` gives plain data that loads back equal.

    Attributes:
        name: Study name (letters, digits, ``_.-``).
        dataset: A registered dataset; ``data_root``, ``val_size`` and ``train_size`` as in
            :func:`objectives.datasets.load`.
        imports: The user's modules and ``.py`` files (``search._usercode``), imported before
            the config is checked, on every worker, and by every command that reads the study.
        data_source: The declaration of a dataset given in the config (an image folder, npz
            or npy files), None for a registered one.
        loading: How the data reach the model: ``stream``, ``stream_above_mb``, ``workers``.
        space: What is searched (dimension names in the module docstring).
        fixed: Values not searched, same naming (``{"ssn.generator": "wavg"}``).
        train: Training options of every trial; each key is given in one place only: here,
            in ``fixed`` (as ``train.<key>``) or searched in ``space``.
        objectives: Metric and direction per objective.
        constraints: Bounds every trial must meet; analytic ones gate training.
        optimiser: Optimiser name and options.
        trials: Trials to complete (a resumed search counts those already done).
        resources: CPU and GPU share per trial.
        storage: Optuna storage URL; None: ``sqlite:///<out>/npas.db``.
        address: Ray cluster to join (HOST:PORT, or ``auto``); None or ``local``: a local
            Ray, on loopback only.
        seed: Seeds the optimiser, the validation split and every trial.
        out: Run folder.
        indicators: Indicators measured per trial; None: the full panel. Objectives and
            constraints are always measured.
        measure: Options of :func:`objectives.measure` (budgets of the timed runs).
    """

    name: str
    dataset: str
    space: Space
    imports: tuple[str, ...] = ()
    data_source: dict[str, Any] | None = None
    loading: dict[str, Any] = field(default_factory=dict)
    data_root: str | None = None
    val_size: int | float | None = None
    train_size: int | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    objectives: tuple[Objective, ...] = (
        Objective("accuracy", "maximize"),
        Objective("params", "minimize"),
    )
    constraints: tuple[Constraint, ...] = ()
    optimiser: OptimiserConfig = field(default_factory=OptimiserConfig)
    trials: int = 16
    resources: ResourceConfig = field(default_factory=ResourceConfig)
    storage: str | None = None
    address: str | None = None
    seed: int = 0
    out: str = "runs"
    indicators: tuple[str, ...] | None = None
    measure: dict[str, Any] = field(default_factory=dict)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)

    # -- views ----------------------------------------------------------------------------

    @property
    def directions(self) -> list[str]:
        """``"maximize"``/``"minimize"`` per objective, in order."""
        return [o.direction for o in self.objectives]

    @property
    def objective_names(self) -> list[str]:
        """Metric name per objective, in order."""
        return [o.name for o in self.objectives]

    @property
    def constraint_texts(self) -> list[str]:
        """The constraints as plain strings; ``constraint_<i>`` of a result is the i-th's."""
        return [str(c) for c in self.constraints]

    @property
    def max_epochs(self) -> int:
        """The most epochs a trial trains: the scheduler's, else the largest ``train.epochs``
        the search can give a trial."""
        if self.scheduler.max_epochs is not None:
            return self.scheduler.max_epochs
        values = _values(self.space, self.fixed, "train.epochs") if "train.epochs" in (
            *self.space.names, *self.fixed) else [self.train.get("epochs", DEFAULT_EPOCHS)]
        return int(max(values))

    @property
    def storage_url(self) -> str:
        """``storage``, else the SQLite file of the run folder (:func:`default_storage_url`)."""
        return self.storage or default_storage_url(self.out)

    def with_overrides(self, **overrides: Any) -> SearchConfig:
        """The config with some of ``trials``, ``name``, ``storage``, ``address``, ``out``
        replaced (None: kept), checked as in a file; ``trials`` may be 0 here (the search is
        recorded and no trial starts).

        Raises:
            ConfigError: an unknown key or a bad value.
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        checks.known_keys(given, _MAY_OVERRIDE, "override")
        trials = given.pop("trials", self.trials)
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 0:
            raise checks.bad("trials", trials, "an int >= 0")
        if "out" in given:
            given["out"] = str(given["out"])
        if "time_budget" in given:
            given["budget"] = {**dataclasses.asdict(self.budget), "time": given.pop("time_budget")}
        config = SearchConfig.from_dict({**self.to_dict(), **given}) if given else self
        return dataclasses.replace(config, trials=trials)

    # -- points → trial configs -------------------------------------------------------------

    def trial_config(
        self, point: Mapping[str, Any], *, artifact_dir: str | None = None
    ) -> TrialConfig:
        """The trial config of a point of :attr:`space` (as sampled, ``Fixed`` values in).

        Raises:
            ConfigError: the point is not valid in the space.
        """
        try:
            values = {**self._defaults(), **self.space.validate(point)}
        except ConfigError as err:
            raise ConfigError(f"point: {err}") from None
        family = values["family"]
        hyper: dict[str, Any] = {}
        elements: dict[str, dict[int, Any]] = {}
        scoped: dict[str, Any] = {}
        for key, value in values.items():
            head, _, rest = key.partition(".")
            if head == family and rest:
                hyper_key, _, index = rest.partition(".")
                if hyper_key == "train":  # <family>.train.<option>: ``index`` is the option
                    scoped[index] = value
                elif index:
                    elements.setdefault(hyper_key, {})[int(index)] = value
                else:
                    hyper[hyper_key] = value
        for key, items in elements.items():
            hyper[key] = [items[i] for i in sorted(items)]
        section = {
            name: {k.partition(".")[2]: v for k, v in values.items() if k.startswith(name + ".")}
            for name in ("ssn", "train")
        }
        section["train"].update(scoped)
        budget = values.get("budget")
        if section["ssn"].get("mapping") == PLAIN:
            budget, section["ssn"] = None, {}
        cfg = {
            "imports": self.imports,
            "dataset": self.data_source or self.dataset,
            "loading": self.loading,
            "data_root": self.data_root,
            "val_size": self.val_size,
            "train_size": self.train_size,
            "family": family,
            "hyper": hyper,
            "budget": budget,
            "ssn": section["ssn"],
            "train": section["train"],
            "objectives": self.objectives,
            "constraints": self.constraints,
            "indicators": self.indicators,
            "measure": copy.deepcopy(self.measure),
            "seed": self.seed,
            "device": None,
            "artifact_dir": artifact_dir,
        }
        return TrialConfig.from_dict(cfg)

    def _defaults(self) -> dict[str, Any]:
        return {**{f"train.{k}": v for k, v in self.train.items()}, **self.fixed}

    # -- plain data -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON-ready) that :meth:`from_dict` turns back into an equal config."""
        # imports and loading only when set: a search stored before they existed resumes
        # (a relaunch compares its stored config with this one)
        optional = {"imports": list(self.imports), "loading": copy.deepcopy(self.loading)}
        unset = {"imports": [], "loading": _section(None, LOADING_OPTIONS, "loading")}
        return {
            "name": self.name,
            **{k: v for k, v in optional.items() if v != unset[k]},
            "dataset": copy.deepcopy(self.data_source) or self.dataset,
            "data_root": self.data_root,
            "val_size": self.val_size,
            "train_size": self.train_size,
            "space": self.space.to_dict(),
            "fixed": copy.deepcopy(self.fixed),
            "train": copy.deepcopy(self.train),
            "objectives": [list(o) for o in self.objectives],
            "constraints": self.constraint_texts,
            "optimiser": {"name": self.optimiser.name, "options": dict(self.optimiser.options)},
            "trials": self.trials,
            "resources": dataclasses.asdict(self.resources),
            "storage": self.storage,
            "address": self.address,
            "seed": self.seed,
            "out": self.out,
            "indicators": None if self.indicators is None else list(self.indicators),
            "measure": copy.deepcopy(self.measure),
            "scheduler": dataclasses.asdict(self.scheduler),
            "budget": dataclasses.asdict(self.budget),
        }

    def to_yaml(self) -> str:
        """:meth:`to_dict` as YAML text: a config file that :func:`load_config` reads back."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (Ray Tune saves the searcher, which holds this, in ``tuner.pkl`` in the
        run folder) with the storage URL masked: its password never reaches a file."""
        return {**self.__dict__, "storage": masked_url(self.storage)}

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, name: str | None = None, base: str | None = None
    ) -> SearchConfig:
        """Validates plain data (a parsed YAML file) into a config.

        ``imports`` are imported and a declared ``dataset`` registered first, so that the
        names they register are known to every check.

        Args:
            data: The sections; ``dataset`` and ``space`` are required.
            name: The name used when ``data`` has none (a file's stem, a preset's name).
            base: The folder relative ``.py`` files and data paths are taken from (a config
                file's); default the working folder.

        Raises:
            ConfigError: naming the key path, the bad value and what is allowed.
        """
        data = checks.mapping(data, "config")
        checks.known_keys(data, _TOP_KEYS, "")
        for key in ("dataset", "space"):
            if key not in data:
                raise ConfigError(f"{key}: missing; it is required (see the presets)")
        imports = normalise_imports(data.get("imports"), base=base)
        import_modules(imports)
        data, source = declared_dataset(data, base=base)
        study = data.get("name", name or "search")
        if not isinstance(study, str) or not _NAME.match(study):
            raise checks.bad("name", study, "letters, digits, '_', '.', '-' (not first)")
        train = _section(data.get("train"), TRAIN_OPTIONS, "train")
        train = {k: train[k] for k in (data.get("train") or {})}
        fixed = _flatten(checks.mapping(data.get("fixed") or {}, "fixed"))
        space = _space(data["space"], fixed)
        _check_names(space, fixed, train)
        config = cls(
            name=study,
            dataset=TRIAL_OPTIONS["dataset"][0](data["dataset"], "dataset"),
            space=space,
            imports=imports,
            data_source=source,
            loading=TRIAL_OPTIONS["loading"][0](data.get("loading"), "loading"),
            data_root=checks.optional(checks.text)(data.get("data_root"), "data_root"),
            val_size=checks.optional(checks.val_size)(data.get("val_size"), "val_size"),
            train_size=TRIAL_OPTIONS["train_size"][0](data.get("train_size"), "train_size"),
            fixed=fixed,
            train=train,
            objectives=parse_objectives(
                data.get("objectives", [["accuracy", "maximize"], ["params", "minimize"]])
            ),
            constraints=parse_constraints(data.get("constraints")),
            optimiser=OptimiserConfig.from_dict(data.get("optimiser")),
            trials=checks.integer(data.get("trials", 16), "trials", 1),
            resources=ResourceConfig.from_dict(data.get("resources")),
            storage=checks.optional(_storage)(data.get("storage"), "storage"),
            address=checks.optional(checks.text)(data.get("address"), "address"),
            seed=checks.seed(data.get("seed", 0), "seed"),
            out=checks.text(data.get("out", "runs"), "out"),
            indicators=_tuple(_indicators(data.get("indicators"), "indicators")),
            measure=_measure(data.get("measure"), "measure"),
            scheduler=SchedulerConfig.from_dict(data.get("scheduler")),
            budget=BudgetConfig.from_dict(data.get("budget")),
        )
        config.trial_config(config.space.sample(config.seed))  # the whole chain, once
        _check_optimiser(config)
        return config


def _storage(value: Any, path: str) -> str:
    if not isinstance(value, str) or "://" not in value:
        raise checks.bad(
            path,
            value,
            "null (sqlite:///<out>/npas.db) or an SQLAlchemy URL such as "
            "'sqlite:///runs/npas.db' or 'postgresql://user@host/db'",
        )
    return value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"ssn": {"generator": "wavg"}}`` → ``{"ssn.generator": "wavg"}``; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = checks.join(prefix, key)
        if isinstance(value, Mapping):
            out.update(_flatten(checks.mapping(value, f"fixed.{name}"), name))
        else:
            out[name] = value
    return out


# -- the space section --------------------------------------------------------------------------


def _space(data: Any, fixed: Mapping[str, Any]) -> Space:
    """The DSL's plain data, with shorthands (a list: choices; a scalar: a fixed value) and the
    ``when: {family: [f]}`` of every ``<f>.<hyper>`` dimension filled in."""
    entries = checks.mapping(data, "space")
    if not entries:
        raise checks.bad("space", data, "at least one dimension")
    plain: dict[str, dict[str, Any]] = {}
    for key, entry in entries.items():
        if isinstance(entry, list):
            entry = {"choices": entry}
        elif not isinstance(entry, Mapping):
            entry = {"value": entry}
        plain[key] = dict(entry)
    families = _families(plain, fixed)
    if "family" in plain and not plain["family"].get("when"):  # first, so others can refer to it
        plain = {"family": plain["family"], **plain}
    for key, entry in plain.items():
        head = key.partition(".")[0]
        if "family" in plain and key != "family" and head in families:
            when = checks.mapping(entry.get("when") or {}, f"space.{key}.when")
            entry["when"] = {"family": [head], **when}
    try:
        return Space.from_dict(plain)
    except ConfigError as err:
        raise ConfigError(f"space: {err}") from None


def _families(plain: Mapping[str, Any], fixed: Mapping[str, Any]) -> list[str]:
    """The families a config can build, each checked against the family registry."""
    if "family" in plain:
        try:
            dim = Space.from_dict({"family": plain["family"]})["family"]
        except ConfigError as err:
            raise ConfigError(f"space.{err}") from None
        values = list(dim.choices) if isinstance(dim, Categorical) else [getattr(dim, "value", 0)]
        where = "space.family"
    elif "family" in fixed:
        values, where = [fixed["family"]], "fixed.family"
    else:
        raise ConfigError(
            "family: missing; declare it in space (e.g. family: [mlp, convnet]) or in fixed "
            f"(e.g. family: convnet); allowed families: {FAMILIES.names()}"
        )
    return [checks.name(v, where, FAMILIES.names()) for v in values]


def _values(space: Space, fixed: Mapping[str, Any], name: str) -> list[Any]:
    """Values a key can take that a check must accept: choices, grid ends, or the fixed value."""
    if name in fixed:
        return [fixed[name]]
    dim = space[name]
    if isinstance(dim, Categorical):
        return list(dim.choices)
    if isinstance(dim, Fixed):
        return [dim.value]
    if isinstance(dim, Int):
        return [dim.low, dim.top]
    assert isinstance(dim, Float)
    return [dim.low, dim.high]


def _check_names(space: Space, fixed: Mapping[str, Any], train: Mapping[str, Any]) -> None:
    """Every dimension and fixed value has a known name and values its consumer accepts."""
    both = sorted(set(space.names) & set(fixed))
    if both:
        raise ConfigError(f"{both[0]}: both searched (space) and fixed; give it in one place")
    twice = [f"train.{k}" for k in train if f"train.{k}" in space or f"train.{k}" in fixed]
    if twice:
        raise ConfigError(
            f"{twice[0]}: set in the train section and in space or fixed; give it in one place"
        )
    families = [str(f).lower() for f in _values(space, fixed, "family")]
    elements: dict[tuple[str, str], list[int]] = {}
    for name in [*space.names, *fixed]:
        where = f"space.{name}" if name in space else f"fixed.{name}"
        if name == "family":
            continue
        head, _, rest = name.partition(".")
        if name == "budget":
            _check_values(space, fixed, name, where, TRIAL_OPTIONS["budget"][0])
        elif head in ("ssn", "train") and rest:
            options = SSN_OPTIONS if head == "ssn" else TRAIN_OPTIONS
            if rest not in options:
                raise checks.bad(where, name, f"{[f'{head}.{k}' for k in options]}")
            check = _mapping_or_plain if name == "ssn.mapping" else options[rest][0]
            _check_values(space, fixed, name, where, check)
        elif head in FAMILIES and rest.partition(".")[0] == "train":
            _check_searched(head, families, where)
            option = rest.partition(".")[2]
            if option not in TRAIN_OPTIONS:
                raise checks.bad(where, name, f"{[f'{head}.train.{k}' for k in TRAIN_OPTIONS]}")
            _check_values(space, fixed, name, where, TRAIN_OPTIONS[option][0])
        elif head in FAMILIES and rest:
            _check_hyper(head, rest, families, where, elements)
            key, _, index = rest.partition(".")
            for value in _values(space, fixed, name):  # the family's declared types and ranges
                try:
                    check_hyper(head, FAMILIES.get(head), key, value, element=bool(index))
                except ConfigError as err:
                    raise ConfigError(f"{where}: {err}") from None
        else:
            raise ConfigError(
                f"{where}: unknown name {name!r}; allowed: 'family', 'budget', 'ssn.<option>' "
                f"({list(SSN_OPTIONS)}), 'train.<option>' ({list(TRAIN_OPTIONS)}), "
                f"'<family>.<hyper>', '<family>.<hyper>.<index>' or '<family>.train.<option>' "
                f"for families {families}"
            )
    for (family, key), indices in elements.items():
        if sorted(indices) != list(range(len(indices))):
            raise ConfigError(
                f"{family}.{key}: elements {sorted(indices)} must be numbered 0, 1, ... "
                f"without gaps (one per list entry)"
            )
    _check_stores(space, fixed)


def _mapping_or_plain(value: Any, where: str) -> Any:
    """An ``ssn.mapping`` of a trial config, or ``none`` (:data:`PLAIN`): no Shapeshifting."""
    return value if value == PLAIN else SSN_OPTIONS["mapping"][0](value, where)


def _check_values(
    space: Space, fixed: Mapping[str, Any], name: str, where: str, check: Any
) -> None:
    for value in _values(space, fixed, name):
        check(value, where)


def _check_searched(family: str, families: list[str], where: str) -> None:
    if family not in families:
        raise ConfigError(f"{where}: family {family!r} is never searched; allowed: {families}")


def _check_hyper(
    family: str,
    rest: str,
    families: list[str],
    where: str,
    elements: dict[tuple[str, str], list[int]],
) -> None:
    _check_searched(family, families, where)
    key, _, index = rest.partition(".")
    allowed = hyper_keys(FAMILIES.get(family))
    if key not in allowed:
        raise checks.bad(where, key, f"a hyper-parameter of {family!r}: {list(allowed)}")
    if index:
        if not index.isdigit():
            raise checks.bad(where, index, f"a list index 0, 1, ... ('{family}.{key}.0')")
        if int(index) in elements.setdefault((family, key), []):
            raise ConfigError(f"{where}: element {index} of {family}.{key} given twice")
        elements[(family, key)].append(int(index))


def _check_stores(space: Space, fixed: Mapping[str, Any]) -> None:
    """More than one store needs mapping auto or random, so ``ssn.stores`` must say when."""
    given = [k for k in ("ssn.stores", "ssn.mapping") if k in space or k in fixed]
    if "ssn.stores" not in given or all(v <= 1 for v in _values(space, fixed, "ssn.stores")):
        return
    mappings = _values(space, fixed, "ssn.mapping") if "ssn.mapping" in given else ["single"]
    when = dict(space["ssn.stores"].when) if "ssn.stores" in space else {}
    if "single" in mappings and "single" in when.get("ssn.mapping", ("single",)):
        raise ConfigError(
            "ssn.stores: can exceed 1 while ssn.mapping can be 'single' (exactly one store); "
            "allowed: make it conditional, e.g. ssn.stores: {low: 2, high: 4, when: "
            "{ssn.mapping: [auto, random]}}, or drop 'single' from ssn.mapping"
        )


