"""Comparisons fixed in advance and the provenance of every net, for the leaderboard tables.

``benchmarks/protocols/comparisons.yaml`` declares each comparison that may get a verdict (its
arms, seeds, readings and alpha-spending rule); ``benchmarks/protocols/provenance.yaml`` says
how each searched net came to be. A comparison made before that file existed has its readings
counted from the committed git history of its per-seed files (:func:`history`), never kept by
hand: each committed state at which the two arms' test accuracies changed, with at least two
seeds an arm, could have been read, and was.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.stats import welch_p
from spaces import ConfigError, NpasError

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ROOT / "benchmarks" / "protocols"
DECLARED = PROTOCOLS / "comparisons.yaml"
PROVENANCE = PROTOCOLS / "provenance.yaml"
#: The alpha-spending rules a declaration may name: each reading's threshold given alpha and
#: the number of readings (Bonferroni: alpha / readings at every one).
SPENDING = {"bonferroni": lambda alpha, readings: alpha / readings}
#: Fewest seeds an arm has for a state of its per-seed files to be readable (Welch's test).
READABLE = 2
#: An arm's twins by suffix: how each was made from the arm's net.
TWIN_RULES = {"shared": "made 1.5× as wide and Shapeshifted into its count",
              "wide": "made 1.5× as wide, plain"}  # fmt: skip


class HistoryError(NpasError):
    """The committed history of a comparison's per-seed files cannot be read (no git
    checkout, or a shallow clone holding only part of it): its readings cannot be counted."""


@dataclass(frozen=True)
class Comparison:
    """One declared comparison: ``ours`` − ``theirs``, arms as ``le<target>/<arm>`` folders
    under ``<results>/<board>/``, read at ``seeds`` (ours, theirs), ``readings`` looks (or
    "history")."""

    board: str
    ours: str
    theirs: str
    seeds: tuple[int, int]
    readings: int | str

    @property
    def key(self) -> tuple[str, str]:
        """(ours, theirs) as arm names, without their target folders."""
        return Path(self.ours).name, Path(self.theirs).name


@dataclass(frozen=True)
class Declaration:
    """The declaration file: alpha, the spending rule and the comparisons."""

    alpha: float
    spending: str
    comparisons: tuple[Comparison, ...]

    def threshold(self, readings: int) -> float:
        """The p a verdict needs at ``readings`` readings."""
        return float(SPENDING[self.spending](self.alpha, readings))


def declared(path: Path = DECLARED) -> Declaration:
    """The declaration file read and checked: a known spending rule, readings a whole number
    of looks or ``history``, and never a train+val arm against a train-only one."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    spending = raw.get("spending")
    if spending not in SPENDING:
        raise ConfigError(f"{path}: spending {spending!r}: one of {', '.join(SPENDING)}")
    found = []
    for n, item in enumerate(raw.get("comparisons") or []):
        where = f"{path}: comparisons[{n}]"
        missing = [k for k in ("board", "ours", "theirs", "seeds", "readings") if k not in item]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        readings = item["readings"]
        if not (readings == "history" or (isinstance(readings, int) and readings >= 1)):
            raise ConfigError(f"{where}: readings {readings!r}: a number of looks or history")
        if item["ours"].endswith(".trainval") != item["theirs"].endswith(".trainval"):
            raise ConfigError(f"{where}: {item['ours']} against {item['theirs']}: a train+val "
                              "arm is compared only with a train+val arm")  # fmt: skip
        seeds = item["seeds"]
        pair = (seeds, seeds) if isinstance(seeds, int) else tuple(seeds)
        if len(pair) != 2 or not all(isinstance(n, int) and n >= 2 for n in pair):
            raise ConfigError(f"{where}: seeds {seeds!r}: a count of at least 2, or one an arm "
                              "([ours, theirs])")  # fmt: skip
        found.append(Comparison(item["board"], item["ours"], item["theirs"], pair, readings))
    return Declaration(float(raw.get("alpha", 0.05)), spending, tuple(found))


@dataclass(frozen=True)
class Provenance:
    """How an arm's net came to be: ``kind`` (sampled, narrowed, start, record, ablation,
    twin), ``text`` for a table cell, and whether it is called found by npas."""

    kind: str
    text: str

    @property
    def found_by_npas(self) -> bool:
        """Only a net the optimiser sampled is found by npas."""
        return self.kind == "sampled"


def provenances(path: Path = PROVENANCE) -> dict[str, dict[str, Any]]:
    """The provenance file: design → {kind, study, trial, from}."""
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def _study(entry: dict[str, Any]) -> str:
    """``d3 study, trial 33`` from ``record_acc_search/d3-study.db``."""
    name = Path(entry["study"]).stem.removesuffix("-study").removesuffix("study")
    name = name or Path(entry["study"]).parent.name
    return f"{name} study, trial {entry['trial']}"


