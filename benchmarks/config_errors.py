"""Seconds from the command to the error, for the mistakes a user makes in a search config,
this working tree beside a baseline revision in the same run.

Each mistake is a config file (a small digits search with one thing wrong) given to
``python -m search check FILE`` and ``python -m search launch FILE`` in a fresh folder and a
fresh process, timed from the start to the exit (quick_run.py's ``timed_run``); the arms
alternate mistake by mistake, ``--repeats`` times each; the table gives the median and the
range, whether the arm's error is the same text, and the load average.

Run: ``python benchmarks/config_errors.py --baseline b8cb338 --repeats 5`` (writes
``benchmarks/results/config_errors.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.quick_run import timed_run, worktree

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "config_errors.md"
GOOD = {
    "name": "typo",
    "dataset": "digits",
    "space": {"family": ["mlp"], "mlp.width": {"low": 8, "high": 32}},
    "train": {"epochs": 1},
}
#: A mistake → the edit of :data:`GOOD` that makes it.
MISTAKES: dict[str, dict[str, Any]] = {
    "unknown top-level key (trails)": {"trails": 4},
    "unknown train key (epoch)": {"train": {"epoch": 3}},
    "bad train value (lr: -1)": {"train": {"lr": -1}},
    "misspelt optimizer (adamm)": {"train": {"optimizer": "adamm"}},
    "misspelt scheduler (moashaa)": {"scheduler": {"name": "moashaa"}},
    "bad time limit (soon)": {"limits": {"time": "soon"}},
    "misspelt objective (acuracy)": {"objectives": [["acuracy", "maximize"]]},
    "misspelt dataset (digitz)": {"dataset": "digitz"},
    "misspelt family (mpl)": {"space": {"family": ["mpl"]}},
    "misspelt hyper-parameter (mlp.widht)": {
        "space": {"family": ["mlp"], "mlp.widht": {"low": 8, "high": 32}}
    },
    "misspelt generator (wavgg)": {"fixed": {"ssn": {"generator": "wavgg"}}},
    "misspelt upsampler (maskk)": {"fixed": {"ssn": {"upsampler": "maskk"}}},
    "misspelt mapping (autoo)": {"fixed": {"ssn": {"mapping": "autoo"}}},
}
COMMANDS = ("check", "launch")


def _timed(checkout: Path, command: str, edit: dict[str, Any]) -> dict[str, Any]:
    text = yaml.safe_dump({**GOOD, **edit})
    run = timed_run(checkout, [command, "typo.yaml"], text)
    return {"seconds": run["exit"], "code": run["code"], "said": run["lines"][-1][1] if run[
        "lines"] else "", "load": run["load"]}  # fmt: skip


def measure(arms: dict[str, Path], repeats: int) -> dict[str, Any]:
    """Every arm's seconds per (mistake, command), the arms alternating."""
    out: dict[str, Any] = {arm: {} for arm in arms}
    for mistake, edit in MISTAKES.items():
        for command in COMMANDS:
            for i in range(repeats):
                order = list(arms) if i % 2 == 0 else list(arms)[::-1]
                for arm in order:
                    run = _timed(arms[arm], command, edit)
                    assert run["code"] != 0, (arm, mistake, command, run)
                    out[arm].setdefault(f"{mistake}|{command}", []).append(run)
            print(f"{mistake}, {command}: done", file=sys.stderr, flush=True)
    return out


def _cell(runs: list[dict[str, Any]]) -> str:
    seconds = [r["seconds"] for r in runs]
    return f"{statistics.median(seconds):.2f} ({min(seconds):.2f}–{max(seconds):.2f})"


def table(data: dict[str, Any], arms: list[str], conditions: str) -> str:
    """The page: one row per mistake and command, a column per arm."""
    ours = arms[0]
    lines = [
        "# Config mistakes: seconds until the error",
        "",
        conditions,
        "",
        "| mistake | command | " + " | ".join(arms) + " | ≤ 1 s | what this tree says |",
        "|---|---|" + "---:|" * len(arms) + "---|---|",
    ]
    for key, runs in data[ours].items():
        mistake, command = key.split("|")
        median = statistics.median(r["seconds"] for r in runs)
        said = runs[0]["said"].replace("|", "\\|")[:150]
        cells = " | ".join(_cell(data[arm][key]) for arm in arms)
        lines.append(f"| {mistake} | {command} | {cells} | {'yes' if median <= 1 else 'no'} "
                     f"| {said} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="b8cb338", help="git revision beside this tree")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="npas-errors-") as folder:
        arms = {f"this tree ({head})": ROOT,
                args.baseline: worktree(args.baseline, Path(folder) / "baseline")}  # fmt: skip
        try:
            loads = [os.getloadavg()[0]]
            start = time.time()
            data = measure(arms, args.repeats)
            loads.append(os.getloadavg()[0])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(arms[args.baseline])], check=False)  # fmt: skip
    conditions = (
        f"- Run: `python benchmarks/config_errors.py --baseline {args.baseline} --repeats "
        f"{args.repeats}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}, "
        f"{(time.time() - start) / 60:.1f} min\n"
        f"- Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; load average {loads[0]:.1f} at the start, "
        f"{loads[1]:.1f} at the end\n"
        "- Each cell: median (min–max) of the repeats, seconds from starting `python -m search "
        "<command> typo.yaml` in a fresh folder to its exit, the arms alternating"
    )
    args.results.write_text(table(data, list(arms), conditions), encoding="utf-8")
    print(args.results.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
