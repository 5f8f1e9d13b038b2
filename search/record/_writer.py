"""The search's study in memory, each trial written to its storage in one transaction.

Optuna's samplers read the whole history several times per trial, and an RDB storage answers
each read with a query; through ``RDBStorage``'s API each parameter and attribute of a trial is
its own session. Done in Ray Tune's driver loop, that doubled the time of a short trial
(``benchmarks/engine_overhead.py`` measures it).

So the optimiser works on an in-memory copy of the study (:func:`in_memory_copy`, what plain
Ray Tune uses), and a :class:`StudyWriter` writes each trial to the storage in one transaction
when it starts (its parameters, trial config and the sampler's attributes, state RUNNING) and
in one when it ends (state, values, and the trial's and the study's user attributes that
changed: a trial's metrics may add measurement conditions to the study), through Optuna's own
SQLAlchemy models (so the rows are exactly those ``RDBStorage`` writes; tests compare the two).
The writes are synchronous: what the search has seen is in the storage. A trial still RUNNING
there when a search is relaunched was cut short, and is marked interrupted and run again.

The start of a trial is not written with ``RDBStorage.create_new_trial(study_id,
template_trial=...)``, Optuna's public route for a whole trial in one transaction: that
transaction is its own, so the checks made here in the one that inserts the trial (the study's
id still names this search, and the storage holds exactly the trials before this one) would
run in an earlier transaction, and a database replaced or written by another launch in between
would get the trial, numbered by the storage, in a study not this search's or out of order. It
is also slower: it reads each parameter and attribute back before writing it (on SQLite,
54-56 ms per trial against 20 ms here, for 6 parameters and 10 attributes).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import optuna
import sqlalchemy
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial

from search._compat import optuna_schema
from search._urls import masked_url
from search.errors import StorageLost, StorageWriteError
from search.record._lease import first_line
from search.record._schema import TrialAttr
from search.record._study import set_metric_names

__all__ = ["StorageWriteError", "StudyWriter", "in_memory_copy"]


def in_memory_copy(study: optuna.Study, sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """The study, its trials and attributes, in a fresh in-memory storage, with ``sampler``.

    The trials' learning curves are left out (see :func:`_without_curve`). The study's
    system attributes are not copied: Optuna's genetic samplers cache parent
    populations there by trial id, and ids differ between storages (the cache is rebuilt).
    """
    copied = optuna.create_study(
        storage=optuna.storages.InMemoryStorage(),
        sampler=sampler,
        study_name=study.study_name,
        directions=study.directions,
    )
    if study.metric_names is not None:
        set_metric_names(copied, study.metric_names)
    for key, value in study.user_attrs.items():
        copied.set_user_attr(key, value)
    copied.add_trials([_without_curve(t) for t in study.get_trials(deepcopy=False)])
    return copied


def _without_curve(trial: FrozenTrial) -> FrozenTrial:
    """The trial without its intermediate values: Optuna's TPE reads those of a PRUNED trial
    with ``study.direction``, which a multi-objective study refuses (the storage keeps them)."""
    if not trial.intermediate_values:
        return trial
    bare = copy.copy(trial)
    bare.intermediate_values = {}
    return bare


#: Optuna's schema: the rows RDBStorage writes (private: ``search._compat`` holds it).
_SCHEMA = optuna_schema()
_STUDIES = _SCHEMA.studies
_TRIALS = _SCHEMA.trials
_PARAMS = _SCHEMA.params
_VALUES = _SCHEMA.values
_USER = _SCHEMA.user_attrs
_STUDY_USER = _SCHEMA.study_user_attrs
_SYSTEM = _SCHEMA.system_attrs
_INTERMEDIATE = _SCHEMA.intermediate_values


class StudyWriter:
    """Writes the trials of an in-memory study to the search's RDB storage.

    Call :meth:`started` when a trial has its parameters and trial config, :meth:`finished`
    after it was told. After a write fails, :attr:`error` holds the error and every later
    write raises it again (writing on would record trials out of order). Each write checks in
    its transaction that the study's id still names the search (``StorageLost`` if not: the
    database was replaced or restored under the launch).

    Args:
        storage: Where the search is recorded (opened with ``open_storage``, which checked the
            schema is this Optuna's).
        study_name: The study there; it holds exactly the trials the in-memory copy started
            with, so a trial's number is the same in both.
        fences: Called in order before each write; each raises ``StorageWriteError`` once
            this launch may not write (its storage file is not the one it opened:
            ``StorageIdentity.check``; it lost the search's lease: ``Lease.check``).
        holds: Called with each write's connection, first in its transaction; each raises
            ``StorageWriteError`` (rolling the write back) once this launch may not write,
            and holds what it checked until the write commits (``Lease.hold``).
    """

    def __init__(
        self,
        storage: optuna.storages.RDBStorage,
        study_name: str,
        fences: Sequence[Callable[[], None]] = (),
        holds: Sequence[Callable[[sqlalchemy.Connection], None]] = (),
    ) -> None:
        self.storage = storage
        self.fences = list(fences)  # each raises StorageWriteError once this may not write
        self.holds = list(holds)
        self.study_name = study_name
        self.study_id = storage.get_study_id_from_name(study_name)
        self._ids: dict[int, int] = {}  # trial number → id in the storage
        # trial number → (user, system) attributes as written at its start (copies: Optuna may
        # change the attribute dicts of a frozen trial in place)
        self._written: dict[int, tuple[dict, dict]] = {}
        self._study_attrs = storage.get_study_user_attrs(self.study_id)
        self.error: StorageWriteError | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Without the storage, the fences and the holds: Ray Tune pickles the searcher into
        ``tuner.pkl`` in the run folder, and the storage's URL holds its password (a relaunch
        reads the storage itself, never that file)."""
        return {**self.__dict__, "storage": None, "fences": [], "holds": []}

    @property
    def numbers(self) -> list[int]:
        """The trials this writer started or adopted, by number."""
        return sorted(self._ids)

    def confirm(self) -> None:
        """Checks, writing nothing, that the storage may still be written (the fences and the
        study's id), as before a write: what fails is kept in :attr:`error` and raised."""
        with self._transaction():
            pass

    def started(self, trial: FrozenTrial) -> None:
        """Writes a new trial (its parameters and attributes so far)."""
        with self._transaction() as db:
            stored = db.execute(
                sqlalchemy.select(sqlalchemy.func.count())
                .select_from(_TRIALS)
                .where(_TRIALS.c.study_id == self.study_id)
            ).scalar_one()
            if stored != trial.number:
                raise StorageWriteError(
                    f"trial {trial.number} cannot be written: the storage already holds "
                    f"{stored} trials of this search; another process is writing it (run one "
                    "launch of a search at a time)"
                )
            row = {"number": trial.number, "study_id": self.study_id, "state": trial.state}
            key = db.execute(
                _TRIALS.insert().values(
                    **row,
                    datetime_start=_utc(trial.datetime_start),
                    datetime_complete=_utc(trial.datetime_complete),
                )
            ).inserted_primary_key
            if key is None:  # a driver that cannot say which row it inserted
                raise StorageWriteError(f"trial {trial.number}: the storage gave no trial id")
            trial_id = key[0]
            params = [
                {
                    "trial_id": trial_id,
                    "param_name": name,
                    "param_value": trial.distributions[name].to_internal_repr(value),
                    "distribution_json": distribution_to_json(trial.distributions[name]),
                }
                for name, value in trial.params.items()
            ]
            _insert(db, _PARAMS, params)
            _insert(db, _USER, _attr_rows(_USER, trial_id, trial.user_attrs))
            _insert(db, _SYSTEM, _attr_rows(_SYSTEM, trial_id, trial.system_attrs))
        self._ids[trial.number] = trial_id
        self._written[trial.number] = copy.deepcopy((trial.user_attrs, trial.system_attrs))

    def adopt(self, number: int) -> None:
        """Takes over a trial the storage holds RUNNING (a relaunch resumes it): later writes
        go to it as to a trial this writer started."""
        with self._transaction() as db:
            trial_id = db.execute(
                sqlalchemy.select(_TRIALS.c.trial_id).where(
                    _TRIALS.c.study_id == self.study_id, _TRIALS.c.number == number
                )
            ).scalar_one()
            attrs = []
            for table in (_USER, _SYSTEM):
                rows = db.execute(
                    sqlalchemy.select(table.c.key, table.c.value_json).where(
                        table.c.trial_id == trial_id
                    )
                )
                attrs.append({key: json.loads(value) for key, value in rows})
        self._ids[number] = trial_id
        self._written[number] = (attrs[0], attrs[1])

    def intermediate(
        self, number: int, step: int, value: float, curve: list[dict[str, Any]] | None = None
    ) -> None:
        """Writes one learning-curve point (Optuna's intermediate value at ``step``) at once,
        so the dashboard shows a running trial's curve and a killed search keeps it; with
        ``curve``, the trial's whole curve so far too (user attribute ``curve``, one
        transaction), which a relaunch that resumes the trial continues."""
        stored, kind = _SCHEMA.intermediate_repr(value)
        row = {
            "trial_id": self._ids[number],
            "step": step,
            "intermediate_value": stored,
            "intermediate_value_type": kind,
        }
        with self._transaction() as db:
            db.execute(_INTERMEDIATE.insert().values(**row))
            if curve is not None:
                user = self._written[number][0]
                _replace_attrs(db, _USER, row["trial_id"], user, {**user, TrialAttr.CURVE: curve})
        if curve is not None:
            self._written[number][0][TrialAttr.CURVE] = copy.deepcopy(curve)

    def user_attr(self, number: int, key: str, value: Any) -> None:
        """Writes one user attribute of a running trial at once (a scheduler's decisions, so
        a killed search keeps them); :meth:`finished` then leaves it as it is."""
        trial_id = self._ids[number]
        with self._transaction() as db:
            _replace_attrs(db, _USER, trial_id, {key: None}, {key: value})
        self._written[number][0][key] = copy.deepcopy(value)

    def study_attrs(self, values: Mapping[str, Any]) -> None:
        """Writes user attributes of the study in one transaction (the finalists' runs, the
        recommendation, the launch's cost totals), fenced and held as a trial's writes are."""
        with self._transaction() as db:
            _replace_attrs(db, _STUDY_USER, self.study_id, dict.fromkeys(values), dict(values))
        self._study_attrs.update(copy.deepcopy(dict(values)))

    def finished(self, trial: FrozenTrial, study_attrs: dict[str, Any] | None = None) -> None:
        """Writes the end of a trial: state, values and the attributes that changed, its own
        and, given the in-memory study's ``study_attrs``, the study's."""
        trial_id = self._ids[trial.number]
        user, system = self._written.pop(trial.number)
        with self._transaction() as db:
            db.execute(
                _TRIALS.update()
                .where(_TRIALS.c.trial_id == trial_id)
                .values(state=trial.state, datetime_complete=_utc(trial.datetime_complete))
            )
            values = []
            for objective, value in enumerate(trial.values or ()):
                stored, kind = _SCHEMA.value_repr(value)
                values.append(
                    {"trial_id": trial_id, "objective": objective, "value": stored,
                     "value_type": kind}
                )  # fmt: skip
            _insert(db, _VALUES, values)
            _replace_attrs(db, _USER, trial_id, user, trial.user_attrs)
            _replace_attrs(db, _SYSTEM, trial_id, system, trial.system_attrs)
            if study_attrs is not None:
                _replace_attrs(db, _STUDY_USER, self.study_id, self._study_attrs, study_attrs)
        if study_attrs is not None:
            self._study_attrs = copy.deepcopy(study_attrs)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlalchemy.Connection]:
        """One transaction: committed at the end, rolled back on error."""
        if self.error is not None:
            raise self.error
        try:
            for fence in self.fences:
                fence()
            with self.storage.engine.begin() as connection:
                for hold in self.holds:
                    hold(connection)
                self._same_study(connection)
                yield connection
        except sqlalchemy.exc.SQLAlchemyError as err:
            self.error = self._cause(err)
            raise self.error from err
        except StorageWriteError as err:
            self.error = err
            raise

    def _cause(self, err: sqlalchemy.exc.SQLAlchemyError) -> StorageWriteError:
        """Why a write failed: a fence's own reason when one now refuses (the file was made
        immutable, deleted or taken over between the fences and the write, and SQLite only
        says "disk I/O error"), else the database's error."""
        try:
            for fence in self.fences:
                fence()
        except StorageWriteError as reason:
            return reason
        where = self.storage.engine.url.render_as_string(hide_password=True)
        return StorageWriteError(
            f"a trial could not be written to the search's storage {masked_url(where)} "
            f"({first_line(err)}); the trials written so far are kept: relaunch the search "
            "once the storage works to resume it"
        )

    def _same_study(self, db: sqlalchemy.Connection) -> None:
        """Raises ``StorageLost`` unless the study's id still names the search."""
        name = db.execute(
            sqlalchemy.select(_STUDIES.c.study_name).where(_STUDIES.c.study_id == self.study_id)
        ).scalar_one_or_none()
        if name != self.study_name:
            where = masked_url(self.storage.engine.url.render_as_string(hide_password=True))
            now = "no study" if name is None else f"study {name!r}"
            raise StorageLost(
                f"study id {self.study_id} of its storage {where} is {now} now, not this "
                "search (the database was replaced, restored or recreated while it ran)"
            )


def _utc(moment: datetime.datetime | None) -> datetime.datetime | None:
    """A naive local time as the naive UTC time Optuna's trial table stores."""
    if moment is None:
        return None
    return moment.astimezone(datetime.UTC).replace(tzinfo=None)


def _owner(table: sqlalchemy.Table) -> sqlalchemy.Column:
    """The id column of an attribute table: its trial's, or its study's."""
    return table.c.study_id if "study_id" in table.c else table.c.trial_id


def _attr_rows(
    table: sqlalchemy.Table, owner_id: int, attrs: dict[str, Any]
) -> list[dict[str, Any]]:
    owner = _owner(table).name
    return [{owner: owner_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()]


def _insert(db: sqlalchemy.Connection, table: sqlalchemy.Table, rows: list[dict]) -> None:
    if rows:
        db.execute(table.insert(), rows)


def _replace_attrs(
    db: sqlalchemy.Connection, table: sqlalchemy.Table, owner_id: int, before: dict, after: dict
) -> None:
    """Writes the attributes of a trial or study (as ``table`` holds) that are new or changed
    from ``before`` to ``after``."""
    changed = {k: v for k, v in after.items() if k not in before or before[k] != v}
    replaced = [k for k in changed if k in before]
    if replaced:
        db.execute(table.delete().where(_owner(table) == owner_id, table.c.key.in_(replaced)))
    _insert(db, table, _attr_rows(table, owner_id, changed))
