"""Time limits on trials in flight: ``limits.trial_timeout`` stops a trial at the epoch its
training time reaches the limit (pruned, with the reason, its checkpoint kept); ``limits.time``
stops every trial in flight at its next epoch, leaves them RUNNING with their checkpoints, and
a relaunch with more time goes on with them from there. Real Ray Tune, read back through
Optuna's own API."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from optuna.trial import TrialState

from search.cli import main
from search.config._search import LimitsConfig
from search.record import trials_counted
from search.record._schema import RayKey, TrialAttr
from search.record._study import INTERRUPTED
from search.run import launch
from search.run._checkpoints import checkpoint_folders, latest_checkpoint
from search.run._cost import SearchCost
from search.run._limits import GRACE_S, OUT_OF_TIME, TrialLimits
from tests._support.checkpointing import (
    check_each_epoch_ran_once_but_the_one_in_flight,
    checkpointing_config,
    epoch_log,
    epochs_by_trial,
    slow_checkpointing_trial,
)
from tests._support.notes import notes


def _epoch(seconds: float) -> dict:
    return {RayKey.CURVE: json.dumps({"epoch": 1, "elapsed_s": seconds})}


def test_the_limits_stop_at_an_epoch_and_say_why() -> None:
    cost = SimpleNamespace(elapsed_s=0.0)
    limits = TrialLimits(LimitsConfig(time=100.0, trial_timeout=10.0), cost)
    assert limits("a", _epoch(9.9)) is False
    assert limits("a", _epoch(10.0)) is True
    assert limits.why["a"].startswith("trial timeout: 10 s of training >= 10 s")
    assert limits("b", {"npas_metrics": "{}"}) is False  # a final result ends it anyway
    cost.elapsed_s = 100.0
    assert limits.out_of_time and limits("c", _epoch(0.5)) is True
    assert limits.why["c"] == OUT_OF_TIME
    unsaved = TrialLimits(LimitsConfig(time=100.0), cost, adjourn=False)
    assert unsaved("e", _epoch(0.5)) is False  # no checkpoint to go on from: it finishes
    unlimited = TrialLimits(LimitsConfig(), cost)
    assert not unlimited.out_of_time and unlimited("d", _epoch(1e9)) is False


def test_a_spent_time_ends_the_search_after_a_silence_longer_than_an_epoch() -> None:
    cost = SimpleNamespace(elapsed_s=0.0)
    limits = TrialLimits(LimitsConfig(time=100.0), cost)
    for at, trained in ((10.0, 20.0), (90.0, 50.0)):  # epochs of 20 s (unknown), then 30 s
        cost.elapsed_s = at
        limits("a", _epoch(trained))
    assert limits.longest_epoch_s == 30.0 and not limits.stop_all()
    cost.elapsed_s = 100.0 + GRACE_S  # spent, silent for the grace: not yet more than it
    assert limits.out_of_time and not limits.stop_all()
    cost.elapsed_s = 100.0 + GRACE_S + 1.0  # nothing in flight reports any more: it ends
    assert limits.stop_all()
    cost.elapsed_s = 250.0
    limits("b", _epoch(1.0))  # a trial in flight reported: it stops there, the search waits
    assert not limits.stop_all()
    limits("b", _epoch(201.0))  # a 200 s epoch: silence must outlast three of them
    cost.elapsed_s = 250.0 + 3 * 200.0
    assert not limits.stop_all()
    cost.elapsed_s += 1.0
    assert limits.stop_all()
    unsaved = TrialLimits(LimitsConfig(time=100.0), SimpleNamespace(elapsed_s=1e6),
                          adjourn=False)  # fmt: skip
    assert not unsaved.stop_all()  # without checkpoints the trials finish, however long
    assert not TrialLimits(LimitsConfig(), SimpleNamespace(elapsed_s=1e9)).stop_all()


def silent_trial(cfg, on_epoch=None, on_state=None, resume=None):
    """A checkpointing trial whose first epoch outlasts the search's time (it leaves its
    worker's pid first, as every slow checkpointing trial does)."""
    folder = Path(cfg.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pid").write_text(str(os.getpid()))
    time.sleep(20)
    return slow_checkpointing_trial(cfg, on_epoch, on_state, resume)


def time_from_a_trials_start(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    """The launches' clock stands still until a trial under ``out`` has started (left its
    pid): a time limit then runs out with trials in flight however long the launch took to
    start one (a CI run once spent a 5 s limit before its first trial, which never started)."""
    started: list[float] = []

    def clock() -> float:
        if not started and any(out.rglob("pid")):
            started.append(time.monotonic())
        return time.monotonic() - started[0] if started else 0.0

    monkeypatch.setattr("search.run._launch.SearchCost",
                        lambda limits, started: SearchCost(limits, clock=clock))  # fmt: skip


@pytest.mark.usefixtures("local_ray")
def test_time_up_before_any_epoch_ends_the_search_without_an_error_and_the_trials_run_again(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr("search.run._limits.GRACE_S", 1.0)  # the silence that ends it
    time_from_a_trials_start(monkeypatch, tmp_path)
    cfg = checkpointing_config(tmp_path, "fifo")
    # 5 s after a trial started, well before its first epoch (20 s)
    short = type(cfg).from_dict({**cfg.to_dict(), "trials": 2, "limits": {"time": 5}})
    first = launch(short, trial_fn=silent_trial, progress=True)  # no stop signal: no error
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    cut = first.get_trials(states=(TrialState.FAIL,))
    assert cut and not first.get_trials(states=(TrialState.RUNNING, TrialState.COMPLETE))
    assert all(t.user_attrs["error"] == INTERRUPTED for t in cut)  # what a relaunch runs again
    assert f"time is up: {len(cut)} trial(s) {[t.number for t in cut]} had reported no" in err
    assert "SIGINT" not in err
    assert main(["status", "--run", str(tmp_path), "--format", "json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    assert (status["interrupted"], status["running"]) == (len(cut), 0), status


@pytest.mark.usefixtures("local_ray")
def test_a_trial_past_its_timeout_is_pruned_with_the_reason_and_keeps_its_checkpoint(
    tmp_path, capsys
):
    cfg = checkpointing_config(tmp_path, "fifo")
    cfg = type(cfg).from_dict({**cfg.to_dict(), "trials": 2,
                               "limits": {"trial_timeout": 0.25 * 3}})  # fmt: skip
    study = launch(cfg, trial_fn=slow_checkpointing_trial, progress=False)
    for trial in study.trials:
        assert trial.state == TrialState.PRUNED, trial.user_attrs.get("error")
        assert trial.user_attrs[TrialAttr.STOPPED].startswith("trial timeout: 0.75 s of training")
        assert [p["epoch"] for p in trial.user_attrs["curve"]] == [1, 2, 3]
        assert latest_checkpoint(trial) is not None  # kept: it may be exported from there
    main(["status", "--run", str(tmp_path), "--trial", "1"])
    shown = " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns, joined
    assert "trial 1: PRUNED (stopped early) after 3 epoch(s)" in shown
    assert "why it ended: trial timeout: 0.75 s of training >= 0.75 s" in shown
    assert f"checkpoint: {latest_checkpoint(study.trials[1])}" in shown
    main(["status", "--run", str(tmp_path)])
    assert f"Run folder {tmp_path}: " in capsys.readouterr().out


@pytest.mark.usefixtures("local_ray")
def test_time_up_adjourns_the_trials_in_flight_and_a_relaunch_goes_on_with_them(
    tmp_path, monkeypatch, capsys
):
    cfg = checkpointing_config(tmp_path, "promotion")
    # 1.5 s from the first trial's start: 6 of its 9 epochs (of 0.25 s), with trials in flight
    short = type(cfg).from_dict({**cfg.to_dict(), "limits": {"time": 1.5}})
    with monkeypatch.context() as patched:
        time_from_a_trials_start(patched, tmp_path)
        first = launch(short, trial_fn=slow_checkpointing_trial, progress=False)
    running = first.get_trials(states=(TrialState.RUNNING,))
    assert running, [t.state for t in first.trials]
    for trial in running:  # adjourned: a checkpoint, no interruption recorded
        assert latest_checkpoint(trial) is not None and "error" not in trial.user_attrs
    epochs = {t.number: len(t.user_attrs.get("curve", [])) for t in running}
    decided = {t.number: len(t.user_attrs.get("npas:decisions", [])) for t in running}
    folders = {t.number: t.user_attrs[TrialAttr.RAY_TRIAL] for t in running}
    cut = len(epoch_log(tmp_path))
    # Nothing runs them now (no launch holds the search): status says adjourned, not running.
    assert main(["status", "--run", str(tmp_path), "--format", "json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    assert (status["running"], status["interrupted"]) == (0, 0), status
    assert status["adjourned"] == len(running), status
    assert main(["status", "--run", str(tmp_path)]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns, joined
    assert f"{len(running)} adjourned (adjourned: " in shown and "0 running" in shown
    main(["status", "--run", str(tmp_path), "--trial", str(running[0].number), "--format", "json"])
    one = json.loads(capsys.readouterr().out)
    assert (one["state"], one["outcome"]) == ("RUNNING", "adjourned"), one
    assert one["epochs"] == epochs[running[0].number] and one["checkpoint"] is not None

    # A relaunch whose time is spent before it reaches them leaves them adjourned: nobody
    # stopped it (it once said "stopped by SIGINT", exit 130).
    brief = type(cfg).from_dict({**cfg.to_dict(), "limits": {"time": 0.01}})
    again = launch(brief, trial_fn=slow_checkpointing_trial, progress=True)
    still = {t.number for t in again.get_trials(states=(TrialState.RUNNING,))}
    assert still == set(epochs) and not again.get_trials(states=(TrialState.FAIL,))
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert f"{len(still)} trial(s) {sorted(still)} adjourned" in err

    study = launch(cfg, trial_fn=slow_checkpointing_trial, progress=False)
    assert trials_counted(study) == cfg.trials
    bad = study.get_trials(states=(TrialState.RUNNING, TrialState.FAIL))
    assert not bad, [(t.number, t.state.name, t.user_attrs.get("error")) for t in bad]
    assert main(["status", "--run", str(tmp_path), "--format", "json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    assert status["adjourned"] == 0 and status["trials"] == len(study.trials), status
    check_each_epoch_ran_once_but_the_one_in_flight(epochs_by_trial(epoch_log(tmp_path)))
    for number, former in folders.items():  # each went on in a new folder; the old one's
        trial = study.trials[number]        # checkpoints are gone once it ended
        assert trial.user_attrs[TrialAttr.RAY_TRIAL] != former and not checkpoint_folders(former)
        ran = trial.state == TrialState.COMPLETE and not trial.user_attrs.get(TrialAttr.STOPPED)
        assert (latest_checkpoint(trial) is not None) == ran, (number, trial.user_attrs)
    after = epochs_by_trial(epoch_log(tmp_path)[cut:])
    for number, done in epochs.items():
        curve = [p["epoch"] for p in study.trials[number].user_attrs["curve"]]
        assert curve == list(range(1, len(curve) + 1)) and len(curve) >= done
        if number in after:  # went on after its last epoch, not from the start
            assert min(after[number]) == done + 1, (number, done, after[number])
        else:  # adjourned at a rung: decided there again, then paused or stopped
            assert len(study.trials[number].user_attrs["npas:decisions"]) > decided[number]
    main(["status", "--run", str(tmp_path), "--trial", str(min(epochs)), "--format", "csv"])
    shown = pd.read_csv(io.StringIO(capsys.readouterr().out))
    decided = study.trials[min(epochs)].user_attrs["npas:decisions"]
    assert shown.to_dict("records") == pd.DataFrame(decided).to_dict("records")


class _Gate:
    """A promotion scheduler's gate: always open; what the searcher closed it with."""

    def __init__(self) -> None:
        self.closed: list[str | None] = []

    def limit(self, *, slots: int, total: int | None) -> None:
        pass

    def may_start(self) -> bool:
        return True

    def close(self, why: str | None = None) -> None:
        self.closed.append(why)


def test_a_time_limit_foreseen_adjourns_the_paused_trials_as_a_spent_one_does(
    tmp_path,
) -> None:
    """The search's time usually ends it before it is spent: another trial would pass it at
    the pace so far. The paused trials are then adjourned (RUNNING, their checkpoints kept),
    as when it is spent; a 45-min MNIST search had its 53 paused trials stopped instead."""
    import optuna

    from search.record._storage import open_storage
    from search.record._study import open_study
    from search.run._bound import bound_optimiser, constraint_keys
    from search.run._outcome import OutcomeReader
    from search.run._searcher import NpasSearcher
    from search.schedulers import attach
    from tests._support.searches import make_config

    config = make_config(tmp_path, optimiser="random", trials=8)
    rdb = open_storage(config.storage_url)
    study = open_study(name=config.name, storage=rdb, sampler=optuna.samplers.RandomSampler(),
                       config=config.to_dict(), objectives=config.objectives,
                       constraints=config.constraint_texts, optimiser="random")  # fmt: skip
    now = [0.0]
    limits = LimitsConfig(time=100.0)
    cost = SearchCost(limits, clock=lambda: now[0])
    gate = _Gate()
    searcher = NpasSearcher(
        bound_optimiser(config, study, seed=0, scheduler="moasha"),
        outcomes=OutcomeReader(config.objectives, constraint_keys(config)),
        trial_config=lambda point, number: config.trial_config(point),
        limits=TrialLimits(limits, cost),
    )  # fmt: skip
    assert attach(gate, searcher, slots=2, total=None) is gate and searcher.gate is gate
    for trial_id in ("paused", "stopped"):
        assert isinstance(searcher.suggest(trial_id), dict)
        folder = tmp_path / "ray" / trial_id
        (folder / "checkpoint_000001").mkdir(parents=True)
        searcher.on_folder(trial_id, str(folder))
        epoch = {**_epoch(1.0), RayKey.EPOCH: 1, "accuracy": 0.5, "params": 10.0}
        searcher.on_trial_result(trial_id, epoch)
    cost.add({"trial_time_s": 60.0})  # one trial took a minute: at 50 s another would pass 100
    now[0] = 50.0
    assert searcher.suggest("next") == "FINISHED" and gate.closed == [OUT_OF_TIME]
    assert not searcher.limits.out_of_time  # foreseen, not spent
    searcher.on_decision({"trial_id": "paused", "rung": 1, "outcome": "adjourn"})
    searcher.on_trial_complete("paused")  # Ray Tune stops a paused trial without a result
    searcher.on_trial_complete("stopped")  # one the scheduler stopped: not adjourned
    assert searcher.is_adjourned("paused") and not searcher.is_adjourned("stopped")
    states = [t.state for t in searcher.optimiser.study.trials]  # what the search holds
    assert states == [TrialState.RUNNING, TrialState.PRUNED]
