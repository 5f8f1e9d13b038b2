"""Finalists (search.run._finalists): the choice rule on hand-computed per-seed scores, and a
tiny real search on digits whose finalists are retrained, recorded and read back through
Optuna's API, exported by ``search export`` without ``--select``, named by ``search status``,
stopped by a real SIGTERM during the finalists and finished by a relaunch that trains only
the runs missing."""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import torch
import yaml
from optuna.trial import TrialState

from search.cli import main
from search.config import FinalistsConfig, load_config
from search.errors import SearchInterrupted
from search.record import StudyAttr, TrialAttr, chance_warning, recommended_line
from search.run import launch
from search.run._finalists import (
    RUN_OVERHEAD_S,
    Finalist,
    choose,
    finalists_of,
    plan,
    race,
    run_finalists,
)
from spaces import ConfigError
from tests._support.notes import notes
from tests._support.waiting import wait_until
from tests.search_tests.studies import npas_study

ROOT = Path(__file__).resolve().parents[3]


def _finalist(trial: int, accuracy: float) -> Finalist:
    return Finalist(trial, accuracy, (1, 2, 3), {})


def _runs(**by_trial: list[tuple[float | None, bool, str | None]]) -> dict:
    return {name.removeprefix("t"): {str(seed): {"accuracy": a, "feasible": f, "error": e}
                                     for seed, (a, f, e) in enumerate(runs, start=1)}
            for name, runs in by_trial.items()}  # fmt: skip


def test_the_recommendation_is_the_best_mean_of_the_finalists_within_the_constraints():
    # Search order (by the one validation accuracy that chose them): 4, 9, 2, 7.
    finalists = [_finalist(4, 0.97), _finalist(9, 0.96), _finalist(2, 0.95), _finalist(7, 0.94)]
    runs = _runs(
        t4=[(0.90, True, None), (0.92, True, None), (0.91, True, None)],  # mean 0.91
        t9=[(0.95, True, None), (0.96, True, None), (0.97, False, None)],  # best, breaks one
        t2=[(0.93, True, None), (0.92, True, None), (0.94, True, None)],  # mean 0.93: chosen
        t7=[(0.99, True, None), (None, False, "NonFiniteLossError: nan"), (0.99, True, None)],
    )
    found = choose(finalists, runs, 3)
    assert found["trial"] == 2 and found["n"] == 3 and found["complete"]
    assert found["mean"] == pytest.approx(0.93) and found["accuracies"] == [0.93, 0.92, 0.94]
    assert found["std"] == pytest.approx(statistics.stdev([0.93, 0.92, 0.94]))
    assert found["seeds"] == [1, 2, 3] and found["metric"] == "accuracy"
    rows = {r["trial"]: r for r in found["finalists"]}
    assert [r["trial"] for r in found["finalists"]] == [4, 9, 2, 7]  # the search's order
    assert rows[9]["why_not"] == "seed 3 broke a constraint" and not rows[9]["qualified"]
    assert rows[7]["why_not"] == "seed 2 failed: NonFiniteLossError: nan"
    assert rows[4]["qualified"] and rows[4]["mean"] == pytest.approx(0.91)
    assert "trial 2 0.9300; next: trial 4 0.9100" in found["reason"]
    assert "trial 9 left out: seed 3 broke a constraint" in found["reason"]


