"""Promotion-type MOASHA: the rule (pure, a stand-in controller), then real Ray Tune searches
whose trials pause at rungs and resume from their checkpoints."""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna
import pytest
import torch
import yaml
from optuna.trial import TrialState
from ray.tune.schedulers import TrialScheduler

from search.bundle import export_bundle, train_bundle
from search.errors import ExportError
from search.record._checkpoint_files import checkpoint_folders
from search.record._schema import TrialAttr
from search.run import launch
from search.run._limits import OUT_OF_TIME
from search.schedulers._moasha import CHANCE_EVIDENCE, STUCK_S, PromotionMOASHA
from search.schedulers._rungtrust import AUDITED, UNTRUSTED, PromotionTrust
from search.trial import STATE_NAME, run_trial
from tests._support.checkpointing import EPOCHS, checkpointing_trial
from tests._support.searches import make_config

CONTINUE, STOP, PAUSE = TrialScheduler.CONTINUE, TrialScheduler.STOP, TrialScheduler.PAUSE
ACC_COST = [("acc", "maximize"), ("cost", "minimize")]


class Controller:
    """The part of Ray Tune's controller a scheduler uses: trials and ``stop_trial``."""

    def __init__(self) -> None:
        self.trials: dict[str, SimpleNamespace] = {}
        self.stopped: list[str] = []

    def get_trials(self) -> list[SimpleNamespace]:
        return list(self.trials.values())

    def stop_trial(self, trial: SimpleNamespace) -> None:
        self.stopped.append(trial.trial_id)
        trial.status = "TERMINATED"


def _add(sched: PromotionMOASHA, ctl: Controller, key: str) -> SimpleNamespace:
    trial = SimpleNamespace(trial_id=key, config={"number": len(ctl.trials)}, status="RUNNING")
    ctl.trials[key] = trial
    sched.on_trial_add(ctl, trial)
    return trial


def _report(sched, ctl, key: str, epoch: int, acc: float, cost: float = 1.0,
            chance: bool = False) -> str:  # fmt: skip
    result = {"epoch": epoch, "acc": acc, "cost": cost, "npas_violation": 0.0,
              "npas_at_chance": float(chance)}  # fmt: skip
    decision = sched.on_trial_result(ctl, ctl.trials[key], result)
    if decision == PAUSE:
        ctl.trials[key].status = "PAUSED"
    return decision


def _scheduler(slots: int = 2, total: int | None = None) -> PromotionMOASHA:
    sched = PromotionMOASHA(ACC_COST, max_epochs=9, reduction_factor=3)  # rungs (1, 3)
    sched.limit(slots=slots, total=total)
    return sched


def test_a_trial_pauses_until_a_third_of_its_rung_is_behind_it() -> None:
    sched, ctl = _scheduler(slots=3), Controller()
    for key in "abc":
        _add(sched, ctl, key).status = "PENDING"
    assert _report(sched, ctl, "a", 1, 0.9) == PAUSE  # alone at the rung: floor(1/3) = 0
    assert _report(sched, ctl, "b", 1, 0.5) == PAUSE
    assert sched.may_start() is True  # two paused trials hold no slot
    assert _report(sched, ctl, "c", 1, 0.4) == PAUSE  # three at the rung: "a" is due
    assert sched.may_start() is False  # a promotion goes before any new trial
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]
    ctl.trials["a"].status = "PENDING"
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]  # pending now: asked again
    outcomes = [(d["trial_id"], d["rung"], d["outcome"]) for d in sched.decisions()]
    assert outcomes == [("a", 1, "pause"), ("b", 1, "pause"), ("c", 1, "pause"),
                        ("a", 1, "promote")]  # fmt: skip
    assert _report(sched, ctl, "a", 2, 0.9) == CONTINUE  # between rungs
    assert _report(sched, ctl, "a", 3, 0.95) == PAUSE  # alone at rung 3


