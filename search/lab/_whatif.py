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

import numpy as np

from search._output import check_file, write_atomic
from search.lab._compare import Arm, Comparison, hv_at
from search.lab._replay import ReplaySpec
from search.lab._stats import Summary
from search.lab._table import CurveTable
from search.schedulers import GRACE_EPOCHS, REDUCTION_FACTOR, milestones

__all__ = [
    "BOUND",
    "FRONT_SIZE",
    "PAYOFF",
    "WhatIf",
    "arms_for",
    "full_horizon",
    "limits",
    "what_if",
]

#: The perfect-foresight arm's label (:mod:`search.lab._foresight`): the floor under any
#: scheduler's reach with the optimiser.
BOUND = "foresight"

#: Trials a front is built from: a table should let this many survive every rung.
FRONT_SIZE = 10
#: How many more configurations than FIFO a stopping scheduler must be able to see in the same
#: time for its early decisions (on a few epochs' values) to have room to pay.
PAYOFF = 2.0
_CANNOT = "early stopping cannot pay here"
#: How the verdict names an arm.
_SPOKEN = {"moasha-stopping": "stopping-type MOASHA", "moasha-promotion": "promotion-type MOASHA",
           "moasha-trust-chain": "stopping MOASHA with trusted rungs (trust_by: chain)",
           "moasha-trust-audit": "stopping MOASHA with audited rungs (trust_by: audit)",
           "moasha-trust-pooled": "stopping MOASHA with pooled audits (trust_by: pooled)",
           "asha": "Ray Tune's ASHA (accuracy alone)"}  # fmt: skip


