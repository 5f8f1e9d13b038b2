"""Search configuration: a YAML file, a dict or a packaged preset, validated into typed objects.

Every check names the key path (``train.epochs``, ``space.convnet.width``), the bad value and
what is allowed, and raises :class:`spaces.ConfigError` (the CLI's exit code 2). Two layers:

- :func:`check_trial_config` validates one trial config, the plain dict that
  :func:`search.trial.run_trial` takes (hand-writable; every key but ``dataset`` and ``family``
  has a default), and returns it complete.
- :class:`SearchConfig` is a whole search: dataset, the :class:`spaces.Space` searched, values
  held fixed, objectives, constraints, optimiser, trials, resources, storage. Its
  :meth:`SearchConfig.trial_config` turns a sampled point into a trial config.

Names of space dimensions and fixed values: ``family``; ``budget`` (None or absent: the plain
model); ``ssn.<option>``; ``train.<option>``; ``<family>.<hyper>`` (made conditional on
``family`` automatically); ``<family>.<hyper>.<i>`` for element ``i`` of a list-valued
hyper-parameter (``scs.widths.0``, ``scs.widths.1``, ...), since a dimension holds one scalar.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import io
import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import torch
import yaml

from objectives._conditions import MeasureOptions
from objectives._indicators import INDICATORS
from objectives.datasets import DATASETS
from objectives.train import OPTIMIZERS, SCHEDULES
from spaces._build import FAMILIES, hyper_keys
from spaces._dsl import Categorical, Fixed, Float, Int, Space
from spaces._errors import ConfigError, NpasError
from spaces.ssn import GENERATORS, MAPPINGS, UPSAMPLERS

__all__ = [
    "TRIAL_METRICS",
    "Constraint",
    "Objective",
    "OptimiserConfig",
    "ResourceConfig",
    "SearchConfig",
    "check_trial_config",
    "list_presets",
    "load_config",
    "load_preset",
    "metric_direction",
    "parse_constraints",
    "parse_objectives",
]

#: Metrics of :func:`search.trial.run_trial` besides the indicators, with their direction.
TRIAL_METRICS = {
    "accuracy": "maximize",
    "val_loss": "minimize",
    "train_time_s": "minimize",
    "train_energy_j": "minimize",
}
#: Reported by every trial, never optimised on or constrained (the test set stays unseen).
REPORTED_ONLY = ("test_accuracy", "test_loss")
#: Used when ``SearchConfig.optimiser`` cannot be checked against the optimiser registry.
KNOWN_OPTIMISERS = (
    "nsga2",
    "nsga3",
    "tpe",
    "gp",
    "random",
    "pymoo-nsga2",
    "pymoo-nsga3",
    "pymoo-smsemoa",
)
_DIRECTIONS = {
    "maximize": "maximize",
    "maximise": "maximize",
    "max": "maximize",
    "minimize": "minimize",
    "minimise": "minimize",
    "min": "minimize",
}
_MEASURE_KEYS = tuple(
    f.name for f in dataclasses.fields(MeasureOptions) if f.name != "make_optimizer"
)
_PRESETS = "presets"
_OBJECTIVE_KEYS = {"name", "direction"}


# -- small checks -----------------------------------------------------------------------------


def _bad(path: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{path}: got {value!r}; allowed: {allowed}")


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _check_keys(data: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
    allowed = list(allowed)
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = f"{path}: unknown key" if path else "unknown key"
            raise ConfigError(
                f"{where} {key!r} (value {data[key]!r}){hint}; allowed keys: {allowed}"
            )


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(path, value, "a mapping of keys to values")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise _bad(path, bad[0], "string keys only")
    return dict(value)


def _int(value: Any, path: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise _bad(path, value, f"an int >= {low}")
    return int(value)


def _number(
    value: Any,
    path: str,
    *,
    low: float,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if open_low else value >= low) and (
            value < high if open_high else value <= high
        )
    if not ok:
        left, right = "(" if open_low else "[", ")" if open_high else "]"
        raise _bad(path, value, f"a finite number in {left}{low}, {high}{right}")
    return float(value)


def _name(value: Any, path: str, names: Iterable[str]) -> str:
    names = list(names)
    if not isinstance(value, str) or value.lower() not in names:
        raise _bad(path, value, f"one of {names}")
    return value.lower()


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(path, value, "true or false")
    return value


def _optional(check: Any) -> Any:
    def run(value: Any, path: str) -> Any:
        return None if value is None else check(value, path)

    return run


def _text(value: Any, path: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise _bad(path, value, "a non-empty string")
    return value


# -- objectives and constraints -----------------------------------------------------------------


def metric_names() -> list[str]:
    """Names usable as objectives or in constraints: trial metrics, then every indicator."""
    return [*TRIAL_METRICS, *INDICATORS.names()]


def metric_direction(name: str, *, path: str = "metric") -> str:
    """The natural direction of a metric: the indicator registry's, or the trial metric's."""
    if not isinstance(name, str):
        raise _bad(path, name, f"one of {metric_names()}")
    if name in REPORTED_ONLY:
        raise ConfigError(
            f"{path}: {name!r} is measured on the test set, which is reported but never "
            f"optimised on or constrained; use 'accuracy' (validation) instead"
        )
    if name in TRIAL_METRICS:
        return TRIAL_METRICS[name]
    if name in INDICATORS:
        return INDICATORS.get(name).direction
    raise _bad(path, name, f"one of {metric_names()}")


class Objective(NamedTuple):
    """One objective: a metric of the trial result and whether to maximise or minimise it."""

    name: str
    direction: str

    @classmethod
    def parse(cls, entry: Any, *, path: str = "objectives[0]") -> Objective:
        """From ``"name"``, ``[name, direction]``, ``{name: direction}`` or
        ``{"name": ..., "direction": ...}``; a missing direction is the metric's natural one."""
        if isinstance(entry, str):
            name, direction = entry, None
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            name, direction = entry
        elif isinstance(entry, Mapping) and "name" in entry and set(entry) <= _OBJECTIVE_KEYS:
            name, direction = entry["name"], entry.get("direction")
        elif isinstance(entry, Mapping) and len(entry) == 1:
            ((name, direction),) = entry.items()
        else:
            raise _bad(
                path,
                entry,
                "a metric name, [name, direction], {name: direction} or "
                "{name: ..., direction: ...}",
            )
        natural = metric_direction(name, path=path)
        if direction is None:
            return cls(name, natural)
        if not isinstance(direction, str) or direction.lower() not in _DIRECTIONS:
            raise _bad(f"{path}.direction", direction, "'maximize' or 'minimize'")
        return cls(name, _DIRECTIONS[direction.lower()])


