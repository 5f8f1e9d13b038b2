"""The progress view counts every kind of ending, measures the front as search.pareto does and
shows best values that no later trial can make look worse."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from search.config import LimitsConfig
from search.pareto import format_value, non_dominated
from search.record._schema import RayKey
from search.run._progress import Progress
from search.run._trainable import report_of
from tests.search_tests.studies import npas_study

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
NAMES = [n for n, _ in OBJECTIVES]
DIRECTIONS = [d for _, d in OBJECTIVES]

trials = st.lists(
    st.tuples(st.floats(0, 1), st.floats(10, 1e6), st.booleans(), st.booleans()),
    min_size=1,
    max_size=30,
)  # (accuracy, params, feasible, failed)


@settings(max_examples=60, deadline=None)
@given(trials)
def test_line_counts_and_front_agree_with_pareto(seq):
    view = Progress(OBJECTIVES, total=len(seq), enabled=False)
    for accuracy, params, feasible, failed in seq:
        metrics = {"accuracy": accuracy, "params": params, "feasible": float(feasible)}
        view._add(report_of(None, NAMES, error="boom") if failed else report_of(metrics, NAMES))
    done = [t for t in seq if not t[3]]
    line = view.line()
    infeasible = sum(not t[2] for t in done)
    # each trial counted once: the outcomes add up to the trials done
    assert line.startswith(
        f"{len(seq)}/{len(seq)} done ({len(done) - infeasible} feasible, {infeasible} "
        f"infeasible, {len(seq) - len(done)} failed), 0 running"
    )
    ok = [t[2] for t in done]
    if not any(ok):
        assert "front" not in line
        return
    values = np.array([t[:2] for t in done], dtype=float)
    front = int(non_dominated(values, DIRECTIONS, ok).sum())
    feasible = values[np.array(ok)]
    assert _front_and_best(line) == (
        front,
        {"accuracy": float(format_value(feasible[:, 0].max(), digits=4)),
         "params": float(format_value(feasible[:, 1].min(), digits=4))},
    )  # fmt: skip


def _front_and_best(line: str) -> tuple[int, dict[str, float]]:
    """The front size and the best value per objective, as the line prints them."""
    match = re.search(r", front (\d+) \(best accuracy ([^,]+), params ([^)]+)\); ", line)
    assert match, line
    return int(match[1]), {"accuracy": float(match[2]), "params": float(match[3])}


def _no_worse(after: dict[str, float], before: dict[str, float]) -> bool:
    return after["accuracy"] >= before["accuracy"] and after["params"] <= before["params"]


points = st.lists(st.tuples(st.floats(0, 1), st.floats(10, 1e6)), min_size=1, max_size=20)


@settings(max_examples=80, deadline=None)
@given(points, st.data())
def test_best_values_never_get_worse(seq, data):
    # what a line shows must mean the same on the next: no trial may make it look worse
    view = Progress(OBJECTIVES, enabled=False)

    def add(accuracy: float, params: float, feasible: bool = True) -> dict[str, float]:
        metrics = {"accuracy": accuracy, "params": params, "feasible": float(feasible)}
        view._add(report_of(metrics, NAMES))
        return _front_and_best(view.line())[1]

    for accuracy, params in seq:
        before = add(accuracy, params)
    accuracy, params = data.draw(st.sampled_from(seq), label="an earlier trial")
    worse = data.draw(st.tuples(st.floats(0, accuracy), st.floats(params, 1e7)), label="worse")
    assert add(*worse) == before  # dominated: the best values stay as they were
    better = data.draw(st.tuples(st.floats(accuracy, 1), st.floats(1, params)), label="better")
    after = add(*better)
    assert _no_worse(after, before)  # dominating: as good or better in every objective
    assert add(1.0, 1.0, feasible=False) == after  # an infeasible trial changes nothing


def _ends(view: Progress, now: list[float], seconds: float) -> None:
    """A trial ends ``seconds`` after the fake clock's last reading."""
    now[0] += seconds
    view._add(report_of({"accuracy": 0.6, "params": 50.0}, NAMES))


def test_elapsed_and_time_left_at_this_launchs_pace():
    now = [100.0]
    # a resumed search's two earlier trials
    prior = npas_study([{"accuracy": 0.5, "params": 100.0}] * 2, OBJECTIVES)
    view = Progress(OBJECTIVES, prior=prior, total=10, enabled=False, clock=lambda: now[0])
    assert view.line().startswith("2/10 done")
    assert view.line().endswith("; 0 s elapsed")  # nothing finished in this launch yet
    _ends(view, now, 60.0)  # the start-up and the first trial: no pace yet
    assert view.line().endswith("; 1 min 00 s elapsed")
    for _ in range(2):
        _ends(view, now, 45.0)
    # 5 of 10 done, 3 here ending 45 s apart: 5 left at 45 s each (the start-up not counted:
    # 150 s / 3 trials would have said 4 min 10 s)
    assert view.line().endswith("; 2 min 30 s elapsed, ~3 min 45 s left")
    now[0] += 7300.0
    view.values += [[0.1, 1e5]] * 5
    view.feasible += [True] * 5
    assert view.line().endswith("; 2 h 04 min elapsed")  # done: no estimate


