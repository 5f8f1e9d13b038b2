"""The trial config: what one trial builds, trains and measures, validated once.

:class:`TrialConfig` is the typed form passed inside npas (from the search config to the Ray
worker, which receives it pickled); :meth:`TrialConfig.from_dict` validates the plain-data form
a user writes by hand or the storage holds, and :meth:`TrialConfig.to_dict` gives it back. The
defaults of the ``ssn`` and ``train`` sections are read from the signatures of
:func:`spaces.ssn.shapeshift` and :func:`objectives.fit`, so they are declared once, there.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from objectives._conditions import MeasureOptions
from objectives._custom import declare
from objectives._indicators import INDICATORS
from objectives.datasets import DATASETS, STREAM_ABOVE_MB
from objectives.train import SCHEDULES, TORCH_OPTIMIZERS, fit
from search._usercode import import_modules, normalise_imports
from search.config import _checks as checks
from search.config._metrics import Constraint, Objective, parse_constraints, parse_objectives
from spaces._build import FAMILIES, hyper_keys
from spaces._errors import ConfigError
from spaces.ssn import GENERATORS, MAPPINGS, UPSAMPLERS, shapeshift

__all__ = [
    "LOADING_OPTIONS",
    "SSN_OPTIONS",
    "TRAIN_OPTIONS",
    "TRIAL_OPTIONS",
    "TrialConfig",
    "check_trial_config",
    "declared_dataset",
]

_MEASURE_KEYS = tuple(
    f.name for f in dataclasses.fields(MeasureOptions) if f.name != "make_optimizer"
)
#: A search trial's epochs when the config gives none (``fit`` itself has no default).
DEFAULT_EPOCHS = 3


def _defaults(fn: Callable[..., Any]) -> dict[str, Any]:
    """The keyword defaults of ``fn``: the one place the ssn and train defaults live."""
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


_SHAPESHIFT = _defaults(shapeshift)
_FIT = _defaults(fit)


def _indicators(value: Any, path: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable) or not list(value):
        allowed = f"null (the full panel) or a non-empty list of {INDICATORS.names()}"
        raise checks.bad(path, value, allowed)
    return [checks.name(v, f"{path}[{i}]", INDICATORS.names()) for i, v in enumerate(value)]


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
    return checks.name(value, path, [n for n in MAPPINGS.names() if n != "manual"])


def _device(value: Any, path: str) -> str:
    try:
        if not isinstance(value, str):
            raise TypeError(value)
        torch.device(value)
    except (RuntimeError, TypeError):
        raise checks.bad(
            path,
            value,
            "null (cuda if available, else cpu) or a torch device such as 'cpu', 'cuda', 'cuda:1'",
        ) from None
    return str(value)


#: ``ssn`` options: key → (check, default).
SSN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "stores": (lambda v, p: checks.integer(v, p, 1), _SHAPESHIFT["stores"]),
    "mapping": (_mapping_name, _SHAPESHIFT["mapping"]),
    "generator": (lambda v, p: checks.name(v, p, GENERATORS.names()), _SHAPESHIFT["generator"]),
    "upsampler": (lambda v, p: checks.name(v, p, UPSAMPLERS.names()), _SHAPESHIFT["upsampler"]),
    "templates": (lambda v, p: checks.integer(v, p, 1), _SHAPESHIFT["templates"]),
    # npas's own option (the auto mapping's probe), so its default is declared here
    "pretrain_epochs": (lambda v, p: checks.integer(v, p, 1), 1),
}
#: ``train`` options (keywords of :func:`objectives.fit`): key → (check, default).
TRAIN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "epochs": (lambda v, p: checks.integer(v, p, 1), DEFAULT_EPOCHS),
    "batch_size": (lambda v, p: checks.integer(v, p, 1), _FIT["batch_size"]),
    "optimizer": (lambda v, p: checks.name(v, p, TORCH_OPTIMIZERS.names()), _FIT["optimizer"]),
    "lr": (checks.optional(lambda v, p: checks.number(v, p, low=0.0, open_low=True)), _FIT["lr"]),
    "momentum": (
        lambda v, p: checks.number(v, p, low=0.0, high=1.0, open_high=True),
        _FIT["momentum"],
    ),
    "weight_decay": (lambda v, p: checks.number(v, p, low=0.0), _FIT["weight_decay"]),
    "schedule": (lambda v, p: checks.name(v, p, SCHEDULES.names()), _FIT["schedule"]),
    "label_smoothing": (
        lambda v, p: checks.number(v, p, low=0.0, high=1.0, open_high=True),
        _FIT["label_smoothing"],
    ),
    "augment": (checks.optional(checks.boolean), _FIT["augment"]),
    "max_steps": (checks.optional(lambda v, p: checks.integer(v, p, 1)), _FIT["max_steps"]),
}

#: ``loading`` options (how the data reach the model, :func:`objectives.datasets.load`).
LOADING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "stream": (checks.optional(checks.boolean), None),  # None: above stream_above_mb
    "stream_above_mb": (
        lambda v, p: checks.number(v, p, low=0.0, open_low=True),
        STREAM_ABOVE_MB,
    ),
    "workers": (lambda v, p: checks.integer(v, p, 0), 2),
}

#: Top-level keys of a trial config: key → (check, default); dataset and family are required.
#: ``imports`` are imported and a declared ``dataset`` registered before any name is checked.
TRIAL_OPTIONS: dict[str, tuple[Any, Any]] = {
    "imports": (None, ()),
    "dataset": (lambda v, p: checks.name(v, p, DATASETS.names()), None),
    "loading": (lambda v, p: _section(v, LOADING_OPTIONS, p), {}),
    "data_root": (checks.optional(checks.text), None),
    "val_size": (checks.optional(checks.val_size), None),
    "train_size": (checks.optional(lambda v, p: checks.integer(v, p, 1)), None),
    "family": (lambda v, p: checks.name(v, p, FAMILIES.names()), None),
    "hyper": (None, {}),  # checked against the family
    "budget": (checks.optional(lambda v, p: checks.integer(v, p, 1)), None),
    "ssn": (None, {}),
    "train": (None, {}),
    "objectives": (
        lambda v, p: parse_objectives(v, path=p),
        (Objective("accuracy", "maximize"), Objective("params", "minimize")),
    ),
    "constraints": (lambda v, p: parse_constraints(v, path=p), ()),
    "indicators": (lambda v, p: _tuple(_indicators(v, p)), None),
    "measure": (_measure, {}),
    "seed": (checks.seed, 0),
    "device": (checks.optional(_device), None),
    "artifact_dir": (checks.optional(checks.text), None),
    "progress": (checks.boolean, False),
}


def _tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _section(value: Any, options: Mapping[str, tuple[Any, Any]], path: str) -> dict[str, Any]:
    data = checks.mapping({} if value is None else value, path)
    checks.known_keys(data, options, path)
    return {
        key: check(data[key], checks.join(path, key)) if key in data else copy.deepcopy(default)
        for key, (check, default) in options.items()
    }


@dataclass(frozen=True)
class TrialConfig:
    """One trial, validated: build ``family`` with ``hyper``, shapeshift it into ``budget``
    (None: the plain model) with the ``ssn`` options, train it with the ``train`` options,
    measure ``indicators`` (None: the full panel) and check ``constraints``.

    Build it with :meth:`from_dict` (which checks every key); the constructor trusts its
    arguments. :meth:`to_dict` gives the plain data that :meth:`from_dict` reads back equal.
    """

    dataset: str
    family: str
    imports: tuple[str, ...] = ()
    data_source: dict[str, Any] | None = None
    loading: dict[str, Any] = field(default_factory=dict)
    data_root: str | None = None
    val_size: int | float | None = None
    train_size: int | None = None
    hyper: dict[str, Any] = field(default_factory=dict)
    budget: int | None = None
    ssn: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    objectives: tuple[Objective, ...] = TRIAL_OPTIONS["objectives"][1]
    constraints: tuple[Constraint, ...] = ()
    indicators: tuple[str, ...] | None = None
    measure: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    device: str | None = None
    artifact_dir: str | None = None
    progress: bool = False

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
        checks.known_keys(data, TRIAL_OPTIONS, "")
        imports = normalise_imports(data.get("imports"))
        import_modules(imports)
        data, source = declared_dataset(data)
        for key in ("dataset", "family"):
            if data.get(key) is None:
                allowed = DATASETS.names() if key == "dataset" else FAMILIES.names()
                raise ConfigError(f"{key}: missing; allowed: {allowed}")
        out: dict[str, Any] = {}
        for key, (check, default) in TRIAL_OPTIONS.items():
            if check is not None:
                out[key] = check(data[key], key) if key in data else copy.deepcopy(default)
        hyper = checks.mapping({} if data.get("hyper") is None else data["hyper"], "hyper")
        family = out["family"]
        checks.known_keys(hyper, hyper_keys(FAMILIES.get(family)), f"hyper (family {family})")
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

    def prepare(self) -> TrialConfig:
        """Imports the config's modules and registers its declared dataset in this process
        (a Ray worker receives the config pickled, with neither; it imports the copies the
        job shipped, ``search._usercode``); returns the config.

        Raises:
            ConfigError: a module that does not import, or a declaration that clashes.
        """
        import_modules(self.imports, shipped_first=True)
        if self.data_source is not None:
            declare(self.data_source)
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/YAML-ready): objectives as ``[name, direction]``, constraints as
        their canonical text; what the storage and a bundle hold."""
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["objectives"] = [list(o) for o in self.objectives]
        out["constraints"] = [str(c) for c in self.constraints]
        out["indicators"] = None if self.indicators is None else list(self.indicators)
        out["imports"] = list(self.imports)
        out["dataset"] = out.pop("data_source") or self.dataset  # a declaration, or a name
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
    source = declare(spec, path="dataset", base=base)
    return {**data, "dataset": source["name"]}, source


def check_trial_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Validates a trial config and returns it complete as plain data: every default filled
    in, names lower-cased, objectives as ``[name, direction]``, constraints in canonical text.

    Raises:
        ConfigError: see :meth:`TrialConfig.from_dict`.
    """
    return TrialConfig.from_dict(cfg).to_dict()