def parse_objectives(entries: Any, *, path: str = "objectives") -> tuple[Objective, ...]:
    """A non-empty list of distinct objectives (see :meth:`Objective.parse`)."""
    if isinstance(entries, str | Mapping) or not isinstance(entries, Iterable):
        raise _bad(path, entries, "a non-empty list of objectives")
    out = tuple(Objective.parse(e, path=f"{path}[{i}]") for i, e in enumerate(entries))
    if not out:
        raise _bad(path, entries, "a non-empty list of objectives")
    names = [o.name for o in out]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise _bad(f"{path}[{i}]", name, "each metric once")
    return out


_OPS = ("<=", ">=", "<", ">")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>)\s*(\S+)\s*$")


class Constraint(str):
    """A bound on one metric, e.g. ``params <= 5000``.

    It *is* its canonical text (a ``str``: usable as an Optuna constraint key, JSON- and
    YAML-ready, equal to ``"params <= 5000"``), with the parsed parts as read-only properties.
    ``Constraint(text)`` parses and canonicalises; :meth:`parse` does the same with a key path
    for error messages.

    Raises:
        ConfigError: not ``"<metric> <=|<|>=|> <number>"``, or an unknown metric.
    """

    def __new__(cls, text: Any, *, path: str = "constraint") -> Constraint:
        match = _CONSTRAINT.match(text) if isinstance(text, str) else None
        value = _float_or_none(match.group(3)) if match else None
        if match is None or value is None:
            raise _bad(path, text, "'<metric> <=|<|>=|> <number>', e.g. 'params <= 5000'")
        metric_direction(match.group(1), path=path)
        shown = int(value) if value.is_integer() else value
        return super().__new__(cls, f"{match.group(1)} {match.group(2)} {shown!r}")

    @classmethod
    def parse(cls, text: Any, *, path: str = "constraints[0]") -> Constraint:
        """From ``"<metric> <=|<|>=|> <number>"``; the metric must be known."""
        return text if isinstance(text, Constraint) else cls(text, path=path)

    @property
    def indicator(self) -> str:
        """The metric bounded (an indicator or a trial metric such as ``accuracy``)."""
        return self.split(" ")[0]

    @property
    def op(self) -> str:
        """One of ``<=``, ``<``, ``>=``, ``>``."""
        return self.split(" ")[1]

    @property
    def value(self) -> float:
        """The bound."""
        return float(self.split(" ")[2])

    def violation(self, metrics: Mapping[str, Any]) -> float:
        """How far ``metrics`` are from meeting it: ≤ 0 met, > 0 violated (Optuna's convention).

        A missing, None or non-finite value cannot meet it: ``inf``.
        """
        value = metrics.get(self.indicator)
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return math.inf
        if not math.isfinite(value):
            return math.inf
        bound = self.value
        diff = value - bound if self.op in ("<=", "<") else bound - value
        if diff == 0 and self.op in ("<", ">"):  # a strict bound is violated on the bound
            return math.ulp(bound)
        return float(diff)

    def __repr__(self) -> str:
        return f"Constraint({str(self)!r})"

    def __getnewargs__(self) -> tuple[str]:  # pickling (Ray) rebuilds from the text
        return (str(self),)