def test_a_recommendation_within_two_standard_errors_of_a_constant_guess_says_so():
    """Trial 3's seeds: 0.32, 0.22, 0.34 (mean 0.2933, std 0.0643, its standard error over
    three seeds 0.0371) against a constant guess at 0.29 on the same samples: 0.0033 above
    it, under two standard errors (0.0742): no better than chance. Trial 5's 0.95, 0.96,
    0.97 against 0.29 is far clear of it."""
    runs = _runs(t3=[(0.32, True, None), (0.22, True, None), (0.34, True, None)])
    for run in runs["3"].values():
        run["chance"] = 0.29
    found = choose([_finalist(3, 0.38)], runs, 3)
    assert found["chance"] == pytest.approx(0.29)
    assert "NO BETTER THAN CHANCE: a constant guess of the most frequent class scores 0.2900" in (
        found["reason"])
    assert "NO BETTER THAN CHANCE" in recommended_line(found)
    runs = _runs(t5=[(0.95, True, None), (0.96, True, None), (0.97, True, None)])
    for run in runs["5"].values():
        run["chance"] = 0.29
    found = choose([_finalist(5, 0.97)], runs, 3)
    assert "CHANCE" not in found["reason"] and "CHANCE" not in recommended_line(found)
    # One seed has no spread: only a mean at or below the guess is flagged.
    assert chance_warning({"chance": 0.29, "mean": 0.29, "std": None, "n": 1})
    assert not chance_warning({"chance": 0.29, "mean": 0.30, "std": None, "n": 1})
    assert not chance_warning({"mean": 0.29, "std": None, "n": 1})  # recorded before chance
    # Random labels: two seeds at 0.354 and 0.364 (mean 0.359, their standard error 0.005)
    # against a guess of 0.342 on 2 × 500 samples: an accuracy's standard error at chance
    # there is sqrt(0.342 × 0.658 / 1000) = 0.0150, so 0.017 above it is within two.
    noise = {"chance": 0.342, "mean": 0.359, "std": 0.00707, "n": 2}
    assert not chance_warning(noise)  # the seeds alone: 0.017 > 2 × 0.005
    assert chance_warning(noise | {"samples": 1000})
    assert not chance_warning(noise | {"mean": 0.40, "samples": 1000})  # 0.058 > 0.030


def test_finalists_cut_short_are_compared_on_the_seeds_each_has_and_ties_keep_the_search_order():
    finalists = [_finalist(1, 0.9), _finalist(2, 0.8), _finalist(3, 0.7)]
    # The time ran out after the second seed of trial 1: every retrained one has one seed.
    runs = _runs(t1=[(0.80, True, None), (0.99, True, None)], t2=[(0.80, True, None)])
    found = choose(finalists, runs, 3)
    assert found["trial"] == 1 and found["n"] == 1 and not found["complete"]
    assert found["accuracies"] == [0.80] and found["std"] is None  # one seed: no spread
    assert found["finalists"][2]["why_not"] == "not retrained (the time ran out first)"
    alone = choose(finalists, {}, 3)  # none retrained: the best search run, said so
    assert (alone["trial"], alone["n"], alone["mean"]) == (1, 0, 0.9)
    assert "no finalist was retrained" in alone["reason"] and not alone["complete"]
    nothing = choose(finalists[:1], _runs(t1=[(0.8, False, None)]), 1)
    assert nothing["trial"] is None and "no finalist met every constraint" in nothing["reason"]


@pytest.mark.parametrize(
    ("left", "folds", "workers", "planned"),
    [
        (None, 1, 2, (3, 3)),  # no time limit: as asked
        (100.0, 1, 2, (3, 3)),  # 9 runs of 10 s, 2 at a time, and the refit: 3 rounds of 3 fit
        (48.0, 1, 2, (2, 3)),  # 3 slots after the refit's: 1 round of 3, or 3 rounds of 2
        (48.0, 5, 2, (3, 2)),  # cross-validated: no refit to train, 4 slots: 2 rounds of 3
        (25.0, 1, 2, (2, 1)),  # 1 slot: not 2 finalists × 2 seeds; one round of what fits
        (5.0, 1, 2, (1, 1)),  # nothing fits: one run, which the deadline then refuses
        (48.0, 1, 1, (3, 1)),  # one at a time, 3 slots: a round of 3 (1 × 3 chooses nothing)
    ],
)
def test_the_finalists_are_planned_in_whole_rounds_of_what_the_time_left_trains(
    left, folds, workers, planned
):
    """Three finalists of 10 s runs (the search run and a run's start), three seeds asked:
    fewer finalists with whole rounds of seeds, not a round cut short (whose extra runs the
    choice cannot use)."""
    finalists = [Finalist(t, 0.9, (1, 2, 3), {"folds": folds}, 10.0 - RUN_OVERHEAD_S)
                 for t in (4, 9, 2)]  # fmt: skip
    top, seeds, why = plan(finalists, 3, left, workers, refit=True)
    assert (top, seeds) == planned
    assert (why == "") == (planned == (3, 3))
    if why:
        assert f"what {left:.0f} s trains at 10.0 s a run, {workers} at a time" in why
        assert ("and the refit" in why) == (folds == 1) and "asked: 3 × 3" in why


