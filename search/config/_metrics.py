"""What a search can optimise or constrain: metric names, their directions, objectives and
constraints. A metric's direction is declared once: here for the trial's own metrics, in the
indicator registry (``objectives``) for every cost indicator; everything else asks
:func:`metric_direction`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sized
from typing import Any, NamedTuple

import yaml

from objectives import INDICATORS
from search.config import _checks as checks
from spaces import ConfigError, is_real

#: Metrics of :func:`search.trial.run_trial` besides the indicators, with their direction.
TRIAL_METRICS = {
    "accuracy": "maximize",
    "val_loss": "minimize",
    "train_time_s": "minimize",
    "train_energy_j": "minimize",
}
#: Test-split metrics: a trial records them only with ``report_test: true`` (a benchmark's
#: per-trial figures); never optimised on, constrained, chosen on or shown in the report.
REPORTED_ONLY = {"test_accuracy": "maximize", "test_loss": "minimize"}
_DIRECTIONS = {
    "maximize": "maximize",
    "maximise": "maximize",
    "max": "maximize",
    "minimize": "minimize",
    "minimise": "minimize",
    "min": "minimize",
}
_OBJECTIVE_KEYS = {"name", "direction"}


def metric_names() -> list[str]:
    """Names usable as objectives or in constraints: trial metrics, then every indicator."""
    return [*TRIAL_METRICS, *INDICATORS.names()]


def metric_direction(name: str, *, path: str = "metric", reported: bool = False) -> str:
    """The natural direction of a metric: the indicator registry's, or the trial metric's.

    Args:
        name: The metric.
        path: Where it was given, for the error message.
        reported: Also answer for the test-set metrics, which a trial records only with
            ``report_test`` and which are never optimised on or constrained.

    Raises:
        ConfigError: an unknown metric, or a test-set metric where ``reported`` is False.
    """
    if not isinstance(name, str):
        raise checks.unknown(path, name, metric_names(), "search indicators")
    if name in REPORTED_ONLY:
        if reported:
            return REPORTED_ONLY[name]
        raise ConfigError(
            f"{path}: {name!r} is measured on the test set, which a search is never optimised "
            f"on or constrained by (search export reads it once); use 'accuracy' (validation) "
            "instead"
        )
    if name in TRIAL_METRICS:
        return TRIAL_METRICS[name]
    if name in INDICATORS:
        return INDICATORS.get(name).direction
    raise checks.unknown(path, name, metric_names(), "search indicators")


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
            raise checks.bad(
                path,
                entry,
                "a metric name, [name, direction], {name: direction} or "
                "{name: ..., direction: ...}",
            )
        natural = metric_direction(name, path=path)
        if direction is None:
            return cls(name, natural)
        if not isinstance(direction, str) or direction.lower() not in _DIRECTIONS:
            raise checks.bad(f"{path}.direction", direction, "'maximize' or 'minimize'")
        return cls(name, _DIRECTIONS[direction.lower()])


#: The most objectives a search may have (hypervolume and non-dominated sorting grow fast with
#: their number; many-objective searches stop at about 10).
MAX_OBJECTIVES = 10
#: The most constraints a search may have (each is checked on every trial and every rung).
MAX_CONSTRAINTS = 100


def _bounded(entries: Any, path: str, most: int) -> None:
    """A list no longer than ``most`` (200,000 constraints spun the check and ignored SIGTERM)."""
    if isinstance(entries, Sized) and len(entries) > most:
        raise checks.bad(path, f"a list of {len(entries)}", f"at most {most} entries")


def parse_objectives(entries: Any, *, path: str = "objectives") -> tuple[Objective, ...]:
    """A non-empty list of distinct objectives (see :meth:`Objective.parse`)."""
    if isinstance(entries, str | Mapping) or not isinstance(entries, Iterable):
        raise checks.bad(path, entries, "a non-empty list of objectives")
    _bounded(entries, path, MAX_OBJECTIVES)
    out = tuple(Objective.parse(e, path=f"{path}[{i}]") for i, e in enumerate(entries))
    if not out:
        raise checks.bad(path, entries, "a non-empty list of objectives")
    names = [o.name for o in out]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise checks.bad(f"{path}[{i}]", name, "each metric once")
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
            raise checks.bad(path, text, "'<metric> <=|<|>=|> <number>', e.g. 'params <= 5000'")
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
        value: Any = metrics.get(self.indicator)  # any type: checked here
        if not is_real(value) or not math.isfinite(value):
            return math.inf
        bound = self.value
        diff = value - bound if self.op in ("<=", "<") else bound - value
        if diff == 0 and self.op in ("<", ">"):  # a strict bound is violated on the bound
            return math.ulp(bound)
        return float(diff)

    def __repr__(self) -> str:
        return f"Constraint({str(self)!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickling (Ray) rebuilds from the checked text without checking it again: a worker
        # unpickles a trial config before it imports the user's modules, whose indicators
        # a constraint may name.
        return (_checked, (str(self),))


def _checked(text: str) -> Constraint:
    """A constraint from its canonical text, already checked when it was first parsed."""
    return str.__new__(Constraint, text)


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
        raise checks.bad(path, entries, "a list of constraints such as ['params <= 5000']")
    _bounded(entries, path, MAX_CONSTRAINTS)
    return tuple(Constraint.parse(e, path=f"{path}[{i}]") for i, e in enumerate(entries))
