"""The scheduler lab: npas's schedulers, Ray Tune's ASHA and Syne Tune's MOASHA replayed on one
recorded curve table over many seeds (issue 37).

For each optimiser and worker count, every arm runs on the same seeds for the same simulated
time (the horizon: ``--budget`` full trials' worth of FIFO on that many workers). FIFO with the
optimiser is the baseline; per seed an arm's ``reach`` is the first second its hypervolume
reaches FIFO's at the horizon, over the horizon ("never" when it did not), and its regret at 25,
50 and 100 % of the horizon is the table's true-front hypervolume minus its own. Reported:
median, interquartile mean and the IQM's bootstrap 95 % CI over the seeds (Syne Tune's
multi-fidelity comparison), a paired Wilcoxon test of promotion against stopping, and one of
npas's better MOASHA type against Syne Tune's MOASHA at every checkpoint.

Arms: ``fifo`` (the baseline), ``foresight`` (the perfect-foresight bound, in every block: the
optimiser's own proposals, each trial that will not be on the front stopped after one epoch;
:mod:`search.lab._foresight`), ``moasha-stopping``, ``moasha-promotion`` (npas, the optimiser
given), ``moasha-stopping-random`` (npas's stopping MOASHA with npas's random sampler: the
same sampler as Syne Tune's arms, so that it and ``syne-moasha-fixed`` differ by the scheduler
only), ``asha`` (Ray Tune's, on accuracy alone, the same optimiser: a single-objective
reference, not a peer), ``random-fifo`` (the floor), ``syne-moasha`` (Syne Tune 0.16's MOASHA as
shipped, which reads its sort's index order as ranks), ``syne-moasha-fixed`` (the same with the
rank read correctly, patched in the arm: ``syne_tune_arm.RankedPriority``) and ``syne-random``
(Syne Tune through its own simulator, its random sampler). ``moasha-stopping-hv`` and
``moasha-promotion-hv`` order a rung's fronts by hypervolume contribution instead of crowding;
``moasha-promotion-early`` promotes the top ``ceil(n / η)`` of a rung, not ``floor``;
``frontstop`` (and ``-random``), ``moasha-guess`` and ``rungtrust`` are designs under study
(``docs/guides/replay.md``): a stop when a finished trial beats a trial's optimistic last
epoch, stopping MOASHA telling the optimiser a stopped trial at a guess of its last epoch, and
stopping MOASHA that stops only at rungs the search's own curves show to predict the next
(``--arms`` picks arms; ``fifo`` and ``foresight`` always run).

Each arm's reach is also given as a multiple of the bound's (median over median, same seeds).

Run: ``python benchmarks/scheduler_lab.py [--table benchmarks/results/curves/mnist-r27.json.gz]
[--seeds 50] [--workers 2,8] [--optimisers tpe,nsga2] [--budget 100] [--jobs 2] [--arms ...]``
→ ``benchmarks/results/scheduler_lab.md`` and ``.json`` beside it (per-seed figures), both
rewritten after each block so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
import ray

from objectives._conditions import cpu_model_name
from search.lab import Arm, Comparison, CurveTable, ReplaySpec, Run
from search.lab._compare import FRACTIONS, replayed
from search.lab._stats import summarise

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.syne_tune_arm import run_syne_tune

RESULTS = Path(__file__).parent / "results" / "scheduler_lab.md"
TABLE = Path(__file__).parent / "results" / "curves" / "mnist-r27.json.gz"
#: Issue 37's targets: reach median <= 0.25 and the IQM CI's upper end <= 1/3 (2 workers).
TARGET_MEDIAN, TARGET_CI = 0.25, 1 / 3


def syne(table: CurveTable, seed: int, horizon_s: float, *, scheduler: str, workers: int) -> Run:
    """Syne Tune's arm as a lab arm (module level, so a process pool can take it). It samples
    with its own searcher, so its run does not depend on the block's optimiser: it is run once
    per table, seed, horizon and worker count, and kept in the temporary folder for the other
    optimiser's block (the costliest arm: 15-25 s of CPU a replay)."""
    key = f"{table.name}-{len(table.rows)}-{scheduler}-{workers}-{seed}-{horizon_s:.6f}"
    cached = Path(tempfile.gettempdir()) / "npas-lab-syne" / f"{key}.json"
    if cached.exists():
        completed = [tuple(c) for c in json.loads(cached.read_text())]
    else:
        completed = run_syne_tune(table, scheduler=scheduler, seed=seed, workers=workers,
                                  horizon_s=horizon_s)  # fmt: skip
        cached.parent.mkdir(exist_ok=True)
        cached.write_text(json.dumps(completed))
    return Run(f"syne-{scheduler}", seed, completed, {"completed": len(completed)})