yaml.SafeDumper.add_representer(Constraint, lambda dumper, c: dumper.represent_str(str(c)))


def _float_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_constraints(entries: Any, *, path: str = "constraints") -> tuple[Constraint, ...]:
    """A list of constraint strings (see :meth:`Constraint.parse`); None means none."""
    if entries is None:
        return ()
    if isinstance(entries, str) or not isinstance(entries, Iterable):
        raise _bad(path, entries, "a list of constraints such as ['params <= 5000']")
    return tuple(Constraint.parse(e, path=f"{path}[{i}]") for i, e in enumerate(entries))


def _indicators(value: Any, path: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable) or not list(value):
        allowed = f"null (the full panel) or a non-empty list of {INDICATORS.names()}"
        raise _bad(path, value, allowed)
    return [_name(v, f"{path}[{i}]", INDICATORS.names()) for i, v in enumerate(value)]


def _measure(value: Any, path: str) -> dict[str, Any]:
    options = _mapping({} if value is None else value, path)
    _check_keys(options, _MEASURE_KEYS, path)
    try:
        MeasureOptions(**options)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return options


# -- the trial config ---------------------------------------------------------------------------


def _mapping_name(value: Any, path: str) -> Any:
    if isinstance(value, Mapping):  # a manual {layer or glob: store} assignment
        return {str(k): _int(v, _join(path, k), 0) for k, v in value.items()}
    return _name(value, path, [n for n in MAPPINGS.names() if n != "manual"])


#: ``ssn`` options: key → (check, default).
SSN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "stores": (lambda v, p: _int(v, p, 1), 1),
    "mapping": (_mapping_name, "single"),
    "generator": (lambda v, p: _name(v, p, GENERATORS.names()), "wavg"),
    "upsampler": (lambda v, p: _name(v, p, UPSAMPLERS.names()), "mask"),
    "templates": (lambda v, p: _int(v, p, 1), 4),
    "pretrain_epochs": (lambda v, p: _int(v, p, 1), 1),
}
#: ``train`` options (keywords of :func:`objectives.fit`): key → (check, default).
TRAIN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "epochs": (lambda v, p: _int(v, p, 1), 3),
    "batch_size": (lambda v, p: _int(v, p, 1), 128),
    "optimizer": (lambda v, p: _name(v, p, OPTIMIZERS.names()), "sgd"),
    "lr": (_optional(lambda v, p: _number(v, p, low=0.0, open_low=True)), None),
    "momentum": (lambda v, p: _number(v, p, low=0.0, high=1.0, open_high=True), 0.9),
    "weight_decay": (lambda v, p: _number(v, p, low=0.0), 5e-4),
    "schedule": (lambda v, p: _name(v, p, SCHEDULES.names()), "onecycle"),
    "label_smoothing": (lambda v, p: _number(v, p, low=0.0, high=1.0, open_high=True), 0.0),
    "augment": (_optional(_bool), None),
    "max_steps": (_optional(lambda v, p: _int(v, p, 1)), None),
}


