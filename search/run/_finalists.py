"""Finalists: after the search, its ``finalists.top`` most accurate feasible trials that ran
their whole schedule are retrained with ``finalists.seeds`` fresh seeds each, and the one with
the best mean validation accuracy, within every constraint on every seed, is recommended.

One validation accuracy picked the search's best trials, and on small data it is noisy: the
winner of a search once led its finishers by 0.30 points of a validation accuracy whose
standard error was 0.20, and retrained it was level with the 8th (issue 38). The search's own
run of a trial is therefore not one of its seeds (it is the run that chose it); each fresh seed
has its own initialisation and validation split (a trial's ``seed`` carves the split), and the
test split is never read.

The runs go seed by seed across the finalists (every finalist's first seed, then every
second), so a time limit that ends them leaves the finalists compared on equally many seeds:
the fewest any retrained finalist has. Each run is written to the study as it ends
(:attr:`StudyAttr.FINALIST_RUNS`), so a stopped launch loses only the run in flight and a
relaunch trains only the runs missing; the choice and its reasons are
:attr:`StudyAttr.RECOMMENDATION`. They run after Ray has stopped (all of the machine is
theirs), with the launch's trial function: as many at once as the search ran trials side by
side on this machine (on one GPU, for trials given a share of it), each in a process of its
own (one at a time, in the launch's own process, for a trial function that cannot be sent to
another process).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import multiprocessing
import os
import pickle
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna

from search._format import note
from search.config import FIT_TRIES, LimitsConfig, TrialConfig
from search.errors import SearchInterrupted
from search.record import (
    StudyAttr,
    chance_warning,
    finalist_runs,
    origin_of,
    read_study,
    recommendation_of,
    recommended_line,
    record_cost,
    set_study_attrs,
)
from search.run._cost import SearchCost
from search.run._trainable import TrialFn, on_given_device

if TYPE_CHECKING:
    from search.config import SearchConfig

__all__ = ["Finalist", "choose", "finalists_of", "plan", "run_finalists"]

#: The metric finalists are ranked on: ``run_trial``'s validation accuracy.
METRIC = "accuracy"
#: The metric a trial reports for a constant guess of the most frequent class on the samples
#: its accuracy was scored on.
CHANCE = "chance_accuracy"
#: Seconds a finalist run costs besides its trial's own time: its process's data, model and
#: indicators. Set when every load of an array dataset started loader processes (5 ArrowHead
#: runs of 1-2 s trials took about 12 s, 2 at a time); without them a pooled run costs about
#: its search run, so this is generous, and the race (:func:`race`) corrects the plan.
RUN_OVERHEAD_S = 3.0



@dataclass(frozen=True)
class Finalist:
    """A trial retrained as a finalist.

    Attributes:
        trial: Its number.
        search_accuracy: Its validation accuracy in the search (what made it a finalist).
        seeds: The fresh seeds it is retrained with, in order.
        config: Its trial config as it ran (the stored dict).
        time_s: How long its run in the search took (None: not recorded).
    """

    trial: int
    search_accuracy: float
    seeds: tuple[int, ...]
    config: Mapping[str, Any]
    time_s: float | None = None


def finalists_of(study: optuna.Study, top: int, seeds: int) -> list[Finalist]:
    """The ``top`` most accurate feasible trials of ``study`` that ran their whole schedule
    (ties: the lower validation loss, then the better on the search's other objectives in
    their order, the front's member before the trial it dominates, then the lower number; a
    trial config trained twice counts once), each with ``seeds`` fresh seeds (its own seed +
    1, + 2, ...).

    Accuracy on a small validation set moves in steps (1/36 on ArrowHead's 36 cross-validated
    series), so ties are common at the top: the validation loss, measured on the same samples
    and not quantised, tells them apart by how confidently right each is."""
    from search.pareto import objectives_of

    others = [(n, d) for n, d in objectives_of(study) if n != METRIC]
    found = []
    ties: dict[int, tuple[float, ...]] = {}
    seen: set[str] = set()  # a point trained twice (a sampler may repeat one) is one finalist
    for record in read_study(study).trials:
        accuracy = _finite(record.metrics.get(METRIC))
        config = record.config
        if not (record.feasible and accuracy is not None and config is not None):
            continue
        schedule = (config.get("train") or {}).get("epochs")
        if schedule is not None and record.epochs is not None and record.epochs != schedule:
            continue  # a scheduler stopped it at a rung
        same = json.dumps({k: v for k, v in config.items() if k != "artifact_dir"},
                          sort_keys=True, default=str)  # fmt: skip
        if same in seen:
            continue
        seen.add(same)
        base = int(config.get("seed") or 0)
        ties[record.number] = (_lower_better(record.metrics.get("val_loss"), "minimize"),
                               *(_lower_better(record.metrics.get(n), d) for n, d in others))
        found.append(Finalist(record.number, accuracy,
                              tuple(base + i for i in range(1, seeds + 1)), config,
                              _finite(record.metrics.get("trial_time_s"))))  # fmt: skip
    found.sort(key=lambda f: (-f.search_accuracy, ties[f.trial], f.trial))
    return found[:top]


def _lower_better(value: Any, direction: str) -> float:
    """An objective's value as a sort key, lower better; a missing one last."""
    number = _finite(value)
    if number is None:
        return math.inf
    return number if direction == "minimize" else -number


