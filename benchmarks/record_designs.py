"""The public record designs side by side under npas's protocol: each trained with its own
recipe and with npas's searched one, 5 seeds each, beside the nets npas's searches chose.

    NPAS_DATA=../shared/data python benchmarks/record_designs.py --designs record-997 --jobs 2

For each design of ``--designs`` (``spaces``' ``record-697``, ``record-997``,
``record-1936``) and each recipe of ``--recipes``:

- ``own``: the record's own recipe, :data:`RECORD_RECIPES` from ``record_recipes.yaml`` beside
  this script (what a ``Recipe`` cannot say, the test-set plateaus and early stopping, replaced
  as that file states);
- ``searched``: npas's best searched recipe, the training section of the last round's
  winner at ≤ 1,000 parameters (``--searched``, default the ``leaderboard_valid`` bundle).

``--found NAME=PATH`` adds a search's trial, ``search export``'s bundle of it: its network,
trained with its own search's recipe (``found``), or ``--found-recipe``'s (a record's own,
``record-697``: its arm ``NAME.record-697``). Name a net the search chose ``npas-…``: the
first such arm of a target (without levers or twins) is what the other rows are compared with;
name a start point (a trial the user gave) otherwise. ``--levers kd,ema`` adds
recipe levers to every arm (:data:`LEVERS`; the arm's recipe reads ``own+kd``): ``kd``
distils from :data:`TEACHER`, trained once per seed on that seed's training split only
(cached on disk, so every arm of a seed shares it), ``ema`` keeps the weights' moving average.
``--twins`` trains each plain arm's Shapeshifted twins beside it, sharing against shrinking
(:func:`twins`): at equal trainable parameters and at equal deployed weights, with the
training time of each.

Each seed trains on the whole training split less the validation split (each seed carves
its own), is evaluated on the official test set once, after training, and is written as a
bundle, ``<results>/<name>/le<target>/<design>.<recipe>/seed<s>/`` (config.yaml, model.pt,
model.onnx, model.pt2 (not committed), metrics.json; ``search.load_bundle`` loads it).
``<target>`` is the smallest leaderboard target at or above the design's count (500, 1,000,
2,000). A seed with a bundle of the same network and recipe is kept, so a stopped run goes
on where it was; a seed with a bundle of another network or recipe (other ``--epochs``,
say) refuses the run, unless ``--replace`` says to retrain it and replace its bundle;
a seed being trained is claimed (``.seed<s>.training`` beside its folder, the worker's pid),
so a second run on the same board, started on a free core, trains the seeds the first has
not begun, and a killed run's claims are taken over.
``--train-on train+val`` retrains on the validation split too (after selection, as
``search train --with-val`` does; the arm's folder ends in ``.trainval``, the table names
it). ``--table-only`` trains nothing: it writes ``<results>/<name>.md`` from the bundles, with the
searches' nets (``--found`` arms, and :data:`COMPARE`'s earlier rounds) beside the
designs at their targets, every arm's provenance (``benchmarks/protocols/provenance.yaml``:
only a net the optimiser sampled is called found by npas), params, weights in use and FLOPs,
Welch p-values, and verdicts only on the comparisons ``--comparisons`` declares
(``benchmarks/protocols/comparisons.yaml``: arms, seeds, readings and the alpha-spending rule
fixed in advance; an older comparison's readings counted from the git history of its
per-seed files, :mod:`comparisons`). A smoke run on digits, in a minute::

    python benchmarks/record_designs.py --designs record-697 --recipes own --seeds 2 \\
        --epochs 1 --set dataset=digits --results /tmp/rd
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.comparisons import (
    DECLARED,
    Declaration,
    arm_provenance,
    declared,
    design_provenance,
    provenances,
    readings,
)
from benchmarks.comparisons import verdict as _verdict
from benchmarks.leaderboard import (
    PROTOCOL,
    REFERENCES,
    SHARED_TWIN,
    WIDEN,
    describe,
    each_pct,
    finished,
    mean_std_pct,
    scaled,
    seed_metrics,
    train_seeds,
    worker_init,
)
from benchmarks.stats import mean_ci, welch
from objectives import Recipe

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: The issue's accuracy targets by params count: (test accuracy %, label), each met by an
#: net's mean over at least GOAL_SEEDS seeds, a net a search chose (its provenance said).
GOALS = {500: [(97.0, "")], 1000: [(98.8, ""), (99.0, " (stretch)")], 2000: [(99.0, "")]}
TARGETS = tuple(GOALS)
GOAL_SEEDS = 5
#: The public record designs (``spaces``' names; :data:`RECORD_RECIPES` has each recipe).
RECORD_DESIGNS = ("record-697", "record-997", "record-1936")
#: The records' own recipes, by design: data beside this script (``record_recipes.yaml``, each
#: entry citing the record's file and lines), not the library's.
RECORD_RECIPES: dict[str, Recipe] = {
    name: Recipe(**fields)
    for name, fields in yaml.safe_load((Path(__file__).with_name("record_recipes.yaml"))
                                       .read_text("utf-8")).items()
}  # fmt: skip
#: A record design's recipes: its own (:data:`RECORD_RECIPES`) and npas's searched one.
RECIPES = ("own", "searched")
#: The trial config every arm starts from: the last round's winner at ≤ 1,000 (its dataset,
#: indicators, measurement and constraints), whose training section is the searched recipe.
SEARCHED = RESULTS / "leaderboard_valid" / "le1000" / "seed0" / "config.yaml"
#: Earlier rounds' chosen nets, by target: (label, folder of per-seed bundles, its design's
#: name in ``benchmarks/protocols/provenance.yaml``).
ROUND5 = RESULTS / "leaderboard_valid"
COMPARE = {
    1000: [("round 5's choice (plain, 983 params)", ROUND5 / "le1000", "round5-le1000"),
           ("its Shapeshifted twin (983 params)", ROUND5 / "le1000" / "shared", "")],
    500: [("round 5's choice (SSN, 445 params)", ROUND5 / "le500", "round5-le500")],
}  # fmt: skip
#: The teacher of the ``kd`` lever: a 24k-parameter ConvNet (3 blocks of 16, 32, 64 channels,
#: batch norm), 12 epochs, about 4 minutes on one CPU core; trained once per training split
#: (each seed carves its own), on that split only.
TEACHER = {"family": "convnet",
           "hyper": {"depth": 3, "width": 16, "growth": 2.0, "bn": True},
           "train": {"epochs": 12, "optimizer": "adamw", "lr": 0.003, "schedule": "cosine",
                     "weight_decay": 1e-4, "batch_size": 128},
           "seed": 0}  # fmt: skip
#: Recipe levers an arm may add (``--levers``), each an edit of its training section; the
#: arm's recipe reads ``<recipe>+<lever>`` (``own+kd``).
LEVERS: dict[str, dict[str, Any]] = {
    "kd": {"teacher": TEACHER, "distill_temperature": 4.0, "distill_weight": 0.5},
    "ema": {"ema": 0.999},
}
#: The network keys of a trial config: what a design is.
NETWORK = ("family", "hyper", "budget", "ssn")


def target_of(params: int) -> int:
    """The smallest leaderboard target at or above ``params``."""
    for target in TARGETS:
        if params <= target:
            return target
    raise ValueError(f"{params} parameters: above every target {TARGETS}")


def design_params(design: str, in_shape: tuple[int, ...] = (1, 28, 28),
                  hyper: dict[str, Any] | None = None) -> int:  # fmt: skip
    """A design's trainable parameters (built on the meta device)."""
    import torch

    from spaces import build_model

    with torch.device("meta"):
        net = build_model(design, in_shape, 10, **(hyper or {}))
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def found_config(path: Path) -> dict[str, Any]:
    """A search trial's config (its network and recipe): ``search export``'s config.yaml (or
    its folder)."""
    path = path / "config.yaml" if path.is_dir() else path
    if not path.is_file():
        sys.exit(f"record_designs.py: --found {path}: no such config.yaml (search export's)")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def network_params(network: dict[str, Any]) -> int:
    """What a design's constraint sees: a Shapeshifted net's budget, a plain one's weights."""
    if network.get("budget") is not None:
        return int(network["budget"])
    return design_params(network["family"], hyper=network.get("hyper"))


