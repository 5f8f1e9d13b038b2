"""The space DSL: one declaration of typed dimensions drives every optimiser.

A :class:`Space` is an ordered set of named dimensions (:class:`Int`, :class:`Float`,
:class:`Categorical`, :class:`Fixed`), each optionally active only when other dimensions take
given values (``when={"family": ["convnet", "wrn"]}``). From it come Optuna define-by-run
sampling (:meth:`Space.suggest`), a fixed-length real vector for pymoo (:meth:`Space.bounds`,
:meth:`Space.encode`, :meth:`Space.decode`), random configs, validation, and a plain-data form
for YAML presets (:meth:`Space.from_dict`, :meth:`Space.to_dict`).

Encoding, one real variable per non-fixed dimension:

- ``Int``: the value (its log for ``log=True``); bounds widened by half a step so rounding gives
  every grid value the same share of a uniform sample.
- ``Float``: the value (its log for ``log=True``).
- ``Categorical``: the choice index, bounds ``[-0.5, n - 0.5]``.
- An inactive dimension is encoded as its first valid value and ignored by ``decode``.

``decode`` accepts any finite vector (it rounds and clips), so ``encode(decode(x))`` is a
projection onto valid configs; it is exact except for log-scale floats, where ``exp``/``log``
round trips hold to a relative 1e-12.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeAlias, Union

import numpy as np

from spaces._checks import check_bool, is_int, is_real
from spaces._errors import ConfigError

Choice: TypeAlias = Union[bool, int, float, str, None]  # noqa: UP007 (runtime isinstance)
_CHOICE_TYPES = (type(None), bool, int, float, str)


class _Trial(Protocol):
    """The part of ``optuna.trial.Trial`` (or ``FixedTrial``) that :meth:`Space.suggest` uses."""

    def suggest_int(
        self, name: str, low: int, high: int, *, step: int = 1, log: bool = False
    ) -> int: ...

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> float: ...

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any: ...


def same_value(a: Any, b: Any) -> bool:
    """Equality that keeps ``True``, ``1`` and ``1.0`` apart, as choices must be."""
    return type(a) is type(b) and a == b


def _freeze_when(when: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``{parent: values}`` (or its frozen pairs) as hashable pairs; a scalar means [scalar]."""
    if when is None:
        return ()
    if isinstance(when, tuple):  # already frozen (dataclasses.replace, copies)
        when = dict(when)
    if not isinstance(when, Mapping):
        raise ConfigError(f"when must be a mapping {{dimension: [values]}}, got {when!r}")
    frozen = []
    for parent, values in when.items():
        if isinstance(values, str) or not isinstance(values, Iterable):
            values = (values,)
        frozen.append((str(parent), tuple(values)))
    return tuple(frozen)


#: What each field of a dimension means, whatever its kind (the docs' YAML reference).
FIELD_HELP = {
    "when": "active only when other dimensions take the given values: {dimension: [values]} "
    "(e.g. {family: [convnet]}); inactive, the dimension is not sampled",
    "low": "the smallest value",
    "high": "the largest value (an int dimension: reached when step divides the range)",
    "step": "the grid's spacing from low",
    "log": "sample on a log scale (needs low > 0; an int dimension also step 1)",
    "choices": "the values to choose from: None, bool, int, float or str, as Optuna stores them",
    "value": "the constant: part of every config, never searched",
}


@dataclass(frozen=True)
class _Dim:
    """Common part of every dimension: its activation condition."""

    when: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=(), kw_only=True)
    kind: ClassVar[str] = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "when", _freeze_when(self.when))

    def check(self, value: Any) -> bool:
        """True when ``value`` is a valid value of this dimension."""
        raise NotImplementedError

    def allowed(self) -> str:
        """What this dimension accepts, for error messages."""
        raise NotImplementedError

    def default(self) -> Any:
        """A valid value: the one inactive dimensions are encoded with."""
        raise NotImplementedError

    def spec(self) -> dict[str, Any]:
        """The plain-data fields of this dimension other than ``type`` and ``when``."""
        raise NotImplementedError