def ceiling(table: CurveTable, seed: int, horizon_s: float, *, spec: ReplaySpec,
            label: str) -> Run:  # fmt: skip
    """npas's stopping MOASHA with the quota it had until 2026-12-01, the top ``ceil(n/η)``
    of a rung (now ``floor(n/η) + 1``: at most n/η ranked above the trial, the rule in
    ``docs/guides/replay.md``, "The quota read at its boundary"), so that the tables of that
    rule's run (arms ``-boundary`` then, the default now) can be compared again. Module level,
    so a process pool can take it; the quota is restored after."""
    from search.schedulers._moasha import MOASHA

    kept = MOASHA._top
    MOASHA._top = lambda self, n: max(1, math.ceil(n / self._rf))  # type: ignore[method-assign]
    try:
        return replayed(table, Arm(label, spec), seed, horizon_s)
    finally:
        MOASHA._top = kept  # type: ignore[method-assign]


def no_witness(table: CurveTable, seed: int, horizon_s: float, *, spec: ReplaySpec,
               label: str) -> Run:  # fmt: skip
    """npas's stopping MOASHA with the chance rule it had until 2026-12-01: a trial at chance
    stopped at every rung from ``chance_from`` on, whether or not a trial of the search had
    left chance there (now only once one has: ``MOASHA._chance_stops``). Module level, so a
    process pool can take it; the rule is restored after."""
    from search.schedulers._moasha import MOASHA

    kept = MOASHA._chance_stops
    MOASHA._chance_stops = lambda self, rung: rung >= self.chance_from  # type: ignore[method-assign]
    try:
        return replayed(table, Arm(label, spec), seed, horizon_s)
    finally:
        MOASHA._chance_stops = kept  # type: ignore[method-assign]


#: The arms a run compares unless ``--arms`` says otherwise.
DEFAULT_ARMS = ("fifo", "foresight", "moasha-stopping", "moasha-promotion",
                "moasha-stopping-random", "asha", "random-fifo", "syne-moasha",
                "syne-moasha-fixed", "syne-random")  # fmt: skip
#: Arms that sample at random whatever the block's optimiser (the rest use the optimiser).
RANDOM_SAMPLER = {"moasha-stopping-random": "random (npas)", "random-fifo": "random (npas)",
                  "frontstop-random": "random (npas)", "rungtrust-random": "random (npas)",
                  "rungtrust-audit-random": "random (npas)",
                  "rungtrust-pooled-random": "random (npas)",
                  "moasha-stopping-random-ceil": "random (npas)",
                  "moasha-stopping-random-nowitness": "random (npas)",
                  "syne-moasha": "random (Syne Tune)", "syne-moasha-fixed": "random (Syne Tune)",
                  "syne-random": "random (Syne Tune)"}  # fmt: skip
#: How the table names an arm whose role is not a peer's.
ROLES = {"asha": "asha (single-objective reference)", "foresight": "foresight (the bound)"}


def sampler_of(arm: str, optimiser: str) -> str:
    """The sampler that proposed the arm's trials, as the table names it."""
    return RANDOM_SAMPLER.get(arm, f"{optimiser} (npas)")