def test_a_promoted_trial_still_saving_its_pause_is_chosen_again_until_ray_takes_it() -> None:
    """Ray Tune does not start a trial chosen while its paused actor is still stopping (it
    stays PAUSED): the scheduler must choose it again, or it is lost as neither paused nor
    running and the search waits for ever (seen on a relaunch)."""
    sched, ctl = _scheduler(slots=3), Controller()
    for key in "abc":
        _add(sched, ctl, key)
    for key, acc in zip("abc", (0.9, 0.5, 0.4), strict=True):
        _report(sched, ctl, key, 1, acc)
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]  # Ray leaves it PAUSED
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]
    ctl.trials["a"].status = "PENDING"
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]  # as any pending trial
    ctl.trials["a"].status = "RUNNING"
    assert sched.choose_trial_to_run(ctl) is None
    assert [d["outcome"] for d in sched.decisions()].count("promote") == 1


def test_a_trial_whose_pause_is_still_being_saved_is_promoted_once_it_is_saved() -> None:
    """Ray Tune keeps a pausing trial RUNNING until its checkpoint is saved. Promoted then
    (another trial arrived at the rung meanwhile), it was taken for started, then left PAUSED
    for good, neither paused nor running: nothing ran again (a stall seen under load)."""
    sched, ctl = _scheduler(slots=3, total=3), Controller()
    for key in "abc":
        _add(sched, ctl, key)
    for key, acc in zip("abc", (0.9, 0.5, 0.4), strict=True):
        assert _report(sched, ctl, key, 1, acc) == PAUSE
    ctl.trials["a"].status = "RUNNING"  # due now, its pause still being saved
    assert sched.may_start() is False  # the promotion still goes first
    assert sched.choose_trial_to_run(ctl) is None
    ctl.trials["a"].status = "PAUSED"  # saved
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]
    ctl.trials["a"].status = "PENDING"
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]
    assert _report(sched, ctl, "a", 3, 0.95) == PAUSE  # it ran on to rung 3
    assert [d["outcome"] for d in sched.decisions()].count("promote") == 1


def test_a_promoted_trial_ray_never_takes_is_stopped_in_time_and_the_search_ends() -> None:
    """Seen once after a time limit: Ray Tune left a promoted trial PAUSED for good, the
    scheduler chose it again at every step, and the search waited 13 minutes past its
    60-second limit with nothing running."""
    sched, ctl = _scheduler(slots=3, total=3), Controller()
    now = [0.0]
    sched.clock = lambda: now[0]
    for key in "abc":
        _add(sched, ctl, key)
    for key, acc in zip("abc", (0.9, 0.5, 0.4), strict=True):
        _report(sched, ctl, key, 1, acc)
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]  # Ray leaves it PAUSED
    now[0] = STUCK_S
    assert sched.choose_trial_to_run(ctl) is ctl.trials["a"]  # a pause may take a while
    assert ctl.stopped == []
    now[0] = STUCK_S + 1.0
    assert sched.choose_trial_to_run(ctl) is None  # a given up, then b and c: nothing runs
    assert ctl.stopped == ["a", "b", "c"]
    last = {d["trial_id"]: d for d in sched.decisions()}
    assert last["a"]["outcome"] == "stop" and "did not resume it" in last["a"]["why"]


def test_a_trial_in_the_top_when_it_arrives_goes_straight_on() -> None:
    sched, ctl = _scheduler(slots=4), Controller()
    for key, acc in zip("abc", (0.3, 0.2, 0.1), strict=True):
        _add(sched, ctl, key)
        assert _report(sched, ctl, key, 1, acc) == PAUSE or key == "c"
    _add(sched, ctl, "d")
    # Six at the rung would let two on; with four, one: "a" (paused, due) and then "d"?
    assert _report(sched, ctl, "d", 1, 0.99) == CONTINUE  # best of 4: promoted at once
    assert sched.decisions()[-1]["outcome"] == "promote"
    assert sched.decisions()[-1]["rank"] == 0 and sched.decisions()[-1]["top"] == 1


def test_a_trial_at_chance_is_stopped_not_paused() -> None:
    sched, ctl = _scheduler(), Controller()
    _add(sched, ctl, "w")
    assert _report(sched, ctl, "w", 1, 0.6) == PAUSE  # it left chance at rung 1
    _add(sched, ctl, "a")
    assert _report(sched, ctl, "a", 1, 0.1, chance=True) == STOP
    assert sched.decisions()[-1]["outcome"] == "stop" and sched.decisions()[-1]["at_chance"]


