"""Finished searches side by side, counted from their studies through Optuna's API: proposals,
refused by the screen, narrowed, trained, the rungs reached, how near the params limit the
trained nets sit, and the finishers by origin (a start point, the sampler's, a narrowed
refusal). What `record_acc_search.md` compares a search design with.

Run: ``python benchmarks/search_counts.py LABEL=STORAGE_URL [LABEL=STORAGE_URL ...]`` (each
storage holds one study); prints a Markdown table, one column per search.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, run as a file
from benchmarks.screening import params_limit
from objectives.datasets import DATASETS
from search.config import SearchConfig, TrialConfig
from search.record import StudyAttr, TrialAttr
from search.schedulers import milestones
from search.screening._meta import meta_model, planned_params, trainable

#: A trained net "near the limit": at least this share of the params limit.
NEAR = 0.9


@dataclass(frozen=True)
class Trained:
    """One trial the screen let train."""

    number: int
    params: int
    origin: str  # "start", "sampled" or "narrowed"
    epochs: int  # the last epoch it reported (0: none yet)
    last: float | None  # its accuracy at that epoch
    at_chance: bool


def origin(attrs: dict[str, Any]) -> str:
    """Where a proposal came from: the config's start list, a narrowed refusal or the sampler."""
    if TrialAttr.START in attrs:
        return "start"
    return "narrowed" if TrialAttr.NARROWED in attrs else "sampled"


def params_of(config: dict[str, Any], models: dict[str, Any]) -> int:
    """The trainable parameters the trial's net has, counted on the meta device (a paused
    trial has recorded none yet): the budget's count when Shapeshifted."""
    cfg = TrialConfig.from_dict(config)
    info = DATASETS.get(cfg.dataset)
    if cfg.budget is not None and cfg.ssn.get("mapping") not in ("none", None):
        return int(planned_params(cfg, info, models))
    return int(trainable(meta_model(cfg, info, models)))


def count(url: str) -> dict[str, Any]:
    """One search's counts (see the module's docstring)."""
    names = optuna.get_all_study_names(url)
    if len(names) != 1:
        raise SystemExit(f"{url}: holds {len(names)} studies ({names}); give a storage with one")
    study = optuna.load_study(study_name=names[0], storage=url)
    config = SearchConfig.from_dict(study.user_attrs[StudyAttr.CONFIG])
    scheduler = config.scheduler
    rungs = (*milestones(scheduler.grace_epochs, scheduler.reduction_factor, config.max_epochs),
             config.max_epochs)  # fmt: skip
    trials = study.get_trials(deepcopy=False)
    models: dict[str, Any] = {}
    trained = []
    for t in trials:
        attrs = t.user_attrs
        if attrs.get(TrialAttr.SCREENED):
            continue
        epochs = max(t.intermediate_values, default=0)
        decisions = attrs.get(TrialAttr.DECISIONS, [])
        trained.append(Trained(t.number, params_of(attrs[TrialAttr.CONFIG], models), origin(attrs),
                               epochs, t.intermediate_values.get(epochs),
                               any(d.get("at_chance") for d in decisions)))  # fmt: skip
    return {"name": names[0], "limit": params_limit(config), "rungs": rungs,
            "proposals": len(trials), "trained": trained}  # fmt: skip


def rows(found: dict[str, dict[str, Any]]) -> list[str]:
    """The Markdown table: a row per figure, a column per search."""
    labels = list(found)
    heads = [f"{label} (`{found[label]['name']}`)" for label in labels]
    lines = [f"| what | {' | '.join(heads)} |", "|---|" + "---:|" * len(labels)]

    def row(what: str, cell: Any) -> None:
        lines.append(f"| {what} | {' | '.join(str(cell(found[label])) for label in labels)} |")

    def finishers(f: dict[str, Any]) -> list[Trained]:
        done = [t for t in f["trained"] if t.epochs >= f["rungs"][-1] and t.last is not None]
        return sorted(done, key=lambda t: -t.last)

    def narrowed(f: dict[str, Any]) -> str:
        sizes = sorted(t.params for t in f["trained"] if t.origin == "narrowed")
        return f"{statistics.median(sizes):g} ({sizes[0]}–{sizes[-1]})" if sizes else "–"

    rungs = found[labels[0]]["rungs"]
    row("proposals recorded", lambda f: f["proposals"])
    row("refused before training by the screen", lambda f: f["proposals"] - len(f["trained"]))
    row("trained (narrowed refusals among them)",
        lambda f: f"{len(f['trained'])} ({sum(t.origin == 'narrowed' for t in f['trained'])})")
    row("reached epoch " + " / ".join(map(str, rungs)),
        lambda f: " / ".join(str(sum(t.epochs >= r for t in f["trained"])) for r in f["rungs"]))
    row("stopped at chance", lambda f: sum(t.at_chance for t in f["trained"]))
    row(f"trained within {1 - NEAR:.0%} of the params limit",
        lambda f: sum(t.params >= NEAR * f["limit"] for t in f["trained"]))
    row("the narrowed nets' params: median (range)", narrowed)
    row("finishers: start points / sampled / narrowed",
        lambda f: " / ".join(str(sum(t.origin == o for t in finishers(f)))
                             for o in ("start", "sampled", "narrowed")))  # fmt: skip
    row("finishers, most accurate first: validation (trial, params, origin)",
        lambda f: "; ".join(f"{t.last:.4f} ({t.number}, {t.params}, {t.origin})"
                            for t in finishers(f)) or "–")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("searches", nargs="+", metavar="LABEL=STORAGE_URL")
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    found = {}
    for item in args.searches:
        label, sep, url = item.partition("=")
        if not sep or not label or not url:
            parser.error(f"{item!r}: expected LABEL=STORAGE_URL")
        found[label] = count(url)
    print("\n".join(rows(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
