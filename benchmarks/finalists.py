"""A search's finalists retrained before one is chosen, so that the net a leaderboard calls
npas-found is not the luck of one validation accuracy (issue 38: the grace-9 search's winner
led its 20 finishers by 0.30 points of a 5,000-image validation accuracy, whose standard error
is 0.20, and retrained it was level with the 8th).

1. The ``--top`` feasible trials that ran the whole schedule, most accurate first (the
   search's own ranking), are exported beside the study (``search export --select trial:N``).
2. ``record_designs.py`` retrains each ``--seeds`` times under the leaderboard's protocol (arm
   ``fin-<label>-t<N>``: the whole training split, each seed carving its own validation split).
3. They are ranked on their seeds' mean validation accuracy; the test set, read once per model,
   chooses nothing. The first becomes arm ``npas-<label>``: its folder is renamed, each seed's
   ``source`` relabelled (``finalist`` keeps the trial's arm), and its seeds up to ``--total``
   are trained; ``finalists_<label>.json`` records the choice, so a second run trains only what
   is missing.
4. ``finalists_<label>.md``: each finalist's search accuracy, its retrained seeds, their mean.

A later run with more ``--seeds`` than the choice was made on widens the stage: the ``--top``
finalists are trained on to that many seeds (the chosen one in its ``npas-<label>`` folder)
and ranked again on their first ``--seeds`` seeds; the earlier stages stay in the record, and
when the choice changes the former one's folder goes back to ``fin-<label>-t<N>``.

    python benchmarks/finalists.py --storage sqlite:///runs/npas.db --label d3 --top 3 \\
        --seeds 2 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks import record_designs as designs
from benchmarks.leaderboard import each_pct, mean_std_pct, run_cli

ROOT = Path(__file__).resolve().parents[1]


def finalists(storage: str, name: str | None, top: int) -> tuple[str, list[dict[str, Any]]]:
    """The study's name and its ``top`` feasible trials that ran their whole schedule, most
    accurate first (ties: the lower number): number, validation accuracy, params."""
    import optuna

    from search.record import read_storage
    from spaces import ConfigError

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:  # read only: a mistyped SQLite path must not leave an empty database behind
        study = optuna.load_study(study_name=name, storage=read_storage(storage))
    except ConfigError as err:
        sys.exit(f"finalists.py: {err}")
    done = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        attrs = trial.user_attrs
        schedule = attrs.get("trial_config", {}).get("train", {}).get("epochs")
        if attrs.get("feasible") and attrs.get("metric_epochs") == schedule:
            done.append({"trial": trial.number, "search_accuracy": attrs["metric_accuracy"],
                         "params": attrs["metric_params"]})  # fmt: skip
    if not done:
        sys.exit("finalists.py: no feasible trial of the study ran its whole schedule")
    done.sort(key=lambda t: (-t["search_accuracy"], t["trial"]))
    return study.study_name, done[:top]


def _arm_folder(board: Path, arm: str) -> Path | None:
    """An arm's folder on the board (any target), or None."""
    return next(iter(sorted(board.glob(f"le*/{arm}.found"))), None)


def _holds(folder: Path | None) -> str | None:
    """The finalist arm (``fin-<label>-t<N>.found``) whose seeds a chosen arm's folder holds."""
    records = designs.seed_records(folder) if folder else []
    return next((r["source"]["finalist"] for r in records if "finalist" in r["source"]), None)


def _trial_folder(board: Path, label: str, trial: int) -> Path | None:
    """Where a finalist's seeds are: its own arm, or ``npas-<label>`` once it is chosen."""
    chosen = _arm_folder(board, f"npas-{label}")
    if _holds(chosen) == f"fin-{label}-t{trial}.found":
        return chosen
    return _arm_folder(board, f"fin-{label}-t{trial}")