def arms(optimiser: str, workers: int, chosen: list[str]) -> list[Arm]:
    """The ``chosen`` arms; ``-hv`` ones order a rung's front by hypervolume contribution,
    ``-early`` ones promote the top ``ceil(n / η)``, ``-grace`` ones stop a trial at chance
    only from epoch 3 (the second rung) on."""

    def spec(scheduler: str, kind: str = "stopping", name: str = optimiser,
             **more: Any) -> ReplaySpec:  # fmt: skip
        return ReplaySpec(name, scheduler, kind, workers, **more)

    hv = {"within_front": "hypervolume"}
    known = {
        "fifo": Arm("fifo", spec("fifo")),
        "moasha-stopping": Arm("moasha-stopping", spec("moasha", within_front="crowding")),
        "moasha-promotion": Arm("moasha-promotion", spec("moasha", "promotion",
                                                         within_front="crowding")),
        "moasha-stopping-hv": Arm("moasha-stopping-hv", spec("moasha", **hv)),
        "moasha-promotion-hv": Arm("moasha-promotion-hv", spec("moasha", "promotion", **hv)),
        "moasha-promotion-early": Arm("moasha-promotion-early",
                                      spec("moasha", "promotion", early_promotion=True)),
        "moasha-stopping-grace": Arm("moasha-stopping-grace", spec("moasha", chance_from=3)),
        "moasha-promotion-grace": Arm("moasha-promotion-grace",
                                      spec("moasha", "promotion", chance_from=3)),
        "asha": Arm("asha", spec("asha")),
        "random-fifo": Arm("random-fifo", spec("fifo", name="random")),
        "foresight": Arm("foresight", spec("foresight")),
        "moasha-stopping-random": Arm("moasha-stopping-random",
                                      spec("moasha", name="random", within_front="crowding")),
        "frontstop": Arm("frontstop", spec("frontstop")),
        "frontstop-random": Arm("frontstop-random", spec("frontstop", name="random")),
        "moasha-guess": Arm("moasha-guess", spec("moasha", within_front="crowding",
                                                 guess_final=True)),
        "rungtrust": Arm("rungtrust", spec("moasha", trust_rungs=True)),
        "rungtrust-audit": Arm("rungtrust-audit", spec("moasha", trust_rungs=True,
                                                       trust_by="audit")),
        "rungtrust-own": Arm("rungtrust-own", spec("moasha", trust_rungs=True,
                                                   trust_by="own")),
        "rungtrust-random": Arm("rungtrust-random", spec("moasha", name="random",
                                                         trust_rungs=True)),
        "rungtrust-audit-random": Arm("rungtrust-audit-random",
                                      spec("moasha", name="random", trust_rungs=True,
                                           trust_by="audit")),
        "moasha-oracle": Arm("moasha-oracle", spec("moasha", within_front="crowding",
                                                   oracle_rungs=True)),
        "rungtrust-pooled": Arm("rungtrust-pooled", spec("moasha", trust_rungs=True,
                                                         trust_by="pooled")),
        "promotion-pooled": Arm("promotion-pooled", spec("moasha", "promotion", trust_rungs=True,
                                                         trust_by="pooled")),
        "rungtrust-pooled-random": Arm("rungtrust-pooled-random",
                                       spec("moasha", name="random", trust_rungs=True,
                                            trust_by="pooled")),
    }
    for name in ("moasha-stopping", "moasha-stopping-random"):
        for suffix, former in (("ceil", ceiling), ("nowitness", no_witness)):
            label = f"{name}-{suffix}"
            run = functools.partial(former, spec=known[name].spec, label=label)
            known[label] = Arm(label, run=run)
    for scheduler in ("moasha", "moasha-fixed", "random"):
        run = functools.partial(syne, scheduler=scheduler, workers=workers)
        known[f"syne-{scheduler}"] = Arm(f"syne-{scheduler}", run=run)
    unknown = sorted(set(chosen) - set(known))
    if unknown or "fifo" not in chosen:
        raise SystemExit(f"--arms: got {unknown or chosen}; allowed: fifo (always) and any of "
                         f"{', '.join(known)}")  # fmt: skip
    bound = [] if "foresight" in chosen else ["foresight"]  # in every table
    names = [chosen[0], *bound, *chosen[1:]] if chosen[0] == "fifo" else [*chosen, *bound]
    return [known[name] for name in names]


def bound_multiple(c: Comparison, arm: str) -> float:
    """The arm's median reach over the perfect-foresight bound's (inf: the arm's median is
    never; nan: no bound arm, or a bound that never reached)."""
    if "foresight" not in c.runs:
        return math.nan
    bound = c.summary("foresight")["reach"].median
    mine = c.summary(arm)["reach"].median
    if math.isinf(bound) or bound <= 0:
        return math.nan
    return mine / bound


