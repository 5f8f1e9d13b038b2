"""The trial config: what one trial builds, trains and measures, validated once.

:class:`TrialConfig` is the typed form passed inside npas (from the search config to the Ray
worker, which receives it pickled); :meth:`TrialConfig.from_dict` validates the plain-data form
a user writes by hand or the storage holds, and :meth:`TrialConfig.to_dict` gives it back. The
defaults of the ``ssn`` and ``train`` sections are read from :class:`spaces.ssn.SSNOptions`
and :class:`objectives.Recipe` (its help too), so they are declared once, there.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from objectives import (
    INDICATORS,
    LOADER_WORKERS,
    SCHEDULES,
    STREAM_ABOVE_MB,
    TORCH_OPTIMIZERS,
    MeasureOptions,
    Recipe,
    Teacher,
    dataset_names,
)
from search._usercode import import_modules, normalise_imports
from search.config import _checks as checks
from search.config._keys import (
    ConfigKey,
    Option,
    config_key,
    dump_keys,
    names,
    optional_key,
    parse_keys,
)
from search.config._metrics import Constraint, Objective, parse_constraints, parse_objectives
from spaces import ConfigError, family_names, ssn_names
from spaces.ssn import SSNOptions

__all__ = [
    "LOADING_OPTIONS",
    "SSN_OPTIONS",
    "TRAIN_OPTIONS",
    "DataAndMetrics",
    "TrialConfig",
    "check_trial_config",
    "declared_dataset",
]

_MEASURE_KEYS = tuple(
    f.name for f in dataclasses.fields(MeasureOptions) if f.name != "make_optimizer"
)
#: A search trial's epochs when the config gives none (a Recipe itself has no default).
DEFAULT_EPOCHS = 3
#: The most folds a trial's cross-validation takes (``folds``).
MAX_FOLDS = 20
#: Trainings a model of every sample may take (a cross-validated trial's, a refit): one that
#: fits its own samples worse than unseen ones were scored trains again, the best kept.
FIT_TRIES = 3
#: What a trial trains on (``train_on``): the training split, or it and the validation split.
TRAIN_ON = ("train", "train+val")

_SHAPESHIFT = {f.name: (f.default, str(f.type)) for f in dataclasses.fields(SSNOptions)}


def _indicators(value: Any, path: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable) or not list(value):
        allowed = f"null (the full panel) or a non-empty list of {INDICATORS.names()}"
        raise checks.bad(path, value, allowed)
    names, listing = INDICATORS.names(), "search indicators"
    return [checks.name(v, f"{path}[{i}]", names, listing) for i, v in enumerate(value)]


def _measure(value: Any, path: str) -> dict[str, Any]:
    options = checks.mapping({} if value is None else value, path)
    checks.known_keys(options, _MEASURE_KEYS, path)
    try:
        MeasureOptions(**options)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return options


def _mapping_name(value: Any, path: str) -> Any:
    if isinstance(value, Mapping):  # a manual {layer or glob: store} assignment
        return {str(k): checks.integer(v, checks.join(path, k), 0) for k, v in value.items()}
    return checks.name(value, path, _named_mappings())


# Shapeshifting's registries load torch: their names are read when a check needs them, the
# built-ins' before torch loads (spaces.ssn_names), as datasets' and families' are.
def _named_mappings() -> list[str]:
    return [n for n in ssn_names("MAPPINGS") if n != "manual"]


def _ssn_names(registry: str) -> Callable[[], list[str]]:
    """The names of one of Shapeshifting's registries (``GENERATORS``...), read when asked."""
    return lambda: ssn_names(registry)


checks.described(_mapping_name, lambda: [*_named_mappings(), "{layer or glob: store}"])


def _device(value: Any, path: str) -> str:
    try:
        if not isinstance(value, str):
            raise TypeError(value)
        import torch  # only when a device is named

        torch.device(value)
    except (RuntimeError, TypeError):
        raise checks.bad(
            path,
            value,
            "null (cuda if available, else cpu) or a torch device such as 'cpu', 'cuda', 'cuda:1'",
        ) from None
    return str(value)


_at_least_1 = checks.at_least(1)

#: The largest ``budget`` (parameters): a trillion, beyond any model one search trains; far
#: larger ones (``1e30``) passed the check and failed every trial on an overflow in torch.
MAX_BUDGET = 10**12
_budget = checks.described(
    lambda value, path: checks.integer(value, path, 1, MAX_BUDGET), checks.int_range(1, MAX_BUDGET)
)
_fraction = checks.number_in(0.0, 1.0, open_high=True)