def test_time_left_never_passes_the_time_limit():
    now = [0.0]
    view = Progress(OBJECTIVES, total=1000, enabled=False, clock=lambda: now[0], time_limit=600)
    _ends(view, now, 60.0)
    # no pace yet: the limit alone bounds what is left
    assert view.line().endswith("; 1 min 00 s elapsed, at most 9 min 00 s left (limit)")
    for _ in range(2):
        _ends(view, now, 60.0)
    # 997 trials at a minute each would take 16 h; the limit ends the search in 7 min
    assert view.line().endswith("; 3 min 00 s elapsed, ~7 min 00 s left (limit)")
    now[0] = 700.0
    assert view.line().endswith("; 11 min 40 s elapsed, ~0 s left (limit)")


def test_a_timed_search_with_no_reachable_count_shows_no_total():
    """A derived 1-minute search on two workers has a count of 60 × 2 / 0.25 = 480, which no
    search can reach in its minute: its lines once read "1/480 done"."""
    limits = LimitsConfig(time=60.0)
    assert not limits.count_reachable(480, 2) and limits.count_reachable(479, 2)
    assert limits.count_reachable(480, 3)  # a cluster of three slots could
    assert LimitsConfig().count_reachable(10**9, 1)  # no time limit: a count ends the search
    now = [0.0]
    view = Progress(OBJECTIVES, total=None, enabled=False, clock=lambda: now[0], time_limit=60)
    _ends(view, now, 9.0)
    assert view.line().startswith("1 done (1 feasible")
    assert view.line().endswith("; 9 s elapsed, at most 51 s left (limit)")
    assert view.line(ended=True).endswith("; 9 s elapsed")  # the last line: nothing left


def test_elapsed_counts_from_the_commands_start():
    import time

    from search.run._stages import count_from

    count_from(time.monotonic() - 125.0)  # the command started before Ray did
    try:
        view = Progress(OBJECTIVES, total=4, enabled=False)
        assert view.line().endswith("; 2 min 05 s elapsed")
    finally:
        count_from(None)
    assert Progress(OBJECTIVES, total=4, enabled=False).line().endswith("; 0 s elapsed")


def test_an_adjourned_trial_is_counted_apart_not_done():
    """A trial the time limit left unfinished (the searcher adjourned it) is not a trial
    stopped early: the line counts it as adjourned (it once said "8 stopped early")."""
    view = Progress(OBJECTIVES, total=4, enabled=False, adjourned=lambda trial_id: trial_id == "b")
    curve = {RayKey.CURVE: "{}", "accuracy": 0.5, "params": 10.0}  # an epoch's report
    for trial_id in ("a", "b"):
        view.on_trial_complete(0, [], SimpleNamespace(trial_id=trial_id, last_result=curve))
    assert view.line().startswith(
        "1/4 done (0 feasible, 0 infeasible, 0 failed, 1 stopped early), 0 running, 1 adjourned"
    )


def test_a_quiet_minute_gets_a_line_with_the_paused_trials(capsys):
    """Under a promotion-type scheduler trials pause rather than end: after a minute with no
    line the view prints one anyway, counting the paused trials apart from the running."""
    now = [0.0]
    view = Progress(OBJECTIVES, total=40, clock=lambda: now[0])
    trials = [SimpleNamespace(status=s) for s in ("RUNNING", "PAUSED", "PAUSED", "PENDING")]
    now[0] = 59.0
    view.on_step_end(0, trials)
    assert capsys.readouterr().err == ""
    now[0] = 61.0
    view.on_step_end(0, trials)
    line = capsys.readouterr().err
    assert line.startswith("[npas] 0/40 done (0 feasible, 0 infeasible, 0 failed), 1 running, "
                           "2 paused; 1 min 01 s elapsed")  # fmt: skip
    now[0] = 100.0  # a minute since that line, not since the start
    view.on_step_end(0, trials)
    assert capsys.readouterr().err == ""
    view.on_trial_complete(0, trials, SimpleNamespace(trial_id="a", last_result={}))
    assert capsys.readouterr().err.startswith("[npas] 1/40 done")  # at 100 s
    now[0] = 150.0  # the trial's line reset the minute
    view.on_step_end(0, trials)
    assert capsys.readouterr().err == ""


def test_the_front_says_the_weights_its_trials_deploy():
    """A front on params: a Shapeshifted net trains its budget but deploys its unshared
    model's weights, so the line gives the front's weights beside its params (issue 59: a
    front of 2,432 params deployed 13,466 weights); not when weights is an objective."""
    view = Progress(OBJECTIVES, total=4, enabled=False)
    for accuracy, params, weights in [(0.9, 900, 4810), (0.8, 500, 1210), (0.7, 950, 9000)]:
        metrics = {"accuracy": accuracy, "params": params, "weights": weights, "feasible": 1.0}
        view._add(report_of(metrics, NAMES))
    line = view.line()
    assert ", front 2 (best accuracy 0.9, params 500; deployed 1210-4810 weights); " in line
    prior = npas_study([{"accuracy": 0.5, "params": 100.0, "weights": 800.0}], OBJECTIVES)
    assert "; deployed 800 weights)" in Progress(OBJECTIVES, prior=prior, enabled=False).line()
    on_weights = Progress([("accuracy", "maximize"), ("weights", "minimize")], enabled=False)
    on_weights._add(report_of({"accuracy": 0.9, "weights": 4810.0}, ["accuracy", "weights"]))
    assert "deployed" not in on_weights.line() and "weights 4810)" in on_weights.line()
    unmeasured = Progress(OBJECTIVES, enabled=False)
    unmeasured._add(report_of({"accuracy": 0.9, "params": 900}, NAMES))
    assert "deployed" not in unmeasured.line()
