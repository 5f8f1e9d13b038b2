"""One arm against others in a scheduler-lab run's per-seed figures (its ``.json``), paired by
seed: each block's regret at the horizon (IQM) and reach (median), with the paired Wilcoxon p
of each (``search.lab._stats``: a 'never' reach ranks after every reach; replays that made the
same decisions tie within their decision clocks' difference). The readings the
replay guide gives for trusted rungs and FrontStop come from here.

Run: ``python benchmarks/lab_pairs.py benchmarks/results/scheduler_lab_rungtrust50_mnist.json
--arm rungtrust --against fifo,moasha-stopping``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from search.lab._stats import clock_ties, iqm, median, paired_p


def pairs(blocks: dict[str, Any], arm: str, against: list[str]) -> list[dict[str, Any]]:
    """For each block and each other arm: both arms' regret@100 % IQM and reach median, and
    the paired p of each."""
    rows = []
    for block, run in blocks.items():
        arms = run["arms"]
        for other in against:
            a, b = arms[arm], arms[other]
            rows.append({
                "block": block, "arm": arm, "against": other,
                "regret": (iqm(a["regret@1"]), iqm(b["regret@1"])),
                "regret_p": paired_p(a["regret@1"], b["regret@1"]),
                "reach": (median(a["reach"]), median(b["reach"])),
                "reach_p": paired_p(a["reach"], b["reach"],
                                    clock_ties(a["counts"], b["counts"], run["horizon_s"])),
            })  # fmt: skip
    return rows


def line(row: dict[str, Any]) -> str:
    (ra, rb), (ha, hb) = row["regret"], row["reach"]
    return (f"{row['block']}: {row['arm']} vs {row['against']}: regret@100 % IQM {ra:.4f} vs "
            f"{rb:.4f} (p {row['regret_p']:.3g}); reach median {ha:.2f} vs {hb:.2f} "
            f"(p {row['reach_p']:.3g})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--arm", required=True)
    parser.add_argument("--against", default="fifo")
    args = parser.parse_args()
    blocks = json.loads(args.run.read_text())
    for row in pairs(blocks, args.arm, args.against.split(",")):
        print(line(row))


if __name__ == "__main__":
    main()
