"""Chaos on the two-node cluster (``pytest -m chaos`` runs it alone): one short search whose
storage is PostgreSQL with a password in its URL and whose run folder is a size-limited tmpfs.
While it runs, a trial's worker is SIGKILLed, the driver is SIGSTOPped past its lease and
continued, and the run folder is filled up; the launch must end honestly (exit 1, the folder
full), and a relaunch once there is room must finish the search. Read back through Optuna's own
API: no trial that ended is lost or doubled, numbers are dense, the count is right, nothing
stays RUNNING; and the password is in no file and no output. Processes are signalled by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from search.record import trials_counted
from tests._support.chaos import TRIALS, check_integrity, running_pids
from tests._support.waiting import wait_until
from tests.search_tests.disks import tmpfs

pytestmark = pytest.mark.chaos
ROOT = Path(__file__).resolve().parents[3]
SECRET = "S3CRET-chaos"
DRIVER = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from search.errors import RunFolderFull, SearchInterrupted
from search.run import launch
from tests._support.chaos import TRIALS, pid_trial
from tests._support.searches import make_config
try:
    launch(make_config(Path({out!r}), optimiser="random", trials=TRIALS, storage={url!r},
                       address={address!r}), trial_fn=pid_trial, progress=False)
except RunFolderFull as err:
    print(err, file=sys.stderr)
    sys.exit(1)
except SearchInterrupted as err:
    print(err, file=sys.stderr)
    sys.exit(128 + err.signum)
"""


@pytest.fixture
def disk(tmp_path: Path):
    """A 64 MiB disk for the run folder."""
    with tmpfs(tmp_path / "disk", "64m") as folder:
        yield folder


def _ended(url: str) -> int:
    engine = sqlalchemy.create_engine(url)
    try:
        with contextlib.suppress(sqlalchemy.exc.SQLAlchemyError), engine.connect() as db:
            return db.execute(sqlalchemy.text(
                "SELECT count(*) FROM trials WHERE state IN ('COMPLETE', 'FAIL')")).scalar_one()
        return 0
    finally:
        engine.dispose()


def _fill(folder: Path) -> Path:
    """Writes a file into ``folder`` until its disk is full."""
    filler = folder / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as f:
        while True:
            f.write(b"\0" * (1 << 20))
            f.flush()
    return filler


def test_a_search_through_kills_a_stop_and_a_full_disk_loses_nothing(
    cluster, postgres_url, disk, tmp_path
):
    address, env = cluster
    url = postgres_url.replace("npas@", f"npas:{SECRET}@")  # trust: any password is taken
    env = {**env, "NPAS_LEASE_TTL_S": "3"}
    script = DRIVER.format(root=str(ROOT), out=str(disk), url=url, address=address)

    def start() -> subprocess.Popen:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, **pipes)

    driver = start()
    outputs = []
    try:
        started = time.monotonic()  # 150 s for both waits
        wait_until(lambda: _ended(postgres_url) >= 2 or driver.poll() is not None, 150,
                   interval_s=0.3, raise_on_timeout=False)  # fmt: skip
        assert driver.poll() is None, driver.communicate()[1][-3000:]
        victims = wait_until(lambda: running_pids(disk, set()), 150 - (time.monotonic() - started),
                             interval_s=0.2, raise_on_timeout=False)  # fmt: skip
        with contextlib.suppress(ProcessLookupError):
            os.kill(victims[0], signal.SIGKILL)  # a trial's worker
        os.kill(driver.pid, signal.SIGSTOP)
        time.sleep(5)  # past the 3 s lease: nobody took it over, so the driver goes on
        os.kill(driver.pid, signal.SIGCONT)
        filler = _fill(disk)
        out, err = driver.communicate(timeout=180)
        outputs += [out, err]
    finally:
        if driver.poll() is None:
            os.kill(driver.pid, signal.SIGCONT)
            driver.kill()
            driver.wait()
    assert driver.returncode == 1 and f"the run folder {disk} is full" in err, err[-3000:]
    before = optuna.load_study(study_name="t-random", storage=postgres_url)
    ended = {t.number: (t.state, t.values) for t in before.trials
             if t.state == TrialState.COMPLETE}  # fmt: skip
    assert ended, "trials completed before the disk filled"

    filler.unlink()  # room again: the relaunch finishes the search
    again = start()
    out, err = again.communicate(timeout=300)
    outputs += [out, err]
    assert again.returncode == 0, err[-3000:]

    study = optuna.load_study(study_name="t-random", storage=postgres_url)
    numbers = [t.number for t in study.trials]
    assert numbers == list(range(len(numbers))), "trial numbers are unique and dense"
    kept = {t.number: (t.state, t.values) for t in study.trials if t.number in ended}
    assert kept == ended, "every trial that completed is kept as it was, once"
    assert trials_counted(study) == TRIALS
    assert not study.get_trials(states=(TrialState.RUNNING,))
    check_integrity(postgres_url)
    assert not any(SECRET in text for text in outputs), "no output shows the password"
    leaked = [str(f) for root in (disk, tmp_path) for f in root.rglob("*")
              if f.is_file() and SECRET.encode() in f.read_bytes()]  # fmt: skip
    assert leaked == [], "no file holds the password"