@pytest.mark.parametrize(
    ("left", "workers", "refit", "kept", "stop"),
    [
        (100.0, 2, True, [4, 9, 2], False),  # a round of 3 (2 slots of 10 s) fits: no cut
        (25.0, 2, False, [4, 9, 2], False),  # 2 slots: still a whole round of 3
        (25.0, 2, True, [9, 2], False),  # 1 slot after the refit's: a round of 2, 4 dropped
        (15.0, 2, True, [], True),  # no slot after the refit's: no further round
        (25.0, 1, False, [9, 2], False),  # one at a time, 2 slots: a round of 2
        (15.0, 1, False, [], True),  # one at a time, 1 slot: one finalist decides nothing
    ],
)
def test_after_a_round_the_race_keeps_the_finalists_one_more_round_fits_by_their_means(
    left, workers, refit, kept, stop
):
    """Three finalists after one seed (means 0.80, 0.90, 0.85), runs of 10 s measured: the
    next round is planned on that pace, the lowest means dropped."""
    finalists = [Finalist(t, 0.9, (1, 2, 3), {}, 1.0) for t in (4, 9, 2)]
    runs = _runs(t4=[(0.80, True, None)], t9=[(0.90, True, None)], t2=[(0.85, True, None)])
    dropped, why = race(finalists, runs, 1, 10.0, left, workers, refit)
    assert (why is not None) == stop
    if stop:
        assert dropped == {} and "fits no further round of two finalists" in why
    else:
        assert sorted(dropped) == sorted({4, 9, 2} - set(kept))
    for text in dropped.values():
        assert text.startswith("dropped after 1 seed(s): its mean 0.8000 was below the 2 kept")
        assert f"{left:.0f} s left at 10.0 s a run, {workers} at a time" in text


def test_the_race_drops_a_failed_finalist_first_and_the_later_of_equal_means():
    finalists = [Finalist(t, 0.9, (1, 2), {}, 1.0) for t in (4, 9, 2, 5)]
    runs = _runs(t4=[(0.8, True, None)], t9=[(0.8, True, None)], t2=[(0.99, False, None)],
                 t5=[(0.7, True, None)])  # fmt: skip
    dropped, _ = race(finalists, runs, 1, 10.0, 15.0, 2, False)  # 1 slot: a round of 2
    assert sorted(dropped) == [2, 5]  # infeasible: out first; 0.7 below the two 0.8s
    dropped, _ = race(finalists[:2], runs, 1, 10.0, 25.0, 1, True)  # 1 slot: stop
    assert dropped == {}


def _on_a_clock(tmp_path, monkeypatch, **finalists: int):
    """Three finalists of widths 8, 9, 10 (search order 0, 1, 2; retrained, 9 scores best)
    whose runs take 10 s of a fake clock, one at a time, where the search ran each in 0.01 s:
    the study, its config, the trial function and the clock."""
    clock = [0.0]
    monkeypatch.setattr("search.run._finalists.time", type("Clock", (), {
        "monotonic": staticmethod(lambda: clock[0])}))  # fmt: skip
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})

    def slow(cfg, on_epoch=None) -> dict:
        clock[0] += 10.0
        return {"accuracy": {8: 0.7, 9: 0.9, 10: 0.8}[cfg.hyper["width"]] + cfg.seed / 1000,
                "feasible": 1.0, "trial_time_s": 0.01}  # fmt: skip

    config = _config(tmp_path, **finalists)
    study = None
    for width, accuracy in ((8, 0.95), (9, 0.93), (10, 0.91)):
        cfg = config.trial_config({"family": "mlp", "mlp.width": width}).to_dict()
        study = npas_study([{"accuracy": accuracy, "params": 100.0 * width,
                             "trial_time_s": 0.01}], study=study,
                           attrs={TrialAttr.CONFIG: cfg})  # fmt: skip
    return study, config, slow, clock