def _options(
    declared: Mapping[str, tuple[Any, str]], **specs: tuple[Any, str]
) -> dict[str, Option]:
    """An option table from each key's check and help; its ``(default, type)`` is read from
    ``declared`` (a signature's or a dataclass's, where they are declared)."""
    return {k: Option(check, *declared[k], about) for k, (check, about) in specs.items()}


#: ``ssn`` options (fields of :class:`spaces.ssn.SSNOptions`, defaults from there; the seed
#: is the trial's; ``pretrain_epochs``, the auto mapping's probe, is npas's own).
SSN_OPTIONS = _options(
    {**_SHAPESHIFT, "pretrain_epochs": (1, "int")},
    stores=(_at_least_1, "parameter stores"),
    mapping=(
        _mapping_name,
        "layers → stores: a mapping name, or {layer or glob: store}; in space or fixed also "
        "none, the plain model without Shapeshifting (budget ignored)",
    ),
    generator=(
        checks.one_of(_ssn_names("GENERATORS")),
        "how a layer's weight is made from templates",
    ),
    upsampler=(
        checks.one_of(_ssn_names("UPSAMPLERS")),
        "how a layer larger than its store is filled",
    ),
    templates=(_at_least_1, "most templates per layer (P)"),
    pretrain_epochs=(_at_least_1, "epochs of the auto mapping's probe"),
)


def _teacher(value: Any, path: str) -> dict[str, Any]:
    """A ``train.teacher`` mapping, checked as :class:`objectives.Teacher` checks it."""
    try:
        Teacher.from_mapping(value)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return copy.deepcopy(dict(value))


checks.described(_teacher, "null or {family, hyper, train (the teacher's recipe), seed}")


def _recipe_options(**specs: checks.Check) -> dict[str, Option]:
    """An option table of :class:`objectives.Recipe` fields: each key's check is the config's,
    its default, type and help the field's (the epochs' default, :data:`DEFAULT_EPOCHS`)."""
    fields = {f.name: f for f in dataclasses.fields(Recipe)}
    defaults = {k: f.default for k, f in fields.items()} | {"epochs": DEFAULT_EPOCHS}
    return {k: Option(check, defaults[k], str(fields[k].type), fields[k].metadata["help"])
            for k, check in specs.items()}  # fmt: skip


#: ``train`` options (fields of :class:`objectives.Recipe`, defaults and help from there).
TRAIN_OPTIONS = _recipe_options(
    epochs=_at_least_1,
    batch_size=_at_least_1,
    optimizer=checks.one_of(TORCH_OPTIMIZERS.names),
    lr=checks.optional(checks.number_in(0.0, open_low=True)),
    momentum=_fraction,
    weight_decay=checks.number_in(0.0),
    schedule=checks.one_of(SCHEDULES.names),
    label_smoothing=_fraction,
    augment=checks.optional(checks.boolean),
    max_steps=checks.optional(_at_least_1),
    ema=checks.optional(checks.number_in(0.0, 1.0, open_high=True)),
    teacher=checks.optional(_teacher),
    distill_temperature=checks.number_in(0.0, open_low=True),
    distill_weight=checks.number_in(0.0, 1.0),
)
#: ``loading`` options (how the data reach the model, :func:`objectives.datasets.load`).
LOADING_OPTIONS = _options(
    {
        "stream": (None, "bool | None"),
        "stream_above_mb": (STREAM_ABOVE_MB, "float"),
        "workers": (LOADER_WORKERS, "int"),
    },
    stream=(checks.optional(checks.boolean), "stream batches; null: above stream_above_mb"),
    stream_above_mb=(checks.number_in(0.0, open_low=True), "stream a dataset above this (MB)"),
    workers=(checks.at_least(0), "loader processes when streaming"),
)


def _tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _section(value: Any, options: Mapping[str, Option], path: str) -> dict[str, Any]:
    data = checks.mapping({} if value is None else value, path)
    checks.known_keys(data, options, path)
    return {
        k: o.check(data[k], checks.join(path, k)) if k in data else copy.deepcopy(o.default)
        for k, o in options.items()
    }


def measure_rows() -> list[ConfigKey]:
    """Reference rows of the ``measure`` section: the fields of MeasureOptions."""
    return [
        ConfigKey(f"measure.{f.name}", str(f.type), f.default, "", f.metadata.get("help", ""))
        for f in dataclasses.fields(MeasureOptions)
        if f.name in _MEASURE_KEYS
    ]


