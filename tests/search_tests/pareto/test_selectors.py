"""search.pareto._selectors: knee selectors on hand-made sets with known answers, the
selection-spec parser, and a contract every registered selector meets (forms, an example spec
per form that parses to it, a choice on the front or None)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from search.pareto import SELECTORS, front_of, parse_spec, select, why_none
from search.record import StudyAttr
from spaces._errors import ConfigError, UnknownNameError
from tests.search_tests.studies import ACC_PARAMS, ROWS, npas_frame


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
    chosen = select(npas_frame(rows), "tradeoff", ACC_PARAMS)
    assert chosen.number == 5
    assert "high trade-off point" in chosen.reason


def test_tradeoff_falls_back_to_the_point_closest_to_ideal_and_says_so():
    chosen = select(npas_frame(_line()), "knee", ACC_PARAMS)
    assert chosen.number == 4  # the middle of the line is closest to the ideal corner
    assert "knee (= the tradeoff selector" in chosen.reason
    assert "fell back to the front point closest to the ideal point" in chosen.reason
    two = select(npas_frame(_line(2)), "tradeoff", ACC_PARAMS)
    assert two is not None and "fell back" in two.reason


def test_pepr_selects_the_known_argmax():
    # minmax R: 0, 0.5, 1 → PePR 0.80, 0.90/1.5 = 0.60, 0.99/2 = 0.495
    rows = [
        {"accuracy": 0.80, "params": 0.0},
        {"accuracy": 0.90, "params": 50.0},
        {"accuracy": 0.99, "params": 100.0},
    ]
    chosen = select(npas_frame(rows), "pepr:params", ACC_PARAMS)
    assert chosen.number == 0 and chosen.scores["pepr"] == pytest.approx(0.8)
    # α = 10 almost ignores cost: 0.99 / 1.1 = 0.9 > 0.90 / 1.05
    assert select(npas_frame(rows), "pepr:params:alpha=10", ACC_PARAMS).number == 2
    assert "α=10" in select(npas_frame(rows), "pepr:params:alpha=10", ACC_PARAMS).reason


def test_weighted_pepr_follows_the_weights():
    rows = [
        {"accuracy": 0.9, "params": 0.0, "latency_ms": 10.0},
        {"accuracy": 0.9, "params": 10.0, "latency_ms": 0.0},
    ]
    frame = npas_frame(rows)
    assert select(frame, "pepr:0.9*params+0.1*latency_ms", ACC_PARAMS).number == 0
    assert select(frame, "pepr:0.1*params+0.9*latency_ms", ACC_PARAMS).number == 1
    assert select(frame, "pepr:params+latency_ms", ACC_PARAMS).number == 0  # tie → lower number


def test_asf_and_pseudo_weights_on_a_linear_front():
    frame = npas_frame(_line())
    assert select(frame, "asf:1,1", ACC_PARAMS).number == 4
    # pymoo's ASF: a zero weight tolerates no loss in that objective
    assert select(frame, "asf:1,0", ACC_PARAMS).number == 0
    assert select(frame, "asf:0,1", ACC_PARAMS).number == 8
    # pseudo-weights say how much each objective matters
    assert select(frame, "pseudo:1,0", ACC_PARAMS).number == 8
    assert select(frame, "pseudo:0,1", ACC_PARAMS).number == 0


def test_epsilon_best_and_trial():
    frame = npas_frame(ROWS)
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
        select(npas_frame(ROWS), "pepr:accuracy", ACC_PARAMS)


@settings(max_examples=60, deadline=None)
# Trials the same on the objectives but not on a cost PePR weighs are two candidates.
@example(points=[(0, 0, 1), (0, 0, 0)], alpha=1.0, w=1)
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
        ("best:val_loss", "best", {"metric": "val_loss"}),
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


def test_an_unknown_selector_gets_the_one_did_you_mean():
    with pytest.raises(ConfigError, match=r"unknown selector 'kne' \(did you mean 'knee'\?\)"):
        parse_spec("kne")


@pytest.mark.parametrize(
    "spec", ["best:test_accuracy", "epsilon:test_accuracy>=0.9", "pepr:params+test_loss"]
)
def test_choosing_on_the_test_set_is_refused_with_why(spec):
    with pytest.raises(ConfigError) as err:
        parse_spec(spec)
    text = str(err.value)
    assert "is measured on the test set" in text and "never chosen on" in text, text
    assert "choose on validation (accuracy, val_loss)" in text


def test_an_unrecorded_metric_is_named_as_such():
    frame = npas_frame(ROWS)
    with pytest.raises(ConfigError) as err:
        select(frame, "pepr:latency_p90_ms", ACC_PARAMS)
    assert "metric 'latency_p90_ms' was not recorded by this search" in str(err.value)
    assert "(did you mean 'latency_ms'?); recorded: accuracy, latency_ms, params" in str(err.value)
    with pytest.raises(ConfigError, match="metric 'flops_infer' was not recorded by this search"):
        select(frame, "best:flops_infer", ACC_PARAMS)


def test_a_prefix_gets_a_did_you_mean_and_text_columns_are_not_offered_as_metrics():
    """`best:acc` got no hint, and the metrics offered listed `artifact` and `energy_source`."""
    frame = npas_frame([{**row, "energy_source": "estimate"} for row in ROWS])
    frame["artifact"] = "/runs/x"
    with pytest.raises(ConfigError) as err:
        select(frame, "best:acc", ACC_PARAMS)
    text = str(err.value)
    assert "(did you mean 'accuracy'?); recorded: accuracy, latency_ms, params" in text, text


def test_an_epsilon_limit_no_trial_meets_says_the_closest_value():
    from search.pareto._selectors import why_none

    frame = npas_frame(ROWS)
    assert select(frame, "epsilon:params<=100", ACC_PARAMS) is None
    # the infeasible 10-parameter trial does not count: the smallest feasible one has 1000
    assert why_none(frame, "epsilon:params<=100") == (
        "no feasible trial has params <= 100; the smallest found is 1000")
    assert why_none(frame, "knee") is None


# ---------------------------------------------------------------- every registered selector

#: One spec per form of each selector, with values that suit ROWS on (accuracy, params).
EXAMPLES = {
    "asf": ("asf:1,1",),
    "best": ("best:accuracy",),
    "epsilon": ("epsilon:params<=2500", "epsilon:accuracy>=0.86"),
    "pepr": ("pepr:params:alpha=2", "pepr:0.5*params+0.5*latency_ms"),
    "pseudo": ("pseudo:1,1",),
    "recommended": ("recommended",),
    "tradeoff": ("knee", "tradeoff"),
    "trial": ("trial:5",),
}


def test_every_selector_has_examples():
    assert sorted(EXAMPLES) == SELECTORS.names(), "a new selector needs its EXAMPLES entry"


@pytest.mark.parametrize("name", SELECTORS.names())
def test_selector_forms_parse_to_it_and_choose_on_the_front(name):
    forms = SELECTORS.get(name).forms
    assert forms and all(isinstance(f, str) and f for f in forms)
    examples = EXAMPLES[name]
    assert len(examples) == len(forms), f"one example per form of {name!r}: {forms}"
    frame = npas_frame(ROWS)
    front = front_of(frame, ACC_PARAMS).numbers
    for spec in examples:
        assert parse_spec(spec)[0] == name
        chosen = select(frame, spec, ACC_PARAMS)
        assert chosen is None or chosen.number in front, (spec, chosen)


def test_recommended_takes_the_trial_the_finalists_chose_and_only_a_feasible_one():
    frame = npas_frame(ROWS)
    assert select(frame, "recommended", ACC_PARAMS) is None  # no finalists: none recorded
    assert "recorded no recommendation" in why_none(frame, "recommended")
    reason = "the best mean validation accuracy over 3 fresh seed(s): trial 2 0.8100"
    frame.attrs[StudyAttr.RECOMMENDATION] = {"trial": 2, "mean": 0.81, "n": 3, "reason": reason}
    chosen = select(frame, "recommended", ACC_PARAMS)  # off the front: the finalists decide
    assert (chosen.number, chosen.reason) == (2, reason)
    assert chosen.scores == {"mean_val_accuracy": 0.81, "seeds": 3.0}
    start = "a start point (the config's start list, point 1)"
    frame.attrs[StudyAttr.RECOMMENDATION] = {"trial": 2, "mean": 0.81, "n": 3, "reason": reason,
                                             "origin": start}  # fmt: skip
    assert select(frame, "recommended", ACC_PARAMS).reason == f"{reason}; the net: {start}"
    frame.attrs[StudyAttr.RECOMMENDATION] = {"trial": 3, "mean": 0.9, "n": 3, "reason": reason}
    assert select(frame, "recommended", ACC_PARAMS) is None  # trial 3 is infeasible
    assert "no longer a completed, feasible trial" in why_none(frame, "recommended")
