"""A curve table: every configuration of a finished search with its learning curve, what a
simulated search replays instead of training.

A table is read from an npas study (:meth:`CurveTable.from_study`): each trial that trained its
full schedule gives one :class:`CurveRow` (its point, its objective vector after every epoch as
a multi-fidelity scheduler's rungs see it, the seconds of each epoch, validation included, and
the rest of the trial's time: starting its worker, building and measuring the model). Saved as
gzipped JSON, a few MB for hundreds of curves, so a table can be committed and replayed on any
machine without the storage.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from search.record import (
    Metric,
    epoch_values,
    final_violation,
    metrics_of,
    read_trial,
    stored_config,
    stored_objectives,
)
from spaces import ConfigError

__all__ = ["FORMAT", "CurveRow", "CurveTable"]

#: The table format's version, saved with every table.
FORMAT = 1


@dataclass
class CurveRow:
    """One configuration trained to the full schedule.

    Attributes:
        number: The trial's number in the recorded study.
        point: Its search point (the study trial's parameters).
        values: Its objective vector after each epoch ``1..R`` (the search's objectives in their
            own units: the curve's value where the curve has one, else the trial's metric).
        at_chance: The epochs after which it was no better than chance.
        violation: Its total constraint violation (0: feasible).
        seconds: Each epoch's wall-clock seconds, its validation pass included.
        overhead_s: The rest of the trial's wall-clock: start, build, measurement, writes.
        metrics: Its recorded final metrics that a search reads (objectives, constraints).
    """

    number: int
    point: dict[str, Any]
    values: list[list[float]]
    at_chance: list[int]
    violation: float
    seconds: list[float]
    overhead_s: float
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def epochs(self) -> int:
        """How many epochs the curve holds (the schedule's length)."""
        return len(self.values)

    @property
    def feasible(self) -> bool:
        return self.violation <= 0.0


@dataclass
class CurveTable:
    """The curves of one recorded search, and what is needed to replay it.

    Attributes:
        name: The recorded study's name.
        objectives: ``(name, direction)`` per objective, as the search had them.
        config: The search's stored config (``study.user_attrs["config"]``): its space, its
            constraints and the options a replay starts from.
        rows: One row per configuration trained to the full schedule.
        noise: Rows of the same configurations trained again under another seed (may be empty).
        overheads: Measured seconds of a trial's start on a running worker (``start_s``; when
            absent, the median of the rows' ``overhead_s``), of the final measurement of a
            trial that trained every epoch (``end_s``: 0 when absent, its cost then counted in
            ``start_s``), of a pause (``pause_s``) and of a resume (``resume_s``).
        conditions: How the table was recorded (machine, versions, data).
    """

    name: str
    objectives: list[tuple[str, str]]
    config: dict[str, Any]
    rows: list[CurveRow]
    noise: list[CurveRow] = field(default_factory=list)
    overheads: dict[str, float] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_study(cls, study: optuna.Study, *, noise: optuna.Study | None = None) -> CurveTable:
        """The table of a finished npas study: its trials that trained the full schedule.

        Raises:
            ConfigError: the study is not an npas search, or none of its trials trained the
                full schedule (nothing to replay).
        """
        config, objectives = stored_config(study), stored_objectives(study)
        if not config or not objectives:
            raise ConfigError(
                f"study {study.study_name!r} is not an npas search (no stored config and "
                "objectives): a curve table is read from a study that `search launch` recorded"
            )
        epochs = int(config.get("train", {}).get("epochs") or _longest(study))
        rows = _rows(study, objectives, epochs)
        if not rows:
            raise ConfigError(
                f"study {study.study_name!r} has no trial that trained all {epochs} epochs of "
                "its schedule with a recorded curve: nothing to replay"
            )
        noisy = [] if noise is None else _rows(noise, objectives, epochs)
        return cls(study.study_name, objectives, config, rows, noisy)

    @property
    def epochs(self) -> int:
        """The schedule's length R (every row holds R epochs)."""
        return self.rows[0].epochs

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.objectives]

    @property
    def directions(self) -> list[str]:
        return [direction for _, direction in self.objectives]

    def start_s(self) -> float:
        """What starting a trial costs: measured (``overheads["start_s"]``), else the median
        of the recorded trials' overheads. A row's own overhead is not charged: the first
        trials of a recording also paid for starting their workers, which a replay's trial on
        a running worker (Ray Tune reuses them) does not."""
        if "start_s" in self.overheads:
            return float(self.overheads["start_s"])
        return float(np.median([row.overhead_s for row in self.rows]))

    def trial_s(self, row: CurveRow) -> float:
        """The seconds a full trial of ``row`` takes in a replay: start, epochs, measurement."""
        return self.start_s() + sum(row.seconds) + float(self.overheads.get("end_s", 0.0))

    def final_values(self) -> np.ndarray:
        """``(n, m)`` objective values of every row after its last epoch."""
        return np.array([row.values[-1] for row in self.rows], dtype=float)

    def feasible(self) -> np.ndarray:
        return np.array([row.feasible for row in self.rows], dtype=bool)

    def bounds(self) -> dict[str, tuple[float, float]]:
        """``(lo, hi)`` per objective over the feasible rows' final values: the common scale
        of every hypervolume the lab compares on this table.

        Raises:
            ConfigError: no row is feasible (a hypervolume counts feasible trials only).
        """
        final = self.final_values()[self.feasible()]
        if not len(final):
            raise ConfigError(
                f"search {self.name!r}: none of its {len(self.rows)} trial(s) that trained the "
                "full schedule met its constraints, so there is no feasible front to measure "
                "hypervolumes on: nothing to compare"
            )
        out = {}
        for j, name in enumerate(self.names):
            lo, hi = float(np.min(final[:, j])), float(np.max(final[:, j]))
            out[name] = (lo, hi if hi > lo else lo + 1.0)
        return out

    def describe(self) -> str:
        """One line: how many curves of how many epochs, feasible, and their seconds."""
        seconds = sum(sum(r.seconds) + r.overhead_s for r in [*self.rows, *self.noise])
        return (
            f"{len(self.rows)} curves of {self.epochs} epochs ({int(self.feasible().sum())} "
            f"feasible), {len(self.noise)} noise twins, {seconds / 3600:.2f} h of trials"
        )

    def save(self, path: str | Path) -> Path:
        """Writes the table as gzipped JSON (``.json.gz``); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self) | {"format": FORMAT}
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"), allow_nan=True)
        tmp.replace(path)  # never a half-written table under the name
        return path

    @classmethod
    def load(cls, path: str | Path) -> CurveTable:
        """Reads a table :meth:`save` wrote.

        Raises:
            ConfigError: not such a table, or one of a format this version cannot read.
        """
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, EOFError, json.JSONDecodeError) as err:
            raise ConfigError(f"{path}: not a curve table ({err})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"{path}: curve table format {found!r}; this npas reads {FORMAT}")
        return cls(
            name=data["name"],
            objectives=[tuple(pair) for pair in data["objectives"]],
            config=data["config"],
            rows=[CurveRow(**row) for row in data["rows"]],
            noise=[CurveRow(**row) for row in data["noise"]],
            overheads=data["overheads"],
            conditions=data["conditions"],
        )


def _longest(study: optuna.Study) -> int:
    return max((len(read_trial(t).curve) for t in study.get_trials(deepcopy=False)), default=0)


def _rows(study: optuna.Study, objectives: Sequence[tuple[str, str]], epochs: int) -> list:
    names = [name for name, _ in objectives]
    rows = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        points = epoch_values(trial, names)
        if sorted(points) != list(range(1, epochs + 1)):
            continue  # not the full schedule, or a curve with gaps
        record = read_trial(trial)
        curve = {int(p["epoch"]): float(p.get("train_time_s", math.nan)) for p in record.curve}
        cumulative = [curve[e] for e in range(1, epochs + 1)]
        if not all(math.isfinite(s) for s in cumulative):
            continue
        seconds = np.diff([0.0, *cumulative]).clip(min=0.0).tolist()
        start, end = trial.datetime_start, trial.datetime_complete
        assert start is not None and end is not None  # a complete trial has both
        duration = (end - start).total_seconds()
        metrics = metrics_of(trial)
        kept = {k: v for k, v in metrics.items() if k in names or k.startswith("constraint_")}
        kept[Metric.FEASIBLE] = record.feasible
        rows.append(
            CurveRow(
                number=trial.number,
                point=dict(trial.params),
                values=[list(points[e].values) for e in range(1, epochs + 1)],
                at_chance=[e for e in range(1, epochs + 1) if points[e].at_chance],
                violation=final_violation(trial),
                seconds=seconds,
                overhead_s=max(0.0, duration - cumulative[-1]),
                metrics=kept,
            )
        )
    return rows
