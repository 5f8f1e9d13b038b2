"""search.pareto._front: fronts and hypervolume of objective arrays against pymoo's analytic ZDT
fronts, pymoo's HV and a brute-force dominance check; normalisation; bad input named."""

from __future__ import annotations

import numpy as np
import pytest
from pymoo.indicators.hv import HV
from pymoo.problems import get_problem

from search.pareto import hypervolume, hypervolume_history, non_dominated, normalise
from spaces._errors import ConfigError

MIN2 = ["minimize", "minimize"]
XY = ["x", "y"]


def _box(x: tuple[float, float], y: tuple[float, float]) -> dict[str, tuple[float, float]]:
    return {"x": x, "y": y}


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
    bounds = _box((0.0, 1.0), (0.0, 1.0))
    base = hypervolume(pf, MIN2, bounds=bounds, names=XY).value
    worse = np.vstack([pf, pf[::7] + 0.05])
    assert hypervolume(worse, MIN2, bounds=bounds, names=XY).value == pytest.approx(base)
    flipped = hypervolume(-pf, ["maximize", "maximize"], bounds=_box((-1.0, 0.0), (-1.0, 0.0)),
                          names=XY)  # fmt: skip
    assert flipped.value == pytest.approx(base)


def test_hypervolume_leaves_out_infeasible_and_non_finite_points_and_handles_empty():
    pts = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [np.nan, 0.0]])
    unit = _box((0, 1), (0, 1))
    full = hypervolume(pts, MIN2, bounds=unit, names=XY)
    part = hypervolume(pts, MIN2, bounds=unit, names=XY, feasible=[True, True, False, True])
    assert full.n_points == 3 and part.n_points == 2
    assert full.value > part.value > 0
    assert hypervolume(pts, MIN2, feasible=[False] * 4).value == 0.0
    beyond = hypervolume([[2.0, 2.0]], MIN2, bounds=unit, names=XY)
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


def test_bounds_are_given_by_objective_name_and_no_array_is_read_transposed():
    """The multi-fidelity tables' bug, then issue 58's: with two objectives a ``(2, 2)`` array
    reads the same transposed, and ``np.array([(0, 1), (300, 5000)]).T`` (ascending rows) was
    accepted, scoring accuracy on 0-300 and params on 1-5,000 (0.103 instead of about 1.0)."""
    names, directions = ["accuracy", "params"], ["maximize", "minimize"]
    pairs = [(0.5, 1.0), (0.0, 5000.0)]
    by_name = dict(zip(names, pairs, strict=True))
    for array in (pairs, np.array(pairs).T, np.array([(0, 1), (300, 5000)]).T):
        with pytest.raises(ConfigError, match=r"2 x 2 array.*by objective name"):
            hypervolume([[0.95, 500.0]], directions, bounds=array, names=names)
    with pytest.raises(ConfigError, match=r"lo < hi"):
        normalise([[0.95, 500.0]], directions, names=names,
                  bounds={"accuracy": (0.5, 1.0), "params": (10.0, 10.0)})  # fmt: skip
    with pytest.raises(ConfigError, match=r"bounds\['params'\] is \(5000, 0\).*lo < hi"):
        hypervolume([[0.95, 500.0]], directions, names=names,
                    bounds={"accuracy": (0.5, 1.0), "params": (5000.0, 0.0)})  # fmt: skip
    with pytest.raises(ConfigError, match=r"allowed: exactly the objectives"):
        hypervolume([[0.95, 500.0]], directions, names=names, bounds={"accuracy": (0.5, 1.0)})
    with pytest.raises(ConfigError, match=r"need names="):
        hypervolume([[0.95, 500.0]], directions, bounds=by_name)
    # the right bounds: accuracy 0.95 → 0.1, params 500 → 0.1; (1.1 - 0.1)**2 = 1.0, in any
    # order of the mapping
    flipped = dict(reversed(by_name.items()))
    for bounds in (by_name, flipped):
        value = hypervolume([[0.95, 500.0]], directions, bounds=bounds, names=names).value
        assert value == pytest.approx(1.0)
    # a net at chance adds nothing: 0.11 lies beyond the reference (0.5 - 0.05 = 0.45)
    chance = hypervolume([[0.11, 300.0]], directions, bounds=by_name, names=names)
    assert chance.value == 0.0
    # three objectives: a (3, 2) array cannot be its own transpose's shape, and is read as rows
    three = hypervolume([[0.95, 500.0, 1.0]], [*directions, "minimize"],
                        bounds=[*pairs, (0.0, 10.0)])  # fmt: skip
    assert three.value == pytest.approx(1.0 * 1.0 * 1.0)
    with pytest.raises(ConfigError, match=r"one finite \(lo, hi\) pair per objective \(3\)"):
        hypervolume([[0.95, 500.0, 1.0]], [*directions, "minimize"],
                    bounds=np.array([*pairs, (0.0, 10.0)]).T)  # fmt: skip


def test_history_of_one_distinct_point_keeps_its_zero_width_bounds():
    """One trial (or equal ones): each objective's range is one value, mapped to 0."""
    for directions in (["maximize", "minimize"], ["minimize", "maximize"]):
        history, final = hypervolume_history([[0.8, 100.0], [0.8, 100.0]], directions)
        assert final.value == pytest.approx(1.1 * 1.1)
        assert history.tolist() == pytest.approx([1.21, 1.21])
