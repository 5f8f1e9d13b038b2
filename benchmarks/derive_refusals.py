"""How many random proposals of a derived space the screen refuses before training, and what a
derivation costs (issue 57, item 1: a data-only config's proposals should fall inside its
constraints; refusals rare).

For each case (digits at several params limits, MNIST at 1,000, a generated table and a
generated image npz), the data-only config is derived (``search.derive.derive``, timed after
the imports), then ``--proposals`` random points of its space (``Space.sample(seed + i)``)
are turned into trial configs and screened: a built-in dataset by the search's own screen
(``search.config.screen``, as a launch screens each proposal), a declared one by
``search.derive._refusals.refusals`` (the same counts on the meta device: the screen cannot see
a declared dataset's shape).

Run: ``python benchmarks/derive_refusals.py [--proposals 200]`` →
``benchmarks/results/derive_refusals.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from objectives.datasets import DATASETS
from search.config import SearchConfig
from search.derive import derive
from search.derive._refusals import refusals
from search.record import Metric
from search.screening import screen

RESULTS = Path(__file__).parent / "results" / "derive_refusals.md"


def _config(dataset: Any, limit: int) -> dict[str, Any]:
    return {"name": "unaided", "dataset": dataset, "constraints": [f"params <= {limit}"],
            "objectives": [["accuracy", "maximize"], ["params", "minimize"]],
            "limits": {"time": "1h"}}  # fmt: skip


def _files(folder: Path) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1000, 12)).astype(np.float32)
    np.savez(folder / "table.npz", x_train=x, y_train=np.arange(1000) % 4)
    images = rng.integers(0, 255, (600, 3, 16, 16), dtype=np.uint8)
    np.savez(folder / "image.npz", x_train=images, y_train=np.arange(600) % 5)
    signal = rng.normal(size=(500, 3, 128)).astype(np.float32)
    np.savez(folder / "signal.npz", x_train=signal, y_train=np.arange(500) % 3)
    return {
        "table": {"name": "bench-table", "npz": "table.npz"},
        "image": {"name": "bench-image", "npz": "image.npz"},
        "signal": {"name": "bench-signal", "npz": "signal.npz", "layout": "signal"},
    }


def _screened(config: SearchConfig, proposals: int) -> Counter[str]:
    """The search's own screen on ``proposals`` random points of a built-in dataset's space."""
    counts: Counter[str] = Counter()
    models: dict[str, Any] = {}
    for i in range(proposals):
        verdict = screen(config.trial_config(config.space.sample(config.seed + i)), models)
        why = "ok" if verdict is None else str(verdict[Metric.REFUSED])
        counts[why if why == "ok" else "budget" if why.startswith("budget") else "over limit"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposals", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="derive-"))
    declared = _files(folder)
    cases = [("digits", "digits", n) for n in (500, 1000, 2000, 5000, 20000)]
    cases += [("mnist", "mnist", 1000), ("table 1000×12, 4 classes", declared["table"], 1000),
              ("image npz 3×16×16, 5 classes", declared["image"], 3000),
              ("signal npz 3×128, 3 classes", declared["signal"], 3000),
              ("signal npz 3×128, 3 classes", declared["signal"], 500)]  # fmt: skip
    rows = []
    for label, dataset, limit in cases:
        data = _config(dataset, limit)
        start = time.perf_counter()
        derivation = derive(data, base=str(folder))
        ms = 1e3 * (time.perf_counter() - start)
        config = SearchConfig.from_dict(derivation.config, base=str(folder))
        facts = derivation.facts
        assert facts is not None
        if isinstance(dataset, str):
            counts, how = _screened(config, args.proposals), "search.config.screen"
        else:
            counts, how = refusals(config, facts, samples=args.proposals), "meta-device counts"
        rows.append((label, limit, ms, counts, how))
    for name in ("bench-table", "bench-image", "bench-signal"):
        DATASETS._entries.pop(name, None)
    lines = [
        "# Refusals of derived spaces (benchmarks/derive_refusals.py)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__}, load average "
        f"{os.getloadavg()[0]:.1f}; {args.proposals} random proposals per case (seeds 0..n-1). "
        "Derivation time: `derive()` alone, after the imports (its first call also loads the "
        "dataset's registry entry or reads its labels and first sample).",
        "",
        "| data | params limit | derive (ms) | refused | reasons | counted by |",
        "|---|---:|---:|---:|---|---|",
    ]
    for label, limit, ms, counts, how in rows:
        if counts is None:
            lines.append(f"| {label} | {limit:,} | {ms:.1f} | – | – | {how} |")
            continue
        refused = sum(v for k, v in counts.items() if k != "ok")
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "ok") or "–"
        lines.append(f"| {label} | {limit:,} | {ms:.1f} | {refused}/{sum(counts.values())} "
                     f"({100 * refused / sum(counts.values()):.1f} %) | {reasons} | {how} |")
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
