"""Real faults against checkpointed trials: a SIGKILLed Ray worker and a SIGKILLed driver lose
at most the epoch in flight. The trials write which epochs they ran (and in which process) to
a log beside their folders; processes are killed by pid; the study is read back through
Optuna's own API."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import ray
from optuna.trial import TrialState

from search.cli import main
from search.record import trials_counted
from search.record._checkpoint_files import checkpoint_folders, resume_checkpoint
from search.record._counting import INTERRUPTED, counts
from search.record._schema import RayKey, TrialAttr
from search.run import launch
from tests._support.checkpointing import (
    EPOCHS,
    TRIALS,
    check_each_epoch_ran_once_but_the_one_in_flight,
    checkpointing_config,
    epoch_log,
    epochs_by_trial,
    slow_checkpointing_trial,
)
from tests._support.notes import notes
from tests._support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]
FAIL = TrialState.FAIL
DRIVER = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.run import launch
from tests._support.checkpointing import checkpointing_config, slow_checkpointing_trial

ray.init(address={address!r}, log_to_driver=False)
launch(checkpointing_config(Path({out!r}), {scheduler!r}), trial_fn=slow_checkpointing_trial,
       progress=False)
"""


def _mid_schedule(url: str) -> bool:
    """Whether the storage holds a RUNNING trial with an epoch recorded."""
    try:
        study = optuna.load_study(study_name="t-random", storage=url)
    except KeyError:  # not created yet
        return False
    return any(t.state == TrialState.RUNNING and t.intermediate_values for t in study.trials)


def _workers_gone(out: Path) -> bool:
    """Whether every worker a killed driver's trials ran in has exited: Ray ends them a moment
    after their driver, and until then one may still be copying a checkpoint into its trial's
    folder, which the relaunch would then find half-written."""
    for path in (out / "t-random" / "trials").glob("*/pid"):
        try:
            os.kill(int(path.read_text()), 0)
        except (ProcessLookupError, ValueError):  # exited, or its pid file half-written
            continue
        return False
    return True


def _kill_driver(driver: subprocess.Popen, out: Path) -> None:
    """SIGKILLs the driver and waits for it and for its trials' workers to be gone."""
    driver.kill()
    driver.wait()
    wait_until(lambda: _workers_gone(out), 60, what="the killed driver's workers to exit")


def test_a_killed_worker_resumes_its_trial_from_the_last_checkpoint(tmp_path):
    """fifo: the trial whose worker is SIGKILLed in epoch 3+ ends COMPLETE, every epoch but the
    one in flight run once (Ray Tune restores it from its checkpoint in the same launch)."""
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(root=str(ROOT), address=address, out=str(tmp_path), scheduler="fifo")
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        wait_until(lambda: any(r["epoch"] >= 3 for r in epoch_log(tmp_path)), 120,
                   what="a third epoch")
        victim = next(r for r in reversed(epoch_log(tmp_path)) if r["epoch"] >= 3)
        pid = int((tmp_path / "t-random" / "trials" / str(victim["trial"]) / "pid").read_text())
        os.kill(pid, signal.SIGKILL)
        assert driver.wait(timeout=240) == 0
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    study = optuna.load_study(study_name="t-random", storage=f"sqlite:///{tmp_path}/npas.db")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * TRIALS
    runs = epochs_by_trial(epoch_log(tmp_path))
    check_each_epoch_ran_once_but_the_one_in_flight(runs)
    assert runs[victim["trial"]].count(1) == 1  # not started again from epoch 1
    pids = {r["pid"] for r in epoch_log(tmp_path) if r["trial"] == victim["trial"]}
    assert len(pids) == 2  # the killed worker and the one that resumed it
    curve = study.trials[victim["trial"]].user_attrs["curve"]
    assert [p["epoch"] for p in curve] == list(range(1, EPOCHS + 1))