def choose(board: Path, label: str, picked: list[dict[str, Any]], seeds: int) -> dict[str, Any]:
    """Each finalist's first ``seeds`` retrained seeds and the one with the best mean
    validation accuracy (ties: the search's order)."""
    for fin in picked:
        folder = _trial_folder(board, label, fin["trial"])
        done = [r["metrics"] for r in designs.seed_records(folder)][:seeds] if folder else []
        if not done:
            sys.exit(f"finalists.py: trial {fin['trial']} has no retrained seed (see above)")
        fin["val"] = [m["accuracy"] for m in done]
        fin["test"] = [m["test_accuracy"] for m in done]
    best = max(picked, key=lambda f: statistics.mean(f["val"]))
    return {"label": label, "finalists": picked, "chosen": best["trial"], "seeds": seeds}


def _relabel(folder: Path, arm: str, trial: str, finalist: str | None) -> None:
    """Each seed's ``source`` names the arm it is in (and, chosen, the finalist it was)."""
    for path in sorted(folder.glob("seed*/metrics.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        record["source"] |= {"arm": arm, "trial": trial}
        record["source"].pop("finalist", None)
        if finalist:
            record["source"]["finalist"] = finalist
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def apply_choice(board: Path, label: str, trial: int) -> None:
    """``npas-<label>`` becomes the chosen finalist's arm: a former choice there goes back to
    its ``fin-`` arm, then the chosen one's seeds are relabelled and its folder renamed (each
    folder keeps the name of the finalist it holds until it is renamed, so a call stopped
    anywhere is finished by the next)."""
    held = _arm_folder(board, f"npas-{label}")
    finalist = f"fin-{label}-t{trial}"
    former = _holds(held)
    if held is not None and former != f"{finalist}.found":
        if former is None:
            sys.exit(f"finalists.py: {held} holds no finalist's seeds; move it away")
        _relabel(held, former, former.removesuffix(".found"), former)
        held = held.rename(held.with_name(former))
        _relabel(held, former, former.removesuffix(".found"), None)
    source = _arm_folder(board, finalist)
    if source is not None:  # not yet renamed
        dest = source.with_name(f"npas-{label}.found")
        _relabel(source, dest.name, f"npas-{label}", source.name)
        source.rename(dest)


def table(record: dict[str, Any], storage: str) -> str:
    """The finalists side by side, ranked on what chose them."""
    lines = [
        f"# The finalists of search {record['study']} "
        f"({time.strftime('%Y-%m-%d')})",
        "",
        f"- Study: `{storage}`; the {len(record['finalists'])} most accurate feasible trials "
        f"that ran the whole schedule, each retrained with {record['seeds']} seed(s) by "
        "`benchmarks/record_designs.py` (the whole training split, each seed its own validation "
        "split) and ranked on the mean of those seeds' validation "
        "accuracies; the test set, read once per model, chooses nothing (shown for the record)",
        f"- Chosen: trial {record['chosen']}, now arm `npas-{record['label']}` of the "
        "record-designs table (its seeds there start with these)",
        *[f"- Chosen earlier on {e['seeds']} seed(s) each, among trials "
          f"{', '.join(str(f['trial']) for f in e['finalists'])}: trial {e['chosen']} (mean "
          f"val acc: {', '.join(mean_std_pct(f['val']) for f in e['finalists'])})"
          for e in record.get("earlier", [])],
        "",
        "| trial | params | search val acc (1 seed) | retrained val acc, each seed | mean "
        "val acc | test acc | chosen |",
        "|---:|---:|---:|---|---:|---:|---|",
    ]
    for fin in record["finalists"]:
        mark = "yes" if fin["trial"] == record["chosen"] else ""
        lines.append(f"| {fin['trial']} | {fin['params']:,} | "
                     f"{100 * fin['search_accuracy']:.2f} % | {each_pct(fin['val'])} | "
                     f"{mean_std_pct(fin['val'])} | {mean_std_pct(fin['test'])} | "
                     f"{mark} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", required=True, help="the search's Optuna storage URL")
    parser.add_argument("--study", default=None, help="its study name (one study: optional)")
    parser.add_argument("--label", required=True, help="names the arms: fin-LABEL-tN, npas-LABEL")
    parser.add_argument("--top", type=int, default=3, help="finalists retrained")
    parser.add_argument("--seeds", type=int, default=2, help="seeds each finalist")
    parser.add_argument("--total", type=int, default=5, help="seeds of the chosen one in all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="record_designs.py's --set (edits of every arm's base config)")
    parser.add_argument("--exports", type=Path, default=None,
                        help="where the trials are exported (default: RESULTS/finalists_LABEL)")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks/results")
    parser.add_argument("--name", default="leaderboard_records", help="record_designs' board")
    return parser


def _retrain(args: argparse.Namespace, found: list[str], seeds: int) -> None:
    """``record_designs.py`` on ``found`` (NAME=BUNDLE) arms alone, ``seeds`` each."""
    argv = ["--designs", "", "--seeds", str(seeds), "--jobs", str(args.jobs), "--device",
            args.device, "--results", str(args.results), "--name", args.name]  # fmt: skip
    for item in found:
        argv += ["--found", item]
    for item in args.sets:
        argv += ["--set", item]
    designs.main(argv)


def _recorded(chosen_file: Path) -> dict[str, Any] | None:
    """The choice made so far (the seeds it was made on: the record's, or its first
    finalist's count), or None."""
    if not chosen_file.is_file():
        return None
    record = json.loads(chosen_file.read_text(encoding="utf-8"))
    record.setdefault("seeds", len(record["finalists"][0]["val"]))
    return record


def _make_choice(
    args: argparse.Namespace, exports: Path, earlier: dict[str, Any] | None
) -> dict[str, Any]:
    """Export the finalists, train each to ``--seeds`` seeds (a chosen one where it is) and
    rank them; an earlier choice is kept in the record."""
    board, log = args.results / args.name, exports / "log.txt"
    study, picked = finalists(args.storage, args.study, args.top)
    named = ["--name", args.study] if args.study else []
    for fin in picked:
        out = exports / f"trial{fin['trial']}"
        if not (out / "config.yaml").is_file() and run_cli(
            log, "export", "--storage", args.storage, *named, "--select",
            f"trial:{fin['trial']}", "--out", str(out), "--replace") != 0:  # fmt: skip
            sys.exit(f"finalists.py: search export of trial {fin['trial']} failed: {log}")
    chosen = earlier["chosen"] if earlier else None
    arms = {n: f"npas-{args.label}" if n == chosen else f"fin-{args.label}-t{n}"
            for n in (f["trial"] for f in picked)}  # fmt: skip
    _retrain(args, [f"{arm}={exports / f'trial{n}'}" for n, arm in arms.items()], args.seeds)
    record = choose(board, args.label, picked, args.seeds) | {"study": study}
    if earlier:
        former = {k: v for k, v in earlier.items() if k not in ("earlier", "study", "label")}
        record["earlier"] = [*earlier.get("earlier", []), former]
    return record


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    board = args.results / args.name
    exports = args.exports or args.results / f"finalists_{args.label}"
    chosen_file = args.results / f"finalists_{args.label}.json"
    exports.mkdir(parents=True, exist_ok=True)
    record = _recorded(chosen_file)
    if record is None or record["seeds"] < args.seeds:  # a first choice, or a wider stage
        record = _make_choice(args, exports, record)
        chosen_file.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    chosen = record["chosen"]
    apply_choice(board, args.label, chosen)
    print(f"chosen: trial {chosen} → arm npas-{args.label}", flush=True)
    _retrain(args, [f"npas-{args.label}={exports / f'trial{chosen}'}"], args.total)
    (args.results / f"finalists_{args.label}.md").write_text(
        table(record, args.storage), encoding="utf-8")
    print(f"wrote {args.results / f'finalists_{args.label}.md'}")


if __name__ == "__main__":
    main()
