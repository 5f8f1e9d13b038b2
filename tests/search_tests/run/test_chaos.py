"""Chaos: a search whose trial workers are SIGKILLed a few times and whose driver is SIGKILLed
once, then relaunched, on SQLite and on PostgreSQL. Whatever happens, every trial that ended is
stored once with its result, numbers are unique, the count toward ``--trials`` is right,
nothing stays RUNNING once every writer is dead (all read back through ``optuna.load_study``),
and the storage passes its own integrity check: SQLite's ``integrity_check``, PostgreSQL's
amcheck. Processes are killed by pid."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import ray
import sqlalchemy
from optuna.trial import TrialState

from search.config import TrialConfig
from search.record import trials_counted
from search.record._records import metrics_of
from search.run import launch
from tests.search_tests.run.test_execution import make_config, slow_trial

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]
TRIALS = 14
DRIVER = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.run import launch
from tests.search_tests.run.test_chaos import TRIALS, pid_trial
from tests.search_tests.run.test_execution import make_config

ray.init(address={address!r}, log_to_driver=False)
launch(make_config(Path({out!r}), optimiser="random", trials=TRIALS, storage={url!r}),
       trial_fn=pid_trial, progress=False)
"""


def pid_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """slow_trial that leaves its worker's pid in its folder first."""
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pid").write_text(str(os.getpid()))
    return slow_trial(cfg)


def _running_pids(out: Path, done: set[int]) -> list[int]:
    """Pids of trial workers now running (pid files of trials not yet ended)."""
    pids = []
    for path in (out / "t-random" / "trials").glob("*/pid"):
        pid = int(path.read_text() or 0)
        if pid and pid not in done and int(path.parent.name) not in done:
            pids.append(pid)
    return pids


def _check_integrity(url: str) -> None:
    """The storage's own check of its files: SQLite's ``integrity_check``; on PostgreSQL,
    amcheck on every table of the database (its heap pages) and every B-tree index (its
    structure, and that it holds every row of its table)."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return
    engine = sqlalchemy.create_engine(url)
    public = "relnamespace = 'public'::regnamespace"
    with engine.begin() as db:
        db.execute(sqlalchemy.text("CREATE EXTENSION IF NOT EXISTS amcheck"))
        tables = db.execute(
            sqlalchemy.text(f"SELECT oid FROM pg_class WHERE relkind = 'r' AND {public}")
        ).scalars().all()  # fmt: skip
        for table in tables:
            found = db.execute(sqlalchemy.text("SELECT * FROM verify_heapam(:t)"), {"t": table})
            assert not found.all(), f"table {table}: {found}"
        indexes = db.execute(
            sqlalchemy.text(
                "SELECT bt_index_check(c.oid, true) FROM pg_class c JOIN pg_am a ON a.oid = "
                f"c.relam WHERE c.relkind = 'i' AND a.amname = 'btree' AND c.{public}"
            )
        ).all()  # raises on a corrupt index
    engine.dispose()
    assert len(indexes) >= len(tables) > 0, "every table (Optuna's, the lease) has a key"


def test_killed_workers_and_a_killed_driver_lose_nothing(tmp_path, storage_url):
    rng = random.Random(0)
    url = storage_url
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(root=str(ROOT), address=address, out=str(tmp_path), url=url)
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    killed: set[int] = set()
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and driver.poll() is None and len(killed) < 3:
            pids = [p for p in _running_pids(tmp_path, set()) if p not in killed]
            if pids and rng.random() < 0.3:
                victim = rng.choice(pids)
                try:
                    os.kill(victim, signal.SIGKILL)
                    killed.add(victim)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)  # the fault schedule: a kill at most every 0.3 s
        time.sleep(1.0)  # the fault schedule: the driver dies while it handles the kills
        assert driver.poll() is None, "the search ended before its driver could be killed"
    finally:
        driver.kill()
        driver.wait()
    assert killed, "no trial worker was killed"
    before = optuna.load_study(study_name="t-random", storage=url)
    ended = {t.number: (t.state, t.values) for t in before.trials if t.state.is_finished()}

    config = make_config(tmp_path, optimiser="random", trials=TRIALS, storage=url)
    launch(config, trial_fn=pid_trial, progress=False)
    study = optuna.load_study(study_name="t-random", storage=url)
    numbers = [t.number for t in study.trials]
    assert numbers == list(range(len(numbers))), "trial numbers are unique and dense"
    assert {n: (s, v) for n, (s, v) in ((t.number, (t.state, t.values)) for t in study.trials)
            if n in ended} == ended, "every trial that ended is kept as it was"  # fmt: skip
    assert trials_counted(study) == TRIALS
    assert not study.get_trials(states=(TrialState.RUNNING,))
    for trial in study.get_trials(states=(TrialState.COMPLETE,)):
        assert trial.values is not None and metrics_of(trial)
    failed = [t.user_attrs.get("error", "") for t in study.get_trials(states=(TrialState.FAIL,))]
    assert all(("interrupted" in e) or ("died" in e) for e in failed), failed
    _check_integrity(url)
