"""search.pareto._study_front: a study frame's front is constraint-aware and says when it is
empty, unknown objectives list what was recorded, and hypervolume grows in completion order."""

from __future__ import annotations

import numpy as np
import pytest

from search.pareto import front_of, hypervolume_by_trial, select
from spaces._errors import ConfigError
from tests.search_tests.studies import ACC_PARAMS, ROWS, npas_frame


def test_front_is_constraint_aware():
    frame = npas_frame(ROWS)
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [0, 1, 5] and front.message is None
    # on a subset of objectives: the latency front is the same set here
    assert front_of(frame, ["accuracy", "latency_ms"]).numbers == [0, 1, 5]
    assert front_of(frame, ["accuracy"]).numbers == [0]


def test_no_feasible_trial_is_said():
    frame = npas_frame([{**r, "feasible": False} for r in ROWS if "state" not in r])
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [] and "no feasible trial" in front.message
    for spec in ("knee", "pepr:params", "best:accuracy", "asf:1,1", "epsilon:params<=1e9"):
        assert select(frame, spec, ACC_PARAMS) is None


def test_unknown_objective_lists_what_was_recorded():
    with pytest.raises(ConfigError, match=r"'energy_j' is not recorded.*latency_ms"):
        front_of(npas_frame(ROWS), ["accuracy", "energy_j"])


def test_hypervolume_by_trial_follows_completion_order():
    frame = npas_frame(ROWS)
    table, final = hypervolume_by_trial(frame, ACC_PARAMS)
    assert table["number"].tolist() == [0, 1, 2, 3, 5]  # completed only
    hv = table["hypervolume"].to_numpy()
    assert np.all(np.diff(hv) >= 0) and hv[2] == hv[1] and hv[3] == hv[2]  # 2, 3 add nothing
    assert hv[-1] == pytest.approx(final.value) and hv[-1] > hv[1]


#: Issue 59's small table: 66 trials of one config with one value pair, and two others.
TIED = [*({"accuracy": 0.97, "params": 134.0, "weights": 134.0, "width": 4} for _ in range(66)),
        {"accuracy": 0.99, "params": 900.0, "weights": 900.0, "width": 30},
        {"accuracy": 0.95, "params": 50.0, "weights": 50.0, "width": 2}]  # fmt: skip


def test_duplicate_trials_are_one_front_row_that_says_how_many_it_stands_for():
    from search.pareto import DUPLICATES, front_table
    from tests.search_tests.studies import npas_study

    front = front_of(npas_frame(TIED), ACC_PARAMS)
    assert front.numbers == [0, 66, 67]
    assert front.duplicates == {0: tuple(range(1, 66))}
    said = " (and 65 duplicates, same config and values: trial(s) 1, 2, 3, 4, 5, ...)"
    assert front.standing_for(0) == said
    table = front_table(npas_study(TIED))
    assert table["number"].tolist() == [0, 66, 67]
    assert table[DUPLICATES].tolist() == [65, 0, 0]
    # the deployed size beside the trained one
    columns = list(table.columns)
    assert columns[columns.index("params") + 1] == "weights"


def test_equal_values_of_different_configs_still_tie():
    rows = [{"accuracy": 0.9, "params": 100.0, "width": w} for w in (3, 4)]
    front = front_of(npas_frame(rows), ACC_PARAMS)
    assert front.numbers == [0, 1] and front.duplicates == {}


@pytest.mark.parametrize("spec", ["knee", "pepr:params", "asf:0.5,0.5", "best:accuracy"])
def test_selectors_choose_among_distinct_points_and_name_the_duplicates(spec):
    chosen = select(npas_frame(TIED), spec, ACC_PARAMS)
    assert chosen is not None and "failed" not in chosen.reason, chosen.reason
    if chosen.number == 0:
        assert "and 65 duplicates" in chosen.reason, chosen.reason
    assert chosen.number in (0, 66, 67)


def test_the_knee_cannot_fail_on_many_identical_points():
    """66 equal front points of different configs (nothing to collapse): pymoo's
    HighTradeoffPoints failed on them ("zero-size array to reduction operation maximum");
    it is now given the distinct points only."""
    from search.pareto._selectors import _tradeoff_points

    rows = [{"accuracy": 0.97, "params": 134.0} for _ in range(66)]
    rows += [{"accuracy": 0.99, "params": 900.0}, {"accuracy": 0.95, "params": 50.0},
             {"accuracy": 0.98, "params": 200.0}]  # fmt: skip
    chosen = select(npas_frame(rows), "knee", ACC_PARAMS)
    assert chosen is not None and "failed" not in chosen.reason, chosen.reason
    same = np.array([[0.5, 0.5]] * 66)
    found, why = _tradeoff_points(same)
    assert found is None and "1 distinct point(s) is too small" in why
    found, why = _tradeoff_points(np.array([[0.0, 1.0]] * 5 + [[1.0, 0.0]] * 5))
    assert found is None and "failed" not in why
    spread = np.array([[0.0, 1.0]] * 30 + [[1.0, 0.0], [0.1, 0.3], [0.5, 0.45]])
    found, _ = _tradeoff_points(spread)
    assert found is None or all(0 <= i < len(spread) for i in found)


def test_search_pareto_prints_one_row_per_config_and_its_duplicates(tmp_path, capsys):
    from search.cli import main
    from tests.search_tests.studies import stored_study

    url = f"sqlite:///{tmp_path / 'npas.db'}"
    stored_study(url, "tied", TIED)
    assert main(["pareto", "--storage", url]) == 0
    out = capsys.readouterr().out
    assert " ".join(out.split()).startswith(
        "Front of 'tied': 3 trial(s) (accuracy, params, weights); 65 more with the same config "
        "and values, counted in duplicates"
    )
    header = next(line for line in out.splitlines() if line.lstrip().startswith("number"))
    assert header.split()[:5] == ["number", "accuracy", "params", "weights", "duplicates"]
