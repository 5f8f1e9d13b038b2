"""The perfect-foresight bound on a tiny hand-made curve table: which trials it lets finish,
what each costs on the clock, and that the optimiser proposes what it proposes under FIFO."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from search.lab import CurveTable, NearestRow, ReplaySpec, replay
from search.lab._replay import replay_config

#: Final values (accuracy max, params min, flops_infer min) and violation of seven rows: A, C
#: and D are the front; B is dominated by A; E equals A; F dominates all but is infeasible; G
#: is dominated by D only (on the front until D is proposed: the look-ahead stops it anyway).
ROWS = {
    "A": ([0.90, 100.0, 1000.0], 0.0),
    "B": ([0.80, 200.0, 2000.0], 0.0),
    "C": ([0.95, 500.0, 5000.0], 0.0),
    "G": ([0.60, 60.0, 600.0], 0.0),
    "D": ([0.70, 50.0, 500.0], 0.0),
    "E": ([0.90, 100.0, 1000.0], 0.0),
    "F": ([0.99, 10.0, 10.0], 1.0),
}
START = 1.0


@pytest.fixture
def tiny(table: CurveTable) -> CurveTable:
    """Seven of the quick run's configurations with hand-made curves: 8 epochs of ``i + 1``
    seconds for the i-th row, a start of 1 s, no final measurement."""
    rows = []
    for i, (row, (final, violation)) in enumerate(zip(table.rows, ROWS.values(), strict=False)):
        values = [[final[0] * (e + 1) / 8, *final[1:]] for e in range(8)]
        rows.append(dataclasses.replace(row, values=values, violation=violation, at_chance=[],
                                        seconds=[float(i + 1)] * 8, overhead_s=0.0))  # fmt: skip
    return dataclasses.replace(table, rows=rows, noise=[],
                               overheads={"start_s": START, "end_s": 0.0})  # fmt: skip


def _rows(table: CurveTable, spec: ReplaySpec, result) -> list[str]:
    """The hand-made row (its letter) each replayed trial was trained as, in order (each row
    given once while any is left, as the replay gives them)."""
    nearest = NearestRow(table.rows, replay_config(table, spec).space, fresh=True)
    letters = {id(row): name for row, name in zip(table.rows, ROWS, strict=True)}
    return [letters[id(nearest(t.params))] for t in result.study.trials]


def test_foresight_finishes_the_front_only_and_pays_a_start_and_an_epoch_per_rejection(tiny):
    spec = ReplaySpec("random", "foresight", workers=1)
    result = replay(tiny, spec, seed=0, horizon_s=400.0, charge_decisions=False)
    order = _rows(tiny, spec, result)
    assert len(set(order)) == 7, order  # every row was proposed (in both passes: one worker)
    # the known answer: a trial finishes iff it is feasible, no finished one is as good, and
    # no row of the front (A, C, D, E) is better
    kept: list[str] = []
    clock, expected = 0.0, []
    seconds = {name: float(i + 1) for i, name in enumerate(ROWS)}
    for trial_id, name in zip(sorted(result.ends), order, strict=False):
        epochs, how = result.ends[trial_id]
        values, violation = ROWS[name]
        dominated = any(all(a <= b for a, b in zip(_min(ROWS[k][0]), _min(values),
                                                   strict=True)) for k in kept)  # fmt: skip
        ahead = any(_min(ROWS[k][0]) != _min(values) and all(
            a <= b for a, b in zip(_min(ROWS[k][0]), _min(values), strict=True))
            for k in "ACDE")  # fmt: skip
        if violation > 0 or dominated or ahead:
            assert (epochs, how) == (1, "stopped"), (trial_id, name)
            clock += START + seconds[name]
        else:
            assert (epochs, how) == (8, "complete"), (trial_id, name)
            clock += START + 8 * seconds[name]
            kept.append(name)
            expected.append((clock, values))
    assert [t for t, _, _ in result.completed] == pytest.approx([t for t, _ in expected])
    assert [v for _, v, _ in result.completed] == [v for _, v in expected]
    assert set(kept) == {"C", "D"} | ({"A"} & set(kept)) | ({"E"} & set(kept))
    assert ("A" in kept) != ("E" in kept)  # equal values: the second is not on the front
    assert "B" not in kept and "F" not in kept and "G" not in kept
    assert order.index("G") < order.index("D")  # G came first: only the look-ahead stops it
    # the optimiser was told every trial's final values: all complete in its study
    assert all(t.state.name == "COMPLETE" for t in result.study.trials[: len(result.ends)])


def _min(values: list[float]) -> list[float]:
    """Minimisation form of the three objectives (accuracy maximised)."""
    return [-values[0], values[1], values[2]]


def test_foresight_follows_the_optimisers_own_proposals(tiny):
    """One worker, TPE: told the same final values in the same order, it proposes under the
    bound what it proposes under FIFO."""
    runs = {name: replay(tiny, ReplaySpec("tpe", name, workers=1), seed=2, horizon_s=700.0,
                         charge_decisions=False) for name in ("fifo", "foresight")}  # fmt: skip
    fifo, bound = (
        [t.params for t in runs[name].study.trials[: len(runs[name].ends)]]
        for name in ("fifo", "foresight")
    )
    n = min(len(fifo), len(bound))
    assert n >= 10 and len(bound) > len(fifo)  # rejections are cheap: more proposals seen
    assert bound[:n] == fifo[:n]
    assert list(itertools.islice(runs["foresight"].ends.values(), n)) != list(
        itertools.islice(runs["fifo"].ends.values(), n))  # fmt: skip
