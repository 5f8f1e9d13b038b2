"""search.record._writer: trials written in one transaction read back through Optuna as they were.

The writer bypasses ``RDBStorage``'s statement-per-attribute API and writes Optuna's tables
itself, so these tests read every trial back through a fresh ``RDBStorage`` and compare it,
field by field, with the in-memory trial it was written from: numbers, states, parameters and
distributions, values (infinities included), user and system attributes, and both datetimes
(in a time zone that is not UTC, where a wrong conversion would show).
"""

from __future__ import annotations

import math
import sqlite3

import optuna
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState

from search.errors import StorageWriteError
from search.record._records import conditions_of, metrics_of
from tests._support.writer import fields, open_writer, stored_trials, write_trials

optuna.logging.set_verbosity(optuna.logging.WARNING)
pytestmark = pytest.mark.usefixtures("not_utc")  # a local time zone that is not UTC


def test_written_trials_read_back_as_they_were_and_resume(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    memory, writer = open_writer(url, optuna.samplers.NSGAIISampler(population_size=4, seed=0))
    write_trials(memory, writer, 9)
    stored = stored_trials(url)
    assert [fields(t) for t in stored] == [fields(t) for t in memory.trials]
    assert {t.state for t in stored} == {TrialState.COMPLETE, TrialState.FAIL}
    assert stored[1].values == [-math.inf, math.inf]  # infeasible: worst possible values
    assert stored[0].constraints == {"params <= 50": -1.0, "feasible": 0.0}
    loaded = optuna.load_study(study_name="s", storage=url)
    assert loaded.user_attrs == memory.user_attrs  # with the conditions the trials added
    shared = loaded.user_attrs["cond_measure_s"]  # the first trial to end set it
    for trial in (t for t in stored if t.state == TrialState.COMPLETE):
        own = 0.1 * trial.number
        assert metrics_of(trial, conditions_of(loaded))["cond_measure_s"] == own
        assert ("metric_cond_measure_s" in trial.user_attrs) == (own != shared)

    # A relaunch: the in-memory copy is rebuilt from the storage and the numbers go on.
    memory, writer = open_writer(url, optuna.samplers.NSGAIISampler(population_size=4, seed=1))
    assert [fields(t) for t in memory.trials] == [fields(t) for t in stored]
    write_trials(memory, writer, 5)
    assert [fields(t) for t in stored_trials(url)] == [fields(t) for t in memory.trials]
    assert len(memory.trials) == 14


def test_a_running_trial_is_in_the_storage_as_running(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    memory, writer = open_writer(url, optuna.samplers.RandomSampler(seed=0))
    trial = memory.ask()
    trial.suggest_int("width", 4, 64, log=True)
    trial.set_user_attr("trial_config", {"width": 1})
    writer.started(memory._storage.get_trial(trial._trial_id))
    [stored] = stored_trials(url)
    assert stored.state == TrialState.RUNNING and stored.datetime_complete is None
    assert stored.user_attrs == {"trial_config": {"width": 1}}
    assert stored.params == trial.params


def test_a_second_writer_of_the_same_search_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    memory, writer = open_writer(url, optuna.samplers.RandomSampler(seed=0))
    other, other_writer = open_writer(url, optuna.samplers.RandomSampler(seed=1))
    write_trials(memory, writer, 1)
    trial = other.ask()
    with pytest.raises(StorageWriteError, match="another process is writing it"):
        other_writer.started(other._storage.get_trial(trial._trial_id))


def test_a_broken_storage_is_a_clear_error_and_keeps_what_was_written(tmp_path):
    path = tmp_path / "s.db"
    memory, writer = open_writer(f"sqlite:///{path}", optuna.samplers.RandomSampler(seed=0))
    write_trials(memory, writer, 2)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE trial_values")
    trial = memory.ask()
    trial.suggest_int("width", 4, 64, log=True)
    writer.started(memory._storage.get_trial(trial._trial_id))
    memory.tell(trial, [0.5, 1.0])
    with pytest.raises(StorageWriteError, match="relaunch the search once the storage works"):
        writer.finished(memory._storage.get_trial(trial._trial_id))
    with sqlite3.connect(path) as db:  # the failed transaction left nothing half-written
        states = [s for (s,) in db.execute("SELECT state FROM trials ORDER BY number")]
    assert states == ["COMPLETE", "COMPLETE", "RUNNING"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip
objective_values = st.floats(allow_nan=False) | st.sampled_from([math.inf, -math.inf])


@pytest.mark.slow  # many hypothesis examples, each a SQLite storage
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    user=st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=4),
    values=st.lists(objective_values, min_size=2, max_size=2),
    x=st.floats(-5, 5),
    k=st.integers(0, 11).map(lambda i: -3 + 3 * i),
    c=st.sampled_from(["a", 1, 2.5, None, True]),
)
def test_any_trial_reads_back_as_it_was_written(tmp_path_factory, user, values, x, k, c):
    url = f"sqlite:///{tmp_path_factory.mktemp('p') / 's.db'}"
    memory, writer = open_writer(url, optuna.samplers.RandomSampler(seed=0))
    memory.enqueue_trial({"x": x, "k": k, "c": c})
    trial = memory.ask()
    trial.suggest_float("x", -5, 5)
    trial.suggest_int("k", -3, 30, step=3)
    trial.suggest_categorical("c", ["a", 1, 2.5, None, True])
    trial.set_user_attr("trial_config", user)
    writer.started(memory._storage.get_trial(trial._trial_id))
    for key, value in user.items():
        trial.set_user_attr(key, value)
    memory.tell(trial, values)
    writer.finished(memory._storage.get_trial(trial._trial_id))
    [stored] = stored_trials(url)
    assert stored.params == {"x": x, "k": k, "c": c}
    assert fields(stored) == fields(memory.trials[0])