def test_a_trial_at_chance_where_none_has_left_it_is_promoted_not_paused() -> None:
    sched, ctl = _scheduler(slots=9), Controller()
    for i in range(CHANCE_EVIDENCE):  # the eighth at chance, none out of it: promoted
        _add(sched, ctl, f"a{i}")
        expected = CONTINUE if i == CHANCE_EVIDENCE - 1 else STOP
        assert _report(sched, ctl, f"a{i}", 1, 0.1, chance=True) == expected
    last = sched.decisions()[-1]
    assert last["outcome"] == "promote" and last["at_chance"]
    assert "as every trial at the rung (8 or more)" in last["why"]


def test_promotion_order_is_highest_rung_then_best_rank() -> None:
    sched, ctl = _scheduler(slots=9), Controller()
    for key, acc in zip("abcdef", (0.8, 0.9, 0.1, 0.2, 0.3, 0.4), strict=True):
        _add(sched, ctl, key)
        assert _report(sched, ctl, key, 1, acc) == PAUSE
    promoted = []
    while (trial := sched.choose_trial_to_run(ctl)) is not None and trial.status == "PAUSED":
        trial.status = "RUNNING"
        promoted.append(trial.trial_id)
    assert promoted == ["b", "a"]  # six at the rung: the best two, best first
    assert _report(sched, ctl, "b", 3, 0.95) == PAUSE  # alone at rung 3
    for acc in (0.05, 0.06, 0.07):  # three more at rung 1 (f due there), two at rung 3
        sched.add_history({1: [acc, 1.0], 3: [acc, 1.0]} if acc < 0.07 else {1: [acc, 1.0]})
    assert sched.choose_trial_to_run(ctl) is ctl.trials["b"]  # rung 3 first
    ctl.trials["b"].status = "RUNNING"
    assert sched.choose_trial_to_run(ctl) is ctl.trials["f"]


@pytest.mark.parametrize("refuted", [True, False])
def test_a_refuted_rung_resumes_the_trials_it_paused(refuted: bool) -> None:
    """Promotion with pooled audits: a trial paused while the rung was trusted resumes once
    the rung's audits refute it (its best third loses at the next checkpoint), and stays
    paused while they do not."""
    sched, ctl = PromotionTrust(ACC_COST, max_epochs=9, evidence="pooled"), Controller()
    sched.limit(slots=2, total=None)
    _add(sched, ctl, "p")
    assert _report(sched, ctl, "p", 1, 0.001) == PAUSE  # trusted (no audits yet): paused
    for i in range(15):  # epoch 3 reverses epoch 1, or follows it
        acc = 0.01 * (i + 1)
        sched.add_history({1: [acc, 1.0], 3: [1 - acc if refuted else acc, 1.0]})
    assert sched.refuted(1) is refuted
    chosen = sched.choose_trial_to_run(ctl)
    assert (chosen is ctl.trials["p"]) is refuted
    if refuted:
        (resumed,) = [d for d in sched.decisions() if d["outcome"] == "promote"]
        assert (resumed["trial_id"], resumed["why"]) == ("p", UNTRUSTED)


def test_promotion_audits_every_fourth_trial_it_would_pause_and_says_why() -> None:
    sched, ctl = PromotionTrust(ACC_COST, max_epochs=9, evidence="audit"), Controller()
    sched.limit(slots=9, total=None)
    outcomes = []
    for i in range(8):
        _add(sched, ctl, f"t{i}")
        outcomes.append(_report(sched, ctl, f"t{i}", 1, 0.9 - 0.1 * i))  # each worse
    audited = [d["trial_id"] for d in sched.decisions() if d.get("why") == AUDITED]
    assert audited == ["t3", "t7"] and sched.audits == 2  # its 4th and 8th would-be pauses
    assert [outcomes[3], outcomes[7]] == [CONTINUE, CONTINUE]
    assert outcomes.count(PAUSE) == 6


