"""Multi-fidelity searches: learning curves in the storage, MOASHA stops, PRUNED records,
resume, and the search's own limits. Real Ray, real SQLite, read back through Optuna's API."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import optuna
import pytest
import ray
from optuna.trial import TrialState

from search._dashboard import start_dashboard, stop_dashboard
from search.cli import main
from search.config import TrialConfig, load_config
from search.errors import ConfigError
from search.optimisers import OPTIMISERS
from search.record import trials_counted
from search.record._counting import counts
from search.record._curves import rung_history
from search.record._records import metrics_of
from search.report import write_report
from search.run import launch
from search.schedulers._rungtrust import MIN_PAIRS, UNTRUSTED
from tests._support.curves import EPOCHS, curve_config, curve_trial, slow_curve_trial
from tests._support.notes import notes
from tests._support.searches import make_config
from tests._support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("local_ray")  # every test searches on a local Ray

ROOT = Path(__file__).resolve().parents[3]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


def test_moasha_search_records_curves_pruned_and_complete_trials(tmp_path):
    study = launch(curve_config(tmp_path, 12), trial_fn=curve_trial, progress=False)
    stored = optuna.load_study(study_name=study.study_name, storage=f"sqlite:///{tmp_path}/npas.db")
    pruned = stored.get_trials(states=(TrialState.PRUNED,))
    complete = stored.get_trials(states=(TrialState.COMPLETE,))
    assert pruned and complete and len(pruned) + len(complete) == 12
    assert trials_counted(stored) == 12
    for trial in complete:
        assert sorted(trial.intermediate_values) == list(range(1, EPOCHS + 1))
        assert len(trial.user_attrs["curve"]) == EPOCHS and trial.values is not None
    for trial in pruned:
        epoch = trial.user_attrs["pruned_at_epoch"]
        assert epoch in (1, 3) and sorted(trial.intermediate_values) == list(range(1, epoch + 1))
        assert trial.values is None and metrics_of(trial)["params"] > 0
    assert stored.user_attrs["search_energy_j"] > 0 and stored.user_attrs["search_time_s"] > 0
    # Only fully trained trials are on the front.
    assert {t.number for t in stored.best_trials} <= {t.number for t in complete}
    paths = write_report(stored, tmp_path / "report")
    assert "learning_curves.png" in paths
    text = paths["report.md"].read_text()
    assert "## Learning curves" in text and f"{len(pruned)} were stopped early" in text


def stuck_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """curve_trial, but a trial with a budget below 1,500 is stuck at chance (10 %) with the
    fewest parameters: an end of every rung's first front by non-dominated sorting alone."""
    if cfg.budget >= 1500:
        return curve_trial(cfg, on_epoch)
    for epoch in range(1, EPOCHS + 1):
        time.sleep(0.02)
        if on_epoch is not None:
            on_epoch({"epoch": epoch, "accuracy": 0.1, "params": 1.0, "at_chance": True,
                      "train_time_s": 0.02 * epoch})  # fmt: skip
    return {"accuracy": 0.1, "params": 1.0, "feasible": 1.0, "epochs": EPOCHS,
            "trial_time_s": 0.2, "trial_energy_j": 2.0}  # fmt: skip


def test_trials_at_chance_stop_at_the_first_rung_and_their_curves_say_so(tmp_path):
    study = launch(curve_config(tmp_path, 14), trial_fn=stuck_trial, progress=False)
    stored = optuna.load_study(study_name=study.study_name, storage=f"sqlite:///{tmp_path}/npas.db")
    stuck = [t for t in stored.trials if t.params["budget"] < 1500]
    assert stuck and len(stuck) < len(stored.trials)
    for trial in stuck:
        assert trial.state == TrialState.PRUNED and trial.user_attrs["pruned_at_epoch"] == 1
        assert trial.user_attrs["curve"] == [
            {"epoch": 1, "accuracy": 0.1, "train_time_s": 0.02, "violation": 0.0,
             "at_chance": True}
        ]  # fmt: skip
    assert all(not p.get("at_chance") for t in stored.trials if t not in stuck
               for p in t.user_attrs["curve"])  # fmt: skip
    # A resumed search's rungs read them back: stuck again, whatever the rung's ranking.
    assert any(h[2] == {1} for h in rung_history(stored, ["accuracy", "params"]))