def arm_name(design: str, recipe: str, levers: list[str], train_on: str) -> str:
    """``record-997.own``, ``npas-g9.found+kd``, ``….trainval`` (a folder of seeds)."""
    return (f"{design}.{'+'.join([recipe, *levers])}"
            + (".trainval" if train_on == "train+val" else ""))  # fmt: skip


def arm_config(base: dict[str, Any], design: str, recipe: str, seed: int,
               epochs: int | None, train_on: str = "train", levers: tuple[str, ...] = (),
               found: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """The trial config of one seed of an arm: ``base`` (the searched winner's) with the
    design as its network (a record design's, or ``found``'s: a search's trial config) and
    the arm's recipe, its levers added, as its training section."""
    from search.config import TRAIN_OPTIONS

    if found is not None:
        network = {key: found[key] for key in NETWORK if key in found}
    else:
        network = {"family": design, "hyper": {}, "budget": None}
    if recipe == "found":  # its own search's
        assert found is not None, "--recipes refuses 'found' for a record design"
        train = dict(found["train"])
    elif recipe == "searched":
        train = dict(base["train"])
    else:  # a record's own: this design's ("own"), or another's by name (a found net's)
        own = RECORD_RECIPES[design if recipe == "own" else recipe].to_dict()
        train = {k: v for k, v in own.items() if k in TRAIN_OPTIONS}  # what a config says
    for lever in levers:
        train.update(LEVERS[lever])
    if epochs is not None:
        train["epochs"] = epochs
    limit = f"params <= {target_of(network_params(network))}"  # the design's own target
    return {**base, **network, "train": train, "seed": seed, "train_size": None,
            "artifact_dir": None, "constraints": [limit], "train_on": train_on}  # fmt: skip


def base_config(path: Path, sets: list[str]) -> dict[str, Any]:
    """The searched winner's trial config, with ``--set key=value`` edits (YAML values)."""
    base = yaml.safe_load(path.read_text(encoding="utf-8"))
    for item in sets:
        key, _, value = item.partition("=")
        base[key] = yaml.safe_load(value)
    return base


def seed_records(folder: Path) -> list[dict[str, Any]]:
    """The metrics.json records of the per-seed bundles ``folder/seed<s>/``, by seed."""
    found = sorted(folder.glob("seed*/metrics.json"), key=lambda p: int(p.parent.name[4:]))
    return [json.loads(p.read_text(encoding="utf-8")) for p in found]


def seed_accuracies(folder: Path) -> list[float]:
    """The test accuracies of the per-seed bundles ``folder/seed<s>/``, by seed."""
    return [r["metrics"]["test_accuracy"] for r in seed_records(folder)]


def twins(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A plain arm's two Shapeshifted twins, sharing against shrinking: ``shared``, its
    network :data:`WIDEN` times as wide Shapeshifted into its parameter count (equal trainable
    parameters), and ``wide``, that wider network plain (equal deployed weights: what the
    shared twin materialises); none for a Shapeshifted arm or a family without widths."""
    hyper = scaled(cfg["family"], cfg["hyper"], WIDEN) if cfg.get("budget") is None else None
    if hyper is None:
        return {}
    count = network_params(cfg)
    return {"shared": {**cfg, "hyper": hyper, "budget": count, "ssn": dict(SHARED_TWIN)},
            "wide": {**cfg, "hyper": hyper}}  # fmt: skip


def _runs(args: argparse.Namespace, base: dict[str, Any], board: Path
          ) -> list[tuple[dict[str, Any], Path, dict[str, Any]]]:  # fmt: skip
    """The seeds still to train: (trial config, bundle folder, source); with ``--twins`` each
    plain arm's twins too, in its target's folder (``<design>-shared``, ``<design>-wide``).
    A finished seed whose bundle trained another network or recipe than this run's is
    retrained, replacing its bundle, only with ``--replace``: else the run is refused."""
    todo = []
    differs = []
    arms = [(d, r, None) for d in args.designs for r in args.recipes]
    arms += [(name, args.found_recipe, found_config(path)) for name, path in args.found]
    for design, recipe, found in arms:
        for seed in range(args.seeds):
            cfg = arm_config(base, design, recipe, seed, args.epochs, args.train_on,
                             tuple(args.levers), found)  # fmt: skip
            target = target_of(network_params(cfg))
            nets = {design: cfg} | ({f"{design}-{kind}": twin for kind, twin in
                                     twins(cfg).items()} if args.twins else {})  # fmt: skip
            for name, net in nets.items():
                arm = arm_name(name, recipe, args.levers, args.train_on)
                folder = board / f"le{target}" / arm / f"seed{seed}"
                if seed_metrics(folder, name, net) is None:
                    source = {"anchor": f"le{target}", "arm": arm, "trial": name,
                              "by": "benchmarks/record_designs.py"}  # fmt: skip
                    todo.append((net, folder, source))
                    if finished(folder):
                        differs.append(str(folder.relative_to(board)))
    if differs and not args.replace:
        sys.exit(
            f"record_designs.py: {len(differs)} finished seed(s) trained another network or "
            f"recipe than this run's would ({', '.join(differs[:3])}"
            f"{', …' if len(differs) > 3 else ''}): --replace retrains them, replacing their "
            "bundles; or give the options they were trained with"
        )
    return todo


def claim_of(folder: Path) -> Path:
    """The file that says a run is training the seed of ``folder`` (beside it, hidden: the
    arm's ``seed*`` folders are bundles only)."""
    return folder.with_name(f".{folder.name}.training")


def _claim(folder: Path) -> bool:
    """Takes the seed of ``folder`` for this process, or False when another live process has
    it: two runs on one board (a second one started on a free core) train each seed once. A
    claim left by a killed run on this machine (its pid gone) is taken over; the claim file
    appears whole (written aside, then linked), so a half-written one is never read."""
    path = claim_of(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f"{path.name}.{os.getpid()}")
    aside.write_text(json.dumps({"pid": os.getpid(), "host": platform.node()}), encoding="utf-8")
    try:
        for _ in range(2):
            try:
                os.link(aside, path)
                return True
            except FileExistsError:
                if _held(path):
                    return False
                path.unlink(missing_ok=True)  # a killed run's: taken over
        return False
    finally:
        aside.unlink()


def _held(claim: Path) -> bool:
    """Whether a claim is a live process's; another machine's always is (its pid means
    nothing here: delete the file by hand if that run is gone)."""
    try:
        held = json.loads(claim.read_text(encoding="utf-8"))
        if held["host"] != platform.node():
            return True
        os.kill(int(held["pid"]), 0)
    except PermissionError:  # alive, another user's
        return True
    except (OSError, ValueError, KeyError, TypeError):  # gone, released, or not a claim
        return False
    return True


def train_claimed(cfg: dict[str, Any], folder: Path, source: dict[str, Any],
                  device: str) -> dict[str, Any] | None:  # fmt: skip
    """One seed trained and written (:func:`train_seeds`) unless another run holds it or
    has written it meanwhile (None)."""
    if not _claim(folder):
        return None
    try:
        if seed_metrics(folder, source["trial"], cfg) is not None:
            return None
        return train_seeds([cfg], False, [str(folder)], source, device)[0]
    finally:
        claim_of(folder).unlink(missing_ok=True)


def train(todo: list[tuple[dict[str, Any], Path, dict[str, Any]]], jobs: int,
          device: str = "cpu") -> None:  # fmt: skip
    """Trains the seeds on ``device``, ``jobs`` at once (one CPU thread each), printing each
    as it ends; a seed another run is training, or has trained since, is left to it."""
    start = time.time()
    with futures.ProcessPoolExecutor(jobs, initializer=worker_init) as pool:
        running = {pool.submit(train_claimed, cfg, folder, source, device): folder
                   for cfg, folder, source in todo}  # fmt: skip
        for n, done in enumerate(futures.as_completed(running), 1):
            folder = running[done]
            try:
                metrics = done.result()
                said = (_left_to(folder) if metrics is None else
                        f"test {100 * metrics['test_accuracy']:.2f} %, "
                        f"{metrics['train_time_s'] / 60:.1f} min")  # fmt: skip
            except Exception as err:  # a failed seed is reported, the others go on
                said = f"failed: {err}"
            print(
                f"[{n}/{len(todo)}, {(time.time() - start) / 60:.0f} min] "
                f"{folder.relative_to(folder.parents[2])}: {said}",
                flush=True,
            )


def _left_to(folder: Path) -> str:
    """Who a seed this run did not train was left to: another run here, or one on another
    machine, whose claim only a person can judge (its pid means nothing here)."""
    claim = claim_of(folder)
    try:
        host = json.loads(claim.read_text(encoding="utf-8"))["host"]
    except (OSError, ValueError, KeyError, TypeError):  # released since: nothing to judge
        host = platform.node()
    if host == platform.node():
        return f"left to another run ({claim.name})"
    return (f"left to a run on {host} ({claim.name}; delete that file if the run is gone, "
            "and run again)")


#: The ``--twins`` arms' suffixes, in the order they follow their arm.
TWINS = ("shared", "wide")


def _twin_of(arm: str) -> tuple[str, int]:
    """(the arm a twin is of, its place after it): ``npas-x-shared.found`` → (npas-x.found, 1)."""
    design, _, rest = arm.partition(".")
    for n, kind in enumerate(TWINS, 1):
        if design.endswith(f"-{kind}"):
            return f"{design.removesuffix(f'-{kind}')}.{rest}", n
    return arm, 0


def _with_device(record: dict[str, Any]) -> dict[str, Any]:
    """A bundle's metrics with ``device``, what trained it: the GPU's name, or the CPU's (the
    machine that measured it, where it trained)."""
    trained = record["metrics"].get("train_device", "cpu")
    cpu = record.get("conditions", {}).get("cond_device_name", "cpu")
    return {**record["metrics"], "device": cpu if trained == "cpu" else trained}


def _arm_rows(board: Path, target: int) -> list[tuple[str, list[float], list[dict[str, Any]]]]:
    """(arm, per-seed accuracies, per-seed metrics) of each arm at ``target``, in name order,
    an arm's twins after it."""
    rows = []
    folders = (p for p in (board / f"le{target}").glob("*.*") if p.is_dir())
    for arm in sorted(folders, key=lambda p: _twin_of(p.name)):
        metrics = [_with_device(r) for r in seed_records(arm)]
        if metrics:
            rows.append((arm.name, [m["test_accuracy"] for m in metrics], metrics))
    return rows


def _sharing(arms: list[tuple[str, list[float], list[dict[str, Any]]]]) -> list[str]:
    """Sharing against shrinking, for each arm with ``--twins``' rows beside it: the shared
    twin's gap to the arm (equal trainable parameters) and to the wide twin (equal deployed
    weights), with each one's training time."""
    by_name = {arm: (accs, metrics) for arm, accs, metrics in arms}
    lines = []
    for arm, accs, metrics in arms:
        design, _, rest = arm.partition(".")
        shared, wide = (by_name.get(f"{design}-{kind}.{rest}") for kind in TWINS)
        if shared is None:
            continue
        minutes = {k: statistics.mean(m["train_time_s"] for m in ms) / 60
                   for k, ms in (("plain", metrics), ("shared", shared[1]))}  # fmt: skip
        line = (f"- {arm}: sharing − shrinking at equal trainable parameters ({design}-shared "
                f"− {design}): {_gap_cell(shared[0], accs)}; training {minutes['shared']:.1f} "
                f"against {minutes['plain']:.1f} min a seed")  # fmt: skip
        if wide is not None:
            line += (f"; at equal deployed weights ({design}-shared − {design}-wide): "
                     f"{_gap_cell(shared[0], wide[0])}")  # fmt: skip
        lines.append(line)
    return lines


def _lever_gaps(arms: list[tuple[str, list[float], list[dict[str, Any]]]]) -> list[str]:
    """What each lever and change added: every arm against the arm that differs from it by
    that one change (:func:`_without_change`), where both were trained."""
    by_name = {arm: accs for arm, accs, _ in arms}
    lines = []
    for arm, accs, _ in arms:
        base = _without_change(arm)
        if base in by_name:
            lines.append(f"- {arm} − {base}: {_gap_cell(accs, by_name[base])}")
    return lines


def _without_change(arm: str) -> str | None:
    """The arm ``arm`` is one change away from: its recipe without the lever
    (``record-997.own+kd`` → ``record-997.own``); the record an ablation ``abl-<count>-…``
    changes (``record-<count>.own``); the same arm trained on the training split only (a
    ``.trainval`` arm); a record design with its own recipe (``record-697.searched`` →
    ``record-697.own``: what npas's searched recipe changed); a found net with its own
    search's recipe (``npas-d3.record-697`` → ``npas-d3.found``). None for an arm that is no
    change of another."""
    design, recipe, *rest = arm.split(".")
    if "+" in recipe:
        return ".".join([design, recipe.split("+")[0], *rest])
    if design.startswith("abl-"):
        return ".".join([f"record-{design.split('-')[1]}", "own", *rest])
    if rest:
        return f"{design}.{recipe}"
    if design.startswith("record-") and recipe == "searched":
        return f"{design}.own"
    if recipe.startswith("record-") and not design.startswith("record-"):
        return f"{design}.found"
    return None


def _chosen(arm: str) -> bool:
    """Whether an arm is a search's chosen net (``npas-``: by its finalist stage or its
    validation), no lever, no twin; whether npas found it is its provenance's to say (only a
    sampled net was)."""
    return arm.startswith("npas-") and "+" not in arm and not _twin_of(arm)[1]


def _short(metrics: dict[str, Any]) -> str:
    """``949 params, 1,477 weights in use, 291k FLOPs``: what a net costs, every count."""
    return (f"{metrics['params']:,} params, {metrics['weights']:,} weights in use, "
            f"{_flops(metrics)} FLOPs")  # fmt: skip


def _flops(metrics: dict[str, Any]) -> str:
    """Inference FLOPs a sample, in thousands (``291k``; blank when not measured)."""
    flops = metrics.get("flops_infer")
    return "" if flops is None else f"{flops / 1000:,.0f}k"


def _declared(by_name: dict[str, tuple[list[float], dict[str, Any]]], board: Path,
              declaration: Declaration, known: dict[str, dict[str, Any]]
              ) -> list[str]:  # fmt: skip
    """Each comparison ``declaration`` holds for this board whose two arms have seeds
    (``by_name``: ``le<target>/<arm>`` → its per-seed accuracies and first seed's metrics):
    both arms with their provenance and costs, the gap with its interval and Welch's p, and
    the verdict at its readings (declared looks, or counted from the committed history), with
    alpha spent over them; a comparison short of its declared seeds is not read."""
    lines = []
    for c in declaration.comparisons:
        if c.board != board.name or c.ours not in by_name or c.theirs not in by_name:
            continue
        (ours, mine), (theirs, record) = by_name[c.ours], by_name[c.theirs]
        arms = [f"  - {arm}: {arm_provenance(arm, known).text}; {_short(m)}; "
                f"{mean_std_pct(accs)}, {len(accs)} seeds"
                for arm, accs, m in zip(c.key, (ours, theirs), (mine, record), strict=True)]
        head = f"- {c.key[0]} − {c.key[1]}"
        if len(ours) < c.seeds[0] or len(theirs) < c.seeds[1]:
            lines += [f"{head}: not read yet ({len(ours)} and {len(theirs)} seeds of the "
                      f"{c.seeds[0]} and {c.seeds[1]} declared)", *arms]  # fmt: skip
            continue
        diff, *_, p = gap(ours, theirs)
        count, commits = readings(board, c, (ours, theirs))
        at = f" at {', '.join(commits)}" if commits else ", declared"
        lines += [f"{head}: {_gap_cell(ours, theirs)}; "
                  f"{_verdict(diff, p, count, declaration.threshold(count))}; "
                  f"readings{at}", *arms]  # fmt: skip
    return lines


def _kind(arm: str, known: dict[str, dict[str, Any]]) -> str:
    """An arm's provenance in a few words (``found by npas``, ``a hand start point, retrained
    on train+val``), for lists of arms."""
    prov = arm_provenance(arm, known)
    words = {"sampled": "found by npas", "narrowed": "sampled, then narrowed",
             "start": "a hand start point"}.get(prov.kind, prov.kind)  # fmt: skip
    _, _, retrained = prov.text.partition("; retrained ")
    return f"{words}, retrained {retrained}" if retrained else words


def _against_goals(arms: list[tuple[str, list[float], list[dict[str, Any]]]],
                   known: dict[str, dict[str, Any]]) -> list[str]:  # fmt: skip
    """Each count's targets (:data:`GOALS`) against every net a search chose at that target
    (:func:`_chosen`, each recipe and training split of it, its provenance said): by how much
    its mean passes or misses each, with the mean's 95 % interval; a target is met by a net's
    mean over at least :data:`GOAL_SEEDS` seeds."""
    ours = [(arm, accs, int(ms[0]["params"])) for arm, accs, ms in arms if _chosen(arm)]
    lines = []
    for count, goals in GOALS.items():
        within = [(arm, accs, n) for arm, accs, n in ours if target_of(n) == count]
        verdicts = []
        for goal, label in goals:
            met = [f"{arm} ({_kind(arm, known)})" for arm, accs, _ in within
                   if len(accs) >= GOAL_SEEDS and 100 * statistics.mean(accs) >= goal]  # fmt: skip
            verdicts.append(f"≥ {goal:.1f} %{label} " + (f"met by {', '.join(met)}" if met
                                                         else "not met"))  # fmt: skip
        lines.append(f"- ≤ {count:,} params: {'; '.join(verdicts)}")
        for arm, accs, n in within:
            seeds = f"{len(accs)}" + (f" of {GOAL_SEEDS}" if len(accs) < GOAL_SEEDS else "")
            line = f"  - {arm} ({_kind(arm, known)}; {n:,} params, {seeds} seeds): "
            line += mean_std_pct(accs)
            if len(accs) >= 2:
                mean, _, half = mean_ci(accs)
                low, high = mean - half, mean + half
                line += f" (the mean's 95 % interval {100 * low:.2f}–{100 * high:.2f} %)"
            gaps = [f"{100 * statistics.mean(accs) - goal:+.2f} pt to {goal:.1f} %"
                    for goal, _ in goals]  # fmt: skip
            lines.append(f"{line}: {', '.join(gaps)}")
    return lines


def gap(ours: list[float], theirs: list[float]) -> tuple[float, float, float, float]:
    """``ours``' mean minus ``theirs``', its 95 % confidence interval and the two-sided p of
    Welch's t-test (unequal variances): the comparison of two arms' seeds."""
    diff, half, p = welch(ours, theirs)
    return diff, diff - half, diff + half, p


def _gap_cell(ours: list[float], theirs: list[float]) -> str:
    """``+0.58 pt [+0.35, +0.81], Welch p 0.0023`` (the gap alone below two seeds an arm)."""
    if not theirs or not ours:
        return ""
    if min(len(ours), len(theirs)) < 2:
        return f"{100 * (statistics.mean(ours) - statistics.mean(theirs)):+.2f} pt"
    diff, low, high, p = gap(ours, theirs)
    return f"{100 * diff:+.2f} pt [{100 * low:+.2f}, {100 * high:+.2f}], Welch p {p:.2g}"


def _recipes_line() -> str:
    """What the recipe column's names mean."""
    teacher = TEACHER["train"]
    return (
        "- Recipes: `own` = `benchmarks/record_recipes.yaml` (the record's file, with its "
        "test-set plateaus and early stopping replaced by a step schedule, as that file "
        "states); "
        "`searched` = the training section of round 5's winner at ≤ 1,000 (AdamW, cosine, "
        "lr 0.0126, weight decay 1e-4, batch 128, 81 epochs); `found` = a searched net's "
        "own search's (below the table); `+kd` = distillation (temperature "
        f"{LEVERS['kd']['distill_temperature']}, weight {LEVERS['kd']['distill_weight']}) "
        f"from a {TEACHER['family']} {json.dumps(TEACHER['hyper'], separators=(',', ':'))} "
        f"teacher ({teacher['epochs']} epochs, {teacher['optimizer']} lr {teacher['lr']}, "
        f"{teacher['schedule']}) trained on each seed's training split only (its time is "
        "not in `train min`); `+ema` = the "
        f"weights' moving average (decay {LEVERS['ema']['ema']}) validated and kept"
    )


#: An earlier round's row: its label, its design in the provenance file, its per-seed records.
Earlier = tuple[str, str, list[dict[str, Any]]]


def _reference(board: Path, target: int) -> tuple[str, list[float], list[Earlier]]:
    """The chosen net the rows of ``target`` are compared with: the first ``npas-`` arm
    trained on the training split (:func:`_chosen`) when the board has one, else the earliest
    round's; with the earlier rounds' rows (label, provenance design, per-seed metrics)."""
    earlier = [(label, design, seed_records(folder))
               for label, folder, design in COMPARE.get(target, [])]  # fmt: skip
    ours = [(arm, accs) for arm, accs, _ in _arm_rows(board, target)
            if _chosen(arm) and not arm.endswith(".trainval")]  # fmt: skip
    if ours:
        return *ours[0], earlier
    if earlier:
        return earlier[0][0], _accs(earlier[0][2]), earlier
    return "", [], earlier


def _accs(records: list[dict[str, Any]]) -> list[float]:
    return [r["metrics"]["test_accuracy"] for r in records]


def table(board: Path, seeds: int, declaration: Declaration | None = None,
          known: dict[str, dict[str, Any]] | None = None) -> str:  # fmt: skip
    """The side-by-side table of every target with design arms, from the bundles alone; the
    verdicts only on ``declaration``'s comparisons (default: the committed file), every arm's
    provenance from ``known`` (default: ``benchmarks/protocols/provenance.yaml``)."""
    declaration = declared() if declaration is None else declaration
    known = provenances() if known is None else known
    lines = [
        f"# The record designs side by side under npas's protocol ({time.strftime('%Y-%m-%d')})",
        "",
        f"- Protocol: {PROTOCOL}",
        f"- Machine: {platform.machine()}; torch 1 CPU thread per training; `device` is what "
        "trained the row: a GPU (its bundles' `train_device`) or the CPU of the machine that "
        "measured it (`cond_device_name`; train min compares only within one device); every "
        "row's indicators are measured on a CPU",
        _recipes_line(),
        "- How it came to be: sampled by the optimiser (study, trial; the only nets called "
        "found by npas), sampled and then narrowed by the screen, a start point written by "
        "hand into a preset (from what), a record's design, a twin made from another net by "
        "rule, or a retraining of one of these (another recipe, or train+val); "
        "`benchmarks/protocols/provenance.yaml`, checked against the committed studies",
        "- Costs: params = trainable parameters; weights in use = the deployed form's, every "
        "use of a reused block counted; FLOPs = inference FLOPs of one image",
        "- vs the chosen net: the row's mean minus the mean of the net a search chose at its "
        "target (the first `npas-` arm trained on the training split with its own recipe, "
        "else round 5's), its 95 % confidence interval and Welch's two-sided t-test of their "
        "seeds (unequal variances); a description, not a verdict (verdicts: the declared "
        "comparisons below); a train+val row is not compared with a train-only net",
        "",
        "| target | arm | how it came to be | params | weights in use | FLOPs | recipe "
        "| trained on | device | epochs | train min | seeds | test acc, mean ± std | each seed "
        "| vs the chosen net |",
        "|---|---|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    sharing: list[str] = []
    levers: list[str] = []
    every: list[tuple[str, list[float], list[dict[str, Any]]]] = []
    located: dict[str, tuple[list[float], dict[str, Any]]] = {}
    notes: dict[str, str] = {}  # each searched net's network and recipe, once
    for target in TARGETS:
        arms = _arm_rows(board, target)
        if not arms:
            continue
        name, reference, earlier = _reference(board, target)
        for label, design, records in earlier:
            accs = _accs(records)
            m = records[0]["metrics"]
            p = "" if label == name else _gap_cell(accs, reference)
            how = (design_provenance(design, known).text if design else
                   "round 5's choice made 1.5× as wide and Shapeshifted into its count")
            lines.append(f"| ≤ {target:,} | {label} | {how} | {m['params']:,} | "
                         f"{m['weights']:,} | {_flops(m)} | searched | train | cpu | 81 | | "
                         f"{len(accs)} | {mean_std_pct(accs)} | {each_pct(accs)} | "
                         f"{p} |")  # fmt: skip
        every += arms
        sharing += _sharing(arms)
        levers += _lever_gaps(arms)
        for arm, accs, metrics in arms:
            located[f"le{target}/{arm}"] = (accs, metrics[0])
            design, recipe, *val = arm.split(".")
            m = metrics[0]
            so_far = f" of {seeds}" if len(accs) < seeds else ""
            p = "" if arm == name else _gap_cell(accs, reference)
            if val and not name.endswith(".trainval"):
                p = "not compared (train+val)"
            on = "train+val" if val else "train"
            minutes = statistics.mean(m["train_time_s"] for m in metrics) / 60
            device = ", ".join(sorted({m["device"] for m in metrics}))
            lines.append(f"| ≤ {target:,} | {design} | {arm_provenance(arm, known).text} | "
                         f"{m['params']:,} | {m['weights']:,} | {_flops(m)} | "
                         f"{recipe} | {on} | {device} | {m['epochs']} | {minutes:.1f} | "
                         f"{len(accs)}{so_far} | {mean_std_pct(accs)} | {each_pct(accs)} | "
                         f"{p} |")  # fmt: skip
            if not design.startswith("record-") and design not in notes:
                first = min((board / f"le{target}" / arm).glob("seed*/config.yaml"))
                cfg = yaml.safe_load(first.read_text(encoding="utf-8"))
                notes[design] = f"- {design}: {describe(cfg)}"
    if notes:
        lines += ["", "The nets of `--found` arms and their twins (network; recipe `found`; "
                  "`npas-` ones a search chose, `fin-` ones a search's finalists, `start-` "
                  "ones its start points; how each came to be: the table's column):",
                  "", *notes.values()]  # fmt: skip
    goals = _against_goals(every, known)
    if goals:
        lines += ["", f"The targets (each net a search chose at the target, every recipe and "
                  f"training split of it, how it came to be in brackets: its mean − the "
                  f"target; met by a mean over at least {GOAL_SEEDS} seeds; a target is about "
                  "the test accuracy alone, so a train+val retraining may meet it):", "",
                  *goals]  # fmt: skip
    compared = _declared(located, board, declaration, known)
    if compared:
        rule = declaration.spending.capitalize()
        lines += ["", f"The declared comparisons (`benchmarks/protocols/comparisons.yaml`, "
                  f"fixed in advance; the only verdicts of this table): the first arm − the "
                  f"second; beaten when the gap is above 0 with Welch p below "
                  f"{declaration.alpha:g} spent over the comparison's readings ({rule}: "
                  f"{declaration.alpha:g} / readings), its readings declared, or, for a "
                  "comparison made before that file, counted from the committed history of its "
                  "per-seed files (each commit at which they changed with at least two seeds "
                  "an arm, listed; a working tree that differs from the last is one more):",
                  "", *compared]  # fmt: skip
    if levers:
        lines += ["", "What each lever and change added (the arm with it − the same design "
                  "without it; `abl-<count>-…`: record-<count> with one change, its own "
                  "recipe; `.trainval`: the arm trained on the training split only; a record "
                  "design with npas's searched recipe: with its own; a searched net with a "
                  "record's recipe: with its own search's):",
                  "", *levers]  # fmt: skip
    if sharing:
        lines += ["", "Sharing against shrinking (`--twins`; weights = the deployed form's, "
                  "every use counted):", "", *sharing]  # fmt: skip
    lines += ["", "The public figures (hand-designed; how each was measured):", "",
              "| parameters | test accuracy | protocol |", "|---:|---:|---|"]  # fmt: skip
    lines += [f"| {n} | {acc} | {how} |" for n, acc, how in REFERENCES]
    return "\n".join(lines) + "\n"


def _found(text: str) -> tuple[str, Path]:
    """``NAME=PATH`` of ``--found``."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: NAME=PATH")
    return name, Path(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--designs", type=lambda s: s.split(",") if s else [],
                        default=list(RECORD_DESIGNS))  # fmt: skip
    parser.add_argument("--recipes", type=lambda s: s.split(","), default=list(RECIPES))
    parser.add_argument(
        "--found",
        type=_found,
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a search's trial: NAME an arm label (npas-… for a net the search chose), PATH "
        "search export's bundle or its config.yaml; trained with --found-recipe; repeatable",
    )
    parser.add_argument(
        "--found-recipe",
        choices=["found", "searched", *RECORD_DESIGNS],
        default="found",
        help="the --found nets' recipe: 'found' their own search's, 'searched' round 5's, or "
        "a record design's own (its arm: NAME.record-697); default: found",
    )
    parser.add_argument(
        "--levers",
        type=lambda s: s.split(",") if s else [],
        default=[],
        help=f"recipe levers added to every arm ({', '.join(LEVERS)}); the arm's recipe "
        "reads <recipe>+<lever>",
    )
    parser.add_argument(
        "--twins",
        action="store_true",
        help="each plain arm's Shapeshifted twins too: -shared (1.5x as wide, Shapeshifted "
        "into its count) and -wide (that network plain: the shared one's deployed weights)",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epochs", type=int, help="every arm's epochs (default: its recipe's)")
    parser.add_argument(
        "--train-on",
        choices=["train", "train+val"],
        default="train",
        help="train+val: each seed trains on the validation split too (its "
        "arm folder ends in .trainval)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="trainings at once, 1 thread each")
    parser.add_argument(
        "--device",
        default="cpu",
        help="what trains (cpu, cuda): several jobs share one GPU; the table names it per row",
    )
    parser.add_argument(
        "--searched",
        type=Path,
        default=SEARCHED,
        help="the bundle config.yaml whose trial config every arm starts from",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        help="KEY=VALUE edits of that trial config (e.g. dataset=digits)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--name", default="leaderboard_records")
    parser.add_argument(
        "--replace",
        action="store_true",
        help="retrain a finished seed whose bundle trained another network or recipe than "
        "this run's, replacing its bundle (without it such a run is refused)",
    )
    parser.add_argument(
        "--comparisons",
        type=Path,
        default=DECLARED,
        help="the declared comparisons, the only ones given a verdict (default: "
        "benchmarks/protocols/comparisons.yaml)",
    )
    parser.add_argument("--table-only", action="store_true", help="train nothing")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    board = args.results / args.name
    unknown = [r for r in args.recipes if r not in RECIPES]
    if unknown:
        sys.exit(f"record_designs.py: unknown recipe {unknown[0]!r}: own or searched")
    levers = [lever for lever in args.levers if lever not in LEVERS]
    if levers:
        sys.exit(f"record_designs.py: unknown lever {levers[0]!r}: {', '.join(LEVERS)}")
    if not args.table_only:
        todo = _runs(args, base_config(args.searched, args.sets), board)
        print(f"{len(todo)} seed(s) to train, {args.jobs} at once", flush=True)
        train(todo, args.jobs, args.device)
    text = table(board, args.seeds, declared(args.comparisons))
    (args.results / f"{args.name}.md").write_text(text, encoding="utf-8")
    print(f"wrote {args.results / f'{args.name}.md'}")


if __name__ == "__main__":
    main()
