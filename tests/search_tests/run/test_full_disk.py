"""A run folder on a disk that fills up during a search: a real full disk, a 400 KiB tmpfs
mounted for the test (the storage lives elsewhere, so only the trials' saves fail).

Trials that trained but could not save their results (Ray Tune's checkpoints, the model) are
not counted toward ``trials``, the search stops starting trials, what was recorded stays,
and ``search launch`` exits 1 with one line saying what happened and what to do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from search.record._counting import DISK_FULL, trials_counted
from tests._support.notes import notes
from tests._support.searches import LONG
from tests.search_tests.disks import tmpfs

pytestmark = pytest.mark.slow  # a search on a full tmpfs, in a subprocess


ROOT = Path(__file__).resolve().parents[3]
CONFIG = {**LONG, "name": "full", "trials": 6, "train": {"epochs": 2, "batch_size": 64}}


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 400 KiB disk for the run folder."""
    with tmpfs(tmp_path / "disk", "400k") as folder:
        yield folder


def test_a_full_run_folder_stops_the_search_and_does_not_count_the_lost_trials(
    small_disk: Path, tmp_path: Path
) -> None:
    config = tmp_path / "full.yaml"
    config.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "search", "launch", str(config), "--out", str(small_disk),
         "--storage", url, "--address", "local", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1, done.stderr[-3000:]
    assert last.startswith(f"search launch: RunFolderFull: the run folder {small_disk} is full")
    assert "free space and relaunch" in last
    study = optuna.load_study(study_name="full", storage=url)
    lost = [t for t in study.trials if str(t.user_attrs.get("error", "")).startswith(DISK_FULL)]
    assert lost and all(t.state == TrialState.FAIL for t in lost)
    assert f"trial(s) {sorted(t.number for t in lost)} could not save their results" in last
    assert trials_counted(study) == len(study.trials) - len(lost) < CONFIG["trials"]
    assert all(t.state == TrialState.COMPLETE for t in study.trials if t not in lost), [
        (t.number, t.state.name, t.user_attrs.get("error")) for t in study.trials]


def test_loggers_on_a_full_run_folder_warn_once_each_and_leave_no_half_made_store(
    small_disk: Path, tmp_path: Path
) -> None:
    # Before: the warning quoted MLflow's whole SQL statement, tensorboardX printed a traceback
    # per trial when the program ended, and mlflow.db was left half-migrated, which failed every
    # relaunch's MLflow logger ("_alembic_tmp_... already exists").
    config = tmp_path / "full.yaml"
    logged = {**CONFIG, "trials": 2, "loggers": ["tensorboard", "mlflow"]}
    config.write_text(yaml.safe_dump(logged), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "search", "launch", str(config), "--out", str(small_disk),
         "--storage", f"sqlite:///{tmp_path / 'npas.db'}", "--address", "local", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    warned = [line for line in notes(done.stderr) if "[npas] warning: loggers:" in line]
    assert 1 <= len(warned) <= 2 and len({w.split()[3] for w in warned}) == len(warned), warned
    assert all(w.endswith("the search goes on") for w in warned), done.stderr[-3000:]
    assert "Exception ignored" not in done.stderr and "CREATE TABLE" not in done.stderr
    store = small_disk / "full" / "mlflow.db"
    if store.exists():  # MLflow made it whole before the disk filled: it opens
        from mlflow.tracking import MlflowClient

        assert MlflowClient(tracking_uri=f"sqlite:///{store}").get_experiment_by_name("full")
