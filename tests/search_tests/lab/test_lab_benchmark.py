"""The lab's benchmark scripts on the tiny table: Syne Tune's MOASHA through its own simulator
returns what npas's replay returns, and the lab writes its table with every arm and verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.bundles import load_benchmark

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def _module(name: str):
    return load_benchmark(name)


@pytest.mark.parametrize("scheduler", ["moasha", "moasha-fixed", "random"])
def test_syne_tune_completes_recorded_rows_within_the_horizon(table, scheduler):
    arm = _module("syne_tune_arm")
    horizon = 12.0
    done = arm.run_syne_tune(table, scheduler=scheduler, seed=0, workers=2, horizon_s=horizon,
                             charge_decisions=False)  # fmt: skip
    assert done, "no trial completed"
    finals = [row.values[-1] for row in table.rows]
    times = [t for t, _, _ in done]
    assert times == sorted(times) and times[0] > 0 and times[-1] <= horizon
    # a trial takes at least the table's start cost and the fastest row's 8 epochs
    fastest = min(table.trial_s(row) for row in table.rows)
    assert times[0] >= fastest - 1e-6
    assert all(values in finals and feasible for _, values, feasible in done)
    again = arm.run_syne_tune(table, scheduler=scheduler, seed=0, workers=2, horizon_s=horizon,
                              charge_decisions=False)  # fmt: skip
    assert again == done  # seeded


def test_the_rank_fixed_syne_tune_moasha_keeps_a_trial_that_dominates_its_rung():
    """Syne Tune 0.16's own rung (``asha.Bracket``): five trials recorded on a chain, the worst
    with index 4, then a sixth that dominates them all. As shipped the rung reads the sort's
    index order as ranks and stops it (its "rank" is the worst trial's index, 4 of 6); with
    the rank read correctly it is first and goes on."""
    from syne_tune.optimizer.schedulers.asha import Bracket
    from syne_tune.optimizer.schedulers.multiobjective.multiobjective_priority import (
        NonDominatedPriority,
    )

    arm = _module("syne_tune_arm")
    chain = [(0.5, 5.0), (0.6, 6.0), (0.7, 7.0), (0.8, 8.0), (0.9, 9.0)]
    decisions = {}
    for name, priority in (("shipped", NonDominatedPriority()), ("fixed", arm.RankedPriority())):
        bracket = Bracket(min_t=1, max_t=27, reduction_factor=3, s=0, priority=priority)
        for i, (a, b) in enumerate(chain):
            bracket.on_result(i, 1, {"a": a, "b": b})
        decisions[name] = bracket.on_result(5, 1, {"a": 0.1, "b": 1.0})
    assert decisions == {"shipped": "STOP", "fixed": "CONTINUE"}, decisions


def test_the_lab_writes_every_arm_and_its_verdicts(table, tmp_path):
    path = table.save(tmp_path / "digits.json.gz")
    out = tmp_path / "lab.md"
    done = subprocess.run(
        [sys.executable, str(BENCH / "scheduler_lab.py"), "--table", str(path), "--seeds", "3",
         "--workers", "2", "--optimisers", "random", "--budget", "8", "--jobs", "1",
         "--results", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    samplers = {"fifo": "random (npas)", "foresight (the bound)": "random (npas)",
                "moasha-stopping": "random (npas)", "moasha-promotion": "random (npas)",
                "moasha-stopping-random": "random (npas)",
                "asha (single-objective reference)": "random (npas)",
                "random-fifo": "random (npas)", "syne-moasha": "random (Syne Tune)",
                "syne-moasha-fixed": "random (Syne Tune)",
                "syne-random": "random (Syne Tune)"}  # fmt: skip
    for arm, sampler in samplers.items():
        assert f"| {arm} | {sampler} | " in text, arm
    bound = next(line for line in text.splitlines() if line.startswith("| foresight"))
    assert bound.split(" | ")[3] == "1.00"  # the bound's reach is 1.00 times its own
    assert "moasha-promotion vs moasha-stopping (reach, paired Wilcoxon" in text
    assert "npas's MOASHA vs Syne Tune's rank-fixed MOASHA, both sampling at random " in text
    assert "Syne Tune's MOASHA rank-fixed vs as shipped (the bug alone)" in text
    assert "vs Syne Tune's MOASHA (syne-moasha-fixed, random sampling" in text
    assert "Target (2 workers" in text and "How to read the arms." in text
    raw = json.loads(out.with_suffix(".json").read_text())
    assert len(raw["random-W2"]["arms"]["fifo"]["reach"]) == 3
    assert raw["random-W2"]["arms"]["syne-moasha-fixed"]["sampler"] == "random (Syne Tune)"


def test_the_lab_runs_the_design_arms_it_is_asked_for_and_refuses_unknown_ones(table, tmp_path):
    path = table.save(tmp_path / "digits.json.gz")
    out = tmp_path / "lab.md"
    command = [sys.executable, str(BENCH / "scheduler_lab.py"), "--table", str(path), "--seeds",
               "2", "--workers", "2", "--optimisers", "random", "--budget", "6", "--jobs", "1",
               "--results", str(out)]  # fmt: skip
    arms = "fifo,moasha-stopping,moasha-stopping-hv,moasha-promotion-early"
    done = subprocess.run([*command, "--arms", arms], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert all(f"| {arm} |" in text for arm in arms.split(","))
    assert "| foresight (the bound) |" in text  # in every table
    assert "| asha |" not in text and "syne" not in text.split("###")[1]
    assert "moasha-stopping-hv vs moasha-stopping (reach, paired Wilcoxon)" in text
    bad = subprocess.run([*command, "--arms", "fifo,moasha-fast"], capture_output=True,
                         text=True, timeout=600, check=False)  # fmt: skip
    assert bad.returncode != 0 and "moasha-fast" in bad.stderr


def test_first_seed_runs_the_seeds_from_it(table, tmp_path):
    """``--first-seed 1 --seeds 1`` replays seed 1 alone: its figures are the second seed's of
    ``--seeds 2``, and the header names the option (a rule's fresh seeds are then on record)."""
    path = table.save(tmp_path / "digits.json.gz")
    figures = {}
    for name, seeds in (("both", ["--seeds", "2"]), ("second", ["--seeds", "1", "--first-seed",
                                                                "1"])):  # fmt: skip
        out = tmp_path / f"{name}.md"
        done = subprocess.run([sys.executable, str(BENCH / "scheduler_lab.py"), "--table",
                               str(path), *seeds, "--workers", "2", "--optimisers", "random",
                               "--budget", "6", "--jobs", "1", "--arms", "fifo", "--results",
                               str(out)], capture_output=True, text=True, timeout=600,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        figures[name] = json.loads(out.with_suffix(".json").read_text())["random-W2"]["arms"]
        assert ("--first-seed 1" in out.read_text()) == (name == "second")
    for arm in ("fifo", "foresight"):
        assert figures["second"][arm]["regret@1"] == figures["both"][arm]["regret@1"][1:]
        trials = [[{k: v for k, v in c.items() if k != "decision_s"} for c in run[arm]["counts"]]
                  for run in (figures["second"], figures["both"])]  # decisions' CPU clock aside
        assert trials[0] == trials[1][1:]


def test_the_former_chance_rule_stops_every_trial_where_none_leaves_chance(table):
    """Every curve marked at chance after epoch 1: no trial of the search ever leaves chance
    there, so the current rule lets them all on (they finish), while the former one, kept as
    the ``-nowitness`` arms, stops each at its first rung (none finishes); the rule is
    restored after."""
    import dataclasses

    from search.lab import ReplaySpec
    from search.lab._compare import Arm, replayed
    from search.schedulers._moasha import MOASHA

    lab = _module("scheduler_lab")
    stuck = dataclasses.replace(table, rows=[dataclasses.replace(r, at_chance=[1])
                                             for r in table.rows])  # fmt: skip
    spec = ReplaySpec("random", "moasha", "stopping", 2, within_front="crowding")
    horizon = 6 * sum(stuck.trial_s(r) for r in stuck.rows) / len(stuck.rows) / 2
    rule = MOASHA._chance_stops
    former = lab.no_witness(stuck, 0, horizon, spec=spec, label="moasha-stopping-nowitness")
    assert MOASHA._chance_stops is rule  # restored
    now = replayed(stuck, Arm("moasha-stopping", spec), 0, horizon)
    assert former.completed == [] and len(now.completed) > 0
