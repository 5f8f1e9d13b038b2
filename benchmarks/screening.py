"""The screen on the record-hunt spaces: how many proposals it refuses before training, how
many narrowing turns into trained points, and what one verdict costs.

Claim checked (issue 38, item 3: a search that trains what it proposes): on the
``mnist-record-valid`` and ``mnist-record-697`` presets' spaces with TPE, many proposals miss
the params limit or a budget Shapeshifting cannot meet (94 of 154 in round 5, each then a Ray
trial refused untrained; 35 of 67 in the ≤ 697 search, 25 of them flatten heads); the screen
tells them in milliseconds on the meta device, and narrowing (``repair``) queues each refused
one again with narrower widths that pass. No training: the real searcher (``NpasSearcher``,
the preset's TPE, its start points queued first) is asked for proposals with the screen on,
no recorder (as a replay), once without narrowing and once with it; a proposal it lets
through is told at once with a fake accuracy that grows with the model's parameters (tiny
nets are capacity-bound: ``0.99 - 0.5 / sqrt(params)``, plus seeded noise of 0.003, about
round 5's 95.7 % at 445 and 98.3 % at 916) and its real params and FLOPs counted on the meta
device, as a trained trial would be: TPE is drawn toward the limit as a real search is.

Then the screen is checked against a real search: each trial of round 5's study
(``benchmarks/results/leaderboard_valid/study.db``, 154 trials of this preset, 94 refused
untrained by ``run_trial``) is screened from its stored trial config, and its verdict, reason
and counts compared with what the trial recorded.

Run: ``python benchmarks/screening.py [--proposals 300] [--seed 0]`` →
``benchmarks/results/screening.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import optuna
import torch

from objectives._conditions import cpu_model_name
from objectives.datasets import DATASETS
from search.config import SearchConfig, TrialConfig, load_preset
from search.record import Metric, RayKey, TrialAttr, enqueue_start
from search.run._bound import bound_optimiser, constraint_keys
from search.run._outcome import OutcomeReader
from search.run._searcher import NpasSearcher
from search.run._trainable import report_of
from search.screening import Screen, verdict
from search.screening._meta import meta_counts, meta_model

RESULTS = Path(__file__).parent / "results" / "screening.md"
#: Round 5's search of this preset, as it ran (before the screen).
ROUND5 = Path(__file__).parent / "results" / "leaderboard_valid" / "study.db"
#: What the screen's verdict is compared on, per trial.
COMPARED = ("plain_params", "params", "flops_infer", "constraint_0", "constraint_1")


class _Timed:
    """The screen, each call timed."""

    def __init__(self) -> None:
        self.screen = Screen()
        self.ms: list[float] = []

    def __call__(self, cfg: TrialConfig) -> dict[str, Any] | None:
        start = time.perf_counter()
        verdict_ = self.screen(cfg)
        self.ms.append(1e3 * (time.perf_counter() - start))
        return verdict_


def _trained(config: SearchConfig, cfg: TrialConfig, rng: random.Random) -> dict[str, Any]:
    """A trained trial's result: the real counts, a fake accuracy growing with them."""
    info = DATASETS.get(cfg.dataset)
    counts: dict[str, Any] = dict(meta_counts(meta_model(cfg, info, {}), info))
    if cfg.budget is not None:
        counts["params"] = min(counts["params"], cfg.budget)  # about what it trains
    accuracy = 0.99 - 0.5 / math.sqrt(counts["params"]) + rng.gauss(0.0, 0.003)
    return verdict({"accuracy": accuracy, **counts}, config.constraints)