def test_a_resumed_moasha_search_keeps_its_pruned_trials(tmp_path):
    launch(curve_config(tmp_path, 6), trial_fn=curve_trial, progress=False)
    study = launch(curve_config(tmp_path, 10), trial_fn=curve_trial, progress=False)
    assert len(study.trials) == 10 and trials_counted(study) == 10
    assert study.get_trials(states=(TrialState.PRUNED,))
    assert not study.get_trials(states=(TrialState.RUNNING,))


@pytest.mark.parametrize("optimiser", OPTIMISERS.names())
def test_every_optimiser_searches_and_resumes_under_moasha(tmp_path, optimiser):
    launch(curve_config(tmp_path, 6, optimiser), trial_fn=curve_trial, progress=False)
    study = launch(curve_config(tmp_path, 9, optimiser), trial_fn=curve_trial, progress=False)
    assert trials_counted(study) == 9 and study.get_trials(states=(TrialState.PRUNED,))
    assert not study.get_trials(states=(TrialState.FAIL,))


def costly_trial(cfg: TrialConfig, on_epoch: Any = None) -> dict[str, Any]:
    """curve_trial that says it took 1,000 s: once one has ended, another would pass a time
    limit below that."""
    return {**curve_trial(cfg, on_epoch), "trial_time_s": 1000.0}


def test_a_time_limit_stops_starting_trials_and_ends_cleanly(tmp_path, capfd):
    # Decided by what the trials report, not by how fast a loaded machine runs them: the
    # limit's clock (elapsed seconds) is tested with a clock of the test's in test_storage.
    config = make_config(tmp_path, optimiser="random", trials=40, limits={"time": 500.0})
    study = launch(config, trial_fn=costly_trial, progress=True)
    assert 1 <= len(study.trials) < 40
    assert not study.get_trials(states=(TrialState.RUNNING,))
    assert study.user_attrs["search_time_s"] > 0
    # No trial started once the search knew of one that ended (the trials then in flight
    # finished); the storage's own times, written by the one process that decides.
    first_end = min(t.datetime_complete for t in study.trials)
    assert all(t.datetime_start <= first_end for t in study.trials)
    err = "\n".join(notes(capfd.readouterr().err))  # each wrapped note one line
    assert "no further trial started: the time limit (500 s)" in err


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"scheduler": {"name": "asha"}}, "scheduler.name"),
        ({"scheduler": {"name": "moasha", "reduction_factor": 1}}, "reduction_factor"),
        ({"scheduler": {"name": "moasha", "grace": 2}}, "grace_epochs"),
        ({"limits": {"time": "soon"}}, "limits.time"),
        ({"limits": {"energy_j": -1}}, "limits.energy_j"),
    ],
)
def test_bad_scheduler_and_budget_sections_are_refused(tmp_path, section, fragment):
    data = make_config(tmp_path).to_dict() | section
    with pytest.raises(ConfigError, match=fragment):
        load_config(data)


def test_cli_time_budget_is_parsed_and_bad_ones_exit_2(tmp_path, capsys):
    assert main(["launch", "--time-limit", "soon", "--out", str(tmp_path)]) == 2
    assert "limits.time" in capsys.readouterr().err
    config = make_config(tmp_path).with_overrides(time_limit="45m")
    assert config.limits.time == 45 * 60


def test_the_dashboard_serves_the_learning_curves(tmp_path):
    launch(curve_config(tmp_path, 6), trial_fn=curve_trial, progress=False)
    process, url = start_dashboard(f"sqlite:///{tmp_path}/npas.db")
    try:
        studies = _get(f"{url}/api/studies")["study_summaries"]
        trials = _get(f"{url}/api/studies/{studies[0]['study_id']}")["trials"]
    finally:
        stop_dashboard(process)
    states = {t["state"] for t in trials}
    assert states == {"Complete", "Pruned"}
    for trial in trials:  # the dashboard shows feasibility (the one constraint: feasible)
        assert trial["constraints"] == ([0.0] if trial["state"] == "Complete" else [])
    for trial in trials:
        steps = [p["step"] for p in trial["intermediate_values"]]
        expected = EPOCHS if trial["state"] == "Complete" else max(steps)
        assert steps == list(range(1, expected + 1)), trial["number"]
        assert all(0 <= p["value"] <= 1 for p in trial["intermediate_values"])