def choose(
    finalists: Sequence[Finalist], runs: Mapping[str, Mapping[str, Mapping[str, Any]]],
    wanted: int, dropped: Mapping[int, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The recommendation: among the finalists still in the race, each compared on its
    first ``n`` seeds' runs (``n``: the fewest any retrained one has), those feasible with a
    finite validation accuracy on every one of them, the best mean (ties: the search's
    order).

    Args:
        finalists: The finalists, in the search's order.
        runs: ``{"<trial>": {"<seed>": {"accuracy", "feasible", "error"}}}`` done so far.
        wanted: Seeds each finalist was to have.
        dropped: Finalists the race dropped (:func:`race`), each with why.

    Returns:
        The record stored as :attr:`StudyAttr.RECOMMENDATION`: ``trial`` (None when no
        finalist qualifies; when none was retrained, the first finalist on its search run
        alone, ``n`` 0), ``metric``, ``mean``, ``std`` (None for one seed), ``n``,
        ``seeds``, ``accuracies``, ``complete`` (every finalist had ``wanted`` seeds),
        ``reason`` and ``finalists`` (each one's seeds, accuracies, mean, std, whether it
        qualified and why not).
    """
    dropped = dict(dropped or {})
    done = {f.trial: [(s, runs[str(f.trial)][str(s)]) for s in f.seeds
                      if str(s) in runs.get(str(f.trial), {})]
            for f in finalists}  # fmt: skip
    retrained = [len(d) for t, d in done.items() if d and t not in dropped]
    n = min(retrained, default=0)
    rows: list[dict[str, Any]] = []
    for f in finalists:
        compared = done[f.trial] if f.trial in dropped else done[f.trial][:n]
        accuracies = [_finite(run.get("accuracy")) for _, run in compared]
        why_not = dropped.get(f.trial) or _why_not(compared, accuracies)
        ok = [a for a in accuracies if a is not None]
        rows.append({
            "trial": f.trial, "search_accuracy": f.search_accuracy,
            "seeds": [s for s, _ in compared], "accuracies": accuracies,
            "feasible": [bool(run.get("feasible")) for _, run in compared],
            "mean": statistics.fmean(ok) if ok else None, "std": _std(ok), "n": len(compared),
            "qualified": why_not is None, "why_not": why_not,
        })  # fmt: skip
    qualified = [r for r in rows if r["qualified"]]
    complete = bool(finalists) and all(len(d) >= wanted for t, d in done.items()
                                       if t not in dropped)  # fmt: skip
    record: dict[str, Any] = {"trial": None, "metric": METRIC, "split": "validation",
                              "n": n, "wanted_seeds": wanted, "complete": complete,
                              "finalists": rows}  # fmt: skip
    if n == 0 and finalists:  # none retrained: the search's own run is all there is
        first = finalists[0]
        record |= {"trial": first.trial, "mean": first.search_accuracy, "std": None,
                   "seeds": [], "accuracies": [], "reason": (
                       "no finalist was retrained (the time ran out first): the most accurate "
                       f"feasible trial of the search by its one validation run, trial "
                       f"{first.trial} {first.search_accuracy:.4f} (a larger finalists.share "
                       "leaves the choice less to chance)")}  # fmt: skip
        return record
    if not qualified:
        record["reason"] = ("no finalist met every constraint with a finite validation "
                            "accuracy on all its seeds")  # fmt: skip
        return record
    best = max(qualified, key=lambda r: r["mean"])  # max keeps the first of equals
    others = sorted((r for r in qualified if r is not best), key=lambda r: -r["mean"])
    runner = f"; next: trial {others[0]['trial']} {others[0]['mean']:.4f}" if others else ""
    out = [r for r in rows if not r["qualified"]]
    left_out = "".join(f"; trial {r['trial']} left out: {r['why_not']}" for r in out)
    runs_of_best = [run for _, run in done[best["trial"]][:n]]
    chances = [c for run in runs_of_best if (c := _finite(run.get("chance")))]
    samples = [s for run in runs_of_best if isinstance(s := run.get("samples"), int)]
    record |= {"trial": best["trial"], "mean": best["mean"], "std": best["std"],
               "seeds": best["seeds"], "accuracies": best["accuracies"],
               "chance": statistics.fmean(chances) if chances else None,
               "samples": sum(samples) if len(samples) == n else None}  # fmt: skip
    record["reason"] = (
        f"the best mean validation accuracy over {n} fresh seed(s) among the "
        f"{len(rows)} most accurate feasible trials of the search (each seed its own "
        f"initialisation and validation split; the test split chose nothing): trial "
        f"{best['trial']} {best['mean']:.4f}{runner}{left_out}{chance_warning(record)}"
    )
    return record


def _why_not(compared: list[tuple[int, Mapping[str, Any]]], accuracies: list[Any]) -> str | None:
    if not compared:
        return "not retrained (the time ran out first)"
    for (seed, run), accuracy in zip(compared, accuracies, strict=True):
        if run.get("error"):
            return f"seed {seed} failed: {run['error']}"
        if not run.get("feasible"):
            return f"seed {seed} broke a constraint"
        if accuracy is None:
            return f"seed {seed} has no finite validation accuracy"
    return None


def _std(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def run_finalists(
    study: optuna.Study,
    config: SearchConfig,
    trial_fn: TrialFn,
    *,
    deadline: float | None,
    write: Callable[[Mapping[str, Any]], None] | None = None,
    progress: bool = True,
    folder: Path | None = None,
) -> dict[str, Any] | None:
    """Retrains the search's finalists (the runs ``study`` does not hold yet), records each
    run and the recommendation, and returns it (None: finalists off, or no trial qualifies
    as a finalist).

    Args:
        study: The search's study (on its storage).
        config: The search config (``finalists``).
        trial_fn: The trial function, called as ``trial_fn(trial_config)``.
        deadline: ``time.monotonic()`` past which no run starts, nor one that would end past
            it at its search run's pace (None: no limit).
        write: Writes study user attributes, a mapping of them: a launch's
            ``StudyWriter.study_attrs``, fenced and held by its lease and storage checks
            (None: the study's own ``set_user_attr``, one by one).
        progress: Print one line per run and the recommendation to stderr.
        folder: Where the refit model of the recommendation is saved (``refit-<trial>/``);
            None: no refit.

    Raises:
        SearchInterrupted: Ctrl-C or SIGTERM during a run: the runs ended before it are kept
            and a relaunch trains the rest.
    """
    setting = config.finalists
    if not setting.on:
        return None
    write = functools.partial(set_study_attrs, study) if write is None else write
    finalists = finalists_of(study, setting.top, setting.seeds)
    if not finalists:
        _say(progress, "finalists: no feasible trial ran its whole schedule; no recommendation")
        return None
    runs = finalist_runs(study)
    cost = SearchCost(LimitsConfig())
    workers = _workers(config, len(finalists) * setting.seeds)
    trial_fn = functools.partial(_on_search_device, trial_fn=trial_fn,
                                 gpu=config.resources.gpu)  # fmt: skip
    refit = setting.refit and folder is not None
    top, seeds, why = plan(finalists, setting.seeds, _left(deadline), workers, refit)
    if not runs:  # a relaunch trains what its runs lack of the plan asked
        finalists = [dataclasses.replace(f, seeds=f.seeds[:seeds]) for f in finalists[:top]]
    wanted = len(finalists[0].seeds)  # every finalist has as many
    todo = [(f, f.seeds[i]) for i in range(wanted) for f in finalists
            if str(f.seeds[i]) not in runs.get(str(f.trial), {})]  # fmt: skip
    if todo:
        _say(progress, f"finalists: trials {[f.trial for f in finalists]}, {wanted} fresh "
                       f"seed(s) each{why}; {len(todo)} run(s) to train")  # fmt: skip
    stopped: dict[str, int] = {}

    def record(finalist: Finalist, seed: int, run: dict[str, Any], metrics: Any) -> None:
        cost.add(metrics)
        runs.setdefault(str(finalist.trial), {})[str(seed)] = run
        write({StudyAttr.FINALIST_RUNS: runs})
        _say(progress, f"finalist trial {finalist.trial} seed {seed}: {_told(run)}")

    try:
        with _stops(stopped):
            late, dropped, finalists = _rounds(
                finalists, wanted, trial_fn, runs, deadline, workers,
                refit and _folds(finalists) == 1, record, lambda line: _say(progress, line),
                most=setting.fill)  # fmt: skip
    except KeyboardInterrupt:
        signum = stopped.get("signum", signal.SIGINT)
        raise SearchInterrupted(
            f"search {config.name!r} stopped by {signal.Signals(signum).name} during its "
            f"finalists: its trials are all recorded, and {len(_done(todo, runs))} of the "
            f"{len(todo)} finalist run(s) of this launch; relaunch the same command to train "
            f"the rest and record the recommendation{_cost_kept(study, cost, write)}",
            signum=signum,
        ) from None
    if todo:
        record_cost(study, cost, write)
    if late is not None:
        _say(progress, f"finalists: {late}; compared on the seeds every finalist has")
    recommendation = choose(finalists, runs, wanted, dropped)
    if recommendation["trial"] is not None:
        recommendation["origin"] = origin_of(study, recommendation["trial"])
    if refit and folder is not None and recommendation["trial"] is not None:
        chosen = next(f for f in finalists if f.trial == recommendation["trial"])
        with _threads(config):
            recommendation["refit"] = _refit(study, chosen, trial_fn, folder, deadline, progress,
                                             recommendation["mean"])  # fmt: skip
    if recommendation_of(study) != recommendation:
        write({StudyAttr.RECOMMENDATION: recommendation})
    if recommendation["trial"] is None:
        _say(progress, f"finalists: no recommendation: {recommendation['reason']}")
    else:
        _say(progress, f"recommended: {recommended_line(recommendation)} (search export "
                       "without --select writes it)")  # fmt: skip
    return recommendation


def plan(finalists: Sequence[Finalist], seeds: int, left: float | None, workers: int,
         refit: bool) -> tuple[int, int, str]:  # fmt: skip
    """How many finalists, and fresh seeds each, the time left trains in whole rounds (a round:
    one fresh seed of every finalist), and why when fewer than asked.

    At the pace of the finalists' slowest search run and :data:`RUN_OVERHEAD_S`, ``workers``
    at a time, less one run for
    the refit (none for a cross-validated trial: its own model is the refit). A round cut short
    compares the finalists on fewer seeds than were trained (the runs of the finalists that got
    one more seed are wasted), so fewer finalists with more seeds each are preferred, down to
    two with at least two seeds; failing that, as many finalists as one round fits. The
    asked ``top`` and ``seeds`` without a time limit or a recorded pace.
    """
    top = len(finalists)
    paces = [f.time_s for f in finalists if f.time_s]
    if left is None or not paces or top == 0:
        return top, seeds, ""
    pace = max(paces) + RUN_OVERHEAD_S
    folds = _folds(finalists)
    slots = max(0, int((left - (pace if refit and folds == 1 else 0.0)) // pace))
    for n in range(top, 0, -1):
        rounds = slots // math.ceil(n / workers)
        if rounds >= min(2, seeds) or n == 1:
            break
    if n == 1 < top:  # not two finalists with two seeds: one round of as many as it fits
        n, rounds = max(1, min(top, slots * workers)), 1
    rounds = max(1, min(seeds, rounds))
    if (n, rounds) == (top, seeds):
        return top, seeds, ""
    return n, rounds, (f" (what {left:.0f} s trains at {pace:.1f} s a run, {workers} at a time"
                       f"{', and the refit' if refit and folds == 1 else ''}; "
                       f"asked: {top} × {seeds})")  # fmt: skip


def _folds(finalists: Sequence[Finalist]) -> int:
    """The folds each finalist's run trains (one search: one value for all)."""
    return int(finalists[0].config.get("folds") or 1)


def _rounds(
    finalists: Sequence[Finalist], wanted: int, trial_fn: TrialFn,
    runs: Mapping[str, Mapping[str, Any]], deadline: float | None, workers: int,
    refit: bool, record: Record, say: Callable[[str], None], most: int,
) -> tuple[str | None, dict[int, str], list[Finalist]]:  # fmt: skip
    """Trains the runs round by round (a round: the next seed of every finalist still in the
    race) on one pool of workers, and after each round plans the next on the pace of its
    slowest run (:func:`race`: a run in its own process may cost more than its search run
    did); then, with a deadline, fills the time left (:func:`_fill`, up to ``most`` seeds).
    Returns why runs were left untrained (None: none was), the finalists dropped from the
    race, each with why, and the finalists with the seeds they were given."""
    dropped: dict[int, str] = {}
    late = None
    with _pool(workers, trial_fn) as pool:
        for i in range(wanted):
            racing = [f for f in finalists if f.trial not in dropped]
            batch = [(f, f.seeds[i]) for f in racing
                     if str(f.seeds[i]) not in runs.get(str(f.trial), {})]  # fmt: skip
            if _train(batch, trial_fn, runs, deadline, workers, pool, record):
                left = sum(str(f.seeds[k]) not in runs.get(str(f.trial), {})
                           for k in range(i, wanted) for f in racing)  # fmt: skip
                late = f"the time limit left no room for the {left} run(s) still to train"
                break
            if batch and deadline is not None and i + 1 < wanted:
                per_run = max(runs[str(f.trial)][str(seed)]["time_s"] for f, seed in batch)
                out, late = race(racing, runs, i + 1, per_run, _left(deadline) or 0.0, workers,
                                 refit)  # fmt: skip
                dropped |= out
                for trial, why in out.items():
                    say(f"finalist trial {trial} {why}")
                if late is not None:
                    break
        if late is None and deadline is not None:
            finalists = _fill(finalists, dropped, most, trial_fn, runs, deadline, workers,
                              refit, record, pool, say)  # fmt: skip
    return late, dropped, list(finalists)


def _fill(
    finalists: Sequence[Finalist], dropped: Mapping[int, str], most: int, trial_fn: TrialFn,
    runs: Mapping[str, Mapping[str, Any]], deadline: float, workers: int, refit: bool,
    record: Record, pool: futures.ProcessPoolExecutor | None, say: Callable[[str], None],
) -> list[Finalist]:  # fmt: skip
    """The finalists' share of the time used, not left idle: while a whole round of the
    finalists still racing fits the time left at the measured pace (less a slot for the
    refit), each is given one more fresh seed (its last + 1), up to ``most`` seeds in all.
    A mean over more seeds is less chance (each seed its own initialisation and validation
    split): on an ItalyPowerDemand search of 4 minutes the asked 3 × 3 runs took 17 s of the
    51 s kept for them. Runs an earlier launch recorded for those seeds are used as they
    are. A round the time limit still cuts short counts for no finalist (the choice
    compares every finalist on the seeds all of them have)."""
    grown = list(finalists)
    racing = [k for k, f in enumerate(grown) if f.trial not in dropped]
    added = 0
    while racing and len(grown[racing[0]].seeds) < most:
        extended = {k: dataclasses.replace(grown[k], seeds=(*grown[k].seeds,
                                                            grown[k].seeds[-1] + 1))
                    for k in racing}  # fmt: skip
        batch = [(f, f.seeds[-1]) for f in extended.values()
                 if str(f.seeds[-1]) not in runs.get(str(f.trial), {})]  # fmt: skip
        if batch:
            per_run = max(_mean_time(runs) or 0.0,  # the pace _train starts runs at
                          *(f.time_s or 0.0 for f in extended.values()))
            slots = ((_left(deadline) or 0.0) - (per_run if refit else 0.0)) // max(per_run, 1e-9)
            if slots < math.ceil(len(batch) / max(1, workers)):
                break
            if _train(batch, trial_fn, runs, deadline, workers, pool, record):
                say("finalists: the time limit cut a further round short; compared on the "
                    "seeds every finalist has")  # fmt: skip
                break
        for k, f in extended.items():
            grown[k] = f
        added += 1
    if added:
        say(f"finalists: {added} more fresh seed(s) each in the time kept for them "
            f"({len(grown[racing[0]].seeds)} in all)")
    return grown


def race(racing: Sequence[Finalist], runs: Mapping[str, Mapping[str, Mapping[str, Any]]],
         done: int, per_run: float, left: float, workers: int, refit: bool
         ) -> tuple[dict[int, str], str | None]:  # fmt: skip
    """The next round planned on the last one's measured pace (``per_run`` seconds a slot of
    ``workers`` runs side by side): as many finalists as one more whole round fits in
    ``left`` (less a slot for the refit), the lowest means over their ``done`` seeds dropped
    (a race, as irace's: seeds go to the finalists still in contention), the search's later
    one first of equal means. Fewer than two fit: no further round (``stop`` says why).
    Returns the dropped finalists with why, and ``stop``."""
    slots = int((left - (per_run if refit else 0.0)) // per_run) if per_run > 0 else len(racing)
    keep = min(len(racing), max(0, slots) * workers)
    if keep == len(racing):
        return {}, None
    pace = f"{left:.0f} s left at {per_run:.1f} s a run, {workers} at a time" + (
        ", and the refit" if refit else "")
    if keep < 2:
        return {}, f"the time left ({pace}) fits no further round of two finalists"
    means = [_mean_of(runs.get(str(f.trial), {}), f.seeds[:done]) for f in racing]
    order = sorted(range(len(racing)), key=lambda k: (-means[k], k))
    return {racing[k].trial: f"dropped after {done} seed(s): its mean {means[k]:.4f} was below "
                             f"the {keep} kept ({pace}: a round of {keep})"
            for k in order[keep:]}, None  # fmt: skip


def _mean_of(runs: Mapping[str, Mapping[str, Any]], seeds: Sequence[int]) -> float:
    """A finalist's mean validation accuracy over ``seeds`` (a failed or infeasible run
    scores -inf: it is out of the choice anyway)."""
    scores = [_finite(runs.get(str(s), {}).get("accuracy")) for s in seeds]
    feasible = all(runs.get(str(s), {}).get("feasible") for s in seeds)
    ok = [a for a in scores if a is not None]
    return statistics.fmean(ok) if feasible and ok and len(ok) == len(scores) else -math.inf


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


@contextlib.contextmanager
def _threads(config: SearchConfig) -> Iterator[None]:
    """Torch in this process on a trial's share of the cores while the refit trains here, as
    its trial trained (a tiny net on every thread of a busy machine trained 10× slower: a
    digits trial of 18 s in the search took 180 s on two threads)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(_cores(), int(config.resources.cpu))))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _refit(
    study: optuna.Study, chosen: Finalist, trial_fn: TrialFn, folder: Path,
    deadline: float | None, progress: bool, expected: float | None,
) -> dict[str, Any]:  # fmt: skip
    """The recommended trial trained once more on every training sample it may use (the
    validation split joined to the training split), with its search seed, and saved: a model
    chosen on held-out data loses nothing by learning from them too (npas-d3 gained 0.16
    points on MNIST). Nothing is held out to check it, so its own validation samples are: a
    refit that fits them worse than the finalists scored on them unseen (``expected``) is a
    failed run and trains again with the next seed, up to :data:`FIT_TRIES` times (the best
    fit kept). A cross-validated trial saved such a model itself (``search.trial``): that
    one is the refit. Returns the record (``artifact``, ``seed``, ``tries``, ``time_s``), or
    why there is none (``skipped``); a refit an earlier launch saved is kept."""
    earlier = (recommendation_of(study) or {}).get("refit") or {}
    artifact = earlier.get("artifact")
    if earlier.get("trial") == chosen.trial and artifact and Path(artifact).is_file():
        return dict(earlier)
    seed = int(chosen.config.get("seed") or 0)
    own = next((r.artifact for r in read_study(study).trials if r.number == chosen.trial), None)
    if int(chosen.config.get("folds") or 1) > 1 and own and Path(own).is_file():
        return {"trial": chosen.trial, "artifact": str(own), "seed": seed, "tries": 0,
                "train_on": "train+val", "time_s": 0.0,
                "note": "the cross-validated trial's own model of every training sample"}
    best: tuple[float, dict[str, Any]] | None = None
    started, tries = time.monotonic(), 0
    for attempt in range(FIT_TRIES):
        if deadline is not None and time.monotonic() + (chosen.time_s or 0.0) > deadline:
            break
        tries += 1
        try:
            metrics = dict(trial_fn(TrialConfig.from_dict({
                **chosen.config, "folds": 1, "train_on": "train+val", "seed": seed + attempt,
                "progress": False, "artifact_dir": str(folder / f"refit-{chosen.trial}-{attempt}"),
            })))  # fmt: skip
        except Exception as err:  # the recommendation stands on its search run
            _say(progress, f"refit failed: {_one_line(err)}")
            continue
        fitted = _finite(metrics.get(METRIC))
        if not metrics.get("artifact") or not metrics.get("feasible", True) or fitted is None:
            continue
        if best is None or fitted > best[0]:
            best = (fitted, {"trial": chosen.trial, "artifact": str(metrics["artifact"]),
                             "seed": seed + attempt, "fit_accuracy": fitted})  # fmt: skip
        if expected is None or fitted >= expected:
            break
    if best is None:
        _say(progress, "refit: none saved (no time left, or it failed); search export writes "
                       "the search's own run")  # fmt: skip
        return {"trial": chosen.trial, "skipped": "no time was left for it, or it failed"}
    spent = time.monotonic() - started
    _say(progress, f"refit: trial {chosen.trial} trained again on the training and validation "
                   f"splits together in {spent:.0f} s ({tries} run(s))")  # fmt: skip
    return {**best[1], "tries": tries, "train_on": "train+val", "time_s": spent}


#: ``(finalist, seed, run, metrics)`` → None: records one finished run.
Record = Callable[[Finalist, int, dict[str, Any], Any], None]


def _train(
    todo: Sequence[tuple[Finalist, int]],
    trial_fn: TrialFn,
    runs: Mapping[str, Mapping[str, Any]],
    deadline: float | None,
    workers: int,
    pool: futures.ProcessPoolExecutor | None,
    record: Record,
) -> bool:
    """Trains the runs in order, ``workers`` at a time (in ``pool``'s processes; None: here),
    starting none that would end past ``deadline`` at the pace of the runs trained so far
    (before the first: its search run's); returns whether runs were left untrained."""
    queue, late = list(todo), False
    pending: dict[Any, tuple[Finalist, int]] = {}  # a run in a worker → its finalist and seed
    while queue or pending:
        while queue and len(pending) < max(1, workers):
            finalist, seed = queue[0]
            pace = max(finalist.time_s or 0.0, _mean_time(runs) or 0.0)
            if deadline is not None and time.monotonic() + pace > deadline:
                late = True
                queue.clear()
                break
            queue.pop(0)
            if pool is None:
                record(finalist, seed, *_run(trial_fn, finalist, seed))
            else:
                pending[pool.submit(_run, trial_fn, finalist, seed)] = (finalist, seed)
        if pending:
            finished, _ = futures.wait(pending, timeout=0.2, return_when=futures.FIRST_COMPLETED)
            for done in finished:
                record(*pending.pop(done), *done.result())
    return late


def _on_search_device(cfg: TrialConfig, *, trial_fn: TrialFn, gpu: float) -> Any:
    """A finalist run on the device its search's trials had: the CPU when they were given no
    GPU (module level, so a process pool can take it)."""
    return trial_fn(on_given_device(cfg, [gpu] if gpu > 0 else []))


def _end(pool: futures.ProcessPoolExecutor) -> None:
    """The pool shut down with runs still in its workers (a stop came): the executor has no
    public way to end a running call, so its worker processes are terminated."""
    for pid in list(getattr(pool, "_processes", None) or {}):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    pool.shutdown(wait=True, cancel_futures=True)


def _workers(config: SearchConfig, runs: int) -> int:
    """Runs trained at once: as many trials as the search ran side by side on this machine's
    cores and, for trials given a share of a GPU, on one GPU (the pool's processes are not
    placed by Ray: each takes the default device), at most ``runs``. One at a time left a GPU
    check's finalists one run of the nine asked, where the search ran four trials on the GPU
    at once (``benchmarks/results/gpu_check.md``, run 5)."""
    side_by_side = int(_cores() // max(1.0, config.resources.cpu))
    if config.resources.gpu > 0:
        side_by_side = min(side_by_side, int(1.0 // config.resources.gpu))
    return max(1, min(runs, side_by_side))


@contextlib.contextmanager
def _pool(workers: int, trial_fn: TrialFn) -> Iterator[futures.ProcessPoolExecutor | None]:
    """A pool of ``workers`` fresh processes (spawned: no thread or lock of the launch is
    copied; not daemonic, so a run may start processes of its own, as a data loader does),
    each training on its share of the cores, kept for every round (a worker's start-up,
    importing torch, is paid once); None for one worker, or a trial function another
    process cannot be given (a closure). A stop ends the runs in its workers."""
    if workers <= 1:
        yield None
        return
    try:
        pickle.dumps(trial_fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        yield None
        return
    pool = futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_one_share, initargs=(workers,))  # fmt: skip
    try:
        yield pool
    except BaseException:
        _end(pool)
        raise
    pool.shutdown(wait=True)


def _one_share(workers: int) -> None:
    """A worker's torch threads: its share of the cores."""
    import torch

    torch.set_num_threads(max(1, _cores() // workers))


def _cores() -> int:
    """The CPU cores this process may use."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


def _run(trial_fn: TrialFn, finalist: Finalist, seed: int) -> tuple[dict[str, Any], Any]:
    """One finalist run: its validation accuracy, feasibility, error and time, and the
    metrics (for the cost)."""
    extra = {"progress": False} if "progress" in finalist.config else {}
    cfg = TrialConfig.from_dict({**finalist.config, **extra, "seed": seed, "artifact_dir": None})
    started = time.monotonic()
    try:
        metrics = dict(trial_fn(cfg))
    except Exception as err:  # a crashing seed disqualifies its finalist, as a trial's fails
        return {"accuracy": None, "feasible": False, "error": _one_line(err),
                "time_s": time.monotonic() - started}, None  # fmt: skip
    return {"accuracy": _finite(metrics.get(METRIC)), "chance": _finite(metrics.get(CHANCE)),
            "samples": metrics.get("scored_samples"),
            "feasible": bool(metrics.get("feasible", True)), "error": None,
            "time_s": time.monotonic() - started}, metrics  # fmt: skip


def _told(run: Mapping[str, Any]) -> str:
    """One run as its progress line tells it."""
    if run["error"]:
        return f"failed: {run['error']}"
    accuracy = "none" if run["accuracy"] is None else f"{run['accuracy']:.4f}"
    return f"validation accuracy {accuracy}{'' if run['feasible'] else ' (breaks a constraint)'}"


def _cost_kept(study: optuna.Study, cost: SearchCost,
               write: Callable[[Mapping[str, Any]], None]) -> str:  # fmt: skip
    """Adds a stopped launch's cost to the study's totals; what to add to the stop's message
    when that write failed (the stop stays what the user is told: its error would hide it)."""
    try:
        record_cost(study, cost, write)
    except Exception as err:  # the storage failed: every finalist run was written before
        return f" (this launch's time and energy were not added to the totals: {_one_line(err)})"
    return ""


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")


def _done(todo: list[tuple[Finalist, int]], runs: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    return [(f, s) for f, s in todo if str(s) in runs.get(str(f.trial), {})]


def _mean_time(runs: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> float | None:
    times = [r["time_s"] for seeds in runs.values() for r in seeds.values()
             if isinstance(r.get("time_s"), int | float)]  # fmt: skip
    return statistics.fmean(times) if times else None


def _say(progress: bool, line: str) -> None:
    if progress:
        print(note(line), file=sys.stderr, flush=True)


@contextlib.contextmanager
def _stops(stopped: dict[str, int]) -> Iterator[None]:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt in the runs (in the main thread), the
    signal kept in ``stopped["signum"]``; the handlers before are restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        stopped.setdefault("signum", signum)
        raise KeyboardInterrupt

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