def run(proposals: int, seed: int, preset: str, repair: bool) -> dict[str, Any]:
    """``proposals`` proposals of the preset's TPE through the real searcher with the screen
    on (and narrowing, ``repair``), each let through told at once (:func:`_trained`)."""
    config = load_preset(preset)
    study = optuna.create_study(directions=config.directions)
    optimiser = bound_optimiser(config, study, seed=seed, scheduler="fifo")
    enqueue_start(optimiser.study, config.start)
    timed = _Timed()
    searcher = NpasSearcher(
        optimiser,
        outcomes=OutcomeReader(config.objectives, constraint_keys(config)),
        trial_config=lambda point, number: config.trial_config(point),
        screen=timed,
        repair=repair,
    )
    rng = random.Random(seed)
    trained: dict[int, dict[str, Any]] = {}  # number -> its told metrics
    start = time.perf_counter()
    while len(trained) + len(searcher.screened) < proposals:
        trial_id = f"t{len(trained) + len(searcher.screened)}"
        given = searcher.suggest(trial_id)
        if isinstance(given, dict):
            metrics = _trained(config, given[RayKey.TRIAL_CONFIG], rng)
            trained[given[RayKey.NUMBER]] = metrics
            searcher.on_trial_complete(trial_id, report_of(metrics, config.objective_names))
        elif given is not None:
            raise SystemExit(f"the searcher stopped: {searcher.stopped}")
    wall = time.perf_counter() - start
    reasons: Counter[str] = Counter()
    for trial in optimiser.study.trials:  # the in-memory copy the searcher wrote
        reason = trial.user_attrs.get(f"metric_{Metric.REFUSED}")
        if reason is not None and trial.number in searcher.screened:
            reasons["budget" if reason.startswith("budget: ") else reason] += 1
    narrowed = [n for n, t in enumerate(optimiser.study.trials)
                if TrialAttr.NARROWED in t.user_attrs and n in trained]  # fmt: skip
    feasible = [m for m in trained.values() if m[Metric.FEASIBLE]]
    return {"config": config, "ms": timed.ms, "screened": len(searcher.screened),
            "trained": len(trained), "narrowed": len(narrowed), "reasons": reasons,
            "wall": wall, "best": max((m["accuracy"] for m in feasible), default=float("nan")),
            "limit_share": [trained[n]["params"] / params_limit(config) for n in narrowed]}


def params_limit(config: SearchConfig) -> float:
    """The preset's ``params <=`` limit."""
    return next(c.value for c in config.constraints if c.indicator == "params")


def uniform_refusals(config: SearchConfig, proposals: int, seed: int) -> int:
    """How many of ``proposals`` points drawn uniformly from the space (no optimiser) the
    screen refuses."""
    screen = Screen()
    points = (config.space.sample(seed * 100_000 + i) for i in range(proposals))
    return sum(screen(config.trial_config(point)) is not None for point in points)


def against_round5() -> Counter[str]:
    """Each trial of round 5's study screened from its trial config: how the verdict, reason
    and counts compare with what the trial recorded (a copy of the file is read)."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "study.db"
        shutil.copy(ROUND5, copy)
        study = optuna.load_study(study_name="mnist-record-valid", storage=f"sqlite:///{copy}")
        trials = study.trials
    screen, found = Screen(), Counter[str]()
    for trial in trials:
        attrs = trial.user_attrs
        said = screen(TrialConfig.from_dict(attrs["trial_config"]))
        recorded = attrs.get(f"metric_{Metric.REFUSED}")
        if said is None:
            found["trained, not screened" if recorded is None else "refused, not screened"] += 1
            continue
        if recorded is None:
            found["screened, but it trained"] += 1
            continue
        same = said[Metric.REFUSED] == recorded and all(
            said[k] == attrs[f"metric_{k}"] for k in COMPARED if k in said
        )
        found["refused and screened, same reason and counts" if same else "differ"] += 1
    return found


def _commit() -> str:
    """The short commit, ``+changes`` when tracked files differ from it."""
    here = Path(__file__).parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=here).stdout.strip()  # fmt: skip

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _row(preset: str, repair: bool, found: dict[str, Any]) -> str:
    """One arm's table row."""
    ms, proposals = found["ms"], found["trained"] + found["screened"]
    steady = sorted(ms[1:])  # the first call loads torch's FLOP counter
    p90 = steady[int(0.9 * (len(steady) - 1))]
    share = f"{found['screened']} ({100 * found['screened'] / proposals:.0f} %)"
    near = found["limit_share"]
    near_cell = f"{100 * statistics.median(near):.0f} %" if near else ""
    cells = [preset, "on" if repair else "off", proposals, share, found["trained"],
             found["narrowed"], near_cell, f"{100 * found['best']:.2f} %",
             f"{statistics.median(steady):.1f}", f"{p90:.1f}", f"{len(ms) / proposals:.2f}",
             f"{found['wall']:.1f}"]  # fmt: skip
    return "| " + " | ".join(map(str, cells)) + " |"