def block(c: Comparison, optimiser: str, workers: int) -> tuple[list[str], dict[str, Any]]:
    """The Markdown of one (optimiser, workers) comparison and its per-seed figures."""
    lines = [
        f"### {optimiser}, {workers} workers",
        "",
        f"Horizon {c.horizon_s:.0f} simulated s; {len(c.runs[c.baseline])} seeds per arm; true "
        f"front hypervolume {c.true_front_hv():.4f}.",
        "",
        "| arm | sampler | reach: median / IQM [95 % CI] | × bound | reached | regret@25 % IQM "
        "[CI] | regret@50 % | regret@100 % | trials started | completed | rows reused | "
        "decision CPU s |",
        "|---|---|---|---:|---:|---|---|---|---:|---:|---:|---:|",
    ]
    raw: dict[str, Any] = {}
    for arm in c.runs:
        s = c.summary(arm)
        reach = c.reach(arm)
        counts = s["counts"]
        regrets = [s[f"regret@{f:g}"] for f in FRACTIONS]
        cells = [f"{r.iqm:.4f} [{r.ci[0]:.4f}, {r.ci[1]:.4f}]" for r in regrets]
        multiple = bound_multiple(c, arm)
        times = ("never" if math.isinf(multiple) else "-" if math.isnan(multiple)
                 else f"{multiple:.2f}")  # fmt: skip
        lines.append(
            f"| {ROLES.get(arm, arm)} | {sampler_of(arm, optimiser)} | {s['reach'].text()} | "
            f"{times} | {sum(math.isfinite(x) for x in reach)}/"
            f"{len(reach)} | {' | '.join(cells)} | {counts.get('started', math.nan):.1f} | "
            f"{counts.get('completed', math.nan):.1f} | {counts.get('reused', math.nan):.1f} | "
            f"{counts.get('decision_s', math.nan):.1f} |"
        )
        raw[arm] = {"reach": reach, "sampler": sampler_of(arm, optimiser),
                    "reach_over_bound": multiple,
                    **{f"regret@{f:g}": c.regret(arm, f) for f in FRACTIONS},
                    "counts": [run.counts for run in c.runs[arm]]}  # fmt: skip
    lines += ["", *verdicts(c, workers, optimiser)]
    return lines, raw


def verdicts(c: Comparison, workers: int, optimiser: str = "") -> list[str]:
    """Promotion vs stopping, npas's best MOASHA arm vs Syne Tune's MOASHA, and the targets."""
    out = []
    for suffix in ("", "-hv"):
        stop, promo = f"moasha-stopping{suffix}", f"moasha-promotion{suffix}"
        if stop in c.runs and promo in c.runs:
            p = c.paired(promo, stop)
            out.append(
                f"- {promo} vs {stop} (reach, paired Wilcoxon over seeds): medians "
                f"{c.summary(promo)['reach'].text()} vs {c.summary(stop)['reach'].text()}, "
                f"p = {p:.3g}" + (" (within noise)" if p >= 0.05 else "") + "."
            )
    for base in ("moasha-stopping", "moasha-promotion"):
        for design in (f"{base}-hv", f"{base}-early", f"{base}-grace"):
            if base not in c.runs or design not in c.runs:
                continue
            p = c.paired(design, base)
            out.append(
                f"- {design} vs {base} (reach, paired Wilcoxon): medians "
                f"{c.summary(design)['reach'].text()} vs {c.summary(base)['reach'].text()}, "
                f"p = {p:.3g}" + (" (within noise)" if p >= 0.05 else "") + "."
            )
    pairs = [
        ("moasha-stopping-random", "syne-moasha-fixed",
         "npas's MOASHA vs Syne Tune's rank-fixed MOASHA, both sampling at random (isolates "
         "the scheduler)"),
        ("rungtrust-random", "syne-moasha-fixed",
         "npas's MOASHA with trusted rungs (`trust_by: chain`) vs Syne Tune's rank-fixed MOASHA, "
         "both sampling at random (isolates the scheduler)"),
        ("rungtrust-audit-random", "syne-moasha-fixed",
         "npas's MOASHA with audited rungs (`trust_by: audit`) vs Syne Tune's rank-fixed "
         "MOASHA, both sampling at random (isolates the scheduler)"),
        ("rungtrust-pooled-random", "syne-moasha-fixed",
         "npas's MOASHA with pooled audits (`trust_by: pooled`) vs Syne Tune's rank-fixed "
         "MOASHA, both sampling at random (isolates the scheduler)"),
        ("rungtrust-pooled", "rungtrust-audit",
         "npas's MOASHA with pooled audits vs with audits rung by rung, with the optimiser"),
        ("moasha-stopping", "moasha-stopping-ceil",
         "npas's stopping MOASHA (the top floor(n/η) + 1 of a rung) vs with its former quota "
         "(ceil(n/η)), with the optimiser"),
        ("moasha-stopping-random", "moasha-stopping-random-ceil",
         "the same, both sampling at random"),
        ("moasha-stopping", "moasha-stopping-nowitness",
         "npas's stopping MOASHA (chance stops a trial once one has left it at the rung) vs "
         "its former chance rule (stops at every rung), with the optimiser"),
        ("moasha-stopping-random", "moasha-stopping-random-nowitness",
         "the same, both sampling at random"),
        ("syne-moasha-fixed", "syne-moasha",
         "Syne Tune's MOASHA rank-fixed vs as shipped (the bug alone)"),
        ("moasha-stopping", "moasha-stopping-random",
         "npas's stopping MOASHA with the optimiser vs with random sampling (isolates the "
         "optimiser)"),
        ("fifo", "random-fifo", "FIFO with the optimiser vs with random sampling"),
    ]
    for a, b, what in pairs:
        if a in c.runs and b in c.runs and a != b:
            p = c.paired(a, b)
            noise = " (within noise)" if p >= 0.05 else ""
            out.append(f"- {what} (reach, paired Wilcoxon): medians "
                       f"{c.summary(a)['reach'].text()} vs {c.summary(b)['reach'].text()}, "
                       f"p = {p:.3g}{noise}.")  # fmt: skip
    ours = [arm for arm in c.runs if arm.startswith("moasha-") and arm not in RANDOM_SAMPLER]
    if not ours:
        return out
    best = min(ours, key=lambda arm: (c.summary(arm)["reach"].iqm, c.summary(arm)["reach"].median))
    peer = next((a for a in ("syne-moasha-fixed", "syne-moasha") if a in c.runs), None)
    if peer is not None:
        parts = []
        for f in FRACTIONS:
            mine = summarise(c.regret(best, f)).iqm
            theirs = summarise(c.regret(peer, f)).iqm
            pf = c.paired(best, peer, f"regret@{f:g}")
            parts.append(f"{f:.0%}: {mine:.4f} vs {theirs:.4f} (p = {pf:.3g})")
        out.append(f"- npas's best MOASHA arm ({best}, {optimiser} sampling) vs Syne Tune's "
                   f"MOASHA ({peer}, random sampling: the scheduler and the sampler differ), "
                   "regret IQM: " + "; ".join(parts) + ".")  # fmt: skip
    reach = c.summary(best)["reach"]
    if workers == 2:
        met = reach.median <= TARGET_MEDIAN and reach.ci[1] <= TARGET_CI
        out.append(
            f"- Target (2 workers: reach median <= {TARGET_MEDIAN}, CI upper end <= 1/3): "
            + ("met" if met else "missed")
            + f" by {best}: median {reach.median:.3f}, CI upper end {reach.ci[1]:.3f}."
        )
    return out


