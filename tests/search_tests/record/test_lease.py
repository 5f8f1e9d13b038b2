"""One live launch per search: a second launch is refused at once, naming the first; a dead or
silent launch frees the search; different searches run side by side, and launches that start
together on a new storage all open it. Real processes and real Ray, on SQLite and (where a test
takes ``storage_url``) PostgreSQL."""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import optuna
import pytest
import ray
import sqlalchemy
from optuna.trial import TrialState
from ray import tune

from search.cli import main
from search.errors import SearchLocked, StorageWriteError
from search.record import record_cost, trials_counted
from search.record._lease import Lease, lease_holder, lease_owner
from search.record._process import start_token
from search.record._schema import StudyAttr
from search.record._storage import open_storage
from search.record._writer import StudyWriter
from search.run import launch
from tests._support.searches import fake_trial, make_config, slow_trial
from tests._support.waiting import wait_until
from tests._support.writer import open_writer, stored_trials
from tests.search_tests.studies import stored_study

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]
LAUNCH = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.run import launch
from tests._support.searches import make_config, slow_trial
ray.init(address={address!r}, log_to_driver=False)
launch(make_config(Path({out!r}), optimiser="random", trials={trials}, storage={url!r}),
       trial_fn=slow_trial, progress=False)
"""
#: Takes the lease of search argv[1] once told to go (stdin), says how it went and holds it
#: until stdin closes.
ACQUIRE = """
import sys
sys.path.insert(0, {root!r})
from search.errors import SearchLocked
from search.record._lease import Lease
from search.record._storage import open_storage
print("ready", flush=True)
sys.stdin.readline()
try:
    Lease(open_storage({url!r}).engine, sys.argv[1]).acquire()
    print("took", flush=True)
except SearchLocked as err:
    print(err, flush=True)