def design_provenance(design: str, known: dict[str, dict[str, Any]]) -> Provenance:
    """A design's provenance: a record's design, a record's with one change, a twin of another
    net, or what the provenance file says (a design it lacks is said to be unknown)."""
    if design.startswith("record-"):
        return Provenance("record", "a record's design")
    if design.startswith("abl-"):
        return Provenance("ablation", f"record-{design.split('-')[1]}'s design, one change "
                          "by hand")  # fmt: skip
    for kind, rule in TWIN_RULES.items():
        if design.endswith(f"-{kind}"):
            base = design.removesuffix(f"-{kind}")
            return Provenance("twin", f"{base}'s net {rule}")
    entry = known.get(design)
    if entry is None:
        return Provenance("unknown", "not in benchmarks/protocols/provenance.yaml")
    kind = entry["kind"]
    if kind == "sampled":
        return Provenance(kind, f"sampled by the optimiser ({_study(entry)})")
    if kind == "narrowed":
        return Provenance(kind, f"sampled by the optimiser, narrowed by the screen "
                          f"({_study(entry)})")  # fmt: skip
    if kind == "start":
        return Provenance(kind, f"a hand start point: {entry['from']} ({_study(entry)})")
    raise ConfigError(f"provenance of {design}: kind {kind!r}: sampled, narrowed or start")


def arm_provenance(arm: str, known: dict[str, dict[str, Any]]) -> Provenance:
    """An arm's provenance: its design's, and a retraining of it when the arm trains the net
    with a record's recipe (a searched net's) or on train+val too."""
    design, recipe, *rest = arm.split(".")
    base = design_provenance(design, known)
    retrained = []
    recipe = recipe.split("+")[0]
    if recipe.startswith("record-") and not design.startswith("record-"):
        retrained.append(f"with {recipe}'s recipe")
    if rest:
        retrained.append("on train+val")
    if not retrained:
        return base
    return Provenance(base.kind, f"{base.text}; retrained {' and '.join(retrained)}")


@dataclass(frozen=True)
class Reading:
    """One committed state of a comparison's per-seed files that could be read."""

    commit: str
    ours: tuple[float, ...]
    theirs: tuple[float, ...]


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode:
        raise HistoryError(f"git {' '.join(args[:2])} in {repo}: {done.stderr.strip()}")
    return done.stdout