class Progress:
    """One line on stderr, rewritten after each replay (on a terminal only)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0

    def __call__(self, run: Run) -> None:
        self.done += 1
        if not sys.stderr.isatty():  # a log gets no carriage returns
            return
        print(f"\r{self.label}: {self.done}/{self.total} ({run.arm})", end="", file=sys.stderr,
              flush=True)  # fmt: skip


def header(args: argparse.Namespace, table: CurveTable, began: float, done: bool) -> list[str]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    state = "complete" if done else "partial (still running)"
    return [
        "# The scheduler lab: MOASHA against FIFO, Ray Tune's ASHA and Syne Tune's MOASHA",
        "",
        f"Produced by `benchmarks/scheduler_lab.py --seeds {args.seeds}"
        f"{f' --first-seed {args.first_seed}' if args.first_seed else ''} --workers "
        f"{args.workers} --optimisers {args.optimisers} --budget {args.budget} --arms "
        f"{args.arms}` at {commit} "
        f"in {(time.time() - began) / 60:.0f} min ({state}). Table `{args.table.name}`: "
        f"{table.describe()}; start cost {table.start_s():.2f} s a trial, pause "
        f"{table.overheads.get('pause_s', 0):.2f} s, resume "
        f"{table.overheads.get('resume_s', 0):.2f} s. Replayed on {cpu_model_name()} "
        f"({os.cpu_count()} cores), "
        f"{args.jobs} replays at once (decisions charged in this machine's CPU seconds), Python "
        f"{platform.python_version()}, Optuna {optuna.__version__}, Ray {ray.__version__}.",
        "",
        "`reach` = the first simulated second an arm's hypervolume reaches FIFO's at the "
        "horizon, over the horizon; median / interquartile mean [bootstrap 95 % CI of the IQM] "
        "over the seeds, 'never' = not within the horizon. Regret = the true front's "
        "hypervolume (every recorded configuration's final values) minus the arm's, on the "
        "table's bounds (reference 1.1), counting completed feasible trials.",
        "",
        *FAIRNESS,
        "",
    ]


#: The notes every table carries: what each comparison isolates.
FAIRNESS = [
    "How to read the arms. `foresight` is the perfect-foresight bound: the block's optimiser, "
    "told every trial's final values, each trial that will not be on the front (infeasible, "
    "or dominated by one it let finish or by the front the seed's proposals end with, found "
    "by a first pass) stopped after a start and one epoch; `× bound` is an "
    "arm's median reach over the bound's. The `sampler` column names what proposed each arm's "
    "trials. Comparisons that isolate the scheduler hold the sampler fixed: "
    "`moasha-stopping-random` against `syne-moasha-fixed` (both random; npas's sampler draws "
    "the space as Syne Tune's domains do, and every arm maps a draw to the nearest recorded row "
    "no earlier draw of its replay was given: `search.lab.NearestRow`; `rows reused` counts "
    "the draws answered once the table had no row left, not shown for Syne Tune's arms). "
    "Comparisons that isolate the optimiser hold the scheduler fixed: "
    "`moasha-stopping` against `moasha-stopping-random`, `fifo` against `random-fifo`. "
    "`syne-moasha` is Syne Tune 0.16 as shipped: its MOASHA reads `nondominated_sort`'s index "
    "order as each trial's rank (`asha.py` 258-267 against `non_dominated_priority.py` 146), "
    "so a new trial that dominates its rung can be stopped; `syne-moasha-fixed` reads the "
    "rank correctly (patched in the arm), and the two differ by that bug alone. `npas's best "
    "MOASHA arm vs Syne Tune's` compares the optimiser and the scheduler together. `asha` "
    "ranks on accuracy alone and finishes the large nets: a single-objective reference, not a "
    "peer.",
    "",
    "The replay's measured bias (`benchmarks/lab_validation.py`, three real searches beside the "
    "replays of each): on the machine that recorded the MNIST table it matched NSGA-II with "
    "stopping MOASHA (11 of 12 figures inside the replays' 5-95 % band); on another machine it "
    "completed 14-22 fewer trials in the horizon than real TPE (stopping) and NSGA-II "
    "(promotion) searches, and its hypervolume band was narrower than the real spread "
    "(`docs/guides/replay.md`). On the waves table, on its own machine, real TPE (stopping) "
    "searches completed 15-27 trials where the replays completed a median 14, and ended about "
    "0.09 higher in hypervolume, once each start was charged what a real stopping search "
    "spends (0.118 s); retimed alike, NSGA-II (promotion) replays matched the real searches' "
    "counts of trials and ended about 0.12 lower in hypervolume. Read the arms against each "
    "other on one table; an absolute reach is pessimistic.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the seeds are first-seed .. first-seed + seeds - 1")  # fmt: skip
    parser.add_argument("--workers", default="2,8")
    parser.add_argument("--optimisers", default="tpe,nsga2")
    parser.add_argument("--budget", type=float, default=100,
                        help="the horizon in full trials of FIFO per worker count")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS),
                        help="comma-separated; fifo (the baseline) always")  # fmt: skip
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    table = CurveTable.load(args.table)
    mean_trial = sum(table.trial_s(row) for row in table.rows) / len(table.rows)
    began, body, raw = time.time(), [], {}
    blocks = [(o, int(w)) for w in args.workers.split(",") for o in args.optimisers.split(",")]
    for i, (optimiser, workers) in enumerate(blocks):
        horizon = args.budget * mean_trial / workers
        label = f"{optimiser} W={workers}"
        todo = arms(optimiser, workers, args.arms.split(","))
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        c = Comparison.run(table, todo, seeds=seeds, horizon_s=horizon,
                           jobs=args.jobs, progress=Progress(label, args.seeds * len(todo)))
        print(f"{label}: done" if not sys.stderr.isatty() else "", file=sys.stderr)
        lines, figures = block(c, optimiser, workers)
        body += [*lines, ""]
        raw[f"{optimiser}-W{workers}"] = {"horizon_s": horizon, "arms": figures}
        done = i == len(blocks) - 1
        args.results.write_text("\n".join(header(args, table, began, done) + body) + "\n")
        args.results.with_suffix(".json").write_text(json.dumps(raw, indent=1))
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