def write(arms: list[tuple[str, bool, dict[str, Any]]], found: dict[str, Any],
          proposals: int, seed: int, note: str) -> str:  # fmt: skip
    round5 = "\n".join(f"| {k} | {n} |" for k, n in found["round5"].most_common())
    rows = "\n".join(f"| {preset} | {'on' if repair else 'off'} | {reason} | {n} |"
                     for preset, repair, arm in arms
                     for reason, n in arm["reasons"].most_common())  # fmt: skip
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    table = "\n".join([
        "| preset | narrowing (`repair`) | proposals | refused by the screen | sent to "
        "training | of them narrowed | narrowed params / limit, median | best fake accuracy "
        "within the limits | screen ms per call, median | p90 | screen calls per proposal | "
        "searcher wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(_row(preset, repair, arm) for preset, repair, arm in arms),
    ])  # fmt: skip
    uniform = "; ".join(f"`{preset}` {n} ({100 * n / proposals:.0f} %)"
                        for preset, n in found["uniform"].items())  # fmt: skip
    text = f"""# The screen on the record-hunt spaces, with and without narrowing

{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {_commit()}. CPU: {cpu_model_name()}
({platform.machine()}), {os.cpu_count()} cores{note}; load average {load} at the end.
Python {platform.python_version()}, torch {torch.__version__}, Optuna {optuna.__version__}.
Command: `python benchmarks/screening.py --proposals {proposals} --seed {seed}`.

Each preset's space and start points, its TPE (seed {seed}), the real searcher with the screen
on and no recorder, once without narrowing and once with it (`repair`: a refused proposal
queued again with its widths narrowed to the widest the screen passes); each proposal it let
through was told at once with its params and FLOPs counted on the meta device and a fake
accuracy growing with its params (`0.99 - 0.5 / sqrt(params)` plus noise of 0.003, so TPE is
drawn toward the limit as a real search is). No training. A proposal is a trial the
optimiser made (a narrowed one included): refused, or sent to training.

{table}

Of {proposals} points drawn uniformly from each space (`space.sample`, no optimiser), the
screen refuses {uniform}.

Why the screen refused TPE's proposals (a refusal naming two constraints is one row):

| preset | narrowing | reason | proposals |
|---|---|---|---:|
{rows}

Against round 5's search as it ran (`leaderboard_valid/study.db`, before the screen), each
trial screened from its stored trial config ({found["round5_ms"]:.1f} ms a trial on average,
reading the study included):

| trial and screen | trials |
|---|---:|
{round5}

Each refused proposal would have been a Ray trial refused untrained and counted toward
`trials` before the screen (round 5: 94 of 154). With fake accuracies TPE's proposals differ
from a real search's, so the share is indicative; the time per verdict is the screen's own
(a model built on the meta device once per family and hyper-parameters, the budget planned,
FLOPs counted by torch's counter).
"""
    RESULTS.write_text(text)
    return text


#: The record-hunt presets compared: round 5's space, and the ≤ 697 search's (flatten heads).
PRESETS = ("mnist-record-valid", "mnist-record-697")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposals", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="what else ran on the machine")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    torch.set_num_threads(1)
    arms = [(preset, repair, run(args.proposals, args.seed, preset, repair))
            for preset in PRESETS for repair in (False, True)]  # fmt: skip
    found: dict[str, Any] = {"uniform": {
        preset: uniform_refusals(load_preset(preset), args.proposals, args.seed)
        for preset in PRESETS}}  # fmt: skip
    start = time.perf_counter()
    found["round5"] = against_round5()
    found["round5_ms"] = 1e3 * (time.perf_counter() - start) / found["round5"].total()
    print(write(arms, found, args.proposals, args.seed, args.note), file=sys.stderr)


if __name__ == "__main__":
    main()
