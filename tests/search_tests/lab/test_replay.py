"""The replay driver: the real searcher, optimisers and schedulers on a simulated clock.

Decisions are not charged to the clock here (``charge_decisions=False``), so every replay is
deterministic and its times are sums of the table's recorded seconds.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from optuna.trial import TrialState

from search.config import load_config
from search.lab import NearestRow, ReplaySpec, replay
from search.lab._replay import replay_config
from search.lab._whatif import full_horizon
from search.schedulers._rungtrust import MIN_PAIRS
from spaces._errors import ConfigError


def _row_of(table, values):
    return next(r for r in table.rows if r.values[-1] == values)


def test_fifo_on_one_worker_ends_trials_at_the_sums_of_their_recorded_times(table):
    result = replay(table, ReplaySpec("random", "fifo", workers=1), seed=3,
                    horizon_s=full_horizon(table, 1), charge_decisions=False)  # fmt: skip
    assert len(result.completed) >= 5
    rows = [_row_of(table, values) for _, values, _ in result.completed]
    ends = list(itertools.accumulate(table.trial_s(row) for row in rows))
    assert [t for t, _, _ in result.completed] == pytest.approx(ends)
    assert result.stopped == result.paused == 0
    # one worker: the trials that completed, and at most one cut short by the horizon
    assert 8 * len(result.completed) <= result.epochs < 8 * (len(result.completed) + 1)


def test_two_workers_finish_sooner_than_one(table):
    one, two = (
        replay(table, ReplaySpec("random", "fifo", workers=w), seed=0, horizon_s=60,
               charge_decisions=False)
        for w in (1, 2)
    )
    assert len(two.completed) > len(one.completed)


@pytest.mark.parametrize("optimiser", ["tpe", "nsga2", "random"])
@pytest.mark.parametrize("kind", ["stopping", "promotion"])
def test_the_same_seed_replays_the_same_search(table, optimiser, kind):
    spec = ReplaySpec(optimiser, "moasha", kind, workers=2)
    a, b = (replay(table, spec, seed=7, horizon_s=40, charge_decisions=False) for _ in range(2))
    assert a.completed == b.completed and a.ends == b.ends and a.started == b.started


def test_stopping_moasha_stops_trials_at_rungs_and_the_searcher_records_them(table):
    result = replay(table, ReplaySpec("tpe", "moasha", workers=2), seed=1, horizon_s=60,
                    charge_decisions=False)  # fmt: skip
    assert result.stopped > 0
    for epochs, how in result.ends.values():
        assert (epochs, how) in {(1, "stopped"), (3, "stopped"), (8, "complete")}
    states = [t.state for t in result.study.trials]
    assert states.count(TrialState.COMPLETE) == len(result.completed)
    assert states.count(TrialState.PRUNED) == result.stopped
    decisions = [d for t in result.study.trials for d in t.user_attrs.get("npas:decisions", [])]
    assert {d["outcome"] for d in decisions} <= {"continue", "stop"} and decisions


def test_promotion_pauses_at_rungs_and_charges_pauses_and_resumes(table):
    spec = ReplaySpec("tpe", "moasha", "promotion", workers=2)
    free = replay(table, spec, seed=2, horizon_s=60, charge_decisions=False)
    assert free.paused > 0 and free.promoted > 0
    table.overheads = {"pause_s": 5.0, "resume_s": 5.0}
    slow = replay(table, spec, seed=2, horizon_s=60, charge_decisions=False)
    assert slow.completed[0][0] > free.completed[0][0]  # the first trial to end waited
    assert len(slow.completed) <= len(free.completed)


def test_asha_counts_a_trial_it_stops_at_the_last_epoch_as_complete(table):
    result = replay(table, ReplaySpec("random", "asha", workers=2), seed=0,
                    horizon_s=full_horizon(table, 2), charge_decisions=False)  # fmt: skip
    assert result.completed
    assert all(e == 8 for e, how in result.ends.values() if how == "complete")


def test_charged_decisions_delay_the_clock(table):
    spec = ReplaySpec("tpe", "fifo", workers=1)
    free = replay(table, spec, seed=0, horizon_s=30, charge_decisions=False)
    charged = replay(table, spec, seed=0, horizon_s=30)
    assert charged.decision_s > 0
    assert charged.completed[0][0] > free.completed[0][0]


def test_each_recorded_point_is_its_own_nearest_row(table):
    nearest = NearestRow(table.rows, replay_config(table, ReplaySpec()).space)
    for row in table.rows:
        assert nearest(row.point) is row


def test_a_fresh_nearest_row_gives_each_row_once_then_the_nearest_again(table):
    nearest = NearestRow(table.rows, replay_config(table, ReplaySpec()).space, fresh=True)
    point = table.rows[0].point
    given = [nearest.index(point) for _ in table.rows]
    assert given[0] == 0 and sorted(given) == list(range(len(table.rows)))
    assert nearest.reused == 0
    assert nearest.index(point) == 0 and nearest.reused == 1  # every row given: the nearest


def test_a_near_row_is_fresh_only_within_the_tables_resolution(table):
    """``near``: a point asked twice gets its own row, then its nearest other row when that
    lies within the resolution (the median over rows of the distance to the nearest other
    row), else its own row again, counted as reused."""
    import numpy as np

    space = replay_config(table, ReplaySpec()).space
    probe = NearestRow(table.rows, space, near=True)
    others = [np.delete(probe._distances(x), i) for i, x in enumerate(probe._x)]
    assert probe.resolution == pytest.approx(float(np.median([o.min() for o in others])))
    outcomes = set()
    for i, row in enumerate(table.rows):
        nearest = NearestRow(table.rows, space, fresh=True, near=True)
        assert nearest.index(row.point) == i
        second = nearest.index(row.point)
        if others[i].min() <= nearest.resolution:
            assert second != i and nearest.reused == 0
        else:
            assert second == i and nearest.reused == 1
        outcomes.add(second == i)
    assert outcomes == {True, False}  # the table has rows of both kinds: both branches ran


def test_a_replay_trains_no_recorded_row_twice_while_rows_are_left(table):
    result = replay(table, ReplaySpec("random", "moasha", workers=2), seed=0, horizon_s=60.0,
                    charge_decisions=False)  # fmt: skip
    assert result.started > len(table.rows)  # more proposals than rows: some answered again
    nearest = NearestRow(table.rows, replay_config(table, ReplaySpec()).space, fresh=True)
    rows = [nearest.index(t.params) for t in result.study.trials]
    assert sorted(rows[: len(table.rows)]) == list(range(len(table.rows)))
    assert result.reused == nearest.reused == result.started - len(table.rows)


def test_a_replay_of_any_row_gives_each_proposal_its_nearest_row(table):
    """``fresh=False``: the same proposals (a random sampler, one seed) each answered by its
    nearest row, repeats and all, and no proposal counted as reused."""
    spec = ReplaySpec("random", "moasha", workers=2, fresh=False)
    result = replay(table, spec, seed=0, horizon_s=60.0, charge_decisions=False)
    nearest = NearestRow(table.rows, replay_config(table, spec).space)
    rows = [nearest.index(t.params) for t in result.study.trials]
    assert result.reused == 0 and len(set(rows)) < len(rows)  # a row given twice, not counted


@pytest.mark.parametrize(
    ("spec", "horizon", "match"),
    [
        (ReplaySpec(workers=0), 10.0, "workers 0"),
        (ReplaySpec(), float("inf"), "finite horizon"),
        (ReplaySpec(scheduler="hyperband"), 10.0,
         "allowed: \\('fifo', 'moasha', 'asha', 'foresight', 'frontstop'\\)"),
        (ReplaySpec(optimiser="tpee"), 10.0, "tpee"),
    ],
)
def test_bad_replays_are_refused(table, spec, horizon, match):
    with pytest.raises(ConfigError, match=match):
        replay(table, spec, seed=0, horizon_s=horizon)


@pytest.mark.parametrize("workers", [1, 2])
def test_promotion_resumes_only_what_it_promoted(table, workers):
    """Ray Tune asks the scheduler for a trial to run at every step, free worker or not; a
    replay that asked only when a worker was free let a promoted trial's stale entry resume it
    at its next rung without a promotion, and start it twice (it trained a 9th epoch of 8)."""
    spec = ReplaySpec("tpe", "moasha", "promotion", workers=workers)
    for seed in range(4):
        result = replay(table, spec, seed=seed, horizon_s=80, charge_decisions=False)
        for trial in result.study.trials:
            log = trial.user_attrs.get("npas:decisions", [])
            done = trial.state == TrialState.COMPLETE
            went_on = [r for r in (1, 3) if done or any(d["rung"] > r for d in log)]
            promoted = [d["rung"] for d in log if d["outcome"] == "promote"]
            # past a rung only when promoted there; promoted from a rung once at most
            assert set(went_on) <= set(promoted), (seed, trial.number, log)
            assert len(promoted) == len(set(promoted)), (seed, trial.number, log)


def test_trusted_rungs_stop_fewer_trials_than_moasha_and_none_before_trust(table):
    """``trust_rungs``: the first MIN_PAIRS trials to end trained their whole schedule."""
    horizon = 3 * full_horizon(table, 2)
    ran = {trust: replay(table, ReplaySpec("random", "moasha", workers=2, trust_rungs=trust),
                         seed=0, horizon_s=horizon, charge_decisions=False)
           for trust in (False, True)}  # fmt: skip
    first = [how for _, how in list(ran[True].ends.values())[:MIN_PAIRS]]
    assert first == ["complete"] * MIN_PAIRS  # nothing trusted before MIN_PAIRS finish
    assert ran[True].stopped < ran[False].stopped


def test_a_table_whose_declared_data_file_is_gone_still_replays(table, tmp_path):
    """The waves table's config names the npz on the machine that recorded it; a replay reads
    no data, so a fresh clone replays it (it was refused: "dataset.npz: ... does not exist")."""
    gone = {"name": "replay-gone-data", "npz": str(tmp_path / "gone.npz"), "layout": "image"}
    moved = dataclasses.replace(table, config={**table.config, "dataset": gone})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config({**moved.config, "dataset": {**gone, "name": "replay-gone-loaded"}})
    result = replay(moved, ReplaySpec("random", "fifo", "stopping", 2), seed=0, horizon_s=30)
    assert result.completed


def test_the_ladders_bound_ranks_every_rung_on_the_last_epoch_alone(table):
    """``oracle_rungs``: MOASHA sees each trial's last-epoch values at every rung, so its
    decisions do not depend on the curve before it (the same with the early epochs turned
    round); plain MOASHA's do, and on the turned table it completes worse trials."""
    def turn(row):  # every epoch before the last ranks as the last turned round
        early = [[1.0 - row.values[-1][0], *v[1:]] for v in row.values[:-1]]
        return dataclasses.replace(row, values=[*early, row.values[-1]])

    tables = {"as": table, "turned": dataclasses.replace(table, rows=list(map(turn, table.rows)))}
    runs = {
        (oracle, name): replay(t, ReplaySpec("random", "moasha", workers=2, oracle_rungs=oracle),
                               seed=2, horizon_s=60, charge_decisions=False)
        for oracle in (True, False) for name, t in tables.items()
    }  # fmt: skip
    assert runs[True, "as"].ends == runs[True, "turned"].ends
    assert runs[False, "as"].ends != runs[False, "turned"].ends

    def mean_final(result):
        return sum(values[0] for _, values, _ in result.completed) / len(result.completed)

    assert mean_final(runs[True, "turned"]) > mean_final(runs[False, "turned"])