def test_finalists_race_on_the_measured_pace_of_their_runs_and_the_dropped_one_is_out(
    tmp_path, monkeypatch, capsys
):
    """Runs take 10 s of a (fake) clock while the search ran each in 0.01 s: the plan asks for
    3 × 2 and after the first round the 25 s left fit a round of two, so the finalist of the
    lowest first seed is dropped and the choice is between the other two, on two seeds."""
    study, config, slow, clock = _on_a_clock(tmp_path, monkeypatch, top=3, seeds=2)
    found = run_finalists(study, config, slow, deadline=55.0)
    err = "\n".join(notes(capsys.readouterr().err))
    assert "trials [0, 1, 2], 2 fresh seed(s) each; 6 run(s) to train" in err
    rows = {r["trial"]: r for r in found["finalists"]}
    assert rows[0]["why_not"].startswith("dropped after 1 seed(s): its mean 0.7010")
    assert "finalist trial 0 dropped after 1 seed(s)" in err
    assert found["trial"] == 1 and found["n"] == 2 and found["complete"]
    assert rows[2]["qualified"] and rows[2]["n"] == 2 and rows[0]["n"] == 1
    assert found == study.user_attrs[StudyAttr.RECOMMENDATION]
    assert clock[0] == 50.0  # 3 runs, then 2: none past the deadline


@pytest.mark.parametrize(("fill", "deadline", "seeds", "clock_end"), [
    (10, 100.0, 3, 90.0),  # after 2 × 3 runs (60 s) a third round fits the 40 s left; no fourth
    (10, 200.0, 6, 180.0),  # four more rounds fit: 6 seeds each, then 20 s fit no round of 3
    (4, 500.0, 4, 120.0),  # at most 4 seeds in all, whatever the time left
    (2, 500.0, 2, 60.0),  # fill at or below the seeds asked: none
])
def test_the_finalists_fill_the_time_kept_for_them_with_whole_rounds_of_more_seeds(
    tmp_path, monkeypatch, capsys, fill, deadline, seeds, clock_end
):
    """Runs take 10 s of a (fake) clock, one at a time: the 3 × 2 asked leave time kept for
    the finalists unused, so each finalist gets more fresh seeds while a whole round of all
    three fits, up to ``fill``; the choice compares them on all those seeds."""
    study, config, slow, clock = _on_a_clock(tmp_path, monkeypatch, top=3, seeds=2, fill=fill)
    found = run_finalists(study, config, slow, deadline=deadline)
    err = " ".join(notes(capsys.readouterr().err))
    assert clock[0] == clock_end and found["trial"] == 1
    assert found["n"] == seeds and found["complete"] and found["wanted_seeds"] == 2
    assert [r["seeds"] for r in found["finalists"]] == [list(range(1, seeds + 1))] * 3
    runs = study.user_attrs[StudyAttr.FINALIST_RUNS]
    assert {t: sorted(map(int, r)) for t, r in runs.items()} == {
        str(t): list(range(1, seeds + 1)) for t in range(3)}  # fmt: skip
    more = f"finalists: {seeds - 2} more fresh seed(s) each in the time kept for them"
    assert (more in err) == (seeds > 2)


def test_the_finalists_section():
    assert not FinalistsConfig.from_dict(None).on and not FinalistsConfig.from_dict(False).on
    given = FinalistsConfig.from_dict(True)
    assert (given.top, given.seeds, given.share, given.fill) == (3, 3, 0.2, 10)
    assert FinalistsConfig.from_dict({"seeds": 5}).top == 3
    assert given.search_time(100.0) == pytest.approx(80.0) and given.search_time(None) is None
    assert FinalistsConfig().search_time(100.0) == 100.0  # off: the search has all of it
    with pytest.raises(ConfigError, match=r"finalists\.share"):
        FinalistsConfig.from_dict({"share": 1.5})
    with pytest.raises(ConfigError, match="finalists"):
        FinalistsConfig.from_dict({"topp": 2})


