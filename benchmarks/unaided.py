"""The unaided benchmark: runs benchmarks/protocols/unaided.yaml, part by part, and tables it.

Each run is one (dataset, arm, seed) of the protocol, written to
``benchmarks/results/unaided/<dataset>/<arm>/seed<k>/result.json`` when it ends (a run whose
result exists is not run again, so an interrupted night goes on where it stopped; an
interrupted run's folder is set aside and the run starts again from nothing); the table,
``benchmarks/results/unaided.md``, is rewritten from every result after each run. A run not in
the protocol (a dataset, arm or seed it does not list) is refused.

The search arms go through the command line a user types: ``search launch`` on the data-only
config (``npas``), or on the same config with TPE or random sampling, no early stopping and no
finalists (``tpe``, ``random``), then ``search export``, which reads the test split once for the
exported model (``npas``: its recommendation; the others: their trial of best validation
accuracy, ``--select best:accuracy``). The hand arm trains the protocol's hand design once per
seed (``search.trial.run_trial``) and reads the test split once for it.

    NPAS_DATA=../shared/data python benchmarks/unaided.py [--datasets digits,osu_leaf]
        [--arms npas,hand] [--seeds 0,1] [--results benchmarks/results/unaided]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import mean_ci, welch

ROOT = Path(__file__).resolve().parents[1]
#: Each registered protocol: its file and where its results go (``--protocol``).
PROTOCOLS = {
    "v1": (ROOT / "benchmarks" / "protocols" / "unaided.yaml",
           ROOT / "benchmarks" / "results" / "unaided"),
    "v2": (ROOT / "benchmarks" / "protocols" / "unaided-v2.yaml",
           ROOT / "benchmarks" / "results" / "unaided-v2"),
    "v3": (ROOT / "benchmarks" / "protocols" / "unaided-v3.yaml",
           ROOT / "benchmarks" / "results" / "unaided-v3"),
    "v4": (ROOT / "benchmarks" / "protocols" / "unaided-v4.yaml",
           ROOT / "benchmarks" / "results" / "unaided-v4"),
}  # fmt: skip
PROTOCOL, RESULTS = PROTOCOLS["v1"]
DATA = ROOT / "benchmarks" / "data" / "unaided"
#: The datasets npas has built in; the others are the committed npz files.
BUILT_IN = {"digits", "mnist"}
#: A figure one seed cannot give (a spread, an interval): the project's missing-value mark.
MISSING = "—"
#: Two means this close are level: the arms got the same count of test rows right.
TIE = 1e-9
#: What each search arm's config says beyond the data-only one.
ARM_KEYS: dict[str, dict[str, Any]] = {
    "npas": {},
    "tpe": {"algorithm": "tpe", "scheduler": "fifo", "finalists": False},
    "random": {"algorithm": "random", "scheduler": "fifo", "finalists": False},
}
#: How each search arm's model is chosen for export.
BEST = ["--select", "best:accuracy"]
SELECT: dict[str, list[str]] = {"npas": [], "tpe": BEST, "random": BEST}


def protocol() -> dict[str, Any]:
    """The registered protocol this run follows (``--protocol``), read once."""
    return _read(PROTOCOL)


@functools.cache
def _read(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def dataset_entry(name: str) -> str | dict[str, Any]:
    """The config's ``dataset``: a built-in's name, or the committed npz declared with its
    layout."""
    if name in BUILT_IN:
        return name
    layout = protocol()["datasets"][name]["layout"]
    return {"name": name, "npz": str(DATA / f"{name}.npz"), "layout": layout}


def search_config(name: str, arm: str, seed: int) -> dict[str, Any]:
    """The config an arm launches: the data-only config of the protocol's dataset, its seed,
    and the arm's own keys."""
    entry = protocol()["datasets"][name]
    config = {
        "name": f"unaided-{name}-{arm}-{seed}",
        "dataset": dataset_entry(name),
        "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
        "constraints": [f"params <= {entry['params_limit']}"],
        "limits": {"time": f"{entry['search_minutes']}m"},
        "seed": seed,
    }
    return {**config, **ARM_KEYS[arm], **(protocol()["arms"][arm].get("keys") or {})}


def _search(cmd: Sequence[str], log: Path) -> None:
    """One ``search`` command, its output appended to ``log``; raises naming the log."""
    with log.open("a") as out:
        out.write(f"$ search {shlex.join(cmd)}\n")
        out.flush()
        done = subprocess.run([sys.executable, "-m", "search", *cmd], stdout=out,
                              stderr=subprocess.STDOUT, cwd=ROOT)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"search {cmd[0]} exited {done.returncode}: see {log}")