@dataclass(frozen=True, kw_only=True)
class DataAndMetrics:
    """The keys a search config and a trial config share: the data, and what is measured."""

    dataset: str = config_key(
        check=checks.one_of(dataset_names),
        help="a registered dataset, or a "
        "declaration {name, kind: folder|npz|npy, ...} of the user's own",
    )
    imports: tuple[str, ...] = config_key(
        (),
        check=None,
        help="the user's modules and .py files, "
        "imported before the config is checked and on every worker",
        allowed="module names or paths",
        dump=list,
    )
    data_source: dict[str, Any] | None = config_key(
        None, check=None, help="a declared dataset", in_yaml=False
    )
    loading: dict[str, Any] = config_key(
        check=lambda v, p: _section(v, LOADING_OPTIONS, p),
        factory=lambda: _section(None, LOADING_OPTIONS, "loading"),
        help="how the data reach the model (the loading.* keys)",
    )
    data_root: str | None = optional_key(
        checks.text,
        "data folder; null: $NPAS_DATA, else a cache folder (a relative path: from "
        "where the search is launched)",
    )
    val_size: int | float | None = optional_key(
        checks.val_size,
        "validation split carved from the training set",
    )
    train_size: int | None = optional_key(_at_least_1, "training samples used; null: all")
    folds: int = config_key(
        1,
        check=checks.described(
            lambda v, p: checks.integer(v, p, 1, MAX_FOLDS), checks.int_range(1, MAX_FOLDS)
        ),
        help="1: one validation split (val_size) scores a trial; k >= 2: k-fold "
        "cross-validation over the training and validation splits together (k models a "
        "trial, each scored on the samples it did not train on; with an artifact folder one "
        "more trains on all of them and is saved): small data ranks trials by chance on one "
        "small split",
    )
    objectives: tuple[Objective, ...] = config_key(
        (Objective("accuracy", "maximize"), Objective("params", "minimize")),
        check=lambda v, p: parse_objectives(v, path=p),
        help="metrics to optimise, each a name or [name, direction]",
        allowed="trial metrics and indicators (search indicators)",
        dump=lambda v: [list(o) for o in v],
    )
    constraints: tuple[Constraint, ...] = config_key(
        (),
        check=lambda v, p: parse_constraints(v, path=p),
        help="bounds every trial must meet, e.g. 'params <= 5000'; analytic ones gate training",
        allowed="'<metric> <=|<|>=|> <number>'",
        dump=lambda v: [str(c) for c in v],
    )
    indicators: tuple[str, ...] | None = config_key(
        None,
        check=lambda v, p: _tuple(_indicators(v, p)),
        help="indicators measured per trial; null: the full panel (objectives and constraints "
        "are always measured)",
        allowed="null or a list of indicator names",
        dump=lambda v: None if v is None else list(v),
    )
    measure: dict[str, Any] = config_key(
        check=_measure, factory=dict, help="options of objectives.measure (the measure.* keys)"
    )
    seed: int = config_key(
        0, check=checks.seed, help="seeds the algorithm, the validation split and every trial"
    )
    report_test: bool = config_key(
        False,
        check=checks.boolean,
        help="also score every trained trial on the test split and store its test_accuracy "
        "and test_loss (for a benchmark that wants per-trial test figures); no selector, "
        "front or report ever uses them; false: no trial reads the test split, search export "
        "reads it once for the exported model",
    )


