"""The final-epoch guess told to the optimiser (a lab design): known answers, and a replay on
the tiny table in which stopped trials reach the optimiser's study COMPLETE at their guess
once enough trials finished, while the arm's front still counts finished trials only."""

from __future__ import annotations

import pytest
from optuna.trial import TrialState

from search.lab import ReplaySpec, replay
from search.lab._guess import MIN_FINISHED, FinalGuess
from search.lab._whatif import full_horizon


def test_a_stopped_trial_is_guessed_at_its_value_plus_the_median_gain():
    guess = FinalGuess()
    curves = [[0.2, 0.5, 0.6], [0.4, 0.5, 0.9], [0.1, 0.3, 0.4], [0.3, 0.6, 0.7],
              [0.5, 0.5, 0.5]]  # gains from epoch 1: 0.4, 0.5, 0.3, 0.4, 0.0
    for curve in curves[:-1]:
        guess.finished(curve)
    assert guess.guess(1, 0.25) is None  # four finished: too few
    guess.finished(curves[-1])
    assert len(curves) == MIN_FINISHED
    assert guess.guess(1, 0.25) == pytest.approx(0.25 + 0.4)  # median of 0, .3, .4, .4, .5
    # from epoch 2: 0.1, 0.4, 0.1, 0.1, 0.0 → median 0.1
    assert guess.guess(2, 0.5) == pytest.approx(0.6)
    assert guess.guess(3, 0.5) is None  # the last epoch: no gain recorded from it


def test_a_replay_tells_stopped_trials_at_their_guess(table):
    spec = ReplaySpec("tpe", "moasha", workers=2, guess_final=True)
    result = replay(table, spec, seed=0, horizon_s=3 * full_horizon(table, 2),
                    charge_decisions=False)  # fmt: skip
    plain = replay(table, ReplaySpec("tpe", "moasha", workers=2), seed=0,
                   horizon_s=3 * full_horizon(table, 2), charge_decisions=False)  # fmt: skip
    assert result.stopped > 0 and len(result.completed) >= MIN_FINISHED
    trials = result.study.get_trials(deepcopy=False)
    stopped = {int(k[1:]) for k, (_, how) in result.ends.items() if how == "stopped"}
    told = [t for t in trials if t.number in stopped and t.state == TrialState.COMPLETE]
    assert told, "no stopped trial was told at a guess"
    assert len([t for t in trials if t.state == TrialState.COMPLETE]) > len(result.completed)
    # the plain arm tells every stopped trial PRUNED
    plain_stopped = {int(k[1:]) for k, (_, how) in plain.ends.items() if how == "stopped"}
    assert all(t.state == TrialState.PRUNED for t in plain.study.get_trials(deepcopy=False)
               if t.number in plain_stopped)  # fmt: skip
