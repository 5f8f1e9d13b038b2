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
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import ray
from optuna.trial import TrialState

from search.record import trials_counted
from search.record._records import metrics_of
from search.run import launch
from tests._support.chaos import TRIALS, check_integrity, pid_trial, running_pids
from tests._support.searches import make_config
from tests._support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]
DRIVER = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.run import launch
from tests._support.chaos import TRIALS, pid_trial
from tests._support.searches import make_config

ray.init(address={address!r}, log_to_driver=False)
launch(make_config(Path({out!r}), optimiser="random", trials=TRIALS, storage={url!r}),
       trial_fn=pid_trial, progress=False)
"""


def test_killed_workers_and_a_killed_driver_lose_nothing(tmp_path, storage_url):
    rng = random.Random(0)
    url = storage_url
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(root=str(ROOT), address=address, out=str(tmp_path), url=url)
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    killed: set[int] = set()

    def killed_three_or_ended() -> bool:
        """Done once three workers are killed or the driver ended; else maybe kills one."""
        if driver.poll() is not None or len(killed) >= 3:
            return True
        pids = [p for p in running_pids(tmp_path, set()) if p not in killed]
        if pids and rng.random() < 0.3:
            victim = rng.choice(pids)
            try:
                os.kill(victim, signal.SIGKILL)
                killed.add(victim)
            except ProcessLookupError:
                pass
        return False

    try:
        # the fault schedule: a kill at most every 0.3 s, for 150 s at most
        wait_until(killed_three_or_ended, 150, interval_s=0.3, raise_on_timeout=False)
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
    check_integrity(url)