sys.stdin.read()
"""


def _start(out: Path, trials: int, url: str) -> subprocess.Popen:
    address = ray.get_runtime_context().gcs_address
    script = LAUNCH.format(root=str(ROOT), address=address, out=str(out), trials=trials, url=url)
    return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)


def _wait_running(url: str, proc: subprocess.Popen) -> None:
    def running_or_ended() -> str | None:
        if proc.poll() is not None:
            return "ended"
        try:
            study = optuna.load_study(study_name="t-random", storage=url)
        except KeyError:  # the study is not created yet
            return None
        return "running" if study.get_trials(states=(TrialState.RUNNING,)) else None

    if wait_until(running_or_ended, 120, interval_s=0.2, raise_on_timeout=False) != "running":
        raise AssertionError("the first launch never ran a trial")


def _no_tuning(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("Ray Tune started a run")


def test_a_second_launch_of_a_running_search_is_refused_at_once(
    tmp_path, storage_url, capsys, monkeypatch
):
    url = storage_url
    first = _start(tmp_path, 6, url)
    try:
        _wait_running(url, first)
        # Refused before Ray Tune runs anything (so before any trial) in this process.
        monkeypatch.setattr(tune.Tuner, "fit", _no_tuning)
        with pytest.raises(SearchLocked, match=rf"pid {first.pid} since .* UTC") as refused:
            launch(make_config(tmp_path, optimiser="random", trials=8, storage=url),
                   trial_fn=fake_trial, progress=False)  # fmt: skip
        monkeypatch.undo()
        assert socket.gethostname() in str(refused.value)
        assert main(["status", "--storage", url]) == 0
        assert f"running now: launched on host {socket.gethostname()} pid {first.pid}" in (
            capsys.readouterr().out
        )
        assert first.wait(timeout=180) == 0
    finally:
        if first.poll() is None:
            first.kill()
    study = optuna.load_study(study_name="t-random", storage=url)
    assert trials_counted(study) == 6 and len(study.trials) == 6, "the intruder added nothing"
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    assert all("error" not in t.user_attrs for t in study.trials), "none marked interrupted"


def test_two_searches_of_different_names_run_side_by_side(tmp_path, storage_url):
    url = storage_url
    first = _start(tmp_path, 4, url)
    try:
        _wait_running(url, first)
        other = make_config(tmp_path, optimiser="random", trials=4, name="other", storage=url)
        study = launch(other, trial_fn=slow_trial, progress=False)
        assert first.wait(timeout=180) == 0
    finally:
        if first.poll() is None:
            first.kill()
    assert trials_counted(study) == 4
    assert trials_counted(optuna.load_study(study_name="t-random", storage=url)) == 4


def _plant(url: str, *, host: str, pid: int, age_s: float) -> sqlalchemy.Engine:
    """A lease row as another launch would have left it."""
    engine = open_storage(url).engine
    if not sqlalchemy.inspect(engine).has_table("npas_leases"):
        mine = Lease(engine, "t-random")
        mine.acquire()  # creates the table
        mine.release()
    beat = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    beat -= datetime.timedelta(seconds=age_s)
    with engine.begin() as db:
        db.execute(sqlalchemy.text("DELETE FROM npas_leases"))
        db.execute(
            sqlalchemy.text(
                "INSERT INTO npas_leases (study_name, owner, host, pid, since, heartbeat) "
                "VALUES ('t-random', 'other', :h, :p, :b, :b)"
            ),
            {"h": host, "p": pid, "b": beat},
        )
    return engine


def test_a_lease_table_of_an_older_npas_gains_the_start_time_and_purpose(storage_url):
    """A storage whose lease table predates the holder's start time and purpose: its rows read
    as launches without a start time, and the next holder adds both columns and fills them."""
    engine = open_storage(storage_url).engine
    with engine.begin() as db:
        db.execute(sqlalchemy.text(
            "CREATE TABLE npas_leases (study_name VARCHAR(512) PRIMARY KEY, owner VARCHAR(64) "
            "NOT NULL, host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL, since TIMESTAMP NOT "
            "NULL, heartbeat TIMESTAMP NOT NULL)"
        ))  # fmt: skip
    assert lease_holder(engine, "t-random") is None
    lease = Lease(engine, "t-random")
    lease.acquire()
    try:
        owner = lease_owner(engine, "t-random")
        assert owner is not None and owner.pid == os.getpid() and owner.purpose == "launch"
        assert owner.started == start_token(os.getpid())
    finally:
        lease.release()


def test_a_live_lease_elsewhere_is_refused_and_a_silent_one_expires(storage_url):
    url = storage_url
    engine = _plant(url, host="elsewhere", pid=1, age_s=5)
    assert lease_holder(engine, "t-random") is not None
    with pytest.raises(SearchLocked, match="host elsewhere pid 1"):
        Lease(engine, "t-random").acquire()
    _plant(url, host="elsewhere", pid=1, age_s=3600)  # no heartbeat for an hour: free
    assert lease_holder(engine, "t-random") is None
    lease = Lease(engine, "t-random")
    lease.acquire()
    assert f"pid {os.getpid()}" in lease_holder(engine, "t-random")
    lease.release()
    assert lease_holder(engine, "t-random") is None


def test_a_dead_launch_on_this_host_frees_the_search_and_status_says_so(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/npas.db"
    launch(make_config(tmp_path, optimiser="random", trials=2), trial_fn=fake_trial,
           progress=False)  # fmt: skip
    study = optuna.load_study(study_name="t-random", storage=url)
    study.ask()  # a trial a killed launch left RUNNING
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _plant(url, host=socket.gethostname(), pid=dead.pid, age_s=1)
    assert main(["status", "--run", str(tmp_path)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns, joined
    assert "0 running" in text and "1 interrupted" in text and "running now" not in text
    study = launch(make_config(tmp_path, optimiser="random", trials=3), trial_fn=fake_trial,
                   progress=False)  # fmt: skip
    assert trials_counted(study) == 3
    assert not study.get_trials(states=(TrialState.RUNNING,))


@pytest.mark.parametrize(
    ("names", "planted"),
    [(["t-random"] * 4, False), (["a", "b", "c", "d"], False), (["t-random"] * 4, True)],
    ids=["one-name", "four-names", "over-a-dead-launch"],
)
def test_launches_that_start_together_take_the_lease_once(storage_url, names, planted):
    """Four processes open the storage and take a lease at the same moment: on a new storage
    (each creates Optuna's tables and the lease table), or over a dead launch's lease (each
    takes it over). One search name: one takes it and the others are refused naming that one;
    four names: each takes its own."""
    url = storage_url
    if planted:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        _plant(url, host=socket.gethostname(), pid=dead.pid, age_s=1)
    script = ACQUIRE.format(root=str(ROOT), url=url)
    procs = [
        subprocess.Popen([sys.executable, "-c", script, name], cwd=ROOT, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for name in names
    ]  # fmt: skip
    try:
        assert [p.stdout.readline() for p in procs] == ["ready\n"] * len(procs)
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        said = {p.pid: p.stdout.readline().strip() for p in procs}
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
    took = [pid for pid, answer in said.items() if answer == "took"]
    if len(set(names)) == len(names):
        assert len(took) == len(names), said
    else:
        assert len(took) == 1, said
        assert all(f"pid {took[0]} since" in a for p, a in said.items() if p != took[0]), said


SPLIT = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from search.run._launch import launch
from tests._support.searches import make_config, slow_trial

launch(make_config(Path({out!r}), optimiser="random", trials=16, address="local"),
       trial_fn=slow_trial, progress=False)
"""


def _holder_pid(db: Path) -> int | None:
    with contextlib.suppress(sqlite3.Error), sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        row = c.execute("SELECT pid FROM npas_leases").fetchone()
        return None if row is None else row[0]
    return None


def _complete(db: Path) -> int:
    with contextlib.suppress(sqlite3.Error), sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
    return 0


@pytest.mark.parametrize("holds", [True, False], ids=["held", "checked-only"])
def test_a_take_over_between_the_checks_and_the_write_rolls_the_write_back(storage_url, holds):
    """The window the fences leave (CI found it: a launch SIGSTOPped there wrote a RUNNING
    trial the launch that took over did not expect): launch A passes its checks, launch B
    takes the search over, then A writes. Checked again inside the write's transaction, the
    lease refuses it and nothing lands; checked only before (the case shown unheld), it lands."""
    memory, _ = open_writer(storage_url, optuna.samplers.RandomSampler(seed=0))
    storage = open_storage(storage_url)
    mine = Lease(storage.engine, "s")
    mine.acquire()
    other = Lease(storage.engine, "s", ttl_s=0, beat_s=60)  # sees A's lease as lapsed
    try:
        writer = StudyWriter(storage, "s", fences=[mine.check, other.acquire],
                             holds=[mine.hold] if holds else [])  # fmt: skip
        trial = memory.ask()
        trial.suggest_int("width", 4, 64)
        if holds:
            with pytest.raises(StorageWriteError, match="lost the lease of search 's'"):
                writer.started(memory._storage.get_trial(trial._trial_id))
            assert stored_trials(storage_url) == []
            assert mine.lost is not None and f"pid {os.getpid()}" in mine.lost
        else:
            writer.started(memory._storage.get_trial(trial._trial_id))
            assert len(stored_trials(storage_url)) == 1
        with storage.engine.connect() as db:
            owner = db.execute(sqlalchemy.text("SELECT owner FROM npas_leases WHERE "
                                               "study_name = 's'")).scalar_one()  # fmt: skip
        assert owner == other.owner
    finally:
        other.release()
        mine.release()


def test_the_finalists_study_attributes_and_the_cost_totals_are_held_as_trials_are(storage_url):
    """The recommendation, the finalists' runs and a launch's cost totals (study attributes)
    go through the writer: written while the lease is this launch's, refused and not written
    once another took it (a launch paused past its lease adds no time to the totals)."""
    runs = {"3": {"0": {"accuracy": 0.9}}}
    cost = types.SimpleNamespace(elapsed_s=5.0, energy_j=2.0, co2_g=0.5, sources={"rapl"})
    open_writer(storage_url, optuna.samplers.RandomSampler(seed=0))
    storage = open_storage(storage_url)
    study = optuna.load_study(study_name="s", storage=storage_url)
    mine = Lease(storage.engine, "s")
    mine.acquire()
    other = Lease(storage.engine, "s", ttl_s=0, beat_s=60)
    try:
        writer = StudyWriter(storage, "s", holds=[mine.hold])
        writer.study_attrs({StudyAttr.FINALIST_RUNS: runs})
        record_cost(study, cost, writer.study_attrs)
        other.acquire()
        with pytest.raises(StorageWriteError, match="lost the lease of search 's'"):
            writer.study_attrs({StudyAttr.RECOMMENDATION: {"trial": 3}})
        with pytest.raises(StorageWriteError, match="lost the lease of search 's'"):
            record_cost(study, cost, StudyWriter(storage, "s", holds=[mine.hold]).study_attrs)
    finally:
        other.release()
        mine.release()
    attrs = optuna.load_study(study_name="s", storage=storage_url).user_attrs
    assert attrs[StudyAttr.FINALIST_RUNS] == runs
    assert StudyAttr.RECOMMENDATION not in attrs
    assert [attrs[key] for key in StudyAttr.COST] == [5.0, 2.0, 0.5]  # once, not twice
    assert attrs[StudyAttr.ENERGY_SOURCE] == ["rapl"]


def test_a_launch_stopped_past_its_lease_stops_writing_once_another_took_over(tmp_path):
    """Split brain, with a real SIGSTOP: launch A is stopped longer than the lease (3 s here),
    launch B takes the search over; A, continued, must not write another row."""
    env = {**os.environ, "NPAS_LEASE_TTL_S": "3"}
    script = SPLIT.format(root=str(ROOT), out=str(tmp_path))
    db = tmp_path / "npas.db"

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip

    first = start()
    second = None
    try:
        wait_until(lambda: _complete(db) >= 2 or first.poll() is not None, 120, interval_s=0.2,
                   raise_on_timeout=False)  # fmt: skip
        assert first.poll() is None, first.stderr.read()[-2000:]
        os.kill(first.pid, signal.SIGSTOP)
        time.sleep(5)  # past the lease's 3 s
        second = start()
        wait_until(lambda: _holder_pid(db) == second.pid or second.poll() is not None, 120,
                   interval_s=0.2, raise_on_timeout=False)  # fmt: skip
        gone = "" if second.poll() is None else f" (exit {second.returncode}): " + \
            second.stderr.read()[-2000:]  # fmt: skip
        assert _holder_pid(db) == second.pid, f"the second launch took the search over{gone}"
        os.kill(first.pid, signal.SIGCONT)
        _, err_first = first.communicate(timeout=180)
        _, err_second = second.communicate(timeout=180)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
    assert first.returncode != 0 and "lost the lease of search 't-random'" in err_first
    assert f"pid {second.pid}" in err_first, "it names the launch that holds the search"
    assert second.returncode == 0, err_second[-3000:]
    study = optuna.load_study(study_name="t-random", storage=f"sqlite:///{db}")
    assert [t.number for t in study.trials] == list(range(len(study.trials)))
    assert "another process" not in " ".join(str(t.user_attrs.get("error")) for t in study.trials)
    assert trials_counted(study) == 16
    assert not study.get_trials(states=(TrialState.RUNNING,))


#: LAUNCH, exiting as ``search launch`` does when a signal stops it (128 + the signal).
STOPPABLE = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.errors import SearchInterrupted
from search.run import launch
from tests._support.searches import make_config, slow_trial
ray.init(address={address!r}, log_to_driver=False)
try:
    launch(make_config(Path({out!r}), optimiser="random", trials=8, storage={url!r}),
           trial_fn=slow_trial, progress=False)
except SearchInterrupted as err:
    sys.exit(128 + err.signum)
"""


def test_search_stop_from_another_shell_stops_the_launch_as_ctrl_c_would(tmp_path, capsys):
    """`search stop --name X` signals the launch holding X's lease: it ends its trials' epochs,
    records the cut ones as interrupted (not counted) and exits 143; nothing is left running."""
    url = f"sqlite:///{tmp_path}/npas.db"
    address = ray.get_runtime_context().gcs_address
    script = STOPPABLE.format(root=str(ROOT), address=address, out=str(tmp_path), url=url)
    launched = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        _wait_running(url, launched)
        assert main(["stop", "--storage", url, "--name", "t-random"]) == 0
        assert "asked the launch of 't-random'" in capsys.readouterr().out
        assert launched.wait(timeout=120) == 143
    finally:
        if launched.poll() is None:
            launched.kill()
    study = optuna.load_study(study_name="t-random", storage=url)
    assert not study.get_trials(states=(TrialState.RUNNING,))
    assert len(study.trials) < 8 and lease_holder(open_storage(url).engine, "t-random") is None
    assert main(["stop", "--storage", url, "--name", "t-random"]) == 2
    assert "no launch runs search 't-random' now" in capsys.readouterr().err


def test_search_stop_of_a_launch_on_another_host_says_where(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/npas.db"
    stored_study(url, "t-random", [{"accuracy": 0.5, "params": 10.0}])
    _plant(url, host="elsewhere", pid=4321, age_s=1)
    assert main(["stop", "--storage", url, "--name", "t-random"]) == 2
    assert "runs on host elsewhere (pid 4321)" in capsys.readouterr().err
