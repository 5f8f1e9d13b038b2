"""search.pareto: fronts and hypervolume against pymoo's analytic ZDT fronts, knee selectors on
hand-made sets with known answers, the selection-spec parser and indicator disagreement."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial
from pymoo.indicators.hv import HV
from pymoo.problems import get_problem

from search.pareto import (
    SELECTORS,
    disagreement,
    front_of,
    hypervolume,
    hypervolume_by_trial,
    hypervolume_history,
    jaccard,
    non_dominated,
    normalise,
    parse_spec,
    select,
)
from search.pareto._frame import objectives_of, trials_frame
from spaces._errors import ConfigError, UnknownNameError

optuna.logging.set_verbosity(optuna.logging.WARNING)

MIN2 = ["minimize", "minimize"]
ACC_PARAMS = (("accuracy", "maximize"), ("params", "minimize"))


def _study(rows: list[dict], objectives=ACC_PARAMS) -> optuna.Study:
    """An in-memory study written with the SEARCH.md conventions, one trial per row."""
    study = optuna.create_study(directions=[d for _, d in objectives])
    study.set_user_attr("objectives", [list(o) for o in objectives])
    for i, row in enumerate(rows):
        row = dict(row)
        state = row.pop("state", "COMPLETE")
        feasible = row.pop("feasible", True)
        dist = {"width": IntDistribution(1, 1000)}
        if state == "FAIL":
            trial = create_trial(
                state=TrialState.FAIL,
                params={"width": i + 1},
                distributions=dist,
                user_attrs={"error": "NonFiniteLossError: loss is nan"},
            )
        else:
            metrics = {**row, "feasible": float(feasible), "cond_device": "cpu"}
            trial = create_trial(
                state=TrialState.COMPLETE,
                values=[row[n] for n, _ in objectives],
                params={"width": i + 1},
                distributions=dist,
                user_attrs={"metrics": metrics, "feasible": feasible, "constraints": []},
            )
        study.add_trial(trial)
    return study


def _frame(rows: list[dict], objectives=ACC_PARAMS) -> pd.DataFrame:
    return trials_frame(_study(rows, objectives))


# ---------------------------------------------------------------- fronts and hypervolume


@pytest.mark.parametrize("name", ["zdt1", "zdt2", "zdt4", "zdt6"])
def test_analytic_zdt_front_is_non_dominated_and_dominated_points_are_excluded(name):
    pf = get_problem(name).pareto_front()
    rng = np.random.default_rng(0)
    dominated = pf[rng.choice(len(pf), 40)] + rng.uniform(0.01, 0.3, size=(40, 2))
    values = np.vstack([pf, dominated])
    order = rng.permutation(len(values))
    mask = non_dominated(values[order], MIN2)
    expected = order < len(pf)
    assert mask.tolist() == expected.tolist()


def _brute_force_front(F: np.ndarray) -> np.ndarray:
    """Independent oracle: a point is on the front when no other point dominates it."""
    le = (F[:, None, :] <= F[None, :, :]).all(axis=2)
    lt = (F[:, None, :] < F[None, :, :]).any(axis=2)
    return ~(le & lt).any(axis=0)


def test_zdt3_front_matches_a_brute_force_dominance_check():
    # pymoo samples ZDT3's five regions up to their end points, and three of those end
    # points are dominated by the next region: the sorting must find exactly those.
    pf = get_problem("zdt3").pareto_front()
    rng = np.random.default_rng(2)
    values = np.vstack([pf, pf[rng.choice(len(pf), 30)] + rng.uniform(0, 0.2, size=(30, 2))])
    expected = _brute_force_front(values)
    assert non_dominated(values, MIN2).tolist() == expected.tolist()
    assert 90 <= expected[: len(pf)].sum() < len(pf) and not expected[len(pf) :].any()
    flipped = values * [1.0, -1.0]
    assert non_dominated(flipped, ["minimize", "maximize"]).tolist() == expected.tolist()


def test_maximised_objectives_are_negated():
    pf = get_problem("zdt1").pareto_front()
    flipped = pf * [-1.0, 1.0]  # maximise the negated first objective: same front
    assert non_dominated(flipped, ["maximize", "minimize"]).all()
    # read as minimisation, the flipped set collapses onto one corner point
    assert non_dominated(flipped, MIN2).sum() == 1


def test_hypervolume_matches_pymoo_with_the_same_normalisation_and_ref():
    pf = get_problem("zdt1").pareto_front() * [2.0, 50.0] + [1.0, 10.0]  # arbitrary units
    ideal, nadir = pf.min(axis=0), pf.max(axis=0)
    ref = nadir + 0.1 * (nadir - ideal)
    direct = HV(ref_point=ref, ideal=ideal, nadir=nadir, zero_to_one=True)(pf)
    result = hypervolume(pf, MIN2)
    assert result.value == pytest.approx(direct, rel=1e-12)
    np.testing.assert_allclose(result.ref_point, [1.1, 1.1])
    np.testing.assert_allclose(result.ref_point_raw, nadir + 0.1 * (nadir - ideal))
    np.testing.assert_allclose(result.bounds, np.stack([ideal, nadir], axis=1))
    assert "reference point (1.1, 1.1)" in result.describe()


def test_hypervolume_of_a_dense_zdt1_front_approaches_the_analytic_value():
    pf = get_problem("zdt1").pareto_front(n_pareto_points=2000)
    # ∫0..1 (1 - sqrt(x)) dx = 1/3 is the area under the front; the box to ref 1 has area 1
    assert hypervolume(pf, MIN2, ref=1.0).value == pytest.approx(2 / 3, abs=1e-3)


def test_hypervolume_is_unchanged_by_dominated_points_and_directions():
    pf = get_problem("zdt2").pareto_front()
    bounds = [(0.0, 1.0), (0.0, 1.0)]
    base = hypervolume(pf, MIN2, bounds=bounds).value
    worse = np.vstack([pf, pf[::7] + 0.05])
    assert hypervolume(worse, MIN2, bounds=bounds).value == pytest.approx(base)
    flipped = hypervolume(-pf, ["maximize", "maximize"], bounds=[(-1.0, 0.0)] * 2)
    assert flipped.value == pytest.approx(base)


def test_hypervolume_leaves_out_infeasible_and_non_finite_points_and_handles_empty():
    pts = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [np.nan, 0.0]])
    full = hypervolume(pts, MIN2, bounds=[(0, 1), (0, 1)])
    part = hypervolume(pts, MIN2, bounds=[(0, 1), (0, 1)], feasible=[True, True, False, True])
    assert full.n_points == 3 and part.n_points == 2
    assert full.value > part.value > 0
    assert hypervolume(pts, MIN2, feasible=[False] * 4).value == 0.0
    beyond = hypervolume([[2.0, 2.0]], MIN2, bounds=[(0, 1), (0, 1)])
    assert beyond.value == 0.0  # does not dominate the reference point


def test_hypervolume_history_is_monotone_and_ends_at_the_full_value():
    rng = np.random.default_rng(1)
    pf = get_problem("zdt1").pareto_front(n_pareto_points=30)
    pts = np.vstack([pf + rng.uniform(0, 0.5, size=pf.shape), pf])[rng.permutation(60)]
    feasible = rng.random(60) > 0.2
    history, final = hypervolume_history(pts, MIN2, feasible=feasible)
    assert np.all(np.diff(history) >= -1e-12)
    assert history[-1] == pytest.approx(final.value)
    assert final.value == pytest.approx(hypervolume(pts, MIN2, feasible=feasible).value)


def test_normalise_maps_best_to_zero_and_handles_constant_objectives():
    norm, bounds = normalise(
        [[0.9, 10.0, 3.0], [0.5, 20.0, 3.0]], ["maximize", "minimize", "minimize"]
    )
    np.testing.assert_allclose(norm, [[0, 0, 0], [1, 1, 0]])
    np.testing.assert_allclose(bounds, [[0.9, 0.5], [10, 20], [3, 3]])


@pytest.mark.parametrize(
    ("values", "directions", "kw"),
    [
        ([[1, 2]], ["minimize"], {}),
        ([[1, 2]], ["minimise", "minimize"], {}),
        ([[1, 2]], MIN2, {"feasible": [True, False]}),
        ("abc", MIN2, {}),
    ],
)
def test_bad_input_names_the_argument(values, directions, kw):
    with pytest.raises(ConfigError, match=r"directions|feasible|values"):
        non_dominated(values, directions, **kw)


def test_bad_bounds_and_ref_are_rejected():
    with pytest.raises(ConfigError, match="bounds"):
        hypervolume([[1, 2]], MIN2, bounds=[(0, 1)])
    with pytest.raises(ConfigError, match="ref"):
        hypervolume([[1, 2]], MIN2, ref=-1.0)


# ---------------------------------------------------------------- study frames

ROWS = [
    {"accuracy": 0.90, "params": 4000.0, "latency_ms": 4.0},  # 0 front
    {"accuracy": 0.85, "params": 1000.0, "latency_ms": 1.0},  # 1 front
    {"accuracy": 0.80, "params": 3000.0, "latency_ms": 3.0},  # 2 dominated by 1
    {"accuracy": 0.99, "params": 10.0, "latency_ms": 0.5, "feasible": False},  # 3 infeasible
    {"state": "FAIL"},  # 4 failed
    {"accuracy": 0.88, "params": 2000.0, "latency_ms": 2.5},  # 5 front
]


def test_trials_frame_follows_the_storage_conventions():
    frame = _frame(ROWS)
    assert frame["number"].tolist() == list(range(6))
    assert frame["state"].tolist() == ["COMPLETE"] * 4 + ["FAIL", "COMPLETE"]
    assert frame["feasible"].tolist() == [True, True, True, False, False, True]
    assert frame.loc[4, "error"].startswith("NonFiniteLossError")
    assert math.isnan(frame.loc[4, "accuracy"])
    assert {"params_width", "latency_ms", "cond_device", "datetime_complete"} <= set(frame)


def test_front_is_constraint_aware():
    frame = _frame(ROWS)
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [0, 1, 5] and front.message is None
    # on a subset of objectives: the latency front is the same set here
    assert front_of(frame, ["accuracy", "latency_ms"]).numbers == [0, 1, 5]
    assert front_of(frame, ["accuracy"]).numbers == [0]


def test_no_feasible_trial_is_said():
    frame = _frame([{**r, "feasible": False} for r in ROWS if "state" not in r])
    front = front_of(frame, ACC_PARAMS)
    assert front.numbers == [] and "no feasible trial" in front.message
    for spec in ("knee", "pepr:params", "best:accuracy", "asf:1,1", "epsilon:params<=1e9"):
        assert select(frame, spec, ACC_PARAMS) is None


def test_unknown_objective_lists_what_was_recorded():
    with pytest.raises(ConfigError, match=r"'energy_j' is not recorded.*latency_ms"):
        front_of(_frame(ROWS), ["accuracy", "energy_j"])


def test_hypervolume_by_trial_follows_completion_order():
    frame = _frame(ROWS)
    table, final = hypervolume_by_trial(frame, ACC_PARAMS)
    assert table["number"].tolist() == [0, 1, 2, 3, 5]  # completed only
    hv = table["hypervolume"].to_numpy()
    assert np.all(np.diff(hv) >= 0) and hv[2] == hv[1] and hv[3] == hv[2]  # 2, 3 add nothing
    assert hv[-1] == pytest.approx(final.value) and hv[-1] > hv[1]


def test_objectives_of_reads_the_study_attr():
    assert objectives_of(_study(ROWS)) == list(ACC_PARAMS)


# ---------------------------------------------------------------- knee selectors


def _line(n: int = 9) -> list[dict]:
    """A linear front accuracy 0.5 … 1.0 against params 0 … 1024 with exactly equal steps
    (dyadic values, no rounding noise): no point trades off better than another."""
    step = 8 // (n - 1)
    return [{"accuracy": 0.5 + k * step / 16, "params": 128.0 * k * step} for k in range(n)]


def _knee_set() -> list[dict]:
    """An L-shaped front whose corner (trial 5) is the obvious knee."""
    pts = [(x, 1 - 9 * x) for x in np.linspace(0, 0.08, 5)] + [(0.1, 0.1)]
    pts += [(x, 0.1 - (x - 0.1) / 9) for x in np.linspace(0.2, 1.0, 9)]
    return [{"accuracy": 1.0 - f1, "params": 1000.0 * f2} for f1, f2 in pts]


def test_tradeoff_finds_the_corner_of_an_l_shaped_front():
    rows = [*_knee_set(), {"accuracy": 0.5, "params": 900.0}]  # one dominated trial too
    chosen = select(_frame(rows), "tradeoff", ACC_PARAMS)
    assert chosen.number == 5
    assert "high trade-off point" in chosen.reason


def test_tradeoff_falls_back_to_the_point_closest_to_ideal_and_says_so():
    chosen = select(_frame(_line()), "knee", ACC_PARAMS)
    assert chosen.number == 4  # the middle of the line is closest to the ideal corner
    assert "knee (= the tradeoff selector" in chosen.reason
    assert "fell back to the front point closest to the ideal point" in chosen.reason
    two = select(_frame(_line(2)), "tradeoff", ACC_PARAMS)
    assert two is not None and "fell back" in two.reason


def test_pepr_selects_the_known_argmax():
    # minmax R: 0, 0.5, 1 → PePR 0.80, 0.90/1.5 = 0.60, 0.99/2 = 0.495
    rows = [
        {"accuracy": 0.80, "params": 0.0},
        {"accuracy": 0.90, "params": 50.0},
        {"accuracy": 0.99, "params": 100.0},
    ]
    chosen = select(_frame(rows), "pepr:params", ACC_PARAMS)
    assert chosen.number == 0 and chosen.scores["pepr"] == pytest.approx(0.8)
    # α = 10 almost ignores cost: 0.99 / 1.1 = 0.9 > 0.90 / 1.05
    assert select(_frame(rows), "pepr:params:alpha=10", ACC_PARAMS).number == 2
    assert "α=10" in select(_frame(rows), "pepr:params:alpha=10", ACC_PARAMS).reason


def test_weighted_pepr_follows_the_weights():
    rows = [
        {"accuracy": 0.9, "params": 0.0, "latency_ms": 10.0},
        {"accuracy": 0.9, "params": 10.0, "latency_ms": 0.0},
    ]
    frame = _frame(rows)
    assert select(frame, "pepr:0.9*params+0.1*latency_ms", ACC_PARAMS).number == 0
    assert select(frame, "pepr:0.1*params+0.9*latency_ms", ACC_PARAMS).number == 1
    assert select(frame, "pepr:params+latency_ms", ACC_PARAMS).number == 0  # tie → lower number


def test_asf_and_pseudo_weights_on_a_linear_front():
    frame = _frame(_line())
    assert select(frame, "asf:1,1", ACC_PARAMS).number == 4
    # pymoo's ASF: a zero weight tolerates no loss in that objective
    assert select(frame, "asf:1,0", ACC_PARAMS).number == 0
    assert select(frame, "asf:0,1", ACC_PARAMS).number == 8
    # pseudo-weights say how much each objective matters
    assert select(frame, "pseudo:1,0", ACC_PARAMS).number == 8
    assert select(frame, "pseudo:0,1", ACC_PARAMS).number == 0


def test_epsilon_best_and_trial():
    frame = _frame(ROWS)
    chosen = select(frame, "epsilon:params<=2500", ACC_PARAMS)
    assert chosen.number == 5 and "params <= 2500" in chosen.reason
    assert select(frame, "epsilon:latency_ms<=0.9", ACC_PARAMS) is None  # only infeasible 3
    assert select(frame, "epsilon:latency_ms>=3.5", ACC_PARAMS).number == 0
    assert select(frame, "best:accuracy", ACC_PARAMS).number == 0  # 3 is infeasible
    assert select(frame, "best:latency_ms", ACC_PARAMS).number == 1
    assert "INFEASIBLE" in select(frame, "trial:3", ACC_PARAMS).reason
    assert "on the front" in select(frame, "trial:5", ACC_PARAMS).reason
    with pytest.raises(ConfigError, match="trial 4 is not a completed trial"):
        select(frame, "trial:4", ACC_PARAMS)


def test_selectors_are_registered_and_pepr_rejects_maximised_metrics():
    assert set(SELECTORS.names()) >= {"tradeoff", "pepr", "asf", "pseudo", "epsilon", "best"}
    with pytest.raises(UnknownNameError, match="known: asf"):
        SELECTORS.get("compromise")
    with pytest.raises(ConfigError, match="maximised"):
        select(_frame(ROWS), "pepr:accuracy", ACC_PARAMS)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from([1.0, 0.5, 3.0]),
    st.integers(1, 9),
)
def test_pepr_argmax_is_on_the_front(points, alpha, w):
    frame = pd.DataFrame(
        {
            "number": range(len(points)),
            "state": "COMPLETE",
            "feasible": True,
            "accuracy": [p / 20 for p, _, _ in points],
            "params": [float(c) for _, c, _ in points],
            "latency_ms": [float(c) for _, _, c in points],
        }
    )
    single = select(frame, f"pepr:params:alpha={alpha}", ACC_PARAMS)
    assert single.number in front_of(frame, ACC_PARAMS).numbers
    spec = f"pepr:{w / 10}*params+{1 - w / 10}*latency_ms:alpha={alpha}"
    weighted = select(frame, spec, ACC_PARAMS)
    assert weighted.number in front_of(frame, ["accuracy", "params", "latency_ms"]).numbers


# ---------------------------------------------------------------- selection specs


@pytest.mark.parametrize(
    ("spec", "name", "options"),
    [
        ("knee", "tradeoff", {}),
        ("tradeoff", "tradeoff", {}),
        ("pepr:energy_infer_j", "pepr", {"indicators": {"energy_infer_j": 1.0}}),
        ("pepr:params:alpha=2", "pepr", {"indicators": {"params": 1.0}, "alpha": 2.0}),
        ("pepr:params+latency_ms", "pepr", {"indicators": {"params": 1.0, "latency_ms": 1.0}}),
        (
            "pepr:0.3*params+0.7*latency_ms:normalize=max",
            "pepr",
            {"indicators": {"params": 0.3, "latency_ms": 0.7}, "normalize": "max"},
        ),
        ("best:test_accuracy", "best", {"metric": "test_accuracy"}),
        ("trial:12", "trial", {"number": 12}),
        ("asf:0.2,0.8", "asf", {"weights": [0.2, 0.8]}),
        ("pseudo:1,0,1", "pseudo", {"weights": [1.0, 0.0, 1.0]}),
        ("epsilon:params<=5000", "epsilon", {"indicator": "params", "op": "<=", "limit": 5000}),
        (
            "epsilon:throughput >= 1e3",
            "epsilon",
            {"indicator": "throughput", "op": ">=", "limit": 1000.0},
        ),
    ],
)
def test_parse_good_specs(spec, name, options):
    assert parse_spec(spec) == (name, options)


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "kne",
        "pepr",
        "pepr:",
        "pepr:params:alpha=x",
        "pepr:params:beta=2",
        "pepr:2x*params",
        "best:",
        "trial:x",
        "trial:-1",
        "asf:",
        "asf:1,,2",
        "asf:a,b",
        "epsilon:params<3",
        "epsilon:params<=inf",
        "compromise:1,1",
    ],
)
def test_parse_bad_specs_names_the_spec_and_the_forms(spec):
    with pytest.raises(ConfigError) as err:
        parse_spec(spec)
    assert repr(spec) in str(err.value) and "epsilon:<indicator><=<x>" in str(err.value)


# ---------------------------------------------------------------- indicator disagreement


def test_kendall_tau_and_front_overlap_on_a_hand_made_table():
    rows = [
        {
            "accuracy": 0.6,
            "params": 1.0,
            "flops_infer": 5.0,
            "latency_ms": 1.0,
            "throughput": 100.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.7,
            "params": 2.0,
            "flops_infer": 4.0,
            "latency_ms": 2.0,
            "throughput": 50.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.8,
            "params": 3.0,
            "flops_infer": 3.0,
            "latency_ms": 4.0,
            "throughput": 25.0,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.9,
            "params": 4.0,
            "flops_infer": 2.0,
            "latency_ms": 8.0,
            "throughput": 12.5,
            "peak_mem_infer_mb": 7.0,
        },
        {
            "accuracy": 0.5,
            "params": 5.0,
            "flops_infer": 1.0,
            "latency_ms": 16.0,
            "throughput": 6.25,
            "feasible": False,
            "peak_mem_infer_mb": 7.0,
        },
    ]
    d = disagreement(_frame(rows))
    assert d.n_trials == 4  # the infeasible trial is left out
    assert d.tau.loc["params", "latency_ms"] == pytest.approx(1.0)
    assert d.tau.loc["params", "flops_infer"] == pytest.approx(-1.0)
    # throughput is maximised: oriented as a cost it ranks like latency
    assert d.tau.loc["latency_ms", "throughput"] == pytest.approx(1.0)
    assert d.tau["peak_mem_infer_mb"].isna().all()  # constant: cannot rank
    assert d.fronts["params"] == [0, 1, 2, 3]
    assert d.fronts["flops_infer"] == [3]  # most accurate is also the cheapest by FLOPs
    assert d.overlap.loc["params", "flops_infer"] == pytest.approx(0.25)
    assert d.overlap.loc["params", "latency_ms"] == pytest.approx(1.0)


def test_jaccard():
    assert jaccard([1, 2, 3], [2, 3, 4]) == pytest.approx(0.5)
    assert math.isnan(jaccard([], []))