def _val_size(value: Any, path: str) -> int | float:
    if isinstance(value, float) and 0 < value < 1:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
        return int(value)
    raise _bad(path, value, "null (the dataset's default), a fraction in (0, 1) or a count >= 1")


def _device(value: Any, path: str) -> str:
    try:
        if not isinstance(value, str):
            raise TypeError(value)
        torch.device(value)
    except (RuntimeError, TypeError):
        raise _bad(
            path,
            value,
            "null (cuda if available, else cpu) or a torch device such as 'cpu', 'cuda', 'cuda:1'",
        ) from None
    return str(value)


#: Top-level keys of a trial config: key → (check, default); dataset and family are required.
TRIAL_OPTIONS: dict[str, tuple[Any, Any]] = {
    "dataset": (lambda v, p: _name(v, p, DATASETS.names()), None),
    "data_root": (_optional(_text), None),
    "val_size": (_optional(_val_size), None),
    "family": (lambda v, p: _name(v, p, FAMILIES.names()), None),
    "hyper": (None, {}),  # checked against the family below
    "budget": (_optional(lambda v, p: _int(v, p, 1)), None),
    "ssn": (None, {}),
    "train": (None, {}),
    "objectives": (
        lambda v, p: [list(o) for o in parse_objectives(v, path=p)],
        [["accuracy", "maximize"], ["params", "minimize"]],
    ),
    "constraints": (lambda v, p: [str(c) for c in parse_constraints(v, path=p)], []),
    "indicators": (_indicators, None),
    "measure": (_measure, {}),
    "seed": (lambda v, p: _int(v, p, 0), 0),
    "device": (_optional(_device), None),
    "artifact_dir": (_optional(_text), None),
    "progress": (_bool, False),
}


def _section(value: Any, options: Mapping[str, tuple[Any, Any]], path: str) -> dict[str, Any]:
    data = _mapping({} if value is None else value, path)
    _check_keys(data, options, path)
    return {
        key: check(data[key], _join(path, key)) if key in data else copy.deepcopy(default)
        for key, (check, default) in options.items()
    }


