"""The leaderboard hunt: MNIST fronts found by `search launch` against hand-designed records.

    NPAS_DATA=../shared/data python benchmarks/leaderboard.py --minutes 90

1. ``search launch --preset mnist-tiny --time-limit <minutes>m`` (multi-fidelity: MOASHA).
2. For each anchor budget (1,000 and 500 parameters), ``search export --select
   epsilon:params<=<budget>``: the most accurate fully trained trial within it (validation
   accuracy; the test set is never used for a choice).
3. ``search train --seed s --epochs <epochs>`` of each winner, three seeds, on the official
   10,000-image test set; and the plain network of the same family shrunk (by width) to the
   winner's parameter count, trained with the same recipe and seeds: whether Shapeshifting beat
   shrinking at that budget.
4. ``benchmarks/results/leaderboard.md`` (the table and its conditions) and the winning bundles
   under ``benchmarks/results/leaderboard/<name>/`` (each loadable with ``search.load_bundle``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: parameters at most → (accuracy goal on the official test set, the record it answers)
ANCHORS = {1000: (0.990, "99.0 % at 1,398 (SCS net)"), 500: (0.980, "98.0 % at 575 (golfing)")}
#: The hyper-parameters that set a family's width, scaled to shrink a plain network.
WIDTHS = {"convnet": "width", "scs": "widths"}


def _cli(log: Path, *args: str) -> int:
    """``search ...`` in a child, its output appended to ``log``."""
    with log.open("a", encoding="utf-8") as sink:
        sink.write(f"\n$ search {' '.join(args)}\n")
        sink.flush()
        done = subprocess.run([sys.executable, "-m", "search._cli", *args], cwd=ROOT,
                              stdout=sink, stderr=subprocess.STDOUT)  # fmt: skip
    print(f"$ search {' '.join(args)} → {done.returncode}", flush=True)
    return done.returncode


def _count(family: str, hyper: dict[str, Any]) -> int:
    from spaces import build_model

    net = build_model(family, (1, 28, 28), 10, **hyper)
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def shrunk(family: str, hyper: dict[str, Any], target: int) -> dict[str, Any] | None:
    """The family's hyper-parameters with the widths scaled down as little as keeps the plain
    network within ``target`` parameters; None when even width 1 is too big."""
    key = WIDTHS.get(family)
    if key is None:
        return None
    base = hyper.get(key)
    best = None
    for step in range(100, 0, -1):
        scale = step / 100
        if isinstance(base, list):
            widths: Any = [max(1, round(w * scale)) for w in base]
        else:
            widths = max(1, round(base * scale))
        candidate = {**hyper, key: widths}
        if _count(family, candidate) <= target:
            best = candidate
            break
    return best


def _worker_init() -> None:
    import torch

    torch.set_num_threads(1)


def retrain_bundle(bundle: str, epochs: int, seed: int, out: str) -> dict[str, Any]:
    """``search train`` of a bundle with one seed (run in a worker process)."""
    from search._export import train_bundle

    start = time.perf_counter()
    done = train_bundle(bundle, epochs=epochs, seed=seed, out=out, device="cpu")
    return {**done.metrics, "wall_s": time.perf_counter() - start}


def train_plain(cfg: dict[str, Any], seed: int, out: str) -> dict[str, Any]:
    """The shrunk plain network with the winner's recipe and one seed (in a worker process)."""
    from search.trial import run_trial

    start = time.perf_counter()
    result = run_trial({**cfg, "seed": seed, "artifact_dir": out, "device": "cpu"})
    return {**result, "wall_s": time.perf_counter() - start}


def _mean_std(values: list[float]) -> str:
    if not values:
        return "–"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.2f} ± {100 * std:.2f} %"