@dataclass(frozen=True)
class Int(_Dim):
    """Integers ``low, low + step, ...`` up to ``high``; ``log`` samples on a log scale.

    As in Optuna, ``log=True`` needs ``step == 1`` and ``low >= 1``.
    """

    low: int
    high: int
    step: int = 1
    log: bool = False
    kind: ClassVar[str] = "int"

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("low", "high", "step"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ConfigError(f"{key} must be an int, got {value!r}")
            object.__setattr__(self, key, int(value))
        check_bool("log", self.log)
        if self.low > self.high:
            raise ConfigError(f"low must be <= high, got low={self.low}, high={self.high}")
        if self.step < 1:
            raise ConfigError(f"step must be >= 1, got {self.step}")
        if self.log and (self.step != 1 or self.low < 1):
            raise ConfigError(
                f"log=True needs step=1 and low >= 1, got step={self.step}, low={self.low}"
            )

    @property
    def top(self) -> int:
        """The largest value on the grid (``high`` when the step divides the range)."""
        return self.low + (self.high - self.low) // self.step * self.step

    def check(self, value: Any) -> bool:
        return is_int(value, self.low, self.top) and (value - self.low) % self.step == 0

    def allowed(self) -> str:
        grid = f" in steps of {self.step}" if self.step != 1 else ""
        return f"an int in [{self.low}, {self.high}]{grid}"

    def default(self) -> int:
        return self.low

    def spec(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "step": self.step, "log": self.log}


@dataclass(frozen=True)
class Float(_Dim):
    """Reals in ``[low, high]``; ``log`` samples on a log scale (needs ``low > 0``)."""

    low: float
    high: float
    log: bool = False
    kind: ClassVar[str] = "float"

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("low", "high"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                hint = " (YAML 1.1 reads 1e-3 as a string: write 1.0e-3)" * isinstance(value, str)
                raise ConfigError(f"{key} must be a number, got {value!r}{hint}")
            if not math.isfinite(value):
                raise ConfigError(f"{key} must be finite, got {value!r}")
            object.__setattr__(self, key, float(value))
        check_bool("log", self.log)
        if self.low > self.high:
            raise ConfigError(f"low must be <= high, got low={self.low}, high={self.high}")
        if self.log and self.low <= 0:
            raise ConfigError(f"log=True needs low > 0, got low={self.low}")

    def check(self, value: Any) -> bool:
        return is_real(value) and self.low <= value <= self.high

    def allowed(self) -> str:
        return f"a number in [{self.low}, {self.high}]"

    def default(self) -> float:
        return self.low

    def spec(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True)
class Categorical(_Dim):
    """One of ``choices`` (None, bool, int, float or str, as Optuna stores them)."""

    choices: tuple[Choice, ...]
    kind: ClassVar[str] = "categorical"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.choices, str | bytes) or not isinstance(self.choices, Iterable):
            raise ConfigError(f"choices must be a list, got {self.choices!r}")
        choices = tuple(self.choices)
        if not choices:
            raise ConfigError("choices must not be empty")
        for c in choices:
            if not isinstance(c, _CHOICE_TYPES) or (isinstance(c, float) and math.isnan(c)):
                raise ConfigError(
                    f"choices must be None, bool, int, float (not NaN) or str, got {c!r}"
                )
        seen: set[tuple[type, Choice]] = set()  # same_value's equality, hashed: linear
        for c in choices:
            if (type(c), c) in seen:
                raise ConfigError(f"choices must be unique, {c!r} appears twice")
            seen.add((type(c), c))
        object.__setattr__(self, "choices", choices)

    def index(self, value: Any) -> int:
        """Position of ``value`` in the choices (type-aware: ``True`` is not ``1``)."""
        for i, c in enumerate(self.choices):
            if same_value(c, value):
                return i
        raise ValueError(value)

    def check(self, value: Any) -> bool:
        return any(same_value(c, value) for c in self.choices)

    def allowed(self) -> str:
        return f"one of {list(self.choices)!r}"

    def default(self) -> Choice:
        return self.choices[0]

    def spec(self) -> dict[str, Any]:
        return {"choices": list(self.choices)}


@dataclass(frozen=True)
class Fixed(_Dim):
    """A constant: part of every config, never searched and never in the pymoo vector."""

    value: Choice
    kind: ClassVar[str] = "fixed"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.value, _CHOICE_TYPES):
            raise ConfigError(f"value must be None, bool, int, float or str, got {self.value!r}")

    def check(self, value: Any) -> bool:
        return same_value(value, self.value)

    def allowed(self) -> str:
        return f"exactly {self.value!r}"

    def default(self) -> Choice:
        return self.value

    def spec(self) -> dict[str, Any]:
        return {"value": self.value}


