"""The rung view kept from one ask to the next is, at every ask, the view built anew: the
same trials, in the same states, with the same values, parameters and system attributes
(replayed TPE and NSGA-II searches under both MOASHA types on the tiny recorded table)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import optuna
import pytest

from search._compat import storage_of
from search.lab import CurveTable, ReplaySpec
from search.lab._replay import replay
from search.schedulers._rungview import RungView

MNIST = Path(__file__).resolve().parents[3] / "benchmarks/results/curves/mnist-r27.json.gz"


def _seen(view: optuna.Study) -> list[Any]:
    """What a sampler reads: the study's system attributes (None as missing), and of each
    trial (intermediate values of finished ones only)."""
    storage = storage_of(view)
    stored = storage.get_study_system_attrs(storage.get_study_id_from_name(view.study_name))
    attrs = {k: v for k, v in stored.items() if v is not None}
    return [attrs, *(
        (t.number, t.state, t.values, t.params, sorted(t.system_attrs.items()),
         t.intermediate_values if t.state.is_finished() else None)
        for t in view.get_trials(deepcopy=False)
    )]  # fmt: skip


@pytest.mark.parametrize(
    ("optimiser", "kind"), [("tpe", "stopping"), ("nsga2", "stopping"), ("nsga2", "promotion")]
)
def test_the_kept_view_is_the_view_built_anew_at_every_ask(table, monkeypatch, optimiser, kind):
    compared = []
    build = RungView._build

    def checked(self: RungView, study: optuna.Study) -> optuna.Study:
        view = build(self, study)
        if view is not study:
            fresh = build(RungView(self.inner, self.objectives), study)
            assert _seen(view) == _seen(fresh)
            compared.append(len(fresh.trials))
        return view

    monkeypatch.setattr(RungView, "_build", checked)
    horizon = 40 * sum(table.trial_s(row) for row in table.rows) / len(table.rows) / 2
    replay(table, ReplaySpec(optimiser, "moasha", kind, 2), seed=0, horizon_s=horizon,
           charge_decisions=False)  # fmt: skip
    assert len(compared) >= 20 and compared[-1] >= 40, compared


@pytest.mark.parametrize(("optimiser", "kind"), [("nsga2", "stopping"), ("tpe", "promotion")])
def test_a_replay_with_the_kept_view_is_the_replay_with_views_built_anew(
    table, monkeypatch, optimiser, kind
):
    """End to end, so that what samplers cache on a Study between two asks is covered too
    (a Study caches its trials for NSGA-II until its next ask or tell)."""
    spec = ReplaySpec(optimiser, "moasha", kind, 2)
    horizon = 40 * sum(table.trial_s(row) for row in table.rows) / len(table.rows) / 2
    kept = replay(table, spec, seed=1, horizon_s=horizon, charge_decisions=False)
    build = RungView._build
    monkeypatch.setattr(RungView, "_build",
                        lambda self, study: build(RungView(self.inner, self.objectives), study))
    anew = replay(table, spec, seed=1, horizon_s=horizon, charge_decisions=False)
    assert kept.started == anew.started > 40
    assert kept.completed == anew.completed


def test_nsga2_never_breeds_from_a_parameter_a_complete_trial_lacks():
    """Seed 42 of NSGA-II under Ray Tune's ASHA on the lab's MNIST table: the view's epoch
    went down, trials seen pruned were seen complete, and Optuna's incremental intersection
    of the search space still held ``convnet.depth``, which a complete SCS trial lacks
    (NSGA-II's crossover raised KeyError before the view's space was checked)."""
    table = CurveTable.load(MNIST)
    result = replay(table, ReplaySpec("nsga2", "asha", "stopping", 2), seed=42, horizon_s=500.0,
                    charge_decisions=False)  # fmt: skip
    assert result.started > 100


def test_nsga2_with_a_late_first_rung_never_breeds_from_a_single_parent(monkeypatch):
    """Seed 4 of NSGA-II under stopping MOASHA with ``grace_epochs: 3`` on the lab's MNIST
    table: a generation seen through the view held one complete parent, and Optuna's parent
    selection drew the second from an empty list (ValueError). That ask now proposes at
    random (read only once the sampler failed: every other ask is the sampler's own).

    The replay met it answering many proposals with one row (it no longer reuses a row):
    each row is here twenty times over, so that the replay answers as it did then; and under
    the quota MOASHA had then (the top ceil(n/3) of a rung, now floor(n/3) + 1, which
    completes more trials: no seed of 0-39 meets it), restored here."""
    import math

    from search.schedulers import _moasha, _rungview

    monkeypatch.setattr(_moasha.MOASHA, "_top", lambda self, n: max(1, math.ceil(n / self._rf)))
    table = CurveTable.load(MNIST)
    table = dataclasses.replace(table, rows=[row for row in table.rows for _ in range(20)])
    short: list[bool] = []
    check = _rungview._short_of_parents
    monkeypatch.setattr(_rungview, "_short_of_parents", lambda *a: short.append(check(*a))
                        or short[-1])  # fmt: skip
    horizon = 40 * sum(table.trial_s(row) for row in table.rows) / len(table.rows) / 2
    result = replay(table, ReplaySpec("nsga2", "moasha", "stopping", 2, grace_epochs=3), seed=4,
                    horizon_s=horizon, charge_decisions=False)  # fmt: skip
    assert result.started > 100 and len(result.completed) > 10
    assert short and all(short) and len(short) < result.started / 10, short
