"""The search config: a whole search (dataset, space, fixed values, training, objectives,
constraints, algorithm, trials, resources, storage), validated into a :class:`SearchConfig`.

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
from dataclasses import dataclass
from typing import Any

import yaml

from objectives import pinned_root
from search._urls import RUN_FOLDER, default_storage_url, masked_url
from search._usercode import import_modules, normalise_imports
from search.config import _checks as checks
from search.config._finalists import FinalistsConfig
from search.config._keys import (
    RENAMED_KEYS,
    check_of,
    config_key,
    dump_keys,
    dumped_default,
    names,
    optional_key,
    parse_keys,
    renamed,
    section_key,
)
from search.config._registries import OPTIMISERS
from search.config._sections import (
    AlgorithmConfig,
    LimitsConfig,
    ResourceConfig,
    SchedulerConfig,
    parse_loggers,
)
from search.config._start import complete, start_points
from search.config._trial import (
    DEFAULT_EPOCHS,
    SSN_OPTIONS,
    TRAIN_OPTIONS,
    DataAndMetrics,
    TrialConfig,
    _section,
    declared_dataset,
)
from spaces import (
    Categorical,
    ConfigError,
    Fixed,
    Float,
    Int,
    Space,
    did_you_mean,
    family_names,
)

__all__ = ["SearchConfig"]

#: ``ssn.mapping`` of a search point that trains the plain model (no parameter sharing).
NO_SHARING = "none"


def _check_algorithm(config: SearchConfig) -> None:
    """Builds the algorithm once, unbound, so that bad options fail at load time."""
    cls = OPTIMISERS.get(config.algorithm.name)
    try:
        cls(config.space, config.directions, seed=config.seed, **config.algorithm.options)
    except ConfigError as err:
        raise ConfigError(f"algorithm: {err}") from None


#: Keys a launch may override (the command line's flags): how much, where and under what name.
_MAY_OVERRIDE = ("trials", "name", "storage", "address", "out", "time_limit", "imports")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _study_name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise checks.bad(path, value, _study_name.allowed)  # type: ignore[attr-defined]
    return value


checks.described(_study_name, "letters, digits, '_', '.', '-' (not first)")


def _storage(value: Any, path: str) -> str:
    if not isinstance(value, str) or "://" not in value:
        raise checks.bad(path, value, _storage.allowed)  # type: ignore[attr-defined]
    return value


checks.described(
    _storage,
    "null (sqlite:///<out>/npas.db) or an SQLAlchemy URL such as 'sqlite:///runs/npas.db' or "
    "'postgresql://user@host/db'",
)


@dataclass(frozen=True, kw_only=True)
class SearchConfig(DataAndMetrics):
    """One search, validated. Build it with :func:`load_config`, :func:`load_preset` or
    :meth:`from_dict`; :meth:`to_dict` gives plain data that loads back equal.

    Each field is one key of the config file, declared once with its check, default and help
    (:func:`search.config.reference` lists them all); the data and measurement keys are
    shared with :class:`TrialConfig` (:class:`DataAndMetrics`).
    """

    name: str = config_key(
        "search",
        check=None,
        help="study name; default the file's stem or the preset's name, else 'search'",
        allowed=_study_name.allowed,  # type: ignore[attr-defined]
    )
    space: Space = config_key(
        check=None,
        help="what is searched, one dimension per name: family, budget, ssn.<option>, "
        "train.<option>, <family>.<hyper>, <family>.<hyper>.<i> (one element of a list) and "
        "<family>.train.<option>; each a dimension (space.<dimension>.* below) or a bare "
        "list (a choice) or scalar (fixed)",
        allowed="a mapping of dimensions",
        dump=lambda s: s.to_dict(),
    )
    fixed: dict[str, Any] = config_key(
        check=None,
        factory=dict,
        help="values not searched, named as in space",
        allowed="a mapping of dimension names to values",
    )
    start: list[dict[str, Any]] = config_key(
        check=None,
        factory=list,
        help="points of the space trained first, before the algorithm proposes (designs "
        "you know); a dimension a point leaves out is proposed by the algorithm",
        allowed="a list of mappings of searched dimension names to values",
    )
    train: dict[str, Any] = config_key(
        check=None,
        factory=dict,
        help="training options of every trial (the train.* keys); each "
        "key is given in one place: here, in fixed or in space",
        allowed="a mapping of train options",
    )
    algorithm: AlgorithmConfig = section_key(
        AlgorithmConfig,
        "the search algorithm: a name or {name, options}",
    )
    trials: int = config_key(
        16,
        check=checks.at_least(1),
        help="trials to complete (a resumed search counts those already done)",
    )
    screen: bool = config_key(
        True,
        check=checks.boolean,
        help="refuse, before Ray Tune starts them, the proposals the trial would refuse "
        "untrained (over a params or flops_infer constraint, or a budget Shapeshifting cannot "
        "meet; told on the meta device): recorded as refused trials, not counted toward "
        "trials; false: every proposal is a trial, as before (applies with the default "
        "trial function); may change between launches",
    )
    repair: bool = config_key(
        True,
        check=checks.boolean,
        help="a proposal the screen refused is queued again with its family's searched "
        "widths narrowed together to the widest the screen passes (the optimiser's next "
        "proposal, marked npas:narrowed_from): the search trains a point near each one too "
        "big for its limits; false: refused only; may change between launches",
    )
    resources: ResourceConfig = section_key(
        ResourceConfig,
        "what one trial asks the scheduler for",
    )
    storage: str | None = optional_key(
        _storage,
        "Optuna storage URL; null: sqlite:///<out>/npas.db",
    )
    address: str | None = optional_key(
        checks.text,
        "Ray cluster to join (HOST:PORT, or auto); null or local: a "
        "local Ray, on loopback only",
    )
    out: str = config_key(RUN_FOLDER, check=checks.text, help="run folder")
    scheduler: SchedulerConfig = section_key(
        SchedulerConfig,
        "multi-fidelity: a name or {name, ...}",
    )
    limits: LimitsConfig = section_key(
        LimitsConfig,
        "the search's own limits: time, energy, CO2, per trial",
    )
    finalists: FinalistsConfig = section_key(
        FinalistsConfig,
        "after the search, its best trials retrained with fresh seeds and the best mean "
        "validation accuracy recommended (search export's default): true, or {top, seeds, "
        "share}; may change between launches",
    )
    loggers: tuple[str, ...] = config_key(
        (),
        check=parse_loggers,
        help="log every trial to these tools as it trains: its hyper-parameters, and per "
        "epoch its objectives and learning curve, then its metrics (tensorboard: "
        "<out>/<name>/tensorboard; mlflow: sqlite:///<out>/<name>/mlflow.db); may change "
        "between launches",
        dump=list,
    )

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
        values = (
            _values(self.space, self.fixed, "train.epochs")
            if "train.epochs" in (*self.space.names, *self.fixed)
            else [self.train.get("epochs", DEFAULT_EPOCHS)]
        )
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
        checks.integer(trials, "trials", 0)
        if "out" in given:
            given["out"] = str(given["out"])
        if "time_limit" in given:
            given["limits"] = {**dataclasses.asdict(self.limits), "time": given.pop("time_limit")}
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
        if section["ssn"].get("mapping") == NO_SHARING:
            budget, section["ssn"] = None, {}
        cfg = {
            "imports": self.imports,
            "dataset": self.data_source or self.dataset,
            "loading": self.loading,
            "data_root": pinned_root(self.data_root),  # a trial runs in its own folder
            "val_size": self.val_size,
            "train_size": self.train_size,
            "folds": self.folds,
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
            "report_test": self.report_test,
            "device": None,
            "artifact_dir": artifact_dir,
        }
        return TrialConfig.from_dict(cfg)

    def _defaults(self) -> dict[str, Any]:
        return {**{f"train.{k}": v for k, v in self.train.items()}, **self.fixed}

    # -- plain data -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON-ready) that :meth:`from_dict` turns back into an equal config."""
        out = dump_keys(self)
        out["dataset"] = copy.deepcopy(self.data_source) or self.dataset
        # imports, loading, start, loggers, screen, repair, report_test, finalists and folds
        # only when set: a search stored before they existed resumes (a relaunch compares its
        # stored config with this one)
        for name in ("imports", "loading", "start", "loggers", "screen", "repair", "report_test",
                     "finalists", "folds"):  # fmt: skip
            if out[name] == dumped_default(SearchConfig, name):
                del out[name]
        return {"name": out.pop("name"), **out}

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
        for old, new in RENAMED_KEYS.items():
            data = renamed(data, old, new)
        checks.known_keys(data, names(cls), "")
        if "dataset" not in data:
            raise ConfigError("dataset: missing; it is required (see the presets)")
        if "space" not in data:
            raise ConfigError(
                "space: missing; it is required here (search check and search launch derive "
                "it from the data of a config file without one: search.derive.load_config)"
            )
        imports = normalise_imports(data.get("imports"), base=base)
        import_modules(imports)
        data, source = declared_dataset(data, base=base)
        # Every key before the space, whose families' hyper-parameters load torch: a mistake
        # elsewhere is answered before torch loads.
        parsed = parse_keys(cls, data, "")
        train = _section(data.get("train"), TRAIN_OPTIONS, "train")
        train = {k: train[k] for k in (data.get("train") or {})}
        fixed = _flatten(checks.mapping(data.get("fixed") or {}, "fixed"))
        space = _space(data["space"], fixed)
        _check_names(space, fixed, train)
        config = cls(
            **parsed,
            name=_study_name(data.get("name", name or cls.name), "name"),
            imports=imports,
            data_source=source,
            space=space,
            fixed=fixed,
            start=start_points(data.get("start"), space, fixed, _flatten),
            train=train,
        )
        sampled = config.space.sample(config.seed)
        config.trial_config(sampled)  # the whole chain, once
        for i, point in enumerate(config.start):  # each start point builds its trial
            try:
                config.trial_config(complete(config.space, point, sampled))
            except ConfigError as err:
                raise ConfigError(f"start[{i}]: {err}") from None
        _check_algorithm(config)
        _check_folds(config)
        return config