def run_search_arm(name: str, arm: str, seed: int, folder: Path) -> dict[str, Any]:
    """Launch, then export: the exported model's test accuracy, read once by export."""
    config = search_config(name, arm, seed)
    path = folder / "search.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    log = folder / "log.txt"
    start = time.monotonic()
    _search(["launch", str(path), "--out", str(folder / "run")], log)
    wall = time.monotonic() - start
    bundle = folder / "bundle"
    _search(["export", "--run", str(folder / "run"), "--name", config["name"], "--out",
             str(bundle), "--replace", *SELECT[arm]], log)  # fmt: skip
    metrics = json.loads((bundle / "metrics.json").read_text())
    exported = metrics["exported"]
    return {
        "test_accuracy": exported["test_accuracy"],
        "params": metrics["metrics"].get("params"),
        "weights": metrics["metrics"].get("weights"),
        "trial": metrics.get("trial"),
        "search_wall_s": round(wall, 1),
    }


def run_hand(name: str, seed: int, folder: Path) -> dict[str, Any]:
    """The hand design trained once with the hand recipe; the test split read once after."""
    import torch

    from objectives.train import evaluate
    from search.config import TrialConfig
    from search.trial import rebuild, run_trial, trial_data

    hand = protocol()["hand"]
    net = dict(hand["nets"][name])
    family = net.pop("family")
    cfg = {
        "dataset": dataset_entry(name),
        "family": family,
        "hyper": net,
        "train": {**hand["recipe"], "epochs": hand["epochs"][name]},
        "seed": seed,
        "artifact_dir": str(folder / "model"),
    }
    start = time.monotonic()
    metrics = run_trial(cfg)
    wall = time.monotonic() - start
    model = rebuild(metrics["artifact"])
    data = trial_data(TrialConfig.from_dict(cfg).prepare(), "cpu")
    with torch.no_grad():
        test = evaluate(model, data.test)
    return {
        "test_accuracy": float(test["accuracy"]),
        "val_accuracy": metrics["accuracy"],
        "params": metrics.get("params"),
        "search_wall_s": round(wall, 1),
    }


def engine() -> str:
    """The commit of npas that ran: ``git describe``'s hash, ``-dirty`` when the tree had
    changes (a dataset's verdict needs all its runs from one engine)."""
    done = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() or "unknown"


def _results(root: Path) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """Every finished run: dataset → arm → seed → result."""
    found: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for path in sorted(root.glob("*/*/seed*/result.json")):
        seed = int(path.parent.name.removeprefix("seed"))
        found.setdefault(path.parents[2].name, {}).setdefault(path.parents[1].name, {})[seed] = (
            json.loads(path.read_text())
        )
    return found


