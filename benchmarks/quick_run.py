"""The quick run as a user sees it: `search launch` with no arguments, timed from the command
to each line and to the prompt, for this working tree and a baseline revision side by side.

Each run starts ``python -m search launch`` in a fresh empty folder (its own ``runs/``), with
the checkout first on ``PYTHONPATH`` (the baseline's is a ``git worktree`` of ``--baseline``),
and timestamps every line of its output (stdout and stderr together) as it arrives. The arms
alternate run by run (the order rotating), so that the noise of the machine hits them alike;
the load average before each run is recorded. The same goes for the typos a user makes
(a misspelt preset, an unknown config key, a missing file): seconds until the error.

Run: ``NPAS_DATA=/path/to/data python benchmarks/quick_run.py --baseline 1621a5a --runs 5``
(writes ``benchmarks/results/quick_run.md``); ``--table-only`` rewrites the table from the
JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "quick_run.md"
#: The lines a run is timed at: the first, Ray's start (said when slow), the launch line,
#: the first trial's end, the last line; then the prompt (the process's exit).
MARKS = {
    "first line": lambda line: True,
    "'Launching'": lambda line: line.startswith("Launching "),
    "first trial done": lambda line: " 1/16 done" in line,
    "last line": None,  # the last line printed
}
#: Mistakes a new user makes, each with a file it needs (name → (arguments, file text)).
TYPOS: dict[str, tuple[list[str], str | None]] = {
    "misspelt preset": (["launch", "--preset", "digit-quick"], None),
    "missing config file": (["launch", "no-such.yaml"], None),
    "unknown config key (launch)": (["launch", "typo.yaml"], "dataset: digits\ntrails: 4\n"),
    "unknown config key (check)": (["check", "typo.yaml"], "dataset: digits\ntrails: 4\n"),
}


def timed_run(checkout: Path, arguments: Sequence[str], text: str | None) -> dict[str, Any]:
    """One command in a fresh folder: each output line's time, the exit time and code."""
    with tempfile.TemporaryDirectory(prefix="npas-quick-") as folder:
        if text is not None:
            (Path(folder) / arguments[-1]).write_text(text, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONUNBUFFERED": "1"}
        load = os.getloadavg()[0]
        start = time.monotonic()
        child = subprocess.Popen([sys.executable, "-m", "search", *arguments], cwd=folder,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)  # fmt: skip
        lines = [(time.monotonic() - start, line.rstrip("\n")) for line in child.stdout or ()]
        code = child.wait()
        return {"load": load, "lines": lines, "exit": time.monotonic() - start, "code": code}


def marks(run: dict[str, Any]) -> dict[str, float | None]:
    """The seconds at which a run reached each of :data:`MARKS`, and its prompt."""
    found: dict[str, float | None] = {}
    for name, test in MARKS.items():
        hits = [t for t, line in run["lines"] if test is None or test(line)]
        found[name] = (hits[-1] if test is None else hits[0]) if hits else None
    found["prompt"] = run["exit"]
    return found


def worktree(revision: str, folder: Path) -> Path:
    """A checkout of ``revision`` in ``folder`` (``git worktree add --detach``)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(folder),
                    revision], check=True, capture_output=True)  # fmt: skip
    return folder


def measure(arms: dict[str, Path], runs: int) -> dict[str, Any]:
    """Every arm's quick runs and typos, the arms alternating and the order rotating."""
    names = list(arms)
    out: dict[str, Any] = {"quick": {a: [] for a in names}, "typos": {a: {} for a in names}}
    for i in range(runs):
        for arm in names[i % len(names) :] + names[: i % len(names)]:
            run = timed_run(arms[arm], ["launch"], None)
            assert run["code"] == 0, run["lines"][-20:]
            out["quick"][arm].append(run)
            print(f"{arm} run {i + 1}: prompt after {run['exit']:.1f} s", file=sys.stderr)
    for arm in names:
        for typo, (arguments, text) in TYPOS.items():
            taken = [timed_run(arms[arm], arguments, text) for _ in range(3)]
            assert all(t["code"] != 0 for t in taken), (arm, typo, taken[0]["lines"])
            out["typos"][arm][typo] = {"seconds": [t["exit"] for t in taken],
                                       "said": taken[0]["lines"][-1][1]}  # fmt: skip
    return out


def _cell(values: Sequence[float | None]) -> str:
    seen = [v for v in values if v is not None]
    if not seen:
        return "–"
    return f"{statistics.median(seen):.1f} ({min(seen):.1f}–{max(seen):.1f})"


def table(data: dict[str, Any]) -> str:
    """The Markdown page of one measurement."""
    arms = list(data["quick"])
    cond = data["conditions"]
    lines = [
        "# The quick run: `search launch` from the command to the prompt",
        "",
        f"- machine: {cond['cpus']} CPUs ({cond['cpu']}), {cond['python']}, torch "
        f"{cond['torch']}, Ray {cond['ray']}; {cond['when']}",
        f"- arms: {', '.join(f'`{a}`' for a in arms)}; each run `python -m search launch` "
        "(the digits-quick preset: 16 trials, 2 at a time) in a fresh empty folder, the "
        "arm's checkout first on `PYTHONPATH`; the arms alternate run by run, the order "
        "rotating",
        f"- load average (1 min) before the runs: {_loads(data)}",
        "- seconds since the command: median (min–max) over "
        f"{len(data['quick'][arms[0]])} runs per arm",
        "- where the time goes, and the designs tried: "
        "[quick_run_designs.md](quick_run_designs.md)",
        "",
        "| arm | " + " | ".join([*MARKS, "prompt"]) + " |",
        "|---|" + "---:|" * (len(MARKS) + 1),
    ]
    for arm in arms:
        found = [marks(r) for r in data["quick"][arm]]
        cells = [_cell([f[name] for f in found]) for name in [*MARKS, "prompt"]]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += ["", "## The prompt: each run, and this tree against each revision", "",
              "Seconds to the prompt of every run; the gap is this tree's median minus the "
              "revision's, with a 95 % bootstrap interval (10,000 resamples of each arm's runs).",
              "", "| arm | each run (s) | gap to this tree's median [95 % CI] |",
              "|---|---|---|"]  # fmt: skip
    ours = [r["exit"] for r in data["quick"][arms[0]]]
    for arm in arms:
        runs = [r["exit"] for r in data["quick"][arm]]
        each = ", ".join(f"{t:.1f}" for t in runs)
        gap = "–" if arm == arms[0] else _gap_cell(*median_gap(ours, runs))
        lines.append(f"| {arm} | {each} | {gap} |")
    lines += ["", "## Typos: seconds until the error (median of 3)", "",
              "| mistake | " + " | ".join(arms) + " | what the current arm says |",
              "|---|" + "---:|" * len(arms) + "---|"]  # fmt: skip
    for typo in TYPOS:
        cells = [_typo_cell(data["typos"][a][typo]) for a in arms]
        said = data["typos"][arms[0]][typo]["said"].replace("|", "\\|")[:160]
        lines.append(f"| {typo} | " + " | ".join(cells) + f" | {said} |")
    lines += ["", "† the command does not exist in that revision: argparse refused it."]
    lines += ["", "## Each run's lines (current arm, last run)", "", "```"]
    lines += [f"{t:6.2f}  {line[:110]}" for t, line in data["quick"][arms[0]][-1]["lines"]]
    lines += ["```", ""]
    return "\n".join(lines)


def median_gap(ours: Sequence[float], theirs: Sequence[float], draws: int = 10_000,
               seed: int = 0) -> tuple[float, float, float]:  # fmt: skip
    """Our median minus theirs, and the 2.5th and 97.5th percentiles of that gap over
    bootstrap resamples of each side's runs."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    resampled = (np.median(rng.choice(a, (draws, len(a))), axis=1)
                 - np.median(rng.choice(b, (draws, len(b))), axis=1))  # fmt: skip
    low, high = np.percentile(resampled, [2.5, 97.5])
    return float(np.median(a) - np.median(b)), float(low), float(high)


def _gap_cell(gap: float, low: float, high: float) -> str:
    verdict = "within noise" if low <= 0 <= high else ("faster" if high < 0 else "slower")
    return f"{gap:+.1f} s [{low:+.1f}, {high:+.1f}]: {verdict}"


def _typo_cell(found: dict[str, Any]) -> str:
    mark = " †" if "search --help" in found["said"] else ""  # argparse's last line
    return f"{statistics.median(found['seconds']):.2f}{mark}"


def _loads(data: dict[str, Any]) -> str:
    loads = [r["load"] for runs in data["quick"].values() for r in runs]
    return f"{min(loads):.2f}–{max(loads):.2f}"


def _conditions() -> dict[str, Any]:
    import ray
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())  # fmt: skip
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "torch": torch.__version__, "ray": ray.__version__,
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", action="append", help="git revision(s) beside this tree "
                        "(default: 1621a5a)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=5, help="quick runs per arm")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table-only", action="store_true", help="rewrite the table only")
    args = parser.parse_args(argv)
    raw = args.results.with_suffix(".json")
    if args.table_only:
        args.results.write_text(table(json.loads(raw.read_text())), encoding="utf-8")
        return 0
    baselines = args.baseline or ["1621a5a"]
    with tempfile.TemporaryDirectory(prefix="npas-baseline-") as folder:
        arms = {"this tree": ROOT}
        try:
            for i, revision in enumerate(baselines):
                arms[revision] = worktree(revision, Path(folder) / str(i))
            data = measure(arms, args.runs)
        finally:
            for revision in baselines:
                if revision in arms:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(arms[revision])], check=False)  # fmt: skip
    data["conditions"] = _conditions()
    raw.write_text(json.dumps(data, indent=1), encoding="utf-8")
    args.results.write_text(table(data), encoding="utf-8")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