def _check_folds(config: SearchConfig) -> None:
    """Cross-validation scores a trial only when all its folds have trained: a multi-fidelity
    scheduler, which ranks trials at each epoch, has nothing to rank on."""
    if config.folds > 1 and config.scheduler.name != "fifo":
        raise ConfigError(
            f"folds: {config.folds} with scheduler {config.scheduler.name!r}: a cross-validated "
            "trial is scored once all its folds have trained, and the scheduler ranks trials "
            "epoch by epoch; allowed: scheduler: fifo, or folds: 1"
        )


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
            "(e.g. family: convnet); search families lists them"
        )
    return [checks.name(v, where, family_names(), "search families") for v in values]


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
    known = {name.lower() for name in family_names()}
    families = [str(f).lower() for f in _values(space, fixed, "family")]
    elements: dict[tuple[str, str], list[int]] = {}
    hypers: list[tuple[str, str, str, str]] = []  # their values are checked once every name is
    for name in [*space.names, *fixed]:
        where = f"space.{name}" if name in space else f"fixed.{name}"
        if name == "family":
            continue
        head, _, rest = name.partition(".")
        if name == "budget":
            _check_values(space, fixed, name, where, check_of(TrialConfig, "budget"))
        elif head in ("ssn", "train") and rest:
            options = SSN_OPTIONS if head == "ssn" else TRAIN_OPTIONS
            if rest not in options:
                raise checks.bad(where, name, f"{[f'{head}.{k}' for k in options]}")
            check = _mapping_or_none if name == "ssn.mapping" else options[rest].check
            _check_values(space, fixed, name, where, check)
        elif head.lower() in known and rest.partition(".")[0] == "train":
            _check_searched(head, families, where)
            option = rest.partition(".")[2]
            if option not in TRAIN_OPTIONS:
                raise checks.bad(where, name, f"{[f'{head}.train.{k}' for k in TRAIN_OPTIONS]}")
            _check_values(space, fixed, name, where, TRAIN_OPTIONS[option].check)
        elif head.lower() in known and rest:
            _check_hyper(head, rest, families, where, elements)
            hypers.append((name, where, head, rest))
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
    _check_distillation(space, fixed, train)
    _check_hyper_values(space, fixed, hypers)