def table(root: Path) -> str:
    """The Markdown table of every finished run, with the protocol's verdicts where a dataset
    has all its runs, and "partial" (deciding nothing) where it has not."""
    spec = protocol()
    seeds, arms = spec["seeds"], list(spec["arms"])
    lines = [
        "# The unaided benchmark",
        "",
        f"Protocol `{spec['protocol']}` (`{PROTOCOL.relative_to(ROOT)}`, registered "
        f"{spec['registered']}); written by `benchmarks/unaided.py`. Test accuracy of each "
        "arm's recommended model (read once), mean ± std over seeds and the mean's 95 % t "
        "interval; `vs hand`: npas − hand, its 95 % Welch interval and p. No correction across "
        "datasets: each verdict stands alone. Machine: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs.",
        "",
        "| dataset | arm | seeds | test accuracy | 95 % CI | params (mean) | wall s (mean) |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts, each = [], []
    for name, by_arm in _results(root).items():
        means = {}
        for arm in arms:
            runs = by_arm.get(arm, {})
            if not runs:
                continue
            acc = [runs[s]["test_accuracy"] for s in sorted(runs)]
            mean, std, half = mean_ci(acc)
            means[arm] = mean
            params = statistics.fmean(r["params"] for r in runs.values() if r.get("params"))
            wall = statistics.fmean(r["search_wall_s"] for r in runs.values())
            spread, interval = ((f"{std:.4f}", f"[{mean - half:.4f}, {mean + half:.4f}]")
                                if len(acc) > 1 else (MISSING, MISSING))  # fmt: skip
            lines.append(f"| {name} | {arm} | {len(acc)} | {mean:.4f} ± {spread} | {interval} | "
                         f"{params:,.0f} | {wall:.0f} |")  # fmt: skip
            each.append(f"| {name} | {arm} | " + " | ".join(
                f"{runs[s]['test_accuracy']:.4f}" if s in runs else MISSING for s in seeds) + " |")
        complete = all(set(by_arm.get(a, {})) >= set(seeds) for a in arms)
        verdicts.append(_verdict(name, by_arm, means, complete))
    per_seed = ["## Each seed's test accuracy", "",
                "| dataset | arm | " + " | ".join(f"seed {s}" for s in seeds) + " |",
                "|---|---|" + "---|" * len(seeds), *each]  # fmt: skip
    return "\n".join([*lines, "", "## Verdicts", "", *verdicts, "", *per_seed, ""])


def _verdict(name: str, by_arm: dict, means: dict[str, float], complete: bool) -> str:
    if not complete:
        return f"- {name}: partial (not every arm has every seed): decides nothing"
    engines = {r.get("engine") for runs in by_arm.values() for r in runs.values()}
    if len(engines) > 1:
        return (f"- {name}: its runs come from {len(engines)} npas commits "
                f"({', '.join(sorted(map(str, engines)))}): decides nothing")  # fmt: skip
    npas = [r["test_accuracy"] for r in by_arm["npas"].values()]
    hand = [r["test_accuracy"] for r in by_arm["hand"].values()]
    diff, half, p = welch(npas, hand)
    limit = protocol()["datasets"][name]["params_limit"]
    within = all((r.get("params") or math.inf) <= limit for r in by_arm["npas"].values())
    beats = diff > 0 and p < 0.05 and within
    noise = " (within noise)" if abs(diff) <= half else ""
    return (f"- {name}: npas − hand {diff:+.4f} [{diff - half:+.4f}, {diff + half:+.4f}], "
            f"Welch p {p:.3g}{noise}: {'beats' if beats else 'does not beat'} the hand design"
            f"{'' if within else ' (a recommendation over the params limit)'}; npas "
            f"{_rank(means)} on mean")  # fmt: skip


def _rank(means: dict[str, float]) -> str:
    """npas's place among the arms' means; an arm level with it (equal to 1e-9: the same
    count of test rows right) is a tie, not a win."""
    best = max(means.values())
    if means["npas"] < best - TIE:
        return "ranks below " + max(means, key=lambda arm: means[arm])
    level = [arm for arm in means if arm != "npas" and means[arm] >= means["npas"] - TIE]
    return f"ties {' and '.join(level)} for first" if level else "ranks first"


def _chosen(given: str | None, allowed: Sequence[Any], what: str) -> list[Any]:
    if given is None:
        return list(allowed)
    picked = [type(allowed[0])(v) for v in given.split(",")]
    extra = [v for v in picked if v not in allowed]
    if extra:
        raise SystemExit(f"--{what}: {extra} not in the protocol ({list(allowed)})")
    return picked


def set_aside(folder: Path) -> Path | None:
    """An interrupted run's folder (no result) renamed ``interrupted-<name>-<n>`` beside it,
    so that the run starts again from nothing (a launch into its old study would resume it,
    with the time it had already spent) and nothing it recorded is lost; returns the new
    name, or None when there was nothing to set aside."""
    if not folder.exists() or not any(folder.iterdir()):
        return None
    n = 1
    while (aside := folder.with_name(f"interrupted-{folder.name}-{n}")).exists():
        n += 1
    folder.rename(aside)
    print(f"[unaided] {folder} was interrupted: set aside as {aside.name}", flush=True)
    return aside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets")
    parser.add_argument("--arms")
    parser.add_argument("--seeds")
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="v1")
    parser.add_argument("--results", type=Path)
    parser.add_argument("--table", action="store_true", help="rewrite the table only")
    args = parser.parse_args()
    global PROTOCOL, RESULTS
    PROTOCOL, RESULTS = PROTOCOLS[args.protocol]
    args.results = args.results or RESULTS
    if not protocol().get("registered"):
        raise SystemExit(f"{PROTOCOL.name} is a draft, not registered: no run may use it")
    if args.table:
        args.results.with_suffix(".md").write_text(table(args.results))
        return
    spec = protocol()
    names = _chosen(args.datasets, list(spec["datasets"]), "datasets")
    arms = _chosen(args.arms, list(spec["arms"]), "arms")
    seeds = _chosen(args.seeds, spec["seeds"], "seeds")
    for name in names:
        for seed in seeds:
            for arm in arms:
                folder = args.results / name / arm / f"seed{seed}"
                if (folder / "result.json").exists():
                    continue
                set_aside(folder)
                folder.mkdir(parents=True, exist_ok=True)
                print(f"[unaided] {name} {arm} seed {seed} …", flush=True)
                if arm == "hand":
                    result = run_hand(name, seed, folder)
                else:
                    result = run_search_arm(name, arm, seed, folder)
                result["engine"] = engine()
                (folder / "result.json").write_text(json.dumps(result, indent=1) + "\n")
                args.results.with_suffix(".md").write_text(table(args.results))
                print(f"[unaided] {name} {arm} seed {seed}: test {result['test_accuracy']:.4f}")


if __name__ == "__main__":
    main()
