"""How well does a search choose its recommendation? Offline, on development searches that
``benchmarks/unaided_dev.py`` ran (never on a protocol's datasets).

Every search of a development run (``<out>/<set>/<arm>/seed<k>/``) saved each finished
trial's model of every training sample. ``--score`` scores each feasible one on its set's test
split (``choices.json`` beside the search's ``result.json``); ``--retrain K,S`` retrains the
search's ``K`` most accurate trials as its finalists are retrained (a cross-validated run with
a fresh seed, validation only, no model saved) with ``S`` fresh seeds each
(``retrained.json``). The table then sets what each rule would have recommended beside the
engine's own recommendation (its finalists' choice), paired by search:

- ``cv``: the most accurate trial by its one cross-validated run (ties: the lower validation
  loss): the search's best, what a search without finalists recommends;
- ``loss``: the lowest cross-validated validation loss;
- ``rank``: the lowest sum of the two ranks (ties: the lower loss);
- ``cvp``: the most accurate trial by its one cross-validated run, ties broken by the fewer
  parameters (then the lower loss): what the TPE arm of the protocol recommends;
- ``F(k, s)``: among the ``k`` most accurate trials, the best mean over their first ``s``
  retrained seeds (ties: the search's order), a finalist stage of ``k`` × ``s``;
- ``se1``: Breiman's one-standard-error rule over the engine's own finalists (their record
  in the study): among those within one standard error of the best mean, the fewest
  parameters (ties: the higher mean, then the search's order);
- ``oracle``: the best test accuracy among the 5 most accurate trials (what a perfect choice
  among them would reach; no rule can see it);
- ``bag(S)`` (``--bag S``, ``bagged.json``): the most accurate trial with at most 1/S of the
  parameter limit, trained S times with fresh seeds as a trial that saves its model is, the
  S models' softmax outputs averaged: a model of S times its parameters, within the limit;
  ``small(S)``: that trial's own saved model alone (what the bag adds to it);
- ``distilled`` and ``plain`` (``--distill``, ``distilled.json``): the recommended trial run
  again with :data:`TEACHER_SEEDS` fresh seeds as a trial that saves its model, distilled from
  an ensemble teacher (the mean softmax of the saved models of the search's
  :data:`TEACHER_TOP` most accurate trials, not bound by the limit: it is not deployed) or
  plain; each the mean test accuracy over its seeds.

    python benchmarks/choice_study.py --out /work/dev/runs6 --score
    python benchmarks/choice_study.py --out /work/dev/runs6 --retrain 5,6
    python benchmarks/choice_study.py --out /work/dev/runs6 --bag 2 3
    python benchmarks/choice_study.py --out /work/dev/runs6 --distill
    python benchmarks/choice_study.py --out /work/dev/runs6 /work/dev/runs7 --table
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import paired

#: A search's finished feasible trials, each ``{number, cv_acc, val_loss, params, test}``.
Rows = Sequence[Mapping[str, Any]]
#: The trials the oracle may pick from: the search's most accurate.
ORACLE_TOP = 5
#: The bags the table may show (``--bag``).
BAG_SIZES = (2, 3, 4, 5)
#: ``--distill``: the teacher's members (the most accurate trials) and the student's seeds.
TEACHER_TOP, TEACHER_SEEDS = 3, 3


def ranked(rows: Rows) -> list[Mapping[str, Any]]:
    """The trials by cross-validated accuracy, best first (ties: the lower validation loss,
    then the lower number), as the engine orders its finalists."""
    return sorted(rows, key=lambda r: (-r["cv_acc"], r["val_loss"], r["number"]))


def rule_picks(rows: Rows) -> dict[str, Mapping[str, Any]]:
    """The trial each rule that reads the search alone picks (``cv``, ``cvp``, ``loss``,
    ``rank``), and the ``oracle``'s."""
    by_cv = ranked(rows)
    by_loss = sorted(rows, key=lambda r: (r["val_loss"], r["number"]))
    place = {r["number"]: i for i, r in enumerate(by_cv)}
    place_loss = {r["number"]: i for i, r in enumerate(by_loss)}
    return {
        "cv": by_cv[0],
        "cvp": min(rows, key=lambda r: (-r["cv_acc"], r["params"], r["val_loss"], r["number"])),
        "loss": by_loss[0],
        "rank": min(
            rows,
            key=lambda r: (
                place[r["number"]] + place_loss[r["number"]],
                r["val_loss"],
                r["number"],
            ),
        ),
        "oracle": max(by_cv[:ORACLE_TOP], key=lambda r: r["test"]),
    }