def _top(path: Path) -> Path:
    """The git checkout holding ``path``, once it is known to hold its whole history."""
    where = path if path.is_dir() else path.parent
    try:
        top = Path(_git(where, "rev-parse", "--show-toplevel").strip())
    except HistoryError as err:
        raise HistoryError(f"{path}: not in a git checkout; a comparison's readings are counted "
                           f"from its committed history ({err})") from None  # fmt: skip
    if _git(top, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise HistoryError(f"{top} is a shallow clone: a comparison's readings are counted from "
                           "the whole committed history of its results; run `git fetch "
                           "--unshallow` (or clone without --depth)")  # fmt: skip
    return top


def _seed_paths(listing: str, arm: str) -> list[str]:
    """The ``<arm>/seed<s>/metrics.json`` paths of a tree listing, by seed."""
    found = [p for p in listing.splitlines()
             if re.fullmatch(rf"{re.escape(arm)}/seed\d+/metrics\.json", p)]  # fmt: skip
    return sorted(found, key=lambda p: int(p.split("/")[-2][4:]))


def _accuracies(texts: list[str]) -> tuple[float, ...]:
    return tuple(float(json.loads(t)["metrics"]["test_accuracy"]) for t in texts)


def _names(folder: Path) -> list[str]:
    """An arm's folder names, its own first: a finalist's seeds were trained under its
    ``fin-`` arm and renamed when chosen (``source.finalist`` in their metrics.json), so the
    history before the rename lies under that name."""
    earlier = set()
    for path in folder.glob("seed*/metrics.json"):
        finalist = json.loads(path.read_text(encoding="utf-8")).get("source", {}).get("finalist")
        if finalist:
            earlier.add(finalist)
    return [folder.name, *sorted(earlier - {folder.name})]


def history(board: Path, ours: str, theirs: str) -> list[Reading]:
    """The committed states of two arms (``le<target>/<arm>`` under ``board``, each with its
    name before a finalist's rename, :func:`_names`) at which their per-seed test accuracies
    changed and each arm had at least :data:`READABLE` seeds: the readings the comparison has
    had, oldest first (HistoryError without the whole history)."""
    top = _top(board)
    arms = []  # each arm's folders relative to the checkout, its present name first
    for arm in (ours, theirs):
        folder = (board / arm).resolve()
        arms.append([(folder.parent / name).relative_to(top.resolve()).as_posix()
                     for name in _names(folder)])  # fmt: skip
    every = [path for names in arms for path in names]
    commits = _git(top, "log", "--reverse", "--format=%H", "--", *every).split()
    readings: list[Reading] = []
    state: tuple[tuple[float, ...], ...] | None = None
    for commit in commits:
        listing = _git(top, "ls-tree", "-r", "--name-only", commit, "--", *every)
        paths = [next((found for name in names if (found := _seed_paths(listing, name))), [])
                 for names in arms]  # fmt: skip
        blobs = "".join(f"{commit}:{p}\n" for p in paths[0] + paths[1])
        texts = _batch(top, blobs) if blobs else []
        now = (_accuracies(texts[: len(paths[0])]), _accuracies(texts[len(paths[0]) :]))
        if now != state and min(map(len, now)) >= READABLE:
            readings.append(Reading(commit[:7], *now))
        state = now
    return readings


def _batch(top: Path, names: str) -> list[str]:
    """The contents of ``commit:path`` objects, one a line of ``names`` (git cat-file)."""
    out = subprocess.run(["git", "-C", str(top), "cat-file", "--batch"], input=names.encode(),
                         capture_output=True, check=True).stdout  # fmt: skip
    texts, at = [], 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if header[-1] == b"missing":
            raise HistoryError(f"git cat-file: {header[0].decode()} missing")
        size = int(header[2])
        texts.append(out[end + 1 : end + 1 + size].decode("utf-8"))
        at = end + 1 + size + 1
    return texts


def readings(board: Path, comparison: Comparison, now: tuple[list[float], list[float]]
             ) -> tuple[int, list[str]]:  # fmt: skip
    """How many readings ``comparison`` has at the per-seed accuracies ``now`` (the board as
    it is), with the commits they were at: its declared looks, or its history's readings plus
    one where ``now`` differs from the last committed one (a reading not committed yet)."""
    if comparison.readings != "history":
        return int(comparison.readings), []
    past = history(board, comparison.ours, comparison.theirs)
    commits = [r.commit for r in past]
    current = (tuple(now[0]), tuple(now[1]))
    if not past or (past[-1].ours, past[-1].theirs) != current:
        commits.append("working tree")
    return len(commits), commits


def verdict(diff: float, p: float, count: int, threshold: float) -> str:
    """``beats it (1 reading, p 0.0150 < 0.05)`` or ``not beaten (4 readings, p 0.0132 >
    0.0125)`` (p to three significant figures): above only with a higher mean and p below
    the threshold spent over the readings."""
    said = f"{count} reading{'s' if count != 1 else ''}"
    if diff <= 0:
        return f"not beaten ({said}, the gap is not above 0)"
    if p < threshold:
        return f"beats it ({said}, p {p:#.3g} < {threshold:.3g})"
    return f"not beaten ({said}, p {p:#.3g} > {threshold:.3g})"


#: A comparison's line in a table: ``- OURS − THEIRS: … beats it (N readings, p P < T)``.
CLAIM = re.compile(r"^- (?P<ours>\S+) − (?P<theirs>\S+): .*?(?P<verdict>beats it|not beaten) "
                   r"\((?P<count>\d+) readings?, p (?P<p>[\d.e+-]+) [<>]")  # fmt: skip


def overclaims(text: str, board: Path, declaration: Declaration,
               accuracies: dict[str, list[float]]) -> list[str]:  # fmt: skip
    """The lines of a table (``text``) that claim "beats it" beyond what the data allow: a
    comparison not declared, readings other than those derived (:func:`readings`), or a p
    (recomputed from ``accuracies``, arm → per-seed accuracies) not below the derived
    threshold, or a gap not above 0. Each returned with why."""
    by_key = {c.key: c for c in declaration.comparisons if c.board == board.name}
    wrong = []
    for line in text.splitlines():
        claim = CLAIM.match(line)
        if claim is None or claim["verdict"] != "beats it":
            continue
        c = by_key.get((claim["ours"], claim["theirs"]))
        if c is None:
            wrong.append(f"{line}: no such declared comparison")
            continue
        ours, theirs = accuracies[claim["ours"]], accuracies[claim["theirs"]]
        count, _ = readings(board, c, (ours, theirs))
        p = welch_p(ours, theirs)
        threshold = declaration.threshold(count)
        if int(claim["count"]) != count:
            wrong.append(f"{line}: {count} readings derived from the history")
        elif not (p < threshold and sum(ours) / len(ours) > sum(theirs) / len(theirs)):
            wrong.append(f"{line}: p {p:#.3g} is not below {threshold:.3g}")
    return wrong
