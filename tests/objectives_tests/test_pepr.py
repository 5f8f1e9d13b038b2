"""PePR: the paper's check values, the bounds, the Pareto property and input validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives.pepr import normalize, pepr, pepr_curve, pepr_curve_max, pepr_weighted
from spaces._errors import ConfigError

TOL = 1.5e-4
# (performance, energy in Wh, PePR-E from the paper's Table 1), with the set's E_max.
DERMA = (254.1423, [(0.857863, 17.4751, 0.8026), (0.825101, 10.7455, 0.7916),
                    (0.865927, 50.6261, 0.7221)])  # fmt: skip
PNEUMONIA = (163.4703, [(0.953947, 8.7773, 0.9053), (0.960526, 105.8623, 0.5830)])


@pytest.mark.parametrize("dataset", [DERMA, PNEUMONIA], ids=["derma_pt", "pneumonia"])
def test_paper_check_values_with_max_normalisation(dataset: tuple) -> None:
    e_max, rows = dataset
    p, e, expected = (np.array(c) for c in zip(*rows, strict=True))
    # The set's most expensive model fixes E_max; its own performance does not matter.
    scores = pepr(np.append(p, 0.5), np.append(e, e_max), normalize="max")[:-1]
    np.testing.assert_allclose(scores, expected, atol=TOL)
    np.testing.assert_allclose(pepr(p, e, normalize=(0.0, e_max)), expected, atol=TOL)


def test_minmax_with_equal_costs_gives_performance() -> None:
    assert normalize([3.0, 3.0, 3.0], "minmax").tolist() == [0.0, 0.0, 0.0]
    assert pepr([0.2, 0.7, 0.9], [3.0, 3.0, 3.0]).tolist() == [0.2, 0.7, 0.9]


def test_normalisations() -> None:
    np.testing.assert_allclose(normalize([1.0, 2.0, 5.0], "minmax"), [0, 0.25, 1])
    np.testing.assert_allclose(normalize([1.0, 2.0, 5.0], "max"), [0.2, 0.4, 1])
    np.testing.assert_allclose(normalize([1.0, 2.0, 5.0], (1.0, 9.0)), [0, 0.125, 0.5])
    assert normalize([0.0, 0.0], "max").tolist() == [0.0, 0.0]


def test_alpha_trades_cost_against_performance() -> None:
    p, cost = [0.9, 0.6], [10.0, 0.0]
    assert pepr(p, cost).tolist() == [0.45, 0.6]  # alpha = 1: the cheap model wins
    np.testing.assert_allclose(pepr(p, cost, alpha=4.0), [0.9 / 1.25, 0.6])
    assert pepr(p, cost, alpha=float("inf")).tolist() == p  # cost ignored


def test_weighted_pepr_averages_normalised_costs() -> None:
    p = [0.8, 0.9, 0.7]
    energy, memory = [1.0, 3.0, 2.0], [30.0, 10.0, 20.0]
    r = 0.25 * normalize(energy) + 0.75 * normalize(memory)
    expected = np.array(p) / (1 + r)
    by_name = pepr_weighted(
        p, {"energy": energy, "memory": memory}, {"memory": 0.75, "energy": 0.25}
    )
    by_column = pepr_weighted(p, np.column_stack([energy, memory]), [0.25, 0.75])
    np.testing.assert_allclose(by_name, expected)
    np.testing.assert_allclose(by_column, expected)
    np.testing.assert_allclose(pepr_weighted(p, {"e": energy}, {"e": 1.0}), pepr(p, energy))


def test_curve_and_its_maximum_prefers_the_smallest_resource() -> None:
    perf = [0.5, 0.8, 0.9, 0.95]
    r = [0.0, 0.25, 0.5, 1.0]
    curve = pepr_curve(perf, r)
    np.testing.assert_allclose(curve, [0.5, 0.64, 0.6, 0.475])
    assert pepr_curve_max(perf, r) == (pytest.approx(0.64), 0.25)
    # Ties: 0.6/(1+0) == 0.9/(1+0.5), the smaller resource is reported, in any order.
    assert pepr_curve_max([0.9, 0.6], [0.5, 0.0]) == (pytest.approx(0.6), 0.0)
    # Epochs rescaled to a fraction of the run; the resource is reported as given.
    assert pepr_curve_max(perf, [0, 10, 20, 40], normalize="max") == (pytest.approx(0.64), 10.0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pepr([1.2], [1.0]), "performance must lie in"),
        (lambda: pepr([0.5, 0.6], [1.0]), "same shape"),
        (lambda: pepr([0.5], [-1.0]), "cost must be >= 0"),
        (lambda: pepr([0.5], [float("nan")]), "finite"),
        (lambda: pepr([0.5], [1.0], alpha=0), "alpha"),
        (lambda: pepr([0.5], [1.0], normalize="mean"), "normalize"),
        (lambda: pepr([0.5], [5.0], normalize=(0.0, 4.0)), "within the fixed bounds"),
        (lambda: pepr([0.5], [1.0], normalize=(2.0, 1.0)), "lo < hi"),
        (lambda: pepr_weighted([0.5], {"e": [1.0]}, {"e": 0.9}), "sum to 1"),
        (lambda: pepr_weighted([0.5], {"e": [1.0]}, {"m": 1.0}), "same resources"),
        (lambda: pepr_weighted([0.5], [[1.0, 2.0]], [1.5, -0.5]), ">= 0"),
        (lambda: pepr_weighted([0.5], [[1.0, 2.0]], [1.0]), "one weight per resource"),
        (lambda: pepr_weighted([0.5, 0.4], [[1.0]], [1.0]), "one row per model"),
        (lambda: pepr_curve([0.5], [-0.1]), "resource must be >= 0"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        call()


def models(min_size: int = 1):
    """Sets of models on a grid (P in thousandths, cost in tenths), so no rounding ties."""
    point = st.tuples(st.integers(0, 1000), st.integers(0, 10_000))
    return st.lists(point, min_size=min_size, max_size=25).map(
        lambda pts: (np.array([p for p, _ in pts]) / 1000, np.array([c for _, c in pts]) / 10)
    )


MODES = st.sampled_from(["minmax", "max", (0.0, 1000.0)])


@settings(max_examples=60, deadline=None)
@given(models(), MODES, st.floats(0.05, 20.0))
def test_pepr_lies_between_half_performance_and_performance(pc, mode, alpha: float) -> None:
    p, cost = pc
    score = pepr(p, cost, normalize=mode)
    assert np.all(score <= p) and np.all(score >= p / 2 - 1e-12)
    scaled = pepr(p, cost, normalize=mode, alpha=alpha)
    assert np.all(scaled <= p) and np.all(scaled >= p / (1 + 1 / alpha) - 1e-12)


def dominated(p: np.ndarray, cost: np.ndarray, i: int) -> bool:
    """Another model is at least as good on both (max P, min cost) and better on one."""
    no_worse = (p >= p[i]) & (cost <= cost[i])
    better = (p > p[i]) | (cost < cost[i])
    return bool(np.any(no_worse & better))


@settings(max_examples=80, deadline=None)
@given(models(), MODES)
def test_pepr_argmax_is_on_the_pareto_front(pc, mode) -> None:
    p, cost = pc
    score = pepr(p, cost, normalize=mode)
    if score.max() > 0:  # with all P = 0 every model ties at 0
        best = np.flatnonzero(score == score.max())
        assert not any(dominated(p, cost, i) for i in best)