def _check_hyper_values(
    space: Space, fixed: Mapping[str, Any], hypers: list[tuple[str, str, str, str]]
) -> None:
    """Each hyper-parameter's values against its family's declared types and ranges: they
    are read from the family's module, which loads torch, so every other check comes first."""
    if not hypers:
        return
    from spaces import FAMILIES, check_hyper

    for name, where, family, rest in hypers:
        key, _, index = rest.partition(".")
        for value in _values(space, fixed, name):
            try:
                check_hyper(family, FAMILIES.get(family), key, value, element=bool(index))
            except ConfigError as err:
                raise ConfigError(f"{where}: {err}") from None


#: The ``train`` options that only mean something with a ``teacher`` to distil from.
_DISTILL_OPTIONS = ("distill_temperature", "distill_weight")


def _check_distillation(space: Space, fixed: Mapping[str, Any], train: Mapping[str, Any]
                        ) -> None:  # fmt: skip
    """A distillation option set off its default where no trial can have a teacher is refused
    at load (each trial would refuse it, after the search started)."""

    def given(option: str) -> list[tuple[str, list[Any]]]:
        """Where ``option`` is set, and the values it can take there."""
        found = [(f"train.{option}", [train[option]])] if option in train else []
        for name in [*space.names, *fixed]:
            if name == f"train.{option}" or name.endswith(f".train.{option}"):
                where = f"space.{name}" if name in space else f"fixed.{name}"
                found.append((where, _values(space, fixed, name)))
        return found

    if given("teacher"):
        return
    for option in _DISTILL_OPTIONS:
        default = TRAIN_OPTIONS[option].default
        for where, values in given(option):
            if any(value != default for value in values):
                raise ConfigError(
                    f"{where}: distillation needs a teacher to distil from; give train.teacher "
                    f"(family, hyper, train, seed), or leave {option} out"
                )


def _mapping_or_none(value: Any, where: str) -> Any:
    """An ``ssn.mapping`` of a trial config, or ``none`` (:data:`NO_SHARING`)."""
    return value if value == NO_SHARING else SSN_OPTIONS["mapping"].check(value, where)


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
    from spaces import family_hyper_keys

    _check_searched(family, families, where)
    key, _, index = rest.partition(".")
    allowed = family_hyper_keys(family)
    if key not in allowed:
        raise ConfigError(f"{where}: got {key!r}{did_you_mean(key, list(allowed))}; allowed: "
                          f"a hyper-parameter of {family!r}: {list(allowed)}")  # fmt: skip
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