def test_paused_trials_are_stopped_when_nothing_more_will_run() -> None:
    sched, ctl = _scheduler(slots=2, total=2), Controller()
    _add(sched, ctl, "a")
    _add(sched, ctl, "b")
    _report(sched, ctl, "a", 1, 0.5)
    assert sched.choose_trial_to_run(ctl) is None and ctl.stopped == []  # "b" runs
    _report(sched, ctl, "b", 1, 0.6)
    assert sched.choose_trial_to_run(ctl) is None
    assert sorted(ctl.stopped) == ["a", "b"]
    ends = [d for d in sched.decisions() if d["outcome"] == "stop"]
    assert len(ends) == 2 and all("search ended" in d["why"] for d in ends)


def test_close_ends_the_wait_as_the_total_does() -> None:
    sched, ctl = _scheduler(slots=1), Controller()
    _add(sched, ctl, "a")
    _report(sched, ctl, "a", 1, 0.5)
    assert sched.choose_trial_to_run(ctl) is None and ctl.stopped == []  # more may come
    sched.close()
    assert sched.choose_trial_to_run(ctl) is None and ctl.stopped == ["a"]


def test_paused_trials_adjourn_when_the_searchs_time_closed_it() -> None:
    """Closed by the time limit, the paused trials are logged ``adjourn`` (the searcher keeps
    them RUNNING with their checkpoints), not ``stop``, and are not counted as stopped."""
    sched, ctl = _scheduler(slots=1), Controller()
    _add(sched, ctl, "a")
    _report(sched, ctl, "a", 1, 0.5)
    sched.close(OUT_OF_TIME)
    assert sched.choose_trial_to_run(ctl) is None and ctl.stopped == ["a"]
    (last,) = [d for d in sched.decisions() if d["outcome"] != "pause"]
    assert (last["outcome"], last["why"]) == ("adjourn", OUT_OF_TIME)
    assert sched._n_stopped == 0


def test_may_start_counts_running_and_pending_trials_only() -> None:
    sched, ctl = _scheduler(slots=2), Controller()
    _add(sched, ctl, "a")
    _add(sched, ctl, "b")
    assert sched.may_start()  # one more may wait for a worker
    _add(sched, ctl, "c")
    assert not sched.may_start()
    sched.on_trial_complete(ctl, ctl.trials["c"], {})
    assert sched.may_start()
    _report(sched, ctl, "a", 1, 0.5)  # paused
    _add(sched, ctl, "d")
    assert sched.may_start()
    _add(sched, ctl, "e")
    assert not sched.may_start()


def test_the_newest_pending_trial_takes_a_free_worker() -> None:
    sched, ctl = _scheduler(slots=2), Controller()
    for key in "abc":
        _add(sched, ctl, key).status = "PENDING"
    assert sched.choose_trial_to_run(ctl) is ctl.trials["c"]  # a and b may be starting


# -- real Ray Tune ----------------------------------------------------------------------------


def _promotion_config(out: Path, trials: int, **scheduler: Any):
    return make_config(out, optimiser="random", trials=trials, constraints=[],
                       train={"epochs": EPOCHS},
                       scheduler={"name": "moasha", "type": "promotion", **scheduler})  # fmt: skip


