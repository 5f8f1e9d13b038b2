"""The epoch rule's rate against recorded trials: what an epoch took, what the rule prices.

The unaided search sizes a trial's epochs, its scheduler and its folds from a price of one
epoch (``search.derive._derive``: :data:`STEP_S` a step plus the forward multiply-adds at
:data:`TRAIN_MACS_PER_SECOND`). This script reads recorded studies (each trial's per-epoch
training time, batch, training samples and its net's multiply-adds, counted on the meta
device), fits the two constants to a *fit* set of studies, and writes a table of priced over
measured epoch times: each fit study left out in turn (the fit on the others), each *check*
study (never fitted), and the rule before (0.2 ms a sample at up to 5,000 parameters plus the
same MACs rate) beside it.

    python benchmarks/epoch_rate.py --extract fit:rare=RUN/npas.db check:mnist=... \\
        --rows benchmarks/results/epoch_rate_rows.json
    python benchmarks/epoch_rate.py --rows benchmarks/results/epoch_rate_rows.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file

#: The rule before the refit: 0.2 ms a sample (at limits up to 5,000 parameters, as every
#: study here), plus its MACs.
OLD_SAMPLE_S = 1 / 5000


def extract(db: str, tag: str, role: str) -> list[dict[str, Any]]:
    """One row per trial with two epochs or more (cross-validated ones left out): its median
    epoch's training seconds and what the rule prices it by (samples, batch, forward
    multiply-adds)."""
    import optuna
    import torch

    from objectives import count_weights_and_flops
    from search.derive._data import read_facts
    from spaces import build_model

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rows, macs_of = [], {}
    for summary in optuna.get_all_study_summaries(db):
        study = optuna.load_study(study_name=summary.study_name, storage=db)
        facts = read_facts(study.user_attrs["config"])
        for trial in study.trials:
            curve, config = trial.user_attrs.get("curve"), trial.user_attrs.get("trial_config")
            if not curve or not config or len(curve) < 2 or config.get("folds", 1) != 1:
                continue
            key = (facts.in_shape, facts.classes, config["family"],
                   json.dumps(config["hyper"], sort_keys=True))  # a file may hold several studies
            if key not in macs_of:
                with torch.device("meta"):
                    net = build_model(config["family"], facts.in_shape, facts.classes,
                                      **config["hyper"])  # fmt: skip
                _, flops = count_weights_and_flops(net, torch.zeros(1, *facts.in_shape,
                                                                    device="meta"))  # fmt: skip
                macs_of[key] = flops // 2
            times = [e["train_time_s"] for e in curve]
            rows.append({
                "tag": tag, "role": role, "samples": facts.train,
                "batch": config["train"]["batch_size"], "macs": macs_of[key],
                "epoch_s": statistics.median(b - a for a, b in itertools.pairwise(times)),
            })  # fmt: skip
    return rows


def features(row: dict[str, Any]) -> np.ndarray:
    """Steps and sample-MACs of one epoch: the rule's price is their dot with its constants."""
    return np.array([math.ceil(row["samples"] / row["batch"]), row["samples"] * row["macs"]])


def fit(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """Seconds a step and multiply-adds a second that price the rows' epochs best, by least
    squares on the log (errors are ratios) with each study weighing the same."""
    from scipy.optimize import least_squares

    x = np.array([features(r) for r in rows])
    y = np.log([r["epoch_s"] for r in rows])
    tags = [r["tag"] for r in rows]
    weight = np.sqrt([1 / tags.count(t) for t in tags])
    found = least_squares(lambda p: weight * (np.log(x @ np.exp(p)) - y), np.log([1e-3, 1e-9]))
    step_s, mac_s = np.exp(found.x)
    return float(step_s), float(1 / mac_s)


def priced(row: dict[str, Any], step_s: float, macs_per_s: float) -> float:
    """The rate's epoch seconds for a row (without the per-epoch overhead: not in its time)."""
    return float(features(row) @ np.array([step_s, 1 / macs_per_s]))


def old_priced(row: dict[str, Any], macs_per_s: float) -> float:
    """The rule before: a per-sample base, not a per-step one."""
    return row["samples"] * (OLD_SAMPLE_S + row["macs"] / macs_per_s)


def ratios(rows: Sequence[dict[str, Any]], step_s: float, macs_per_s: float
           ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Priced over measured, by the rate and by the rule before, a value a row."""
    new = [priced(r, step_s, macs_per_s) / r["epoch_s"] for r in rows]
    old = [old_priced(r, macs_per_s) / r["epoch_s"] for r in rows]
    return np.array(new), np.array(old)


def table(rows: Sequence[dict[str, Any]], rule: tuple[float, float]) -> str:
    """Each study's priced/measured medians: left out of the fit, or a check study."""
    fitting = [r for r in rows if r["role"] == "fit"]
    step_s, macs_per_s = fit(fitting)
    lines = [
        f"Fitted on every fit study: {step_s * 1e3:.2f} ms a step, {macs_per_s / 1e9:.2f} G "
        f"multiply-adds a second; the rule uses {rule[0] * 1e3:g} ms and {rule[1] / 1e9:g} G.",
        "",
        "| study | role | trials | samples | batch | median epoch s | priced/measured: fit "
        "without it, median [IQR] | the rule's constants | the rule before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tag in dict.fromkeys(r["tag"] for r in rows):
        mine = [r for r in rows if r["tag"] == tag]
        role = mine[0]["role"]
        left_out = fit([r for r in fitting if r["tag"] != tag]) if role == "fit" else (
            step_s, macs_per_s)  # fmt: skip
        new, _ = ratios(mine, *left_out)
        ruled, old = ratios(mine, *rule)
        q1, q3 = np.percentile(new, [25, 75])
        lines.append(
            f"| {tag} | {role} | {len(mine)} | {mine[0]['samples']:,} | {mine[0]['batch']} | "
            f"{statistics.median(r['epoch_s'] for r in mine):.3f} | {np.median(new):.2f} "
            f"[{q1:.2f}, {q3:.2f}] | {np.median(ruled):.2f} | {np.median(old):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extract", nargs="*", default=[],
                        help="role:tag=STUDY.db (role: fit or check); writes --rows")
    parser.add_argument("--rows", type=Path, required=True)
    args = parser.parse_args()
    if args.extract:
        rows = []
        for item in args.extract:
            role_tag, db = item.split("=", 1)
            role, tag = role_tag.split(":", 1)
            rows += extract(f"sqlite:///{db}", tag, role)
        args.rows.write_text(json.dumps(rows))
    from search.derive._derive import STEP_S, TRAIN_MACS_PER_SECOND

    print(table(json.loads(args.rows.read_text()), (STEP_S, TRAIN_MACS_PER_SECOND)))


if __name__ == "__main__":
    main()