Dimension: TypeAlias = Union[Int, Float, Categorical, Fixed]  # noqa: UP007
_KINDS: dict[str, type[Dimension]] = {d.kind: d for d in (Int, Float, Categorical, Fixed)}


def _parents_first(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``pairs`` with each dimension after those its condition names, the declared order
    kept otherwise (stable); what a cycle leaves is appended as declared, for ``Space`` to
    refuse."""
    declared = {name for name, _ in pairs}
    placed: set[str] = set()
    ordered: list[tuple[str, Any]] = []
    pending = list(pairs)
    while pending:
        ready = next((i for i, (_, dim) in enumerate(pending)
                      if all(p in placed or p not in declared
                             for p, _ in getattr(dim, "when", ()))),
                     None)  # fmt: skip
        if ready is None:  # a cycle: nothing left can go first
            return ordered + pending
        name, dim = pending.pop(ready)
        placed.add(name)
        ordered.append((name, dim))
    return ordered


class Space:
    """Named dimensions in declaration order: the single source of truth of a search space.

    Args:
        dims: ``{name: dimension}`` or ``(name, dimension)`` pairs. A condition (``when``)
            refers to other dimensions and to values they can take. The order is the declared
            one, except that a dimension declared before a dimension its condition names is
            moved just after it: a space means the same in any order (a YAML dump's sorted
            keys too).

    Raises:
        ConfigError: a duplicate name, a condition on an unknown dimension or in a cycle, or
            a condition value the parent cannot take; the message names the dimension.

    Example:
        >>> space = Space({
        ...     "family": Categorical(["mlp", "convnet"]),
        ...     "width": Int(8, 64, log=True, when={"family": ["convnet"]}),
        ...     "lr": Float(1e-4, 1e-1, log=True),
        ... })
        >>> space.n_var
        3
    """

    def __init__(self, dims: Mapping[str, Dimension] | Iterable[tuple[str, Dimension]]) -> None:
        pairs = list(dims.items()) if isinstance(dims, Mapping) else list(dims)
        self._dims: dict[str, Dimension] = {}
        declared = {name for name, _ in pairs}
        for name, dim in _parents_first(pairs):
            self._add(name, dim, declared)
        self._free = [n for n, d in self._dims.items() if not isinstance(d, Fixed)]

    def _add(self, name: str, dim: Dimension, declared: set[str]) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"dimension names must be non-empty strings, got {name!r}")
        if name in self._dims:
            raise ConfigError(f"dimension {name!r} is declared twice")
        if not isinstance(dim, Int | Float | Categorical | Fixed):
            raise ConfigError(f"dimension {name!r} must be Int, Float, Categorical or Fixed")
        for parent, values in dim.when:
            if parent not in self._dims and parent in declared:
                raise ConfigError(
                    f"dimension {name!r}: condition on {parent!r}, which cannot come first: "
                    "the conditions form a cycle"
                )
            if parent not in self._dims:
                raise ConfigError(
                    f"dimension {name!r}: condition on {parent!r}, which is not a dimension "
                    f"(dimensions: {sorted(declared)})"
                )
            bad = [v for v in values if not self._dims[parent].check(v)]
            if bad or not values:
                raise ConfigError(
                    f"dimension {name!r}: condition value {bad[0] if bad else values!r} for "
                    f"{parent!r} is not {self._dims[parent].allowed()}"
                )
        self._dims[name] = dim

    # -- introspection -------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Dimension names in declaration order."""
        return list(self._dims)

    def __getitem__(self, name: str) -> Dimension:
        return self._dims[name]

    def __contains__(self, name: object) -> bool:
        return name in self._dims

    def __len__(self) -> int:
        return len(self._dims)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Space) and list(self._dims.items()) == list(other._dims.items())

    def __hash__(self) -> int:
        return hash(tuple(self._dims.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {d!r}" for n, d in self._dims.items())
        return f"Space({{{inner}}})"

    def is_active(self, name: str, config: Mapping[str, Any]) -> bool:
        """True when every condition of ``name`` holds in ``config`` (parents active too)."""
        return all(
            parent in config
            and self.is_active(parent, config)
            and any(same_value(config[parent], v) for v in values)
            for parent, values in self._dims[name].when
        )

    # -- Optuna ----------------------------------------------------------------------------

    def suggest(self, trial: _Trial) -> dict[str, Any]:
        """Samples a config define-by-run: only the active dimensions are suggested.

        Args:
            trial: An Optuna ``Trial`` (from ``study.ask()`` or an objective) or ``FixedTrial``.

        Returns:
            The config, in declaration order, with ``Fixed`` values included.
        """
        config: dict[str, Any] = {}
        for name, dim in self._dims.items():
            if not self.is_active(name, config):
                continue
            if isinstance(dim, Int):
                config[name] = trial.suggest_int(
                    name, dim.low, dim.top, step=dim.step, log=dim.log
                )
            elif isinstance(dim, Float):
                config[name] = trial.suggest_float(name, dim.low, dim.high, log=dim.log)
            elif isinstance(dim, Categorical):
                config[name] = trial.suggest_categorical(name, list(dim.choices))
            else:
                config[name] = dim.value
        return config

    # -- pymoo vector ----------------------------------------------------------------------

    @property
    def n_var(self) -> int:
        """Length of the real vector: one variable per non-fixed dimension."""
        return len(self._free)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(xl, xu)``: the box in which :meth:`decode` reaches every valid value."""
        pairs = [_bounds(self._dims[n]) for n in self._free]
        xl = np.array([p[0] for p in pairs], dtype=float)
        xu = np.array([p[1] for p in pairs], dtype=float)
        return xl, xu

    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        """The vector of a valid config; inactive dimensions get their first valid value.

        Raises:
            ConfigError: the config is not valid (see :meth:`validate`).
        """
        config = self.validate(config)
        return np.array(
            [_encode(self._dims[n], config.get(n, self._dims[n].default())) for n in self._free],
            dtype=float,
        )

    def decode(self, x: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """The config of any finite vector: ints and indices rounded, all values clipped.

        Inactive dimensions are left out, ``Fixed`` ones put in, so the result always
        passes :meth:`validate`.
        """
        vec = np.asarray(x, dtype=float)
        if vec.shape != (self.n_var,) or not np.all(np.isfinite(vec)):
            raise ConfigError(
                f"x must be a finite vector of length n_var={self.n_var}, got shape "
                f"{vec.shape} with values {vec!r}"
            )
        values = dict(zip(self._free, vec.tolist(), strict=True))
        config: dict[str, Any] = {}
        for name, dim in self._dims.items():
            if self.is_active(name, config):
                config[name] = dim.value if isinstance(dim, Fixed) else _decode(dim, values[name])
        return config

    # -- random and validation -------------------------------------------------------------

    def sample(self, rng: np.random.Generator | int | None = None) -> dict[str, Any]:
        """A random valid config: ``decode`` of a uniform point of :meth:`bounds`.

        Ints and choices are uniform over their values; log dimensions uniform in the log.

        Args:
            rng: A numpy Generator, or a seed for one.
        """
        xl, xu = self.bounds()
        return self.decode(np.random.default_rng(rng).uniform(xl, xu))

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Checks a config against the space and returns it in declaration order.

        Raises:
            ConfigError: an unknown key, a missing active key, a key given although its
                condition does not hold, or a value out of range; the message names the key,
                the value and what is allowed.
        """
        if not isinstance(config, Mapping):
            raise ConfigError(f"config must be a mapping, got {config!r}")
        unknown = [k for k in config if k not in self._dims]
        if unknown:
            raise ConfigError(
                f"unknown key {unknown[0]!r} (value {config[unknown[0]]!r}); allowed: {self.names}"
            )
        out: dict[str, Any] = {}
        for name, dim in self._dims.items():
            active = self.is_active(name, out)
            if active and name not in config:
                raise ConfigError(f"missing key {name!r}: {dim.allowed()}")
            if not active and name in config:
                raise ConfigError(
                    f"key {name!r} (value {config[name]!r}) is inactive: it applies only when "
                    f"{describe_when(dim)}"
                )
            if active:
                if not dim.check(config[name]):
                    raise ConfigError(
                        f"key {name!r}: value {config[name]!r} is not {dim.allowed()}"
                    )
                out[name] = config[name]
        return out

    # -- plain data ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain data (YAML/JSON-ready): ``{name: {"type": ..., fields..., "when": {...}}}``."""
        out: dict[str, dict[str, Any]] = {}
        for name, dim in self._dims.items():
            entry = {"type": dim.kind, **dim.spec()}
            if dim.when:
                entry["when"] = {parent: list(values) for parent, values in dim.when}
            out[name] = entry
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]]) -> Space:
        """Builds a space from plain data, as written in a YAML preset.

        Each entry is a mapping with an optional ``type`` ("int", "float", "categorical",
        "fixed"; inferred when absent: ``choices`` → categorical, ``value`` → fixed, int
        bounds → int, otherwise float), its fields, and an optional ``when``.

        Raises:
            ConfigError: naming the dimension and the offending key.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"a space must be a mapping of dimensions, got {data!r}")
        pairs = []
        for name, entry in data.items():
            try:
                pairs.append((name, _dim_from_dict(entry)))
            except ConfigError as err:
                raise ConfigError(f"dimension {name!r}: {err}") from None
        return cls(pairs)


def describe_when(dim: Dimension) -> str:
    """A dimension's conditions as text: `parent in [...]` joined by "and"."""
    return " and ".join(f"{parent} in {list(values)!r}" for parent, values in dim.when)


