"""``launch`` on a real local Ray with a real SQLite storage.

The trial functions (tests/_support/searches.py, and the storage-breaking ones here) are cheap
real trainables (where training is not the point); one test runs the real ``run_trial`` on
digits. One Ray session serves the whole module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import psutil
import pytest
import ray
import ray.cloudpickle
import yaml
from optuna.trial import TrialState

from search._supervisor import SUPERVISED
from search.config import TrialConfig, load_preset
from search.errors import StorageWriteError
from search.pareto import non_dominated
from search.pareto._frame import trials_frame
from search.record._counting import trials_counted
from search.record._records import conditions_of, metrics_of
from search.run._launch import launch
from spaces import ConfigError
from tests._support.data import MNIST, needs_mnist
from tests._support.searches import LONG, digits_config, fake_trial, make_config, slow_trial
from tests._support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]
# Ship the trial functions by value: a worker importing this module would import torch.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _snapshot(study: optuna.Study) -> dict[int, tuple]:
    return {
        t.number: (t.values, t.params) for t in study.get_trials(states=(TrialState.COMPLETE,))
    }


@pytest.mark.parametrize("optimiser", ["nsga2", "pymoo-nsga2"])
def test_search_records_front_failures_and_resumes(tmp_path, optimiser, capfd):
    config = make_config(tmp_path, optimiser=optimiser)
    ctrl_c = signal.getsignal(signal.SIGINT)
    study = launch(config, trial_fn=fake_trial)
    assert signal.getsignal(signal.SIGINT) is ctrl_c  # Ray Tune's own handler is gone
    assert len(study.trials) == 6
    assert study.metric_names == ["accuracy", "params"]
    assert study.user_attrs["objectives"] == [["accuracy", "maximize"], ["params", "minimize"]]
    assert study.user_attrs["constraints"] == ["params <= 2000"]
    assert study.user_attrs["optimiser"] == optimiser
    assert study.user_attrs["config"]["space"] == config.space.to_dict()
    for trial in study.trials:
        tc = trial.user_attrs["trial_config"]
        folder = tmp_path / f"t-{optimiser}" / "trials" / str(trial.number)
        assert tc["artifact_dir"] == str(folder)
        assert tc["family"] == trial.params["family"]
        if trial.state == TrialState.FAIL:
            assert trial.user_attrs["error"].startswith("ValueError: no convnets today")
            assert tc["family"] == "convnet"
        else:
            assert trial.state == TrialState.COMPLETE
            metrics = metrics_of(trial)
            assert trial.values == [metrics["accuracy"], metrics["params"]]
            assert trial.user_attrs["feasible"] == (metrics["params"] <= 2000)
            assert trial.user_attrs["constraints"] == [
                metrics["params"] - 2000,
                float(metrics["params"] > 2000),
            ]
            # Optuna reads the one list npas records as "0", "1", ... in the search's order.
            assert trial.constraints == {"0": metrics["params"] - 2000,
                                         "1": float(metrics["params"] > 2000)}  # fmt: skip
    assert {t.state for t in study.trials} == {TrialState.COMPLETE, TrialState.FAIL}
    frame = trials_frame(study)
    ok = frame["feasible"].to_numpy()
    front = non_dominated(
        frame[["accuracy", "params"]].to_numpy(float), ["maximize", "minimize"], ok
    )
    assert front.any() and study.best_trials
    assert {t.number for t in study.best_trials} == set(frame["number"][front])
    err = capfd.readouterr().err
    assert re.search(r"\[npas\] finished: 6/6 done \([^)]*\), 0 running", err), err[-2000:]
    assert "front " in err and "(best accuracy " in err

    before = _snapshot(study)
    study = launch(config, trials=8, trial_fn=fake_trial, progress=False)
    assert len(study.trials) == 8 and trials_counted(study) == 8
    assert {n: v for n, v in _snapshot(study).items() if n in before} == before
    assert "[npas]" not in capfd.readouterr().err


def test_changed_config_is_refused_and_nothing_is_touched(tmp_path):
    config = make_config(tmp_path)
    launch(config, trials=0, trial_fn=fake_trial)  # records the study, starts no trial
    other = make_config(tmp_path, train={**config.train, "epochs": 1})
    with pytest.raises(ConfigError, match=r"different config.*train"):
        launch(other, trials=0, trial_fn=fake_trial)
    fewer = make_config(tmp_path, objectives=[["accuracy", "maximize"]])
    with pytest.raises(ConfigError, match="objectives"):
        launch(fewer, trials=0, trial_fn=fake_trial)
    study = optuna.load_study(study_name="t-nsga2", storage=f"sqlite:///{tmp_path}/npas.db")
    assert study.user_attrs["config"]["train"] == config.train


KILLED = """
import sys
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.errors import SearchInterrupted
from search.run._launch import launch
from tests._support.searches import make_config, slow_trial