def check_trial_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Validates a trial config and returns it complete: every default filled in, names
    lower-cased, objectives as ``[name, direction]`` and constraints in canonical text.

    Raises:
        ConfigError: an unknown key (at any level), a missing ``dataset`` or ``family``, or a
            bad value; the message names the key path, the value and what is allowed.
    """
    data = _mapping(cfg, "trial config")
    _check_keys(data, TRIAL_OPTIONS, "")
    for key in ("dataset", "family"):
        if data.get(key) is None:
            raise ConfigError(f"{key}: missing; allowed: {_allowed_top(key)}")
    out: dict[str, Any] = {}
    for key, (check, default) in TRIAL_OPTIONS.items():
        if check is None:
            continue
        out[key] = check(data[key], key) if key in data else copy.deepcopy(default)
    hyper = _mapping({} if data.get("hyper") is None else data["hyper"], "hyper")
    _check_keys(hyper, hyper_keys(FAMILIES.get(out["family"])), f"hyper (family {out['family']})")
    out["hyper"] = copy.deepcopy(hyper)
    out["ssn"] = _section(data.get("ssn"), SSN_OPTIONS, "ssn")
    out["train"] = _section(data.get("train"), TRAIN_OPTIONS, "train")
    if out["ssn"]["stores"] > 1 and out["ssn"]["mapping"] == "single":
        raise ConfigError(
            f"ssn.stores: got {out['ssn']['stores']} with ssn.mapping 'single', which uses "
            f"exactly one store; allowed: 1, or mapping 'auto' or 'random' for more stores"
        )
    return {key: out[key] for key in TRIAL_OPTIONS}


def _allowed_top(key: str) -> list[str]:
    return DATASETS.names() if key == "dataset" else FAMILIES.names()


# -- the search config --------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceConfig:
    """What one trial asks the scheduler for: CPUs (> 0) and a GPU share (0 to any)."""

    cpu: float = 1.0
    gpu: float = 0.0

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "resources") -> ResourceConfig:
        data = _mapping({} if data is None else data, path)
        _check_keys(data, ("cpu", "gpu"), path)
        cpu = _number(data.get("cpu", 1.0), f"{path}.cpu", low=0.0, open_low=True)
        gpu = _number(data.get("gpu", 0.0), f"{path}.gpu", low=0.0)
        return cls(cpu, gpu)


@dataclass(frozen=True)
class OptimiserConfig:
    """The optimiser's registered name and its options (see ``search._optimisers``)."""

    name: str = "nsga2"
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "optimiser") -> OptimiserConfig:
        """From a name or ``{name: ..., options: {...}}``."""
        if data is None:
            return cls()
        if isinstance(data, str):
            data = {"name": data}
        data = _mapping(data, path)
        _check_keys(data, ("name", "options"), path)
        name = _name(data.get("name", "nsga2"), f"{path}.name", _optimiser_names())
        return cls(name, _mapping(data.get("options") or {}, f"{path}.options"))


def _optimiser_names() -> list[str]:
    try:
        from search._optimisers import OPTIMISERS
    except ImportError:  # the optional engine is missing: check the name only
        return list(KNOWN_OPTIMISERS)
    return OPTIMISERS.names()


def _check_optimiser(config: SearchConfig) -> None:
    """Builds the optimiser once, unbound, so that bad options fail at load time."""
    try:
        from search._optimisers import OPTIMISERS
    except ImportError:
        return
    cls = OPTIMISERS.get(config.optimiser.name)
    try:
        cls(config.space, config.directions, seed=config.seed, **config.optimiser.options)
    except ConfigError as err:
        raise ConfigError(f"optimiser: {err}") from None