@dataclass(frozen=True, kw_only=True)
class TrialConfig(DataAndMetrics):
    """One trial, validated: build ``family`` with ``hyper``, shapeshift it into ``budget``
    (None: the plain model) with the ``ssn`` options, train it with the ``train`` options,
    measure ``indicators`` (None: the full panel) and check ``constraints``.

    Build it with :meth:`from_dict` (which checks every key); the constructor trusts its
    arguments. :meth:`to_dict` gives the plain data that :meth:`from_dict` reads back equal.
    """

    family: str = config_key(
        check=checks.one_of(family_names, "search families"), help="a registered family"
    )
    hyper: dict[str, Any] = config_key(
        check=None, factory=dict, help="the family's hyper-parameters"
    )
    budget: int | None = optional_key(
        _budget,
        "total trainable parameters of the Shapeshifter network (a model whose own "
        "count is at or below it trains plain); null: the plain model",
    )
    ssn: dict[str, Any] = config_key(check=None, factory=dict, help="the ssn.* options")
    train: dict[str, Any] = config_key(check=None, factory=dict, help="the train.* options")
    train_on: str = config_key(
        "train",
        check=checks.one_of(lambda: TRAIN_ON),
        help="the splits the model trains on: train+val retrains a model chosen on validation "
        "on both (search train --with-val; its accuracy is then of data it trained on)",
    )
    device: str | None = optional_key(_device, "torch device; null: cuda if available, else cpu")
    artifact_dir: str | None = optional_key(checks.text, "where the trial writes its files")
    progress: bool = config_key(False, check=checks.boolean, help="print training progress")

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any] | TrialConfig) -> TrialConfig:
        """Validates a trial config (plain data; a TrialConfig is returned as it is).

        Raises:
            ConfigError: an unknown key (at any level), a missing ``dataset`` or ``family``,
                or a bad value; the message names the key path, the value and what is allowed.
        """
        if isinstance(cfg, TrialConfig):
            return cfg
        data = checks.mapping(cfg, "trial config")
        checks.known_keys(data, names(TrialConfig), "")
        imports = normalise_imports(data.get("imports"))
        import_modules(imports)
        data, source = declared_dataset(data)
        for key in ("dataset", "family"):
            if data.get(key) is None:
                if key == "family":
                    raise ConfigError("family: missing; search families lists them")
                raise ConfigError(f"dataset: missing; allowed: {dataset_names()}")
        out = parse_keys(TrialConfig, data, "")
        hyper = checks.mapping({} if data.get("hyper") is None else data["hyper"], "hyper")
        family = out["family"]
        from spaces import family_hyper_keys

        checks.known_keys(hyper, family_hyper_keys(family), f"hyper (family {family})")
        out["hyper"] = copy.deepcopy(hyper)
        out["ssn"] = _section(data.get("ssn"), SSN_OPTIONS, "ssn")
        out["train"] = _section(data.get("train"), TRAIN_OPTIONS, "train")
        out["imports"], out["data_source"] = imports, source
        if out["ssn"]["stores"] > 1 and out["ssn"]["mapping"] == "single":
            raise ConfigError(
                f"ssn.stores: got {out['ssn']['stores']} with ssn.mapping 'single', which uses "
                f"exactly one store; allowed: 1, or mapping 'auto' or 'random' for more stores"
            )
        return cls(**out)

    def shares(self, plain_params: int) -> bool:
        """Whether this trial's model, of ``plain_params`` trainable parameters, is
        Shapeshifted: it has a budget, and the budget is below the model's own count. A
        store at or above it would hold more parameters than the weights it generates, and
        generate no function the plain model cannot be: the plain model is trained instead
        (its ``params`` its own count, within the budget)."""
        return self.budget is not None and self.budget < plain_params

    def ssn_options(self, **changes: Any) -> dict[str, Any]:
        """The keywords of :func:`spaces.ssn.shapeshift` (:class:`spaces.ssn.SSNOptions`) this
        trial's ``ssn`` section and seed give, with ``changes`` on top."""
        given = {k: v for k, v in self.ssn.items() if k in _SHAPESHIFT}
        return {**given, "seed": self.seed, **changes}

    def recipe(self, **changes: Any) -> Recipe:
        """The :class:`objectives.Recipe` this trial's ``train`` section gives, with ``changes``
        on top (the one place a trial's options become a recipe)."""
        return Recipe.from_mapping({**self.train, **changes})

    def prepare(self) -> TrialConfig:
        """Imports the config's modules and registers its declared dataset in this process
        (a Ray worker receives the config pickled, with neither; it imports the copies the
        job shipped, ``search._usercode``); returns the config.

        Raises:
            ConfigError: a module that does not import, or a declaration that clashes.
        """
        import_modules(self.imports, shipped_first=True)
        if self.data_source is not None:
            from objectives import declare

            declare(self.data_source)
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/YAML-ready): objectives as ``[name, direction]``, constraints as
        their canonical text; what the storage and a bundle hold."""
        out = dump_keys(self)
        out["dataset"] = (
            copy.deepcopy(self.data_source) or self.dataset
        )  # a declaration, or a name
        return out

    def replace(self, **changes: Any) -> TrialConfig:
        """A copy with some fields changed and ``train`` options merged (checked again)."""
        train = changes.pop("train", None)
        data = {**self.to_dict(), **changes}
        if train is not None:
            data["train"] = {**self.train, **train}
        return TrialConfig.from_dict(data)


def declared_dataset(
    data: Mapping[str, Any], *, base: str | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A config with its ``dataset`` declaration (a mapping: an image folder, npz or npy
    files) registered and replaced by its name, and the declaration as recorded (None when
    ``dataset`` is a name)."""
    spec = data.get("dataset")
    if not isinstance(spec, Mapping):
        return dict(data), None
    from objectives import declare  # the user's dataset: its loaders load torch

    source = declare(spec, path="dataset", base=base)
    return {**data, "dataset": source["name"]}, source


def check_trial_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Validates a trial config and returns it complete as plain data: every default filled
    in, names lower-cased, objectives as ``[name, direction]``, constraints in canonical text.

    Raises:
        ConfigError: see :meth:`TrialConfig.from_dict`.
    """
    return TrialConfig.from_dict(cfg).to_dict()
