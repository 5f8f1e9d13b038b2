"""`search replay`'s verdict and the limits it states, on hand-made runs and curves."""

from __future__ import annotations

import dataclasses

from search.lab import Comparison, CurveTable, Run
from search.lab._whatif import WhatIf, limits


def _tiny(table: CurveTable, *, epoch_s: float, start_s: float) -> CurveTable:
    rows = [dataclasses.replace(row, seconds=[epoch_s] * 8) for row in table.rows[:6]]
    return dataclasses.replace(table, rows=rows, overheads={"start_s": start_s, "end_s": 0.0})


def test_limits_say_what_early_stopping_would_need(table):
    short = _tiny(table, epoch_s=0.01, start_s=1.0)
    few, epochs = limits(short)
    assert few.startswith("6 curves are too few: one trial in 9 survives the 2 rung(s) at "
                          "epochs 1, 3 (eta = 3), so a front of 10 needs about 90")  # fmt: skip
    # a full trial 1.08 s; a bracket of 9 trains 20 epochs and pays 9 starts: 1.022 s each;
    # 2x needs e * (8 - 2 * 20 / 9) >= 2 * 1 - 1, e >= 0.281 s
    assert "a 0.01 s epoch against a 1 s trial start" in epochs
    assert "only 1.06x as many configurations as FIFO" in epochs
    assert epochs.endswith("so epochs of at least 0.281 s")
    assert limits(_tiny(table, epoch_s=0.5, start_s=1.0))[1:] == []  # 2.9x: long enough
    assert "no rung below its last epoch" in limits(short, grace_epochs=8)[0]


def test_the_verdict_names_the_share_of_fifos_time_and_the_bound(table):
    one = table.rows[0]
    done = [list(one.values[-1]), True]

    def runs(arm: str, second: float) -> list[Run]:
        return [Run(arm, seed, [(second, *done)]) for seed in (0, 1)]  # type: ignore[list-item]

    arms = {"fifo": runs("fifo", 8.0), "moasha-stopping": runs("moasha-stopping", 3.1),
            "foresight": runs("foresight", 2.0)}  # fmt: skip
    verdict = WhatIf(Comparison(table, "fifo", 10.0, arms), "tpe", 2).verdict()
    assert verdict == ("stopping-type MOASHA would have reached FIFO's front in 31 % of the "
                       "time (median over 2 seeds; FIFO itself 80 %, the perfect-foresight "
                       "bound 20 %)")  # fmt: skip
    arms["moasha-stopping"] = [Run("moasha-stopping", seed, []) for seed in (0, 1)]  # never
    never = WhatIf(Comparison(table, "fifo", 10.0, arms), "tpe", 2).verdict()
    assert never.startswith("early stopping cannot pay here: 16 curves are too few")


def test_counts_print_as_integers(table):
    """A mean count over seeds that is whole prints as a count (``1``, never ``1.0``)."""
    done = [list(table.rows[0].values[-1]), True]
    counts = [{"started": 17, "completed": 15}, {"started": 17, "completed": 16}]
    arms = {arm: [Run(arm, seed, [(4.0, *done)], counts[seed])  # type: ignore[list-item]
                  for seed in (0, 1)] for arm in ("fifo", "moasha-stopping")}  # fmt: skip
    text = WhatIf(Comparison(table, "fifo", 10.0, arms), "tpe", 2).text()
    fifo = next(line for line in text.splitlines() if line.startswith("fifo"))
    assert fifo.split()[-3:-1] == ["17", "15.5"]