_TOP_KEYS = (
    "name",
    "dataset",
    "data_root",
    "val_size",
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
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class SearchConfig:
    """One search, validated. Build it with :func:`load_config`, :func:`load_preset` or
    :meth:`from_dict`; :meth:`to_dict` gives plain data that loads back equal.

    Attributes:
        name: Study name (letters, digits, ``_.-``).
        dataset: A registered dataset; ``data_root`` and ``val_size`` as in
            :func:`objectives.datasets.load`.
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
        address: Ray cluster address; None: a local Ray.
        seed: Seeds the optimiser, the validation split and every trial.
        out: Run folder.
        indicators: Indicators measured per trial; None: the full panel. Objectives and
            constraints are always measured.
        measure: Options of :func:`objectives.measure` (budgets of the timed runs).
    """

    name: str
    dataset: str
    space: Space
    data_root: str | None = None
    val_size: int | float | None = None
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

    # -- points → trial configs -------------------------------------------------------------

    def trial_config(self, point: Mapping[str, Any], *, artifact_dir: str | None = None) -> dict:
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
        for key, value in values.items():
            head, _, rest = key.partition(".")
            if head == family and rest:
                hyper_key, _, index = rest.partition(".")
                if index:
                    elements.setdefault(hyper_key, {})[int(index)] = value
                else:
                    hyper[hyper_key] = value
        for key, items in elements.items():
            hyper[key] = [items[i] for i in sorted(items)]
        section = {
            name: {k.partition(".")[2]: v for k, v in values.items() if k.startswith(name + ".")}
            for name in ("ssn", "train")
        }
        cfg = {
            "dataset": self.dataset,
            "data_root": self.data_root,
            "val_size": self.val_size,
            "family": family,
            "hyper": hyper,
            "budget": values.get("budget"),
            "ssn": section["ssn"],
            "train": section["train"],
            "objectives": [list(o) for o in self.objectives],
            "constraints": self.constraint_texts,
            "indicators": None if self.indicators is None else list(self.indicators),
            "measure": copy.deepcopy(self.measure),
            "seed": self.seed,
            "device": None,
            "artifact_dir": artifact_dir,
        }
        return check_trial_config(cfg)

    def _defaults(self) -> dict[str, Any]:
        return {**{f"train.{k}": v for k, v in self.train.items()}, **self.fixed}

    # -- plain data -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data (YAML/JSON-ready) that :meth:`from_dict` turns back into an equal config."""
        return {
            "name": self.name,
            "dataset": self.dataset,
            "data_root": self.data_root,
            "val_size": self.val_size,
            "space": self.space.to_dict(),
            "fixed": copy.deepcopy(self.fixed),
            "train": copy.deepcopy(self.train),
            "objectives": [list(o) for o in self.objectives],
            "constraints": self.constraint_texts,
            "optimiser": {"name": self.optimiser.name, "options": dict(self.optimiser.options)},
            "trials": self.trials,
            "resources": {"cpu": self.resources.cpu, "gpu": self.resources.gpu},
            "storage": self.storage,
            "address": self.address,
            "seed": self.seed,
            "out": self.out,
            "indicators": None if self.indicators is None else list(self.indicators),
            "measure": copy.deepcopy(self.measure),
        }

    def to_yaml(self) -> str:
        """:meth:`to_dict` as YAML text (what ``search export`` writes next to a model)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str | None = None) -> SearchConfig:
        """Validates plain data (a parsed YAML file) into a config.

        Args:
            data: The sections; ``dataset`` and ``space`` are required.
            name: The name used when ``data`` has none (a file's stem, a preset's name).

        Raises:
            ConfigError: naming the key path, the bad value and what is allowed.
        """
        data = _mapping(data, "config")
        _check_keys(data, _TOP_KEYS, "")
        for key in ("dataset", "space"):
            if key not in data:
                raise ConfigError(f"{key}: missing; it is required (see the presets)")
        study = data.get("name", name or "search")
        if not isinstance(study, str) or not _NAME.match(study):
            raise _bad("name", study, "letters, digits, '_', '.', '-' (not first)")
        train = _section(data.get("train"), TRAIN_OPTIONS, "train")
        train = {k: train[k] for k in (data.get("train") or {})}
        fixed = _flatten(_mapping(data.get("fixed") or {}, "fixed"))
        space = _space(data["space"], fixed)
        _check_names(space, fixed, train)
        config = cls(
            name=study,
            dataset=TRIAL_OPTIONS["dataset"][0](data["dataset"], "dataset"),
            space=space,
            data_root=_optional(_text)(data.get("data_root"), "data_root"),
            val_size=_optional(_val_size)(data.get("val_size"), "val_size"),
            fixed=fixed,
            train=train,
            objectives=parse_objectives(
                data.get("objectives", [["accuracy", "maximize"], ["params", "minimize"]])
            ),
            constraints=parse_constraints(data.get("constraints")),
            optimiser=OptimiserConfig.from_dict(data.get("optimiser")),
            trials=_int(data.get("trials", 16), "trials", 1),
            resources=ResourceConfig.from_dict(data.get("resources")),
            storage=_optional(_storage)(data.get("storage"), "storage"),
            address=_optional(_text)(data.get("address"), "address"),
            seed=_int(data.get("seed", 0), "seed", 0),
            out=_text(data.get("out", "runs"), "out"),
            indicators=_tuple(_indicators(data.get("indicators"), "indicators")),
            measure=_measure(data.get("measure"), "measure"),
        )
        config.trial_config(config.space.sample(config.seed))  # the whole chain, once
        _check_optimiser(config)
        return config


def _tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _storage(value: Any, path: str) -> str:
    if not isinstance(value, str) or "://" not in value:
        raise _bad(
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
        name = _join(prefix, key)
        if isinstance(value, Mapping):
            out.update(_flatten(_mapping(value, f"fixed.{name}"), name))
        else:
            out[name] = value
    return out


# -- the space section --------------------------------------------------------------------------


def _space(data: Any, fixed: Mapping[str, Any]) -> Space:
    """The DSL's plain data, with shorthands (a list: choices; a scalar: a fixed value) and the
    ``when: {family: [f]}`` of every ``<f>.<hyper>`` dimension filled in."""
    entries = _mapping(data, "space")
    if not entries:
        raise _bad("space", data, "at least one dimension")
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
            when = _mapping(entry.get("when") or {}, f"space.{key}.when")
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
    return [_name(v, where, FAMILIES.names()) for v in values]


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
                raise _bad(where, name, f"{[f'{head}.{k}' for k in options]}")
            _check_values(space, fixed, name, where, options[rest][0])
        elif head in FAMILIES and rest:
            _check_hyper(head, rest, families, where, elements)
        else:
            raise ConfigError(
                f"{where}: unknown name {name!r}; allowed: 'family', 'budget', 'ssn.<option>' "
                f"({list(SSN_OPTIONS)}), 'train.<option>' ({list(TRAIN_OPTIONS)}), "
                f"'<family>.<hyper>' or '<family>.<hyper>.<index>' for families {families}"
            )
    for (family, key), indices in elements.items():
        if sorted(indices) != list(range(len(indices))):
            raise ConfigError(
                f"{family}.{key}: elements {sorted(indices)} must be numbered 0, 1, ... "
                f"without gaps (one per list entry)"
            )
    _check_stores(space, fixed)


def _check_values(
    space: Space, fixed: Mapping[str, Any], name: str, where: str, check: Any
) -> None:
    for value in _values(space, fixed, name):
        check(value, where)


def _check_hyper(
    family: str,
    rest: str,
    families: list[str],
    where: str,
    elements: dict[tuple[str, str], list[int]],
) -> None:
    if family not in families:
        raise ConfigError(f"{where}: family {family!r} is never searched; allowed: {families}")
    key, _, index = rest.partition(".")
    allowed = hyper_keys(FAMILIES.get(family))
    if key not in allowed:
        raise _bad(where, key, f"a hyper-parameter of {family!r}: {list(allowed)}")
    if index:
        if not index.isdigit():
            raise _bad(where, index, f"a list index 0, 1, ... ('{family}.{key}.0')")
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


# -- loading --------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3`` as a float (YAML 1.1 wants ``1.0e-3``)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> SearchConfig:
    """A search config from a YAML file or a dict (a dict is taken as :meth:`from_dict` does).

    Raises:
        ConfigError: a missing file, a YAML syntax error (with the file and the line) or any
            invalid value (prefixed with the file).
    """
    if isinstance(source, Mapping):
        return SearchConfig.from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise ConfigError(
            f"config file {str(path)!r} does not exist; pass a YAML file or one of the presets "
            f"{list_presets()} with --preset"
        )
    return _load_text(path.read_text(encoding="utf-8"), where=str(path), name=path.stem)


def _load_text(text: str, *, where: str, name: str) -> SearchConfig:
    stream = io.StringIO(text)
    stream.name = where  # type: ignore[misc]  # YAML's messages then say where
    try:
        data = yaml.load(stream, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ConfigError(f"{where}: not valid YAML: {err}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: must hold a mapping of sections, got {data!r}")
    try:
        return SearchConfig.from_dict(data, name=name)
    except NpasError as err:
        raise ConfigError(f"{where}: {err}") from None


def list_presets() -> list[str]:
    """Names of the presets shipped in ``search/presets``."""
    folder = resources.files("search") / _PRESETS
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_preset(name: str) -> SearchConfig:
    """A packaged preset (``digits-quick``, ``mnist-tiny``, ``cifar10-wrn``).

    Raises:
        ConfigError: no preset of that name (the message lists them).
    """
    if name not in list_presets():
        raise _bad("preset", name, f"one of {list_presets()}")
    text = (resources.files("search") / _PRESETS / f"{name}.yaml").read_text(encoding="utf-8")
    return _load_text(text, where=f"preset {name!r}", name=name)