ray.init(address={address!r}, log_to_driver=False)
try:
    launch(make_config(Path({out!r}), optimiser={opt!r}, trials=12), trial_fn=slow_trial,
           progress=False)
except SearchInterrupted as err:
    print(err, file=sys.stderr)
    sys.exit(128 + err.signum)
"""


def _launch_then_signal(tmp_path: Path, optimiser: str, sig: int) -> subprocess.Popen:
    """Launches a 12-trial search in a subprocess and sends it ``sig`` after 3 trials ended."""
    address = ray.get_runtime_context().gcs_address
    script = KILLED.format(root=str(ROOT), address=address, out=str(tmp_path), opt=optimiser)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    url = f"sqlite:///{tmp_path}/npas.db"

    def three_complete_or_ended() -> bool:
        if proc.poll() is not None:
            return True
        try:
            study = optuna.load_study(study_name=f"t-{optimiser}", storage=url)
        except KeyError:  # the study is not created yet
            return False
        return len(study.get_trials(states=(TrialState.COMPLETE,))) >= 3

    try:
        wait_until(three_complete_or_ended, 120, interval_s=0.2, raise_on_timeout=False)
        assert proc.poll() is None, "the search ended before it could be stopped"
    finally:
        proc.send_signal(sig)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_the_search_and_marks_the_cut_trials(tmp_path, sig):
    proc = _launch_then_signal(tmp_path, "random", sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-2000:]  # 130 for Ctrl-C, 143 for SIGTERM
    assert f"stopped by {signal.Signals(sig).name} after" in err
    assert "relaunch the same command" in err
    study = optuna.load_study(study_name="t-random", storage=f"sqlite:///{tmp_path}/npas.db")
    assert not study.get_trials(states=(TrialState.RUNNING,))
    cut = [t for t in study.trials if t.state == TrialState.FAIL]
    assert cut and all(t.user_attrs["error"].startswith("interrupted") for t in cut)
    assert 3 <= trials_counted(study) < 12


def _launch_long(tmp_path: Path) -> subprocess.Popen:
    """``search launch`` of LONG as a user runs it, in a session of its own; returned once both
    trials train (the last wave started)."""
    config = tmp_path / "long.yaml"
    config.write_text(yaml.safe_dump(LONG), encoding="utf-8")
    command = [sys.executable, "-m", "search", "launch", str(config), "--out", str(tmp_path),
               "--address", "local", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip

    def both_train_or_ended() -> bool:
        if proc.poll() is not None:
            return True
        with contextlib.suppress(sqlite3.Error):
            with sqlite3.connect(f"file:{tmp_path / 'npas.db'}?mode=ro", uri=True) as db:
                epochs = db.execute("SELECT count(DISTINCT trial_id) FROM "
                                    "trial_intermediate_values").fetchone()[0]  # fmt: skip
            return epochs == 2  # both trials train
        return False

    wait_until(both_train_or_ended, 120, interval_s=0.3, raise_on_timeout=False)
    return proc


@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGTERM, False), (signal.SIGTERM, True), (signal.SIGINT, True)],
    ids=["SIGTERM to the launch", "SIGTERM to its process group", "Ctrl-C"],
)
def test_a_stop_signal_after_the_last_trial_started_ends_the_search_cleanly(tmp_path, sig, group):
    """Both trials running (the last wave started): SIGTERM to `search launch`, or to its whole
    process group as a shell's `kill %1` or a service manager sends it, or Ctrl-C (SIGINT to
    the group) ends the search through its own stop, not Ray's abort nor the grace timer's: the
    group holds the launch alone (Ray's local raylet and GCS would die with it, and Ray end the
    search with 1), exit 128 + the signal, and says what was kept."""
    proc = _launch_long(tmp_path)
    try:
        assert proc.poll() is None, "the search ended before it could be stopped"
    finally:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, err[-2000:]
    name = signal.Signals(sig).name
    assert f"search launch: interrupted: search 'long' stopped by {name} after 0 of 2" in err
    assert "relaunch the same command" in err
    # the trials' fates in words (it said "0 trial(s) cut short [] …"), and no timestamped
    # Ray Tune WARNING of its own stop between the launch's lines
    assert "[]" not in err and "Stop signal received" not in err and " WARNING " not in err, err
    study = optuna.load_study(study_name="long", storage=f"sqlite:///{tmp_path}/npas.db")
    assert trials_counted(study) == 0 and len(study.trials) == 2


def _wait_status(procs: list[psutil.Process], stopped: bool) -> None:
    """Until every process is stopped (or none is), 30 s at most."""
    wait_until(lambda: all((p.status() == psutil.STATUS_STOPPED) == stopped for p in procs), 30,
               what=lambda: f"every process {'stopped' if stopped else 'running'}: "
                            f"{[(p.name(), p.status()) for p in procs]}")  # fmt: skip


def test_ctrl_z_stops_the_search_and_its_ray_and_fg_continues_them(tmp_path):
    """Ctrl-Z reaches the launch's group (the launch alone): the search and its Ray, in a
    group of their own, stop with it; `fg` (SIGCONT) continues them, and the search then
    stops cleanly as ever."""
    proc = _launch_long(tmp_path)
    try:
        assert proc.poll() is None, "the search ended before it could be stopped"
        tree = psutil.Process(proc.pid).children(recursive=True)
        ray_core = [p for p in tree if p.name() in ("gcs_server", "raylet")]
        search = [p for p in tree if p.ppid() == proc.pid]
        os.killpg(proc.pid, signal.SIGTSTP)
        _wait_status([psutil.Process(proc.pid), *search, *ray_core], stopped=True)
        os.killpg(proc.pid, signal.SIGCONT)
        _wait_status([psutil.Process(proc.pid), *search, *ray_core], stopped=False)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, err[-2000:]
    assert "search launch: interrupted: search 'long' stopped by SIGTERM" in err


def test_a_killed_launch_leaves_no_search_running(tmp_path):
    """SIGKILL to `search launch` (nothing can pass it on): the search it runs in a child
    process group, and that search's Ray, die with it."""
    proc = _launch_long(tmp_path)
    try:
        assert proc.poll() is None, "the search ended before it could be killed"
        tree = psutil.Process(proc.pid).children(recursive=True)
        names = {p.pid: p.name() for p in tree}
        assert {"gcs_server", "raylet"} <= set(names.values()), names
        search = [p for p in tree if p.ppid() == proc.pid]
        assert len(search) == 1 and os.getpgid(search[0].pid) != os.getpgid(proc.pid)
        raylet = next(p for p in tree if names[p.pid] == "raylet")
        assert SUPERVISED not in raylet.environ()  # what the search starts is not supervised
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    ray_core = [p for p in tree if names[p.pid] in ("gcs_server", "raylet")]
    _, alive = psutil.wait_procs([*search, *ray_core], timeout=60)
    for left in alive:
        left.kill()
    assert not alive, [names[p.pid] for p in alive]


