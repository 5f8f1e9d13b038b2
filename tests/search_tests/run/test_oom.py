"""Ray's memory monitor kills trial workers (no mocks): each search runs in a driver subprocess
whose local Ray starts with a kill threshold just above this machine's memory use.

Two ways it kills: a trial that allocates past the threshold is killed while it runs (and, as Ray
kills the most recently started workers first, maybe the trial beside it); memory that a process
outside Ray holds for a while gets every trial worker killed, those running and those whose actor
is starting. Either way each killed trial is FAIL with Ray's reason and where Ray's logs are, the
search goes on and ends as a normal search does (exit 0, no traceback), nothing stays RUNNING
and every trial is recorded once. The driver, its Ray and the memory holder are killed by pid.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from search.record import trials_counted
from tests._support.memory import GIB, meminfo, used
from tests._support.oom_trials import HOGS, MARGIN, RELEASED
from tests._support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,  # Ray's memory monitor killing real trials
    pytest.mark.skipif(
        not Path("/proc/meminfo").is_file(), reason="Ray's memory monitor runs on Linux only"
    ),
]

ROOT = Path(__file__).resolve().parents[3]
OOM = "killed by Ray's memory monitor (out of memory): "
DRIVER = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from search.run import launch
from tests._support.oom_trials import {trial}
from tests._support.searches import make_config
launch(make_config(Path({out!r}), optimiser="random", trials={trials}), trial_fn={trial})
"""


def _threshold(tmp_path: Path) -> int:
    """The kill threshold in bytes that :func:`_driver` gave the search in ``tmp_path``."""
    return int((tmp_path / "threshold").read_text())


def _driver(tmp_path: Path, trial: str, trials: int) -> subprocess.Popen:
    """A search driver whose local Ray kills workers MARGIN bytes above the memory used now."""
    total = meminfo()["MemTotal"]
    threshold = used() + MARGIN
    (tmp_path / "threshold").write_text(str(threshold))
    env = {
        **os.environ,
        "RAY_memory_usage_threshold": f"{threshold / total:.4f}",
        "RAY_memory_monitor_refresh_ms": "100",
    }
    script = DRIVER.format(root=str(ROOT), out=str(tmp_path), trial=trial, trials=trials)
    with open(tmp_path / "stdout", "w") as out, open(tmp_path / "stderr", "w") as err:
        return subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=out,
                                stderr=err)  # fmt: skip


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (its Ray: GCS, raylet, workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo.extend(children.get(tree[-1], []))
    return tree


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _finish(proc: subprocess.Popen, tmp_path: Path, timeout: float) -> tuple[str, str]:
    """The driver's stdout and stderr once it exits; past ``timeout`` it and its Ray are
    killed."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(_descendants(proc.pid))
        proc.wait()
    return (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()


def _created(tmp_path: Path) -> bool:
    """Whether the driver has created its study, read without writing: Optuna opening a storage
    the driver is still creating would race it to create the tables (both insert the schema
    version; the loser fails)."""
    query = "SELECT 1 FROM studies WHERE study_name = 't-random'"
    url = f"file:{tmp_path}/npas.db?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(url, uri=True)) as db:
            return db.execute(query).fetchone() is not None
    except sqlite3.Error:  # no file or no tables yet
        return False


def _study(tmp_path: Path) -> optuna.Study:
    return optuna.load_study(study_name="t-random", storage=f"sqlite:///{tmp_path}/npas.db")


def _check_search(tmp_path: Path, trials: int, rc: int, out: str, err: str) -> optuna.Study:
    """A normal search's end: exit 0, no traceback, every trial ended and recorded once, and
    each FAIL killed by the memory monitor, its error naming Ray's log folder."""
    assert rc == 0, err[-3000:]
    assert "Traceback" not in out + err, (out + err)[-3000:]
    assert re.search(rf"\[npas\] finished: {trials}/{trials} done \([^)]*\), 0 running", err)
    study = _study(tmp_path)
    assert [t.number for t in study.trials] == list(range(trials)), "one record per trial"
    assert trials_counted(study) == trials
    assert {t.state for t in study.trials} <= {TrialState.COMPLETE, TrialState.FAIL}
    for trial in study.get_trials(states=(TrialState.FAIL,)):
        error = trial.user_attrs["error"]
        assert error.startswith(OOM) and "\n" not in error, error
        logs = re.search(r"raylet\.out under (\S+)\)$", error)
        assert logs and (Path(logs[1]) / "raylet.out").is_file(), error
    return study


def _killed(study: optuna.Study, tmp_path: Path) -> dict[int, bool]:
    """Trials the memory monitor killed → whether their function had started."""
    folder = tmp_path / "t-random" / "trials"
    return {
        t.number: (folder / str(t.number) / "started").exists()
        for t in study.get_trials(states=(TrialState.FAIL,))
        if t.user_attrs.get("error", "").startswith(OOM)
    }


def test_a_trial_that_exhausts_memory_is_killed_and_the_search_goes_on(tmp_path):
    proc = _driver(tmp_path, "hog_trial", 6)
    out, err = _finish(proc, tmp_path, timeout=240)
    study = _check_search(tmp_path, 6, proc.returncode, out, err)
    killed = _killed(study, tmp_path)
    assert killed.keys() >= HOGS and all(killed[n] for n in HOGS), killed
    # Memory that other programs take meanwhile may get later trials killed too (a parallel
    # test's Ray cluster did): going on means a later trial completed, not how many.
    later = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if t.number > max(HOGS)]
    assert later, "the search went on after the kill"


def test_workers_killed_while_running_and_while_starting_fail_and_the_search_goes_on(tmp_path):
    trials = 16
    proc = _driver(tmp_path, "steady_trial", trials)
    _wait(lambda: len(_study(tmp_path).get_trials(states=(TrialState.COMPLETE,))) >= 2, proc,
          tmp_path)  # fmt: skip
    # Memory held outside Ray, which no kill frees, a GiB past the threshold: Ray kills every
    # trial worker it can, those running (trials 2 and later wait for the memory's release)
    # and those whose actor is starting. The holder takes again what other programs free
    # meanwhile (a neighbour test ending), so the kills go on until both kinds are seen.
    floor = _threshold(tmp_path) + GIB
    cap = floor - used() + 2 * GIB
    hold = [sys.executable, "-m", "tests._support.memory", str(floor), str(cap)]
    holder = subprocess.Popen(hold, cwd=ROOT)
    try:  # until one trial was killed while it ran and one while its actor started
        _wait(lambda: set(_killed(_study(tmp_path), tmp_path).values()) == {True, False}, proc,
              tmp_path)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
        (tmp_path / RELEASED).touch()
    out, err = _finish(proc, tmp_path, timeout=240)
    study = _check_search(tmp_path, trials, proc.returncode, out, err)
    last = max(_killed(study, tmp_path))
    after = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if t.number > last]
    assert after, "the search went on after the kills"


def _wait(done: Any, proc: subprocess.Popen, tmp_path: Path, timeout: float = 120) -> None:
    """Polls ``done()`` while the driver runs (once it has created its study)."""

    def done_or_ended() -> str | None:
        if proc.poll() is not None:
            return "ended"
        return "done" if _created(tmp_path) and done() else None

    if wait_until(done_or_ended, timeout, interval_s=0.2, raise_on_timeout=False) == "done":
        return
    _, err = _finish(proc, tmp_path, timeout=0)
    pytest.fail(f"not reached while the search ran (exit {proc.returncode}): {err[-3000:]}")