def test_a_killed_driver_relaunched_resumes_its_trials_not_counting_them_twice(tmp_path):
    """Promotion MOASHA: the driver is SIGKILLed while trials run; the relaunch continues every
    trial it left RUNNING from its last checkpoint as the same trial: its curve and rung
    decisions go on, no epoch but the one in flight runs twice, and the count is exact."""
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(root=str(ROOT), address=address, out=str(tmp_path),
                           scheduler="promotion")  # fmt: skip
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    url = f"sqlite:///{tmp_path}/npas.db"
    try:
        wait_until(
            lambda: sum(r["epoch"] >= 2 for r in epoch_log(tmp_path)) >= 2 and _mid_schedule(url),
            120,
            what="two epochs >= 2, and a running trial with an epoch in the storage",
        )
    finally:
        _kill_driver(driver, tmp_path)
    killed_at = len(epoch_log(tmp_path))
    before = optuna.load_study(study_name="t-random", storage=url)
    running = {t.number: len(t.intermediate_values) for t in before.trials
               if t.state == TrialState.RUNNING and t.intermediate_values}  # fmt: skip
    assert running, "the driver was killed with no trial in the middle of its schedule"
    decided = {t.number: t.user_attrs.get(TrialAttr.DECISIONS, []) for t in before.trials}
    # a trial killed in its first epoch had no checkpoint: interrupted, and run again anew
    unsaved = {t.number for t in before.trials if t.state == TrialState.RUNNING} - set(running)

    study = launch(checkpointing_config(tmp_path, "promotion"),
                   trial_fn=slow_checkpointing_trial, progress=False)  # fmt: skip
    assert trials_counted(study) == TRIALS and not study.get_trials(states=(TrialState.RUNNING,))
    assert [t.number for t in study.trials] == list(range(len(study.trials)))
    failed = {t.number: t.user_attrs.get("error") for t in study.get_trials(states=(FAIL,))}
    assert set(failed) <= unsaved, (failed, unsaved, running)
    assert all(t.state != TrialState.FAIL for t in study.trials if t.number not in unsaved)
    rows = epoch_log(tmp_path)
    check_each_epoch_ran_once_but_the_one_in_flight(epochs_by_trial(rows))
    after = epochs_by_trial(rows[killed_at:])
    for number, recorded in running.items():
        trial = study.trials[number]
        if number in after:  # resumed, not restarted: its first epoch follows its checkpoint,
            # the last recorded epoch's or (killed between the two) the epoch after it
            assert recorded + 1 <= min(after[number]) <= recorded + 2, (number, recorded, after)
        curve = [p["epoch"] for p in trial.user_attrs["curve"]]
        assert curve == list(range(1, len(curve) + 1)) and len(curve) >= recorded
        log = trial.user_attrs.get(TrialAttr.DECISIONS, [])
        assert log[: len(decided[number])] == decided[number]  # the decisions go on


@pytest.mark.parametrize(
    ("damaged", "older"),
    [(RayKey.POINT_FILE, False), ("state.json", False), ("state.json", True)],
    ids=["point, alone", "state, alone", "state, the one before whole"],
)
def test_a_checkpoint_cut_short_goes_on_from_the_one_before_or_runs_again_not_counted(
    tmp_path, capsys, damaged, older
):
    """The driver is SIGKILLed with trials mid-schedule, and one of their latest checkpoints
    has a file cut short (the learning-curve point the trainable wrote, or the trial's own
    state). Before, the relaunch resumed it, the trial failed (`JSONDecodeError … (char 13)`,
    no file named) and counted toward `trials`; now, with a warning naming the file and the
    reason, it goes on from the checkpoint before when that one is whole (as it is when a
    worker dies copying the next), else it is recorded as interrupted and another trial runs
    in its place."""
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(root=str(ROOT), address=address, out=str(tmp_path), scheduler="fifo")
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    url = f"sqlite:///{tmp_path}/npas.db"
    try:
        wait_until(lambda: _mid_schedule(url), 120,
                   what="a running trial with an epoch in the storage")
    finally:
        _kill_driver(driver, tmp_path)
    before = optuna.load_study(study_name="t-random", storage=url)
    # a whole checkpoint (the kill may land between a folder and its files)
    saved = [t for t in before.trials if t.state == TrialState.RUNNING
             and (found := resume_checkpoint(t)) is not None
             and (found / damaged).is_file()]  # fmt: skip
    assert saved, "the driver was killed with no checkpointed trial running"
    victim = saved[0]
    whole = resume_checkpoint(victim)
    for folder in checkpoint_folders(whole.parent):  # only that one, then perhaps a copy
        if folder != whole:
            shutil.rmtree(folder)
    if older:  # the next checkpoint, cut short while it was copied
        copy = whole.with_name(f"checkpoint_{int(whole.name.rpartition('_')[2]) + 1:06d}")
        shutil.copytree(whole, copy)
    path = (copy if older else whole) / damaged
    text = path.read_text()
    path.write_text(text[: min(13, len(text) // 2)])  # cut short, as a crash or full disk does
    main(["status", "--run", str(tmp_path), "--trial", str(victim.number)])
    resumes = whole if older else "none (interrupted)"
    out = " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns, joined
    assert f"a relaunch resumes it from: {resumes} " in out + " "

    study = launch(checkpointing_config(tmp_path, "fifo"), trial_fn=slow_checkpointing_trial,
                   progress=False)  # fmt: skip
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert f"trial {victim.number}'s checkpoint cannot be read ({path}: cut short" in err, err
    trial = study.trials[victim.number]
    if older:
        assert f"it goes on from the one before ({whole.name})" in err, err
        assert trial.state == TrialState.COMPLETE
        curve = [p["epoch"] for p in trial.user_attrs["curve"]]
        assert curve == list(range(1, EPOCHS + 1))  # each epoch once, from the whole one on
    else:
        assert trial.state == FAIL and trial.user_attrs["error"] == INTERRUPTED  # not counted
    assert trials_counted(study) == TRIALS and not study.get_trials(states=(TrialState.RUNNING,))
    counted = {t.number: (t.state.name, t.user_attrs.get("error")) for t in study.trials
               if counts(t)}  # fmt: skip
    assert {s for s, _ in counted.values()} == {"COMPLETE"}, counted  # every counted one trained