def _width_trial(cfg, on_epoch=None) -> dict:
    """Scores by width and seed; width 9 crashes on seed 2, width 10 has no finite accuracy."""
    width = cfg.hyper["width"]
    if (width, cfg.seed) == (9, 2):
        raise ValueError("boom\nsecond line")
    accuracy = math.nan if width == 10 else 0.5 + (width - 7) / 100 + cfg.seed / 1000
    return {"accuracy": accuracy, "feasible": 1.0, "trial_time_s": 0.01}


def _pid_trial(cfg, on_epoch=None) -> dict:
    """Leaves a file named by its process in $NPAS_TEST_PIDS (a spawned worker has the
    launch's environment), starts a process of its own (as a data loader does: a daemonic
    worker may not), and scores by seed."""
    (Path(os.environ["NPAS_TEST_PIDS"]) / str(os.getpid())).touch()
    child = multiprocessing.get_context("fork").Process(target=os.getpid)
    child.start()
    child.join(timeout=30)
    time.sleep(0.5)  # long enough that runs overlap
    return {"accuracy": 0.5 + cfg.seed / 100, "feasible": 1.0, "trial_time_s": 0.5}


def _device_trial(cfg, on_epoch=None) -> dict:
    """Right only on the CPU: scores whether its config names the CPU."""
    return {"accuracy": 0.9 if cfg.device == "cpu" else 0.1, "feasible": 1.0,
            "trial_time_s": 0.01}  # fmt: skip


def test_finalists_of_a_search_given_no_gpu_train_on_the_cpu(tmp_path):
    """A machine's GPU is not the finalists' when the search's trials were given none."""
    config = _config(tmp_path, top=1, seeds=2)
    cfg = config.trial_config({"family": "mlp", "mlp.width": 8}).to_dict()
    assert config.resources.gpu == 0 and cfg["device"] is None
    study = npas_study([{"accuracy": 0.9, "params": 800.0}], attrs={TrialAttr.CONFIG: cfg})
    found = run_finalists(study, config, _device_trial, deadline=None, progress=False)
    assert found["accuracies"] == [0.9, 0.9]


def _stopped_on_seed_2(cfg, on_epoch=None) -> dict:
    """Scores by seed; Ctrl-C arrives during seed 2's run."""
    if cfg.seed == 2:
        raise KeyboardInterrupt
    return {"accuracy": 0.5 + cfg.seed / 100, "feasible": 1.0, "trial_time_s": 0.01}


def test_a_stop_whose_cost_write_fails_is_still_the_stop_and_says_so(tmp_path, monkeypatch):
    """The runs are written as they end; the cost totals after the stop: a storage failing
    then is named in the stop's message instead of replacing it."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})  # one run at a time, here
    config = _config(tmp_path, top=1, seeds=3)
    cfg = config.trial_config({"family": "mlp", "mlp.width": 8}).to_dict()
    study = npas_study([{"accuracy": 0.9, "params": 800.0}], attrs={TrialAttr.CONFIG: cfg})
    written: list[dict] = []

    def write(values):
        if StudyAttr.TIME_S in values:
            raise sqlite3.OperationalError("disk I/O error")
        written.append(dict(values))

    with pytest.raises(SearchInterrupted) as stopped:
        run_finalists(study, config, _stopped_on_seed_2, deadline=None, write=write,
                      progress=False)  # fmt: skip
    message = str(stopped.value)
    assert "stopped by SIGINT during its finalists" in message and "1 of the 3" in message
    assert message.endswith("(this launch's time and energy were not added to the totals: "
                            "OperationalError: disk I/O error)")  # fmt: skip
    runs = written[-1][StudyAttr.FINALIST_RUNS]
    assert set(runs) == {"0"} and set(runs["0"]) == {"1"}  # the run before the stop, written


def test_finalist_runs_train_side_by_side_in_processes_of_their_own(tmp_path, monkeypatch):
    """Two cores, one CPU a trial: two runs at once, each in a spawned process."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    monkeypatch.setenv("NPAS_TEST_PIDS", str(tmp_path))
    config = _config(tmp_path, top=2, seeds=2)
    study = None
    for width, accuracy in ((8, 0.90), (9, 0.95)):
        cfg = config.trial_config({"family": "mlp", "mlp.width": width}).to_dict()
        study = npas_study([{"accuracy": accuracy, "params": 100.0 * width}], study=study,
                           attrs={TrialAttr.CONFIG: cfg})  # fmt: skip
    found = run_finalists(study, config, _pid_trial, deadline=None, progress=False)
    pids = {int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(r["error"] is None for runs in study.user_attrs[StudyAttr.FINALIST_RUNS].values()
               for r in runs.values())  # fmt: skip
    assert found["n"] == 2 and found["complete"]


@pytest.mark.parametrize(
    ("resources", "at_once"),
    [
        ({"cpu": 1, "gpu": 0}, 9),  # every run asked (nine) on sixteen cores
        ({"cpu": 2, "gpu": 0.25}, 4),  # the search ran four on the GPU
        ({"cpu": 8, "gpu": 0.25}, 2),  # the cores bind first
        ({"cpu": 2, "gpu": 0.3}, 3),
        ({"cpu": 2, "gpu": 1}, 1),
    ],
)
def test_finalist_runs_go_side_by_side_as_the_search_ran_its_trials(
    tmp_path, monkeypatch, resources, at_once
):
    """Sixteen cores and one GPU: as many runs at once as the search's trials fitted."""
    from search.run._finalists import _workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(16)))
    config = load_config({**SEARCH, "out": str(tmp_path), "resources": resources})
    assert _workers(config, 9) == at_once


