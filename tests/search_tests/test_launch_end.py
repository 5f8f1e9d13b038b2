"""A launch's end: ``python -m search`` leaves without the interpreter's teardown, yet runs the
``atexit`` hooks (the user's, and the one that closes the storage, so that the SQLite file
alone holds every trial); the local Ray is stopped with nothing of it left running; a trial's
checkpoints are thinned by npas, not by Ray Tune; and Ray Tune's callback census, which
imports MLflow, is skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import optuna
from optuna.trial import TrialState

from search.run import _ray_session
from search.run._checkpoints import CheckpointJanitor
from tests._support.configs import MINIMAL
from tests._support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

#: A user module whose atexit hook leaves a file where the launch ran.
_HOOK = """
import atexit
from pathlib import Path

atexit.register(lambda: Path("hook-ran").write_text("yes"))
"""


def test_a_launch_ends_with_its_hooks_run_and_the_database_file_whole(tmp_path: Path) -> None:
    (tmp_path / "leaves_mark.py").write_text(_HOOK)
    (tmp_path / "small.yaml").write_text(json.dumps({**MINIMAL, "name": "ends",
                                                     "imports": ["leaves_mark.py"]}))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "search", "launch", "small.yaml", "--out",
                           "runs", "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "hook-ran").read_text() == "yes"
    wal = tmp_path / "runs" / "npas.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0, "the write-ahead log was not folded in"
    alone = tmp_path / "copy" / "npas.db"  # the database file without its -wal and -shm
    alone.parent.mkdir()
    shutil.copyfile(tmp_path / "runs" / "npas.db", alone)
    study = optuna.load_study(study_name="ends", storage=f"sqlite:///{alone}")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2


def test_a_launch_with_callbacks_imports_no_mlflow(tmp_path: Path) -> None:
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from search.config import load_config\n"
        "from search.run import launch\n"
        f"config = json.loads({json.dumps({**MINIMAL, 'name': 'census'})!r})\n"
        f"launch(load_config(config), out={str(tmp_path)!r}, progress=True)\n"
        "print('mlflow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_the_autoscaler_monitor_is_told_by_its_command_line(tmp_path: Path) -> None:
    script = tmp_path / "ray" / "autoscaler" / "_private" / "monitor.py"
    script.parent.mkdir(parents=True)
    script.write_text("import time\ntime.sleep(60)\n")
    other = tmp_path / "other.py"
    other.write_text("import time\ntime.sleep(60)\n")
    procs = [subprocess.Popen([sys.executable, str(p)]) for p in (script, other)]
    try:
        for proc, path in zip(procs, (script, other), strict=True):  # exec'd: not still a fork
            wait_until(lambda p=proc, f=path: _ray_session._runs(p.pid, f.name), 10,
                       what=f"{path.name} to start")  # fmt: skip
        assert _ray_session._runs(procs[0].pid, _ray_session._MONITOR)
        assert not _ray_session._runs(procs[1].pid, _ray_session._MONITOR)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)
    assert not _ray_session._runs(procs[0].pid, _ray_session._MONITOR)  # ended: no process


def _trial_with_checkpoints(folder: Path, epochs: int) -> SimpleNamespace:
    for epoch in range(1, epochs + 1):
        (folder / f"checkpoint_{epoch:06d}").mkdir(parents=True)
    return SimpleNamespace(path=str(folder), trial_id="t")


def _checkpoint(folder: Path, epoch: int) -> SimpleNamespace:
    return SimpleNamespace(path=str(folder / f"checkpoint_{epoch:06d}"))


def test_a_trials_latest_checkpoints_up_to_the_one_reported_are_kept(tmp_path: Path) -> None:
    trial = _trial_with_checkpoints(tmp_path, 5)  # 5 may still be being written
    CheckpointJanitor(latest=2).on_checkpoint(4, [], trial, _checkpoint(tmp_path, 4))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint_000003", "checkpoint_000004", "checkpoint_000005"]  # fmt: skip
    CheckpointJanitor(latest=1).on_checkpoint(5, [], trial, _checkpoint(tmp_path, 5))
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint_000005"]
    CheckpointJanitor(latest=1).on_checkpoint(6, [], trial, _checkpoint(tmp_path, 6))  # gone
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint_000005"]


def test_ray_tune_saves_its_experiment_state_only_on_its_timer(tmp_path: Path) -> None:
    """With ``num_to_keep`` Ray Tune forces a save of its whole experiment state after every
    few trial checkpoints (after every epoch, with one kept): a search sets none, so no save
    is ever forced by a checkpoint."""
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from ray.tune.execution import experiment_state\n"
        "manager = experiment_state._ExperimentCheckpointManager\n"
        "forced = []\n"
        "original = manager.sync_up_experiment_state\n"
        "def counted(self, *args, **kwargs):\n"
        "    forced.append(self._should_force_sync_up)\n"
        "    return original(self, *args, **kwargs)\n"
        "manager.sync_up_experiment_state = counted\n"
        "from search.config import load_preset\n"
        "from search.run import launch\n"
        f"launch(load_preset('digits-quick'), trials=4, out={str(tmp_path)!r}, progress=False)\n"
        "print(len(forced), sum(forced))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    calls, forced = map(int, done.stdout.split()[-2:])
    assert calls > 10 and forced == 0
