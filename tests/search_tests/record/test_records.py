"""search.record._records: a trial's metrics are one user attribute each and its measurement
conditions are recorded once on the study, so Optuna's own tools read them (a numeric
``trials_dataframe()`` column per indicator); they read back as the trial reported them, and a
study written the old way (one nested ``metrics`` attribute) reads the same."""

from __future__ import annotations

import json
import math

import optuna
import pandas as pd
from optuna.trial import TrialState

from search.pareto._frame import trials_frame
from search.record._records import conditions_of, metrics_of, read_study
from search.record._schema import Column
from search.record._storage import open_storage
from search.record._study import open_study
from search.run._outcome import outcome_of, record_outcome
from search.run._trainable import report_of
from tests.search_tests.studies import ROWS, npas_study

optuna.logging.set_verbosity(optuna.logging.WARNING)

OBJECTIVES = [("accuracy", "maximize"), ("params", "minimize")]
CONDITIONS = {"cond_device": "cpu", "cond_sample_shape": [1, 8, 8], "cond_timer": "perf_counter"}
TRAINED = [
    {"accuracy": 0.9, "params": 900, "flops_infer": 1.8e4, "latency_ms": 0.21,
     "peak_mem_infer_mb": None, "energy_source": "estimate", "feasible": 1.0,
     **CONDITIONS, "cond_measure_s": 0.5},
    {"accuracy": 0.8, "params": 400, "flops_infer": 8.0e3, "latency_ms": 0.12,
     "peak_mem_infer_mb": None, "energy_source": "estimate", "feasible": 1.0,
     **CONDITIONS, "cond_measure_s": 0.7, "cond_timer": "cuda events"},
]  # fmt: skip
#: Refused before training: a reason, no accuracy, and the cost measured so far.
REFUSED = {"params": 9000, "flops_infer": 1.8e5, "feasible": 0.0, "constraint_0": 4000.0,
           "infeasible_reason": "violates params <= 5000", "cond_device": "cpu"}  # fmt: skip


def _recorded(tmp_path) -> optuna.Study:
    """A study in SQLite with the trials recorded as a search records them."""
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    study = open_study(
        name="s",
        storage=open_storage(url),
        sampler=optuna.samplers.RandomSampler(seed=0),
        config={"name": "s"},
        objectives=OBJECTIVES,
        constraints=["params <= 5000"],
        optimiser="random",
    )
    for metrics in [*TRAINED, REFUSED]:
        trial = study.ask()
        trial.suggest_int("budget", 100, 10000)
        outcome = outcome_of(
            report_of(metrics, ["accuracy", "params"]),
            objectives=OBJECTIVES,
            constraints=["params <= 5000"],
        )
        record_outcome(trial, outcome)
        study.tell(trial, outcome.values, state=outcome.state)
    return optuna.load_study(study_name="s", storage=url)


def test_one_attribute_per_metric_and_the_conditions_once(tmp_path) -> None:
    study = _recorded(tmp_path)
    first, second, refused = study.trials
    assert refused.state == TrialState.PRUNED
    assert first.user_attrs["metric_flops_infer"] == 1.8e4 and "metrics" not in first.user_attrs
    assert refused.user_attrs["metric_infeasible_reason"] == "violates params <= 5000"
    # Conditions: on the study, set by the first trial; a trial keeps its own only if it differs.
    assert {k: study.user_attrs[k] for k in CONDITIONS} == CONDITIONS
    assert not any(k.startswith("metric_cond_") and k != "metric_cond_measure_s"
                   for k in first.user_attrs)  # fmt: skip
    assert second.user_attrs["metric_cond_timer"] == "cuda events"
    assert "metric_cond_device" not in second.user_attrs
    # Read back as reported; None (not measured) as NaN, which keeps the column numeric.
    shared = conditions_of(study)
    for trial, reported in zip((first, second), TRAINED, strict=True):
        read = metrics_of(trial, shared)
        assert math.isnan(read.pop("peak_mem_infer_mb"))
        assert read == {k: v for k, v in reported.items() if k != "peak_mem_infer_mb"}
    assert metrics_of(refused)["infeasible_reason"] == REFUSED["infeasible_reason"]


def test_optunas_trials_dataframe_has_a_numeric_column_per_indicator(tmp_path) -> None:
    frame = _recorded(tmp_path).trials_dataframe()
    for name in ("accuracy", "params", "flops_infer", "latency_ms", "peak_mem_infer_mb"):
        column = frame[f"user_attrs_metric_{name}"]
        assert pd.api.types.is_float_dtype(column) or pd.api.types.is_integer_dtype(column), name
    assert frame["user_attrs_metric_flops_infer"].tolist() == [1.8e4, 8.0e3, 1.8e5]
    assert frame["user_attrs_metric_infeasible_reason"].iloc[2].startswith("violates")
    assert "user_attrs_metrics" not in frame and "params_budget" in frame


def test_a_study_written_the_old_way_reads_the_same() -> None:
    old = npas_study(ROWS, legacy=True)
    new = npas_study(ROWS)
    assert "metrics" in old.trials[0].user_attrs and "metrics" not in new.trials[0].user_attrs
    for before, after in zip(old.trials, new.trials, strict=True):
        assert metrics_of(before) == metrics_of(after, conditions_of(new))
    frames = [trials_frame(s).drop(columns="datetime_complete") for s in (old, new)]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_like=True)