def _describe(cfg: dict[str, Any]) -> str:
    sharing = "plain" if cfg.get("budget") is None else (
        f"SSN {cfg['ssn']['mapping']}, {cfg['ssn']['generator']}/{cfg['ssn']['upsampler']}, "
        f"budget {cfg['budget']}")  # fmt: skip
    train = cfg["train"]
    return (f"{cfg['family']} {json.dumps(cfg['hyper'], separators=(',', ':'))}; {sharing}; "
            f"{train['optimizer']} lr {train['lr']:.3g}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=90, help="search budget (default 90)")
    parser.add_argument("--epochs", type=int, default=16, help="retraining epochs (default 16)")
    parser.add_argument("--seeds", type=int, default=3, help="retraining seeds (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="retrainings at once (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/leaderboard")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks/results")
    parser.add_argument("--anchors", default="1000,500",
                        help="parameter budgets to export and retrain (default 1000,500)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the finished search in --out: export and retrain only")
    args = parser.parse_args()
    budgets = [int(b) for b in args.anchors.split(",")]
    if not os.environ.get("NPAS_DATA"):
        sys.exit("leaderboard: set NPAS_DATA to the folder holding mnist/ (../shared/data)")
    if args.resume:
        shutil.rmtree(args.out / "bundles", ignore_errors=True)
        shutil.rmtree(args.out / "plain", ignore_errors=True)
    elif args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "log.txt"
    storage = f"sqlite:///{args.out}/run/npas.db"

    start = time.time()
    if not args.resume:
        _cli(log, "launch", "--preset", "mnist-tiny", "--out", str(args.out / "run"),
             "--time-limit", f"{args.minutes:g}m", "--trials", "100000")  # fmt: skip
    search_s = time.time() - start
    _cli(log, "status", "--run", str(args.out / "run"))

    winners: dict[str, dict[str, Any]] = {}
    for budget in budgets:
        goal, record = ANCHORS.get(budget, (float("nan"), "no record"))
        name = f"le{budget}"
        bundle = args.out / "bundles" / name
        if _cli(log, "export", "--storage", storage, "--select", f"epsilon:params<={budget}",
                "--out", str(bundle), "--replace") != 0:  # fmt: skip
            winners[name] = {"budget": budget, "goal": goal, "record": record, "missing": True}
            continue
        meta = json.loads((bundle / "metrics.json").read_text(encoding="utf-8"))
        cfg = _bundle_cfg(bundle)
        winners[name] = {"budget": budget, "goal": goal, "record": record, "bundle": bundle,
                         "meta": meta, "cfg": cfg}  # fmt: skip

    start = time.time()
    jobs: dict[futures.Future, tuple[str, str, int]] = {}
    with futures.ProcessPoolExecutor(args.workers, initializer=_worker_init) as pool:
        for name, win in winners.items():
            if win.get("missing"):
                continue
            cfg = win["cfg"]
            plain = None
            if cfg.get("budget") is not None:
                hyper = shrunk(cfg["family"], cfg["hyper"], int(win["meta"]["metrics"]["params"]))
                if hyper is not None:
                    plain = {**cfg, "hyper": hyper, "budget": None, "ssn": {},
                             "train": {**cfg["train"], "epochs": args.epochs}}  # fmt: skip
                    win["plain_cfg"] = plain
            for seed in range(args.seeds):
                out = str(win["bundle"] / f"seed{seed}")
                jobs[pool.submit(retrain_bundle, str(win["bundle"]), args.epochs, seed, out)] = (
                    name, "winner", seed)
                if plain is not None:
                    out = str(args.out / "plain" / name / f"seed{seed}")
                    jobs[pool.submit(train_plain, plain, seed, out)] = (name, "plain", seed)
        for job in futures.as_completed(jobs):
            name, arm, seed = jobs[job]
            try:
                winners[name].setdefault(arm, []).append(job.result())
                print(f"{name} {arm} seed {seed}: test accuracy "
                      f"{job.result()['test_accuracy']:.4f}", flush=True)  # fmt: skip
            except Exception as err:  # a failed retraining is a row of the table, not a crash
                winners[name].setdefault(f"{arm}_errors", []).append(f"seed {seed}: {err!r}")
    retrain_s = time.time() - start
    if args.resume:  # the search ran before: its own recorded duration
        search_s = float(_study(storage).user_attrs.get("search_time_s", search_s))
    _write(args, winners, search_s, retrain_s, storage)


def _study(storage: str) -> Any:
    import optuna

    return optuna.load_study(study_name="mnist-tiny", storage=storage)


def _bundle_cfg(bundle: Path) -> dict[str, Any]:
    from search._export import read_bundle

    return read_bundle(bundle)["trial_config"]


def _write(args: argparse.Namespace, winners: dict[str, dict[str, Any]], search_s: float,
           retrain_s: float, storage: str) -> None:  # fmt: skip
    import torch
    from optuna.trial import TrialState

    study = _study(storage)
    states = {s.name: len(study.get_trials(deepcopy=False, states=(s,))) for s in TrialState}
    lines = [
        "# Leaderboard hunt: MNIST, `search launch --preset mnist-tiny`",
        "",
        f"- Run: `NPAS_DATA=../shared/data python benchmarks/leaderboard.py --minutes "
        f"{args.minutes:g} --epochs {args.epochs} --seeds {args.seeds}`, "
        f"{time.strftime('%Y-%m-%d')}",
        f"- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        f"torch {torch.__version__}; trials 1 thread each, {args.workers} at once",
        f"- Search: {search_s / 60:.1f} min wall-clock (budget {args.minutes:g} min), trials "
        + ", ".join(f"{k} {v}" for k, v in states.items() if v)
        + "; validation: 5,000 images carved from the training set; the test set chose nothing",
        f"- Retraining: {retrain_s / 60:.1f} min wall-clock; {args.epochs} epochs, seeds "
        f"0–{args.seeds - 1}, each winner and its shrunk plain network; test = the official "
        "10,000 MNIST test images",
        "- params = every trainable parameter of what is trained (SSN: stores, coefficients, "
        "masks, norms, biases); weights = the deployed dense (materialised) weights",
        "",
        "| anchor | goal | winner (search trial) | params | weights | FLOPs/sample | latency ms "
        "| val acc in search | test acc, retrained (mean ± std) | goal | shrunk plain: params "
        "| shrunk plain: test acc | sharing − shrinking |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    notes = []
    for name, win in winners.items():
        if win.get("missing"):
            lines.append(f"| ≤ {win['budget']:,} | {100 * win['goal']:.1f} % | no fully "
                         "trained feasible trial within it | | | | | | | not met | | | |")
            continue
        runs = win.get("winner", [])
        accs = [r["test_accuracy"] for r in runs]
        plain = win.get("plain", [])
        plain_accs = [r["test_accuracy"] for r in plain]
        first = runs[0] if runs else win["meta"]["metrics"]
        mean = statistics.mean(accs) if accs else float("nan")
        verdict = ("met" if mean >= win["goal"] else
                   f"short by {100 * (win['goal'] - mean):.2f} pt") if accs else "not retrained"
        verdict = "–" if win["goal"] != win["goal"] else verdict  # NaN: no goal for a budget
        diff = (f"{100 * (mean - statistics.mean(plain_accs)):+.2f} pt"
                if accs and plain_accs else "–")  # fmt: skip
        plain_params = f"{int(plain[0]['params']):,}" if plain else (
            "(winner is plain)" if win["cfg"].get("budget") is None else "–")  # fmt: skip
        lines.append(
            f"| ≤ {win['budget']:,} | {100 * win['goal']:.1f} % ({win['record']}) "
            f"| {win['meta'].get('trial')}: {_describe(win['cfg'])} | {int(first['params']):,} "
            f"| {int(first['weights']):,} | {first['flops_infer']:,.0f} "
            f"| {first.get('latency_ms', float('nan')):.3f} "
            f"| {100 * win['meta']['metrics']['accuracy']:.2f} % | {_mean_std(accs)} | {verdict} "
            f"| {plain_params} | {_mean_std(plain_accs)} | {diff} |"
        )
        for key in ("winner_errors", "plain_errors"):
            notes += [f"- {name} {key}: {e}" for e in win.get(key, [])]
        _keep(args, name, win)
    lines += ["", *notes] if notes else []
    lines += ["", "Bundles: `benchmarks/results/leaderboard/<anchor>/` (config.yaml, model.pt, "
              "model.pt2, model.onnx, metrics.json, README.md; `seed<s>/train.json` per "
              "retraining); each loads with `search.load_bundle`."]
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "leaderboard.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def _keep(args: argparse.Namespace, name: str, win: dict[str, Any]) -> None:
    """The winner's bundle (small files only) and its retrainings' records into results/."""
    target = args.results / "leaderboard" / name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for path in win["bundle"].iterdir():
        if path.is_file():
            shutil.copy2(path, target / path.name)
        elif path.name.startswith("seed") and (path / "train.json").is_file():
            (target / path.name).mkdir()
            shutil.copy2(path / "train.json", target / path.name / "train.json")


if __name__ == "__main__":
    main()