def test_finalists_run_in_process_crashes_and_nan_disqualify_and_a_spent_time_trains_none(
    tmp_path, capsys
):
    config = _config(tmp_path, top=3, seeds=2)
    study = None
    for width, accuracy in ((8, 0.90), (9, 0.95), (10, 0.93), (11, 0.80), (9, 0.95)):
        cfg = config.trial_config({"family": "mlp", "mlp.width": width}).to_dict()
        study = npas_study([{"accuracy": accuracy, "params": 100.0 * width}], study=study,
                           attrs={TrialAttr.CONFIG: cfg})  # fmt: skip
    # Trial 4 trains trial 1's point again: one finalist. Finalists: 1 (w9), 2 (w10), 0 (w8).
    spent = run_finalists(study, config, _width_trial, deadline=time.monotonic() - 1.0)
    assert spent["trial"] == 1 and spent["n"] == 0  # the search's most accurate, on its own
    assert StudyAttr.FINALIST_RUNS not in study.user_attrs
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert "left no room for the 6 run(s) still to train" in err
    found = run_finalists(study, config, _width_trial, deadline=None)
    err = "\n".join(notes(capsys.readouterr().err))  # each wrapped note one line
    assert [f["trial"] for f in found["finalists"]] == [1, 2, 0]
    assert found["trial"] == 0 and found["accuracies"] == [0.511, 0.512]
    rows = {r["trial"]: r for r in found["finalists"]}
    assert rows[1]["why_not"] == "seed 2 failed: ValueError: boom"
    assert rows[2]["why_not"] == "seed 1 has no finite validation accuracy"
    assert "finalist trial 1 seed 2: failed: ValueError: boom" in err
    assert "finalist trial 2 seed 1: validation accuracy none" in err
    assert study.user_attrs[StudyAttr.RECOMMENDATION] == found
    assert study.user_attrs[StudyAttr.TIME_S] > 0  # the runs count toward the search's cost


#: A tiny real search: three trials of an MLP on digits, two finalists of two seeds each.
SEARCH = {
    "name": "fin",
    "dataset": "digits",
    "space": {"family": ["mlp"], "mlp.width": {"low": 8, "high": 24}},
    "train": {"epochs": 2, "batch_size": 64},
    "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
    "constraints": ["params <= 2000"],
    "algorithm": "random",
    "trials": 3,
    "indicators": ["params"],
    "measure": {"threads": 1},
    "seed": 0,
    "finalists": {"top": 2, "seeds": 2},
}


def _config(out: Path, **finalists: int):
    return load_config({**SEARCH, "out": str(out),
                        "finalists": {**SEARCH["finalists"], **finalists}})  # fmt: skip


def _stored(out: Path, key: str) -> dict:
    study = optuna.load_study(study_name="fin", storage=f"sqlite:///{out / 'npas.db'}")
    return study.user_attrs.get(key) or {}