def limits(
    table: CurveTable,
    *,
    grace_epochs: int = GRACE_EPOCHS,
    reduction_factor: float = REDUCTION_FACTOR,
) -> list[str]:
    """Why early stopping cannot pay on ``table``, each with what it would need (empty: none).

    With rungs at ``r_0 < ... < r_(k-1)`` below the schedule's ``R`` epochs, one trial in
    ``N = η^k`` survives every rung. Two things are read from the table alone:

    - *too few curves*: a front of :data:`FRONT_SIZE` trials that each survived the rungs is
      drawn from ``FRONT_SIZE * N`` configurations, and the replay can only propose the
      recorded ones;
    - *epochs too short*: screening ``N`` configurations costs ``N`` starts and the epochs each
      trains up to its rung, against ``N`` full trials under FIFO; when that lets a stopping
      scheduler see fewer than :data:`PAYOFF` times as many configurations as FIFO in the same
      time, the starts eat what stopping saves.
    """
    R = table.epochs
    rungs = milestones(grace_epochs, reduction_factor, R)
    out: list[str] = []
    if not rungs:
        return [f"its {R}-epoch schedule has no rung below its last epoch (grace "
                f"{grace_epochs}): nothing is ever stopped"]  # fmt: skip
    eta, k = reduction_factor, len(rungs)
    n = eta**k
    needed = math.ceil(FRONT_SIZE * n)
    if len(table.rows) < needed:
        out.append(
            f"{len(table.rows)} curves are too few: one trial in {n:.0f} survives the {k} "
            f"rung(s) at epochs {', '.join(map(str, rungs))} (eta = {eta:g}), so a front of "
            f"{FRONT_SIZE} needs about {needed} recorded configurations"
        )
    start, end = table.start_s(), float(table.overheads.get("end_s", 0.0))
    epoch = float(np.median([s for row in table.rows for s in row.seconds]))
    ends = [*rungs, R]
    # epochs a bracket of n trials trains: all n to r_0, n / eta**i from r_(i-1) to r_i
    work = sum(n / eta**i * (ends[i] - (ends[i - 1] if i else 0)) for i in range(k + 1))
    full = start + R * epoch + end
    screened = (n * start + work * epoch + end) / n
    if full / screened < PAYOFF:
        grow = R - PAYOFF * work / n
        need = (PAYOFF * (start + end / n) - start - end) / grow if grow > 0 else math.inf
        what = (f"epochs of at least {need:.3g} s" if math.isfinite(need) else
                f"a schedule longer than {R} epochs")  # fmt: skip
        out.append(
            f"epochs too short: a {epoch:.3g} s epoch against a {start:.3g} s trial start lets "
            f"early stopping see only {full / screened:.2f}x as many configurations as FIFO "
            f"in the same time; it needs {PAYOFF:g}x, so {what}"
        )
    return out


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
    optimiser: str,
    scheduler: str,
    kinds: Sequence[str],
    workers: int,
    options: dict[str, Any],
    trust_by: str | None = None,
) -> list[Arm]:
    """The baseline (FIFO) first, then the scheduler asked for (each MOASHA type given, and
    with ``trust_by`` stopping MOASHA with its rungs trusted that way,
    ``moasha-trust-<trust_by>``), then the perfect-foresight bound (:data:`BOUND`)."""

    def spec(name: str, kind: str = "stopping", **more: Any) -> ReplaySpec:
        return ReplaySpec(optimiser, name, kind, workers, options=options, **more)

    arms = [Arm("fifo", spec("fifo"))]
    if scheduler == "moasha":
        arms += [Arm(f"moasha-{kind}", spec("moasha", kind)) for kind in kinds]
        if trust_by is not None:
            trusted = spec("moasha", trust_rungs=True, trust_by=trust_by)
            arms.append(Arm(f"moasha-trust-{trust_by}", trusted))
    elif scheduler != "fifo":
        arms.append(Arm(scheduler, spec(scheduler)))
    return [*arms, Arm(BOUND, spec("foresight"))]


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
                f"{_mean(row.get('mean_started', 0)):>7} {_mean(row.get('mean_completed', 0)):>9} "
                f"{row['hv_end_median']:>7.3f}"
            )
        if BOUND in c.runs:
            lines.append(
                f"{BOUND} = the perfect-foresight bound: the same optimiser, each trial that will "
                "not be on the front stopped after one epoch (on the same proposals, no scheduler "
                "reaches sooner)."
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
        verdict = self.verdict()
        if not verdict.startswith(_CANNOT):  # a verdict that cites the limits says them
            lines += [f"Limit: {why}." for why in limits(table)]
        lines.append(f"Verdict: {verdict}.")
        return "\n".join(lines)

    def verdict(self) -> str:
        """One sentence: how soon the best other arm reached FIFO's front, or why none could."""
        c = self.comparison
        others = [arm for arm in c.runs if arm not in (c.baseline, BOUND)]
        if not others:
            return "FIFO alone was replayed: nothing to compare it with"
        medians = {arm: c.summary(arm)["reach"].median for arm in others}
        best = min(others, key=lambda arm: medians[arm])
        fifo = c.summary(c.baseline)["reach"].median
        reasons = limits(c.table)
        if math.isinf(medians[best]):
            if reasons:
                return f"{_CANNOT}: " + "; ".join(reasons)
            reached = sum(math.isfinite(r) for r in c.reach(best))
            return (f"no scheduler reached FIFO's front within FIFO's time in most seeds "
                    f"(the best, {_SPOKEN.get(best, best)}, in {reached} of "
                    f"{len(c.reach(best))})")  # fmt: skip
        said = (f"{_SPOKEN.get(best, best)} would have reached FIFO's front in "
                f"{100 * medians[best]:.0f} % of the time (median over "
                f"{len(c.reach(best))} seeds; FIFO itself {100 * fifo:.0f} %")  # fmt: skip
        if BOUND in c.runs:
            bound = c.summary(BOUND)["reach"].median
            said += f", the perfect-foresight bound {100 * bound:.0f} %"
        said += ")"
        if medians[best] >= fifo:
            said += ": no faster than FIFO"
        return said

    def json(self) -> str:
        """The rows as strict JSON: a time never reached (infinite) or a figure that is not a
        number is ``null`` (JSON has no ``Infinity``; Python's own writer wrote it)."""
        data = {"study": self.comparison.table.name, "optimiser": self.optimiser,
                "workers": self.workers, "horizon_s": self.comparison.horizon_s,
                "arms": self.rows(), "limits": limits(self.comparison.table),
                "verdict": self.verdict()}  # fmt: skip
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
    trust_by: str | None = None,
) -> WhatIf:
    """Replays ``table`` under FIFO and ``scheduler`` on ``seeds`` seeds (see module doc);
    ``trust_by``: also stopping MOASHA with trusted rungs (``scheduler.trust_by``)."""
    algorithm = table.config.get("algorithm") or {}
    name = optimiser or algorithm.get("name", "tpe")
    options = dict(algorithm.get("options") or {}) if optimiser in (None, name) else {}
    arms = arms_for(name, scheduler, kinds, workers, options, trust_by)
    comparison = Comparison.run(table, arms, seeds=range(seeds),
                                horizon_s=full_horizon(table, workers), jobs=jobs,
                                progress=progress)  # fmt: skip
    return WhatIf(comparison, name, workers)


def _mean(value: float) -> str:
    """A mean count over seeds: ``17`` when whole (as every count prints), else ``17.3``."""
    from search._format import format_value

    return format_value(round(value, 1))