def test_a_promotion_search_resumes_paused_trials_from_their_checkpoints(tmp_path, local_ray):
    study = launch(_promotion_config(tmp_path, 12), trial_fn=checkpointing_trial,
                   progress=False)  # fmt: skip
    stored = optuna.load_study(study_name=study.study_name,
                               storage=f"sqlite:///{tmp_path}/npas.db")  # fmt: skip
    trials = stored.get_trials()
    assert len(trials) == 12 and {t.state for t in trials} <= {TrialState.COMPLETE,
                                                               TrialState.PRUNED}  # fmt: skip
    ran = [json.loads(line) for line in (tmp_path / study.study_name / "epochs.jsonl").open()]
    by_trial: dict[int, list[int]] = {}
    for row in ran:
        by_trial.setdefault(row["trial"], []).append(row["epoch"])
    # Every epoch ran once: a paused trial went on from its checkpoint, not from epoch 1.
    for number, epochs in by_trial.items():
        assert sorted(epochs) == list(range(1, len(epochs) + 1)), (number, epochs)
    resumed = 0
    for trial in trials:
        decisions = trial.user_attrs[TrialAttr.DECISIONS]  # read back through Optuna's API
        outcomes = [d["outcome"] for d in decisions]
        assert set(outcomes) <= {"pause", "promote", "stop"}
        resumed += sum(1 for pair in itertools.pairwise(outcomes) if pair == ("pause", "promote"))
        ran_epochs = len(by_trial[trial.number])
        assert sorted(trial.intermediate_values) == list(range(1, ran_epochs + 1))
        if trial.state == TrialState.COMPLETE:
            assert by_trial[trial.number] == list(range(1, EPOCHS + 1))
        else:  # stopped at a rung: paused there and never promoted, or at chance
            assert outcomes[-1] == "stop" and len(by_trial[trial.number]) in (1, 3)
    assert resumed >= 1  # some trial paused and was later promoted
    # Ray Tune's file loggers warn on a resume that the trial's result file is not in its
    # storage yet (every resume of a 10-minute MNIST search; not this one's, whose storage has
    # it): nothing a user can act on, the study holds every epoch. Their line, as they log it,
    # reaches no handler after a launch:
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    tune_files = logging.getLogger("ray.tune.logger.logger")
    tune_files.addHandler(handler)
    try:
        tune_files.warning("Remote file not found: /r/result.json")
    finally:
        tune_files.removeHandler(handler)
    assert seen == []
    assert stored.get_trials(states=(TrialState.COMPLETE,))
    # Only the trials that ran their full schedule keep a checkpoint.
    kept = sorted((tmp_path / "ray" / study.study_name).glob("*/checkpoint_*"))
    assert len(kept) == len(stored.get_trials(states=(TrialState.COMPLETE,)))
    assert all(p.name == f"checkpoint_{EPOCHS - 1:06d}" for p in kept)


def test_a_real_trial_paused_and_resumed_under_ray_learns_as_if_never_paused(tmp_path, local_ray):
    """run_trial on digits under promotion MOASHA: a trial resumed from its Ray checkpoint
    has the learning curve the same trial config gives uninterrupted."""
    config = make_config(tmp_path, optimiser="random", trials=6, constraints=[],
                         train={"epochs": 3},
                         scheduler={"name": "moasha", "type": "promotion",
                                    "reduction_factor": 2})  # fmt: skip
    study = launch(config, progress=False)
    assert "TUNE_MAX_PENDING_TRIALS_PG" not in os.environ  # set for the search alone
    def outcomes(trial: optuna.trial.FrozenTrial) -> list[str]:
        return [d["outcome"] for d in trial.user_attrs[TrialAttr.DECISIONS]]

    resumed = [t for t in study.trials if outcomes(t)[:2] == ["pause", "promote"]]
    assert resumed
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a trial's worker of one CPU has: float sums depend on it
    try:
        for trial in resumed:
            _check_as_if_never_paused(trial)
    finally:
        torch.set_num_threads(threads)


def _check_as_if_never_paused(trial: optuna.trial.FrozenTrial) -> None:
    alone: list[dict] = []
    run_trial(trial.user_attrs["trial_config"] | {"artifact_dir": None}, on_epoch=alone.append)
    seen = trial.user_attrs["curve"]
    assert len(seen) >= 2
    for a, b in zip(seen, alone, strict=False):
        assert (a["accuracy"], a["val_loss"]) == (b["accuracy"], b["val_loss"]), trial.number


