"""``search replay``: what a finished search would have cost under other schedulers.

The study's own curves are the table (:meth:`CurveTable.from_study`); FIFO with the study's
optimiser is the baseline, replayed on the same seeds for as long as ``workers`` workers need
to train every recorded configuration once (the horizon). Each other arm is read as the time it
took to reach the baseline's final hypervolume, a share of the horizon (median, interquartile
mean and its bootstrap 95 % interval over the seeds), beside its trial counts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from search._output import check_file, write_atomic
from search.lab._compare import Arm, Comparison, hv_at
from search.lab._replay import ReplaySpec
from search.lab._stats import Summary
from search.lab._table import CurveTable

__all__ = ["WhatIf", "arms_for", "full_horizon", "what_if"]


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None, nested."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def full_horizon(table: CurveTable, workers: int) -> float:
    """Seconds ``workers`` workers need to train every recorded configuration once."""
    return sum(table.trial_s(row) for row in table.rows) / workers


def arms_for(
    optimiser: str, scheduler: str, kinds: Sequence[str], workers: int, options: dict[str, Any]
) -> list[Arm]:
    """The baseline (FIFO) first, then the scheduler asked for (each MOASHA type given)."""

    def spec(name: str, kind: str = "stopping") -> ReplaySpec:
        return ReplaySpec(optimiser, name, kind, workers, options=options)

    arms = [Arm("fifo", spec("fifo"))]
    if scheduler == "moasha":
        arms += [Arm(f"moasha-{kind}", spec("moasha", kind)) for kind in kinds]
    elif scheduler != "fifo":
        arms.append(Arm(scheduler, spec(scheduler)))
    return arms


@dataclass
class WhatIf:
    """A finished what-if comparison and how to print it."""

    comparison: Comparison
    optimiser: str
    workers: int

    def rows(self) -> list[dict[str, Any]]:
        """One dict per arm: its figures over the seeds (JSON-ready)."""
        c = self.comparison
        out = []
        for arm in c.runs:
            s = c.summary(arm)
            reach = s["reach"]
            finals = [hv_at(curve, c.horizon_s) for curve in c.curves(arm)]
            out.append({
                "arm": arm,
                "seeds": reach.n,
                "reach_median": reach.median,
                "reach_iqm": reach.iqm,
                "reach_ci95": list(reach.ci),
                "reach_s_median": reach.median * c.horizon_s,
                "reached_in": sum(math.isfinite(r) for r in c.reach(arm)),
                "hv_end_median": sorted(finals)[len(finals) // 2],
                **{f"mean_{k}": v for k, v in s["counts"].items()},
            })  # fmt: skip
        return out

    def text(self) -> str:
        c, table = self.comparison, self.comparison.table
        lines = [
            f"What if {table.name!r} ({table.describe()}) had run under other schedulers: "
            f"{self.optimiser}, {self.workers} worker(s), {len(c.runs[c.baseline])} seeds, "
            f"each replay {c.horizon_s:.0f} simulated s (FIFO training every recorded "
            "configuration once).",
            "time = the first second an arm's hypervolume reaches FIFO's at the end, as a share "
            "of FIFO's time: median / interquartile mean [bootstrap 95 % CI]; 'never' = not "
            "within the time.",
            "",
            f"{'arm':<20} {'time (share of FIFO)':<32} {'reached':>8} {'median s':>9} "
            f"{'trials':>7} {'complete':>9} {'HV end':>7}",
        ]
        for row, arm in zip(self.rows(), c.runs, strict=True):
            reach = Summary(row["seeds"], row["reach_median"], row["reach_iqm"],
                            tuple(row["reach_ci95"]))  # fmt: skip
            seconds = row["reach_s_median"]
            lines.append(
                f"{arm:<20} {reach.text():<32} {row['reached_in']:>4}/{row['seeds']:<3} "
                f"{'never' if math.isinf(seconds) else f'{seconds:.0f}':>9} "
                f"{row.get('mean_started', 0):>7.1f} {row.get('mean_completed', 0):>9.1f} "
                f"{row['hv_end_median']:>7.3f}"
            )
        lines.append(
            f"The true front of the {len(table.rows)} recorded configurations: hypervolume "
            f"{c.true_front_hv():.3f} (objectives on the table's bounds, reference 1.1)."
        )
        recorded = (table.config.get("scheduler") or {}).get("name", "fifo")
        if recorded != "fifo":
            lines.append(
                f"Note: {table.name!r} ran under {recorded!r}, so only the trials it let finish "
                "are replayed (those it stopped have no full curve): the table holds the better "
                "configurations only, which flatters every arm. Replay a FIFO search to compare "
                "schedulers fairly."
            )
        return "\n".join(lines)

    def json(self) -> str:
        """The rows as strict JSON: a time never reached (infinite) or a figure that is not a
        number is ``null`` (JSON has no ``Infinity``; Python's own writer wrote it)."""
        data = {"study": self.comparison.table.name, "optimiser": self.optimiser,
                "workers": self.workers, "horizon_s": self.comparison.horizon_s,
                "arms": self.rows()}  # fmt: skip
        return json.dumps(_finite(data), indent=2, allow_nan=False)

    def plot(self, path: str | Path) -> Path:
        """Hypervolume against simulated time per arm: the median over the seeds, the
        interquartile band shaded."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        c = self.comparison
        grid = np.linspace(0, c.horizon_s, 200)
        fig, ax = plt.subplots(figsize=(7, 4))
        for arm in c.runs:
            values = np.array([[hv_at(curve, t) for t in grid] for curve in c.curves(arm)])
            q1, mid, q3 = np.percentile(values, [25, 50, 75], axis=0)
            ax.plot(grid, mid, label=arm)
            ax.fill_between(grid, q1, q3, alpha=0.2)
        ax.axhline(c.true_front_hv(), color="grey", linestyle=":", label="true front")
        ax.set_xlabel("simulated seconds")
        ax.set_ylabel("hypervolume (completed, feasible trials)")
        ax.set_title(f"{c.table.name}: {self.optimiser}, {self.workers} worker(s)")
        ax.legend()
        fig.tight_layout()
        try:
            return write_atomic(check_file(path, flag="--plot"),
                                lambda tmp: fig.savefig(tmp, dpi=110))  # fmt: skip
        finally:
            plt.close(fig)


def what_if(
    table: CurveTable,
    *,
    scheduler: str = "moasha",
    kinds: Sequence[str] = ("stopping", "promotion"),
    optimiser: str | None = None,
    workers: int = 2,
    seeds: int = 20,
    jobs: int = 1,
    progress: Any = None,
) -> WhatIf:
    """Replays ``table`` under FIFO and ``scheduler`` on ``seeds`` seeds (see module doc)."""
    algorithm = table.config.get("algorithm") or {}
    name = optimiser or algorithm.get("name", "tpe")
    options = dict(algorithm.get("options") or {}) if optimiser in (None, name) else {}
    arms = arms_for(name, scheduler, kinds, workers, options)
    comparison = Comparison.run(table, arms, seeds=range(seeds),
                                horizon_s=full_horizon(table, workers), jobs=jobs,
                                progress=progress)  # fmt: skip
    return WhatIf(comparison, name, workers)