KILLED = """
import sys, time
sys.path.insert(0, {root!r})
import ray
from pathlib import Path
from search.run import launch
from tests._support.curves import curve_config, slow_curve_trial

ray.init(address={address!r}, log_to_driver=False)
launch(curve_config(Path({out!r}), 12), trial_fn=slow_curve_trial, progress=False)
"""


def test_a_killed_moasha_search_resumes_with_its_curves(tmp_path):
    address = ray.get_runtime_context().gcs_address
    script = KILLED.format(root=str(ROOT), address=address, out=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    url = f"sqlite:///{tmp_path}/npas.db"

    def three_counted_or_ended() -> bool:
        if proc.poll() is not None:
            return True
        with contextlib.suppress(KeyError):  # the study is not created yet
            return trials_counted(optuna.load_study(study_name="t-random", storage=url)) >= 3
        return False

    try:
        wait_until(three_counted_or_ended, 120, interval_s=0.2, raise_on_timeout=False)
        assert proc.poll() is None, "the search ended before it could be killed"
    finally:
        proc.kill()
        proc.wait()
    killed = optuna.load_study(study_name="t-random", storage=url)
    before = {t.number: (t.state, t.intermediate_values) for t in killed.trials if counts(t)}
    assert before
    study = launch(curve_config(tmp_path, 12), trial_fn=slow_curve_trial, progress=False)
    after = {t.number: (t.state, t.intermediate_values) for t in study.trials}
    assert {n: after[n] for n in before} == before, "what ended before the kill is kept"
    assert trials_counted(study) == 12 and not study.get_trials(states=(TrialState.RUNNING,))
    assert study.get_trials(states=(TrialState.PRUNED,))


def test_a_memory_request_packs_trials_and_one_beyond_the_cluster_is_refused(tmp_path):
    config = curve_config(tmp_path, 3, resources={"cpu": 1, "memory_mb": 64})
    assert config.resources.ray()["memory"] == 64 * 2**20
    study = launch(config, trial_fn=curve_trial, progress=False)
    assert trials_counted(study) == 3
    huge = curve_config(tmp_path / "huge", 3, resources={"cpu": 1, "memory_mb": 10**9})
    with pytest.raises(ConfigError, match="memory="):
        launch(huge, trial_fn=curve_trial, progress=False)


def test_front_order_and_early_promotion_reach_the_scheduler_from_the_config(tmp_path):
    """``early_promotion``: the first trial to reach a rung is promoted on arrival (under
    ``floor`` it pauses, alone at the rung); ``front_order: hypervolume`` runs the search."""
    scheduler = {"name": "moasha", "type": "promotion", "reduction_factor": 3,
                 "front_order": "hypervolume", "early_promotion": True}  # fmt: skip
    study = launch(curve_config(tmp_path, 9, scheduler=scheduler), trial_fn=curve_trial,
                   progress=False)  # fmt: skip
    decisions = [d for t in study.trials for d in t.user_attrs.get("npas:decisions", [])]
    first = [d for d in decisions if d["arrival"] == 0 and d["outcome"] != "stop"]
    assert {d["rung"] for d in first} == {1, 3}
    assert all(d["outcome"] == "promote" for d in first), first
    assert study.get_trials(states=(TrialState.COMPLETE,))


def test_trusted_rungs_let_trials_on_until_the_curves_show_them_and_say_why(tmp_path):
    """``trust_rungs``: a rung stops nothing before MIN_PAIRS trials have trained whole (the
    curve trial's epochs rank its last exactly, so the rungs are trusted after that)."""
    scheduler = {"name": "moasha", "reduction_factor": 3, "trust_rungs": True}
    study = launch(curve_config(tmp_path, 16, scheduler=scheduler), trial_fn=curve_trial,
                   progress=False)  # fmt: skip
    decisions = [d for t in study.trials for d in t.user_attrs.get("npas:decisions", [])]
    assert any(d["outcome"] == "continue" and d.get("why") == UNTRUSTED for d in decisions)
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) >= MIN_PAIRS
    assert study.get_trials(states=(TrialState.PRUNED,))  # trusted once they had