def test_export_and_train_start_from_a_trials_final_checkpoint(tmp_path, local_ray):
    """`search export --from-checkpoint` takes a fully trained trial's weights from its last
    Ray Tune checkpoint (the same weights as its saved model) and keeps that checkpoint in the
    bundle; `search train --from-checkpoint` starts from those weights, not from scratch."""
    config = make_config(tmp_path, optimiser="random", trials=3, constraints=[],
                         space={"family": ["mlp"], "mlp.width": {"low": 16, "high": 32},
                                "budget": {"low": 1200, "high": 2000},
                                "ssn.mapping": ["single"]},
                         fixed={"ssn.upsampler": "mask", "train.lr": 0.05},
                         train={"epochs": 2, "batch_size": 64, "schedule": "cosine"},
                         scheduler={"name": "fifo"})  # fmt: skip
    study = launch(config, progress=False)
    done = sorted(study.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: -t.values[0])
    assert len(done) == 3
    best, other = done[0], done[1]
    warm = export_bundle(study, tmp_path / "warm", select=f"trial:{best.number}",
                         from_checkpoint=True)  # fmt: skip
    cold = export_bundle(study, tmp_path / "cold", select=f"trial:{best.number}")
    record = json.loads((warm.folder / "metrics.json").read_text())
    assert record["checkpoint"]["epoch"] == 2 and record["checkpoint"]["file"] == STATE_NAME
    assert (warm.folder / STATE_NAME).is_file()
    assert "after epoch 2" in (warm.folder / "README.md").read_text()
    assert json.loads((cold.folder / "metrics.json").read_text())["checkpoint"] is None
    assert not (cold.folder / STATE_NAME).exists()
    ours, theirs = (torch.load(b.folder / "model.pt", weights_only=True)["state_dict"]
                    for b in (warm, cold))  # fmt: skip
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert warm.test_accuracy == cold.test_accuracy
    # An edited config.yaml may change how it trains: at a rate that barely moves a weight,
    # the warm start keeps the trial's accuracy, a cold start stays near chance.
    for folder in (warm.folder, cold.folder):
        edited = yaml.safe_load((folder / "config.yaml").read_text())
        edited["train"]["lr"] = 1e-9
        (folder / "config.yaml").write_text(yaml.safe_dump(edited))
    again = train_bundle(warm.folder, epochs=1, out=tmp_path / "again", from_checkpoint=True)
    scratch = train_bundle(cold.folder, epochs=1, out=tmp_path / "scratch")
    assert again.metrics["accuracy"] == pytest.approx(best.values[0], abs=0.006)
    assert scratch.metrics["accuracy"] < best.values[0] - 0.3
    payload = json.loads(again.path.read_text())
    assert payload["from_checkpoint"]["epoch"] == 2
    assert json.loads(scratch.path.read_text())["from_checkpoint"] is None
    with pytest.raises(ExportError, match="--from-checkpoint"):
        train_bundle(cold.folder, epochs=1, out=tmp_path / "none", from_checkpoint=True)
    for folder in checkpoint_folders(other.user_attrs[TrialAttr.RAY_TRIAL]):
        shutil.rmtree(folder)
    with pytest.raises(ExportError, match=f"trial {other.number} has no checkpoint"):
        export_bundle(study, tmp_path / "gone", select=f"trial:{other.number}",
                      from_checkpoint=True)  # fmt: skip


def test_early_promotion_lets_a_rungs_first_trial_go_on_at_once() -> None:
    """``early``: the top ceil(n / 3), so the first trial at each rung is promoted as it
    arrives (under floor it pauses until three are there: promotion's cold start) and the
    next two pause until the rung holds four."""
    sched = PromotionMOASHA(ACC_COST, max_epochs=9, reduction_factor=3, early=True)
    sched.limit(slots=3, total=None)
    ctl = Controller()
    for key in "abcd":
        _add(sched, ctl, key)
    assert _report(sched, ctl, "a", 1, 0.5) == CONTINUE  # ceil(1/3) = 1
    assert _report(sched, ctl, "a", 3, 0.6) == CONTINUE  # first at rung 3 too
    assert _report(sched, ctl, "b", 1, 0.4) == PAUSE  # ceil(2/3) = 1: "a", promoted
    assert _report(sched, ctl, "c", 1, 0.3) == PAUSE  # ceil(3/3) = 1
    assert sched.choose_trial_to_run(ctl) is None  # nothing due, nothing pending
    assert _report(sched, ctl, "d", 1, 0.2) == PAUSE  # ceil(4/3) = 2: "b" is due now
    assert sched.choose_trial_to_run(ctl) is ctl.trials["b"]