def test_killed_search_relaunches_without_losing_trials(tmp_path):
    optimiser = "tpe"
    proc = _launch_then_signal(tmp_path, optimiser, signal.SIGKILL)
    proc.communicate()
    url = f"sqlite:///{tmp_path}/npas.db"
    killed = optuna.load_study(study_name=f"t-{optimiser}", storage=url)
    before = _snapshot(killed)
    assert 3 <= len(before) < 12

    study = launch(
        make_config(tmp_path, optimiser=optimiser, trials=12), trial_fn=slow_trial, progress=False
    )
    assert {n: v for n, v in _snapshot(study).items() if n in before} == before
    assert trials_counted(study) == 12
    interrupted = [t for t in study.trials if t.state == TrialState.FAIL]
    assert all(t.user_attrs["error"].startswith("interrupted") for t in interrupted)
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) == 12
    assert not study.get_trials(states=(TrialState.RUNNING,))


def dropping_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """fake_trial (mlp) that breaks the search's storage in its fourth trial."""
    folder = Path(cfg.artifact_dir)
    if folder.name == "3":
        with sqlite3.connect(folder.parents[2] / "npas.db") as db:
            db.execute("DROP TABLE trial_values")
    return fake_trial(dataclasses.replace(cfg, family="mlp"))