def test_the_csv_has_the_frames_column_names_and_plain_cells(tmp_path) -> None:
    study = _recorded(tmp_path)
    path = tmp_path / "trials.csv"
    frame = trials_frame(study)
    frame.to_csv(path, index=False)
    read = pd.read_csv(path)
    assert list(read.columns) == list(frame.columns)
    assert list(read.columns[: len(Column.FIXED)]) == list(Column.FIXED)
    assert [c for c in read.columns if c.startswith("params_")] == ["params_budget"]
    assert {"params", "accuracy", "cond_device", "cond_sample_shape"} <= set(read.columns)
    assert not any(" " in c for c in read.columns)
    # a list condition is JSON text, the same in the frame, the CSV and JSON: no Python repr
    assert set(read["cond_sample_shape"]) == {json.dumps(CONDITIONS["cond_sample_shape"])}
    rows = json.loads(frame.to_json(orient="records", date_format="iso"))
    assert rows[0]["cond_sample_shape"] == "[1, 8, 8]"


def test_one_record_per_trial_says_what_it_recorded(tmp_path) -> None:
    records = read_study(_recorded(tmp_path))
    assert records.constraints == ("params <= 5000",)
    first, second, refused = records.trials
    assert (first.number, first.state, first.feasible, first.why_infeasible) == (
        0, "COMPLETE", True, None
    )  # fmt: skip
    assert first.values == (0.9, 900.0) and "budget" in first.params
    assert first.violations == {"params <= 5000": 0.0}, "as stored: it reported none"
    assert first.metrics["flops_infer"] == 1.8e4 and "cond_device" not in first.metrics
    assert first.conditions["cond_device"] == "cpu"
    assert second.conditions["cond_timer"] == "cuda events", "its own condition wins"
    assert refused.state == "PRUNED" and refused.refused and not refused.feasible
    assert refused.violated == {"params <= 5000": 4000.0}
    assert refused.why_infeasible == "violates params <= 5000" and refused.values is None


def test_a_trained_infeasible_trial_says_which_constraint_and_by_how_much(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    study = open_study(
        name="s", storage=open_storage(url), sampler=optuna.samplers.RandomSampler(seed=0),
        config={"name": "s"}, objectives=OBJECTIVES,
        constraints=["latency_ms <= 0.1", "params <= 5000"], optimiser="random",
    )  # fmt: skip
    trial = study.ask()
    metrics = {**TRAINED[0], "constraint_0": 0.11, "constraint_1": -4100.0, "feasible": 0.0}
    outcome = outcome_of(
        report_of(metrics, ["accuracy", "params"]),
        objectives=OBJECTIVES,
        constraints=["latency_ms <= 0.1", "params <= 5000"],
    )
    record_outcome(trial, outcome)
    study.tell(trial, outcome.values, state=outcome.state)
    (read,) = read_study(optuna.load_study(study_name="s", storage=url)).trials
    assert read.state == "COMPLETE" and not read.feasible
    assert read.violated == {"latency_ms <= 0.1": 0.11}
    assert read.why_infeasible == "violates latency_ms <= 0.1 (by 0.11)"
    assert trials_frame(study).loc[0, "why_infeasible"] == read.why_infeasible


def test_a_trial_s_origin_says_whether_the_optimiser_proposed_its_net():
    """Three trials: a start point (``npas:start`` 1: the start list's second point), one the
    optimiser proposed, and one narrowed from trial 1's refused proposal; the words name the
    study's optimiser, and a start point is said not to be the optimiser's."""
    from search.record import origin_of

    row = [{"accuracy": 0.9, "params": 900}]
    study = npas_study(row, attrs={"npas:start": 1})
    npas_study(row, study=study)
    npas_study(row, study=study, attrs={"npas:narrowed_from": 1})
    study.set_user_attr("optimiser", "tpe")
    assert [t.start for t in read_study(study).trials] == [1, None, None]
    assert origin_of(study, 0) == ("a start point (the config's start list, point 2), trained "
                                   "before any proposal: not found by the optimiser")
    assert origin_of(study, 1) == "proposed by tpe"
    narrowed = "proposed by tpe, narrowed into the constraints (trial 1's proposal)"
    assert origin_of(study, 2) == narrowed


def test_a_study_npas_did_not_record_reads_as_holding_no_search():
    """The study-level readers: an Optuna-only study holds no config, objectives, finalist runs
    or cost; an npas one reads back what was set, each finalist's runs a copy."""
    from search.record import finalist_runs, search_cost, stored_config, stored_objectives

    plain = optuna.create_study()
    assert (stored_config(plain), stored_objectives(plain), finalist_runs(plain)) == ({}, [], {})
    assert set(search_cost(plain).values()) == {None}
    study = npas_study([{"accuracy": 0.9, "params": 900}])
    study.set_user_attr("config", {"name": "s", "fixed": {"family": "mlp"}})
    study.set_user_attr("npas:finalist_runs", {"0": {"1": {"accuracy": 0.8}}})
    study.set_user_attr("search_time_s", 12.5)
    assert stored_config(study)["fixed"] == {"family": "mlp"}
    assert stored_objectives(study) == [("accuracy", "maximize"), ("params", "minimize")]
    runs = finalist_runs(study)
    runs["0"]["2"] = {"accuracy": 0.7}
    assert finalist_runs(study) == {"0": {"1": {"accuracy": 0.8}}}
    assert search_cost(study)["search_time_s"] == 12.5