@pytest.fixture(scope="module")
def searched(local_ray, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finalists")
    study = launch(_config(out), progress=False)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    return out


def test_a_search_records_its_finalists_and_recommendation_read_back_through_optuna(searched):
    study = optuna.load_study(study_name="fin", storage=f"sqlite:///{searched / 'npas.db'}")
    runs = study.user_attrs[StudyAttr.FINALIST_RUNS]
    found = study.user_attrs[StudyAttr.RECOMMENDATION]
    finalists = finalists_of(study, 2, 2)
    assert sorted(runs) == sorted(str(f.trial) for f in finalists) and len(finalists) == 2
    for f in finalists:
        assert sorted(runs[str(f.trial)]) == ["1", "2"]  # the search's seed 0 + 1, + 2
        for run in runs[str(f.trial)].values():
            assert set(run) == {"accuracy", "chance", "samples", "feasible", "error", "time_s"}
            assert 0.0 < run["accuracy"] <= 1.0 and run["feasible"] and run["error"] is None
            assert 0.1 <= run["chance"] < 0.2  # digits: ten classes, near even
            assert run["samples"] > 0  # the validation samples it was scored on
    refit = found.pop("refit")
    assert found.pop("origin") == "proposed by random"  # the config has no start points
    assert found == choose(finalists, runs, 2)  # the decision is reproducible from the record
    # The recommendation trained once more on train+val with its search seed, and saved.
    assert refit["trial"] == found["trial"] and refit["train_on"] == "train+val"
    saved = torch.load(refit["artifact"], weights_only=True)["trial_config"]
    assert saved["train_on"] == "train+val" and saved["seed"] == refit["seed"]
    assert refit["seed"] == refit["tries"] - 1  # the search seed 0, the next for each retry
    assert refit["fit_accuracy"] >= found["mean"] or refit["tries"] == 3
    where = searched / "fin" / "finalists" / f"refit-{found['trial']}-{refit['tries'] - 1}"
    assert Path(refit["artifact"]).parent == where
    mine = [runs[str(found["trial"])][s]["accuracy"] for s in ("1", "2")]
    assert found["n"] == 2 and found["mean"] == pytest.approx(statistics.fmean(mine))
    assert found["mean"] == max(r["mean"] for r in found["finalists"])


def test_export_without_select_writes_the_recommendation_and_status_names_it(
    searched, tmp_path, capsys
):
    trial = _stored(searched, StudyAttr.RECOMMENDATION)["trial"]
    assert main(["status", "--run", str(searched)]) == 0
    assert f"  recommended: trial {trial}: mean validation accuracy" in capsys.readouterr().out
    assert main(["status", "--run", str(searched), "--format", "json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    assert status["recommended"]["number"] == trial and status["recommended"]["seeds"] == 2
    assert status["recommended"]["origin"] == "proposed by random"
    assert main(["export", "--run", str(searched), "--name", "fin", "--out",
                 str(tmp_path / "bundle")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"Exported trial {trial} of 'fin'" in out and "best mean validation accuracy" in out
    assert "the net: proposed by random" in " ".join(out.split())  # the why, wrapped
    meta = json.loads((tmp_path / "bundle" / "metrics.json").read_text(encoding="utf-8"))
    assert meta["trial"] == trial and meta["selection"]["spec"] == "recommended"
    assert meta["selection"]["finalists"] == _stored(searched, StudyAttr.RECOMMENDATION)
    exported = torch.load(tmp_path / "bundle" / "model.pt", weights_only=True)
    assert exported["trial_config"]["train_on"] == "train+val"  # the refit model, not trial's
    assert all(said.startswith("the re") for said in meta["models"].values()), meta["models"]
    assert "refit on train+val" in out or "refit on train+val" in _status_line(searched, capsys)
    assert main(["export", "--run", str(searched), "--name", "fin", "--select", "knee",
                 "--out", str(tmp_path / "knee")]) == 0  # fmt: skip
    knee = torch.load(tmp_path / "knee" / "model.pt", weights_only=True)
    assert knee["trial_config"]["train_on"] == "train"  # any other selection: the trial's run


def _status_line(out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["status", "--run", str(out)]) == 0
    return capsys.readouterr().out


def _runs_recorded(out: Path) -> int:
    with contextlib.suppress(sqlite3.Error):
        with sqlite3.connect(f"file:{out / 'npas.db'}?mode=ro", uri=True) as db:
            row = db.execute("SELECT value_json FROM study_user_attributes WHERE key = ?",
                             (StudyAttr.FINALIST_RUNS,)).fetchone()  # fmt: skip
        if row:
            return sum(len(seeds) for seeds in json.loads(row[0]).values())
    return 0


def test_sigterm_during_finalists_keeps_the_search_and_a_relaunch_trains_only_what_is_missing(
    searched, tmp_path
):
    before = _runs_recorded(searched)
    # More seeds: the search is done (no trial to run, no Ray), only finalist runs remain.
    config = tmp_path / "fin.yaml"
    config.write_text(yaml.safe_dump({**SEARCH, "finalists": {"top": 2, "seeds": 8}}), "utf-8")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "search", "launch", str(config), "--out", str(searched),
               "--address", "local", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": path})  # fmt: skip
    try:
        wait_until(lambda: proc.poll() is not None or _runs_recorded(searched) > before, 180,
                   interval_s=0.1, raise_on_timeout=False)  # fmt: skip
        assert proc.poll() is None, "the finalists ended before they could be stopped"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "stopped by SIGTERM during its finalists: its trials are all recorded" in " ".join(
        err.split()
    )  # wrapped to 100 columns, joined
    study = optuna.load_study(study_name="fin", storage=f"sqlite:///{searched / 'npas.db'}")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3  # the search is whole
    kept = study.user_attrs[StudyAttr.FINALIST_RUNS]
    assert before < _runs_recorded(searched) < 2 * 8
    assert study.user_attrs[StudyAttr.RECOMMENDATION]["n"] == 2  # not chosen again yet

    again = launch(_config(searched, seeds=3), progress=False)
    runs = again.user_attrs[StudyAttr.FINALIST_RUNS]
    for trial, seeds in kept.items():  # every run recorded before is kept as it was
        assert {s: runs[trial][s] for s in seeds} == seeds
    assert all({"1", "2", "3"} <= set(runs[t]) for t in runs)
    found = again.user_attrs[StudyAttr.RECOMMENDATION]
    refit = found.pop("refit")
    assert found.pop("origin") == "proposed by random"
    assert found["n"] == 3 and found == choose(finalists_of(again, 2, 3), runs, 3)
    assert refit["trial"] == found["trial"] and Path(refit["artifact"]).is_file()


def test_finalists_equal_in_accuracy_go_in_the_order_of_the_other_objectives():
    """Two trials of accuracy 1: the smaller (the front's member) is the first finalist, and
    so the recommendation when the time leaves none retrained (it was the lower number)."""
    study = None
    for number, (accuracy, params) in enumerate([(1.0, 900.0), (1.0, 400.0), (0.9, 100.0)]):
        config = {"seed": 0, "hyper": {"width": number}}  # each a config of its own
        study = npas_study([{"accuracy": accuracy, "params": params}], study=study,
                           attrs={str(TrialAttr.CONFIG): config})  # fmt: skip
    finalists = finalists_of(study, 3, 1)
    assert [f.trial for f in finalists] == [1, 0, 2]
    assert choose(finalists, {}, 1)["trial"] == 1


def test_finalists_equal_in_accuracy_go_first_by_the_lower_validation_loss():
    """Accuracy on a small split moves in steps: of two trials at 0.75, the one of lower
    validation loss goes first, before the smaller one."""
    study = None
    for number, (loss, params) in enumerate([(0.9, 400.0), (0.6, 900.0), (None, 100.0)]):
        config = {"seed": 0, "hyper": {"width": number}}
        row = {"accuracy": 0.75, "params": params, **({"val_loss": loss} if loss else {})}
        study = npas_study([row], study=study, attrs={str(TrialAttr.CONFIG): config})
    assert [f.trial for f in finalists_of(study, 3, 1)] == [1, 0, 2]