def wrecking_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """fake_trial (mlp) that breaks the search's storage in its fourth trial: the results'
    table and the lease's are dropped, so the lease cannot be freed either."""
    folder = Path(cfg.artifact_dir)
    if folder.name == "3":
        with sqlite3.connect(folder.parents[2] / "npas.db") as db:
            db.execute("DROP TABLE trial_values")
            db.execute("DROP TABLE npas_leases")
    return fake_trial(dataclasses.replace(cfg, family="mlp"))


def test_a_storage_failing_when_the_lease_is_freed_does_not_mask_the_error(tmp_path, capsys):
    """The lease release in the launch's cleanup failed too, and its traceback hid the error
    that stopped the search: the error seen is the first one, in one line naming the
    storage and what to do (a trial's write, whose transaction reads the lease first)."""
    with pytest.raises(StorageWriteError) as caught:
        launch(make_config(tmp_path, trials=30), trial_fn=wrecking_trial, progress=False)
    text = str(caught.value)
    assert "no such table: npas_leases" in text and "\n" not in text
    assert "a trial could not be written" in text and "freeing its lease" not in text
    assert f"storage sqlite:///{tmp_path}/npas.db (" in text and "relaunch the search" in text


def test_a_storage_that_fails_stops_the_search_with_its_error(tmp_path):
    with pytest.raises(StorageWriteError, match="no such table: trial_values"):
        launch(make_config(tmp_path, trials=30), trial_fn=dropping_trial, progress=False)
    with sqlite3.connect(tmp_path / "npas.db") as db:
        stored = db.execute("SELECT count(*) FROM trials").fetchone()[0]
    assert 3 <= stored < 30  # what was written before is kept; no trial ran unrecorded after


@needs_mnist
@pytest.mark.parametrize("via", ["NPAS_DATA", "data_root"])
def test_a_relative_data_root_means_where_the_search_was_launched(tmp_path, monkeypatch, via):
    """Ray Tune runs each trial in its own folder: a relative root (the config's, or
    ``NPAS_DATA``) must still name the folder the user meant, from where they launched."""
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(MNIST.parent, tmp_path)  # the folder holding mnist/
    if via == "NPAS_DATA":
        monkeypatch.setenv("NPAS_DATA", relative)
    else:
        monkeypatch.delenv("NPAS_DATA", raising=False)
    config = make_config(
        tmp_path / "run",
        optimiser="random",
        trials=1,
        dataset="mnist",
        train_size=300,
        val_size=100,
        data_root=relative if via == "data_root" else None,
        train={**load_preset("digits-quick").train, "epochs": 1},
        space={"family": {"choices": ["mlp"]}, "mlp.depth": {"low": 1, "high": 1},
               "mlp.width": {"low": 16, "high": 16}, "budget": {"low": 1000, "high": 1500}},
        fixed={"ssn.mapping": "single"},
        indicators=["params"],
    )  # fmt: skip
    (trial,) = launch(config, progress=False).trials
    assert trial.state == TrialState.COMPLETE, trial.user_attrs
    assert trial.user_attrs["trial_config"]["data_root"] == str(MNIST.parent.resolve())


def test_real_run_trial_on_digits(tmp_path):
    config = digits_config(tmp_path, epochs=1)
    study = launch(config, progress=False)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    # The conditions, the same for both trials, are recorded once, on the study.
    assert study.user_attrs["cond_device"] == "cpu" and "cond_torch" in study.user_attrs
    for trial in study.trials:
        assert "metric_cond_device" not in trial.user_attrs
        metrics = metrics_of(trial, conditions_of(study))
        assert metrics["cond_flop_convention"] == study.user_attrs["cond_flop_convention"]
        assert 0.1 < metrics["accuracy"] <= 1.0 and metrics["params"] <= 1500
        assert Path(trial.user_attrs["artifact"]).is_file()
        folder = trial.user_attrs["trial_config"]["artifact_dir"]
        assert trial.user_attrs["artifact"].startswith(folder)