def _dim_from_dict(entry: Any) -> Dimension:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"must be a mapping of fields, got {entry!r}")
    fields = dict(entry)
    kind = fields.pop("type", None) or _infer_kind(fields)
    if kind not in _KINDS:
        raise ConfigError(f"key 'type': {kind!r} is not one of {list(_KINDS)}")
    cls = _KINDS[kind]
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = [k for k in fields if k not in allowed]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} for type {kind!r}; allowed: {allowed}")
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    missing = [k for k in required if k not in fields]
    if missing:
        raise ConfigError(f"missing key {missing[0]!r} for type {kind!r}")
    return cls(**fields)  # its checks raise ConfigError naming the key first


def _infer_kind(fields: Mapping[str, Any]) -> str:
    if "choices" in fields:
        return "categorical"
    if "value" in fields:
        return "fixed"
    bounds = [fields.get("low"), fields.get("high")]
    ints = all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
    return "int" if ints else "float"


def _bounds(dim: Dimension) -> tuple[float, float]:
    if isinstance(dim, Int):
        if dim.log:
            return math.log(dim.low - 0.5), math.log(dim.top + 0.5)
        return dim.low - 0.5 * dim.step, dim.top + 0.5 * dim.step
    if isinstance(dim, Float):
        return (math.log(dim.low), math.log(dim.high)) if dim.log else (dim.low, dim.high)
    assert isinstance(dim, Categorical)
    return -0.5, len(dim.choices) - 0.5


def _encode(dim: Dimension, value: Any) -> float:
    if isinstance(dim, Categorical):
        return float(dim.index(value))
    assert isinstance(dim, Int | Float)  # a free dimension: a Fixed one is never encoded
    return math.log(value) if dim.log else float(value)


def _decode(dim: Dimension, x: float) -> Any:
    if isinstance(dim, Categorical):
        return dim.choices[min(max(round(x), 0), len(dim.choices) - 1)]
    if isinstance(dim, Int):
        v = math.exp(min(x, 700.0)) if dim.log else x
        k = round((v - dim.low) / dim.step)
        return dim.low + min(max(k, 0), (dim.top - dim.low) // dim.step) * dim.step
    assert isinstance(dim, Float)
    v = math.exp(min(x, 700.0)) if dim.log else x
    return min(max(v, dim.low), dim.high)