def finalist_pick(rows: Rows, retrained: Mapping[str, Sequence[float | None]], k: int, s: int
                  ) -> Mapping[str, Any] | None:  # fmt: skip
    """``F(k, s)``: among the ``k`` most accurate trials, the best mean over their first ``s``
    retrained seeds (ties: the search's order); a trial with a failed run among them (None) is
    out, as a finalist with a failed seed is; None when one of them has fewer than ``s`` runs
    or every one failed."""
    top = ranked(rows)[:k]
    runs = [list(retrained.get(str(r["number"]), []))[:s] for r in top]
    if any(len(r) < s for r in runs):
        return None
    means = [statistics.fmean(r) if None not in r else None for r in runs]
    left = [i for i, m in enumerate(means) if m is not None]
    if not left:
        return None
    return top[max(left, key=lambda i: (means[i], -i))]


def one_se_pick(rows: Rows, finalists: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """``se1``: among the qualified ``finalists`` (the engine's recommendation record's rows,
    in the search's order), those whose mean is within one standard error (``std / sqrt(n)``,
    0 for one seed) of the best mean, the fewest parameters (ties: the higher mean, then the
    search's order): when validation cannot tell finalists apart, the smaller net (Breiman et
    al. 1984; ESL 7.10). None without a qualified finalist among ``rows``."""
    by_number = {r["number"]: r for r in rows}
    ok = [f for f in finalists if f.get("qualified") and f.get("mean") is not None
          and f["trial"] in by_number]  # fmt: skip
    if not ok:
        return None
    best = max(ok, key=lambda f: f["mean"])  # max keeps the first of equals
    se = (best.get("std") or 0.0) / math.sqrt(best["n"]) if best.get("n") else 0.0
    near = [f for f in ok if f["mean"] >= best["mean"] - se]
    pick = min(near, key=lambda f: (by_number[f["trial"]]["params"], -f["mean"], ok.index(f)))
    return by_number[pick["trial"]]


def score(folder: Path) -> None:
    """``choices.json``: each finished feasible trial of the search in ``folder`` with its
    cross-validated figures and its saved model's test accuracy, and the recommendation."""
    import torch

    from objectives.train import evaluate
    from search.config import TrialConfig
    from search.trial import rebuild, trial_data

    torch.set_num_threads(1)
    study = _study(folder)
    rows = []
    for t in study.trials:
        attrs, artifact = t.user_attrs, t.user_attrs.get("artifact")
        if (t.state.name != "COMPLETE" or not attrs.get("feasible") or not artifact
                or not Path(artifact).is_file()):  # fmt: skip
            continue
        data = trial_data(TrialConfig.from_dict(attrs["trial_config"]), "cpu")
        rows.append({"number": t.number, "cv_acc": attrs.get("metric_accuracy"),
                     "val_loss": attrs.get("metric_val_loss"),
                     "params": attrs.get("metric_params"),
                     "test": evaluate(rebuild(artifact), data.test)["accuracy"]})  # fmt: skip
    record = study.user_attrs.get("npas:recommendation") or {}
    (folder / "choices.json").write_text(json.dumps({
        "rows": rows, "recommended": record.get("trial"), "finalists": record.get("finalists"),
    }))  # fmt: skip


def retrain(folder: Path, top: int, seeds: int) -> None:
    """``retrained.json``: the ``top`` most accurate trials' validation accuracies with fresh
    seeds (the trial's seed + 1, + 2, ...), as the finalists train them (None: the run failed);
    resumable."""
    import torch

    from search.trial import run_trial

    torch.set_num_threads(1)
    out = folder / "retrained.json"
    done: dict[str, list[float | None]] = json.loads(out.read_text()) if out.exists() else {}
    configs = _configs(_study(folder))
    for row in ranked(_rows(folder))[:top]:
        config, runs = configs[row["number"]], done.setdefault(str(row["number"]), [])
        for i in range(len(runs) + 1, seeds + 1):
            try:
                runs.append(run_trial(_reseeded(config, i, artifact_dir=None)).get("accuracy"))
            except Exception:  # a diverging seed, as a finalist's failed run: out of the choice
                runs.append(None)
            out.write_text(json.dumps(done))


def candidate(rows: Rows, limit: float, size: int) -> Mapping[str, Any] | None:
    """``bag(size)``'s member: the most accurate trial with at most ``limit / size`` params."""
    small = [r for r in rows if r["params"] <= limit // size]
    return ranked(small)[0] if small else None


def bag(folder: Path, sizes: Sequence[int]) -> None:
    """``bagged.json``: for each size S, :func:`candidate` trained S times (seeds its seed + 1
    .. + S, its model saved as the trial's was) and the test accuracy of the mean of the S
    models' softmax outputs, with each member's test and validation accuracy; resumable by
    size."""
    import tempfile

    import torch

    from search.trial import rebuild, run_trial, trial_data

    torch.set_num_threads(1)
    out = folder / "bagged.json"
    done: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    configs = _configs(_study(folder))
    for size in sizes:
        row = candidate(_rows(folder), _limit(folder), size)
        if str(size) in done or row is None:
            continue
        config, members, validation = configs[row["number"]], [], []
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(1, size + 1):
                cfg = _reseeded(config, i, artifact_dir=f"{tmp}/{i}")
                validation.append(run_trial(cfg).get("accuracy"))
                members.append(rebuild(f"{tmp}/{i}"))
        test = trial_data(cfg, "cpu").test
        probs, labels = [_softmax(m, test) for m in members], _labels(test)
        done[str(size)] = {
            "trial": row["number"], "params": row["params"],
            "test": bag_accuracy(probs, labels),
            "members": [_accuracy(p, labels) for p in probs], "validation": validation,
        }  # fmt: skip
        out.write_text(json.dumps(done))


def distill(folder: Path) -> None:
    """``distilled.json``: the recommended trial's config run :data:`TEACHER_SEEDS` times
    plain and as many distilled from the ensemble of the :data:`TEACHER_TOP` most accurate
    trials' saved models (its log mean softmax on each fit's training split standing in for
    a teacher's logits), each model's test accuracy; resumable by arm."""
    import tempfile
    from unittest import mock

    import torch

    import objectives.train
    from search.trial import rebuild, run_trial, trial_data

    torch.set_num_threads(1)
    out = folder / "distilled.json"
    done: dict[str, list[float]] = json.loads(out.read_text()) if out.exists() else {}
    study = _study(folder)
    configs = _configs(study)
    recommended = json.loads((folder / "choices.json").read_text())["recommended"]
    artifacts = {t.number: t.user_attrs["artifact"] for t in study.trials
                 if "artifact" in t.user_attrs}  # fmt: skip
    teacher = [rebuild(artifacts[r["number"]]) for r in ranked(_rows(folder))[:TEACHER_TOP]]

    def soft_targets(_: Any, data: Any) -> tuple[Any, Path]:
        probs = sum(_softmax(m, data.train) for m in teacher) / len(teacher)
        return torch.log(probs.clamp_min(1e-12)), Path("ensemble")

    config = configs[recommended]
    stand_in = {"family": config["family"], "hyper": {}, "train": {"epochs": 1}}
    for arm in ("plain", "distilled"):
        if arm in done:
            continue
        tests = []
        for i in range(1, TEACHER_SEEDS + 1):
            train = {**config.get("train", {}), "teacher": stand_in} if arm == "distilled" \
                else config.get("train", {})
            with tempfile.TemporaryDirectory() as tmp, \
                    mock.patch.object(objectives.train, "_soft_targets", soft_targets):
                cfg = _reseeded(config, i, train=train, artifact_dir=tmp)
                run_trial(cfg)
                model = rebuild(tmp)
            test = trial_data(cfg, "cpu").test
            tests.append(_accuracy(_softmax(model, test), _labels(test)))
        done[arm] = tests
        out.write_text(json.dumps(done))


def bag_accuracy(probs: Sequence[Any], labels: Any) -> float:
    """The accuracy of a bag: the mean of its members' softmax outputs, argmax per sample."""
    return _accuracy(sum(probs) / len(probs), labels)


def _configs(study: Any) -> dict[int, dict[str, Any]]:
    """Each trial's config, by trial number."""
    return {t.number: t.user_attrs["trial_config"] for t in study.trials
            if "trial_config" in t.user_attrs}  # fmt: skip


def _reseeded(config: Mapping[str, Any], i: int, **changes: Any) -> Any:
    """``config`` as a fresh run of its trial: its seed + ``i``, quiet, with ``changes``."""
    from search.config import TrialConfig

    seed = int(config.get("seed") or 0) + i
    return TrialConfig.from_dict({**config, "seed": seed, "progress": False, **changes})


def _labels(split: Any) -> Any:
    import torch

    return torch.cat([y for _, y in split.batches(256, shuffle=False)])


def _softmax(model: Any, split: Any) -> Any:
    import torch

    with torch.no_grad():
        batches = split.batches(256, shuffle=False)
        return torch.cat([torch.softmax(model(x), dim=1) for x, _ in batches])


def _accuracy(probs: Any, labels: Any) -> float:
    return float((probs.argmax(dim=1) == labels).float().mean())


def _limit(folder: Path) -> float:
    """The search's params limit (its ``params <= N`` constraint)."""
    import yaml

    config = yaml.safe_load((folder / "search.yaml").read_text())
    (limit,) = (float(c.split("<=")[1]) for c in config["constraints"]
                if c.replace(" ", "").startswith("params<="))  # fmt: skip
    return limit


def _study(folder: Path) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{folder / 'run' / 'npas.db'}"
    (summary,) = optuna.get_all_study_summaries(url)
    return optuna.load_study(study_name=summary.study_name, storage=url)


def _rows(folder: Path) -> list[Mapping[str, Any]]:
    rows = json.loads((folder / "choices.json").read_text())["rows"]
    return [r for r in rows if r["cv_acc"] is not None and r["val_loss"] is not None]


def searches(outs: Sequence[Path]) -> list[Path]:
    """Every scored search under the folders ``outs`` (``<set>/<arm>/seed<k>/choices.json``)."""
    return sorted(p.parent for out in outs for p in out.glob("*/*/seed*/choices.json"))


def picks_of(folder: Path, cells: Sequence[tuple[int, int]]) -> dict[str, float] | None:
    """Each rule's pick's test accuracy in one search (``rec``: the engine's recommendation;
    ``F(k,s)`` for each cell retrained); None without two trials or the recommended one."""
    rows = _rows(folder)
    choices = json.loads((folder / "choices.json").read_text())
    chosen = next((r for r in rows if r["number"] == choices["recommended"]), None)
    if len(rows) < 2 or chosen is None:
        return None
    found = {"rec": chosen["test"]} | {k: r["test"] for k, r in rule_picks(rows).items()}
    if choices.get("finalists") and (pick := one_se_pick(rows, choices["finalists"])):
        found |= {"se1": pick["test"], "se1 params": pick["params"],
                  "rec params": chosen["params"]}  # fmt: skip
    path = folder / "retrained.json"
    retrained = json.loads(path.read_text()) if path.exists() else {}
    for k, s in cells:
        pick = finalist_pick(rows, retrained, k, s)
        if pick is not None:
            found[f"F({k},{s})"] = pick["test"]
    path = folder / "bagged.json"
    tests = {r["number"]: r["test"] for r in rows}
    for size, bagged in (json.loads(path.read_text()) if path.exists() else {}).items():
        found[f"bag({size})"] = bagged["test"]
        found[f"small({size})"] = tests[bagged["trial"]]
    path = folder / "distilled.json"
    for arm, runs in (json.loads(path.read_text()) if path.exists() else {}).items():
        found[arm] = statistics.fmean(runs)
    return found


def table(outs: Sequence[Path], cells: Sequence[tuple[int, int]]) -> str:
    """Per set and over all: each rule's mean test accuracy and its paired difference from the
    engine's recommendation (95 % t interval, paired t-test's p), over the searches that have
    it."""
    found = {f: p for f in searches(outs) if (p := picks_of(f, cells)) is not None}
    bags = [f"{kind}({s})" for s in BAG_SIZES for kind in ("bag", "small")]
    rules = ["cv", "cvp", "loss", "rank", "se1", *(f"F({k},{s})" for k, s in cells), *bags,
             "plain", "distilled", "oracle"]
    lines = ["| set | rule | searches | its pick | engine's | difference [95 % CI] | p |",
             "|---|---|---:|---:|---:|---|---:|"]  # fmt: skip
    lines += _rows_of(found, [(rule, "rec") for rule in rules], named=False)
    arms = [("distilled", "plain"), *((f"bag({s})", f"small({s})") for s in BAG_SIZES),
            ("se1 params", "rec params")]
    if (more := _rows_of(found, arms, named=True)):
        lines += ["", "| set | arm | against | searches | arm's | against's | difference "
                  "[95 % CI] | p |", "|---|---|---|---:|---:|---:|---|---:|", *more]
    return "\n".join(lines)


def _rows_of(found: Mapping[Path, Mapping[str, float]], pairs: Sequence[tuple[str, str]],
             named: bool) -> list[str]:  # fmt: skip
    """A row per set (and over all) and pair ``(arm, against)``: both means over the searches
    that have both, and their paired difference; ``named``: the row names ``against``."""
    lines = []
    sets = sorted({f.parts[-3] for f in found})
    for name in [*sets, "all"]:
        for arm, against in pairs:
            keys = [f for f, p in found.items()
                    if arm in p and against in p and name in ("all", f.parts[-3])]  # fmt: skip
            if len(keys) < 2:
                continue
            mine, theirs = ([found[f][r] for f in keys] for r in (arm, against))
            mean, half, p = paired(mine, theirs)
            label = f"{arm} | {against}" if named else arm
            lines.append(f"| {name} | {label} | {len(keys)} | {statistics.fmean(mine):.4f} | "
                         f"{statistics.fmean(theirs):.4f} | {mean:+.4f} [{mean - half:+.4f}, "
                         f"{mean + half:+.4f}] | {p:.3g} |")  # fmt: skip
    return lines


def _each(folders: Sequence[Path], step: Callable[[Path], None]) -> None:
    for folder in folders:
        step(folder)
        print(folder, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, nargs="+", required=True,
                        help="development runs' folders")  # fmt: skip
    parser.add_argument("--score", action="store_true", help="score every search's models")
    parser.add_argument("--retrain", default="", help="K,S: the top K trials, S fresh seeds")
    parser.add_argument("--bag", type=int, nargs="*", default=[], choices=BAG_SIZES,
                        help="S ...: a bag of S models of the best trial within 1/S of the limit")
    parser.add_argument("--distill", action="store_true",
                        help="the recommended trial plain and distilled from an ensemble")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--cells", default="2,1;2,3;3,1;3,3;3,6;5,1;5,3;5,6",
                        help="the F(k, s) cells of the table, k,s;k,s")  # fmt: skip
    args = parser.parse_args()
    if args.score:
        _each(
            sorted(p.parents[1] for out in args.out for p in out.glob("*/*/seed*/run/npas.db")),
            score,
        )
    if args.retrain:
        top, seeds = (int(x) for x in args.retrain.split(","))
        _each(searches(args.out), lambda f: retrain(f, top, seeds))
    if args.bag:
        _each(searches(args.out), lambda f: bag(f, args.bag))
    if args.distill:
        _each(searches(args.out), distill)
    if args.table:
        cells = [tuple(int(x) for x in c.split(",")) for c in args.cells.split(";")]
        print(table(args.out, cells))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
