"""The commands that read a search's results: ``search pareto``, ``report``, ``export``,
``train`` and ``replay``."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

from search.cli._common import (
    _WIDTH,
    _objectives,
    _storage_url,
    _study,
    _user_code,
    _wrote_as_data,
)
from search.errors import ConfigError
from search.record import Column


def _pareto(args: argparse.Namespace) -> int:
    """The front table; csv and json keep every column on every row (for programs), the table
    states the conditions equal on every row once above it."""
    from search._format import table_text
    from search.pareto import DUPLICATES, condition_columns, constant_conditions, front_table

    study = _study(args)
    table = front_table(study, _objectives(study, args.objectives))
    if _wrote_as_data(table, args.format):
        return 0
    conditions = {*condition_columns(table), DUPLICATES}
    names = [
        str(c)
        for c in table.columns[1:]
        if c not in conditions and not str(c).startswith(Column.PARAMS_PREFIX)
    ]
    title = f"Front of {study.study_name!r}: {len(table)} trial(s) ({', '.join(names)})"
    if DUPLICATES in table.columns:
        title += (f"; {int(table[DUPLICATES].sum())} more with the same config and values, "
                  f"counted in {DUPLICATES}")  # fmt: skip
    print(textwrap.fill(title, width=_WIDTH, subsequent_indent="  "))
    if table.empty:
        print(f"(empty: {table.attrs.get('message')})")
        return 0
    constant = constant_conditions(table)
    if constant:
        print("\n".join(["Measured under (the same for every trial below):",
                         *conditions_lines(constant)]))  # fmt: skip
    print(table_text(table.drop(columns=list(constant))))
    return 0


def conditions_lines(constant: dict[str, Any]) -> list[str]:
    """The conditions every trial was measured under, one per line (a long value wrapped under
    itself; an empty one, such as no GPU ids, the missing-value mark, never a blank line)."""
    from search._format import MISSING, cell

    width = max(len(str(k)) for k in constant)
    return [textwrap.fill(cell(value) or MISSING, width=_WIDTH,
                          initial_indent=f"  {key:<{width}}  ",
                          subsequent_indent=" " * (width + 4))
            for key, value in constant.items()]  # fmt: skip


def _replay(args: argparse.Namespace) -> int:
    """The what-if table of ``search replay`` (``search.lab``); progress on stderr."""
    from search.lab import MAX_SEEDS, CurveTable, usable_jobs, what_if

    if args.seeds > MAX_SEEDS:
        raise ConfigError(f"--seeds: got {args.seeds:,}; allowed: 1 to {MAX_SEEDS:,}")
    jobs = usable_jobs(args.jobs or 2)
    if args.jobs and jobs < args.jobs:
        print(f"[npas] --jobs {args.jobs}: this process may use {jobs} CPU core(s), so {jobs} "
              "replay(s) run at once", file=sys.stderr)  # fmt: skip
    if args.algorithm is not None:
        from search.optimisers import OPTIMISERS

        OPTIMISERS.get(args.algorithm)  # an unknown name fails before any replay
    if args.plot:
        from search._output import check_file

        check_file(args.plot, flag="--plot")  # a plot it could not save: refused before
    study = _study(args)
    table = CurveTable.from_study(study)
    kinds = (args.kind,) if args.kind else ("stopping", "promotion")
    if args.trust_by is not None and (args.scheduler != "moasha" or "stopping" not in kinds):
        raise ConfigError(f"--trust-by: got {args.trust_by!r} with --scheduler "
                          f"{args.scheduler} --type {args.kind}; allowed: with --scheduler "
                          "moasha and the stopping type (promotion resumes by rank "
                          "alone)")  # fmt: skip
    others = {"moasha": len(kinds) + (args.trust_by is not None), "fifo": 0}.get(args.scheduler, 1)
    total = args.seeds * (2 + others)  # FIFO, the others, the perfect-foresight bound
    done = [0]
    terminal = sys.stderr.isatty()  # a log gets no carriage returns, and no progress

    def progress(run: Any) -> None:
        done[0] += 1
        print(f"\r[npas] replayed {done[0]}/{total}", end="", file=sys.stderr, flush=True)

    result = what_if(table, scheduler=args.scheduler, kinds=kinds, optimiser=args.algorithm,
                     workers=args.workers, seeds=args.seeds, jobs=jobs,
                     progress=progress if terminal else None, trust_by=args.trust_by)  # fmt: skip
    if terminal:
        print(file=sys.stderr)
    from search._format import wrap_lines

    print(result.json() if args.format == "json"
          else "\n".join(wrap_lines(result.text().splitlines())))  # fmt: skip
    if args.plot:
        print(f"plot: {result.plot(args.plot)}", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace) -> int:
    from search.pareto import parse_spec
    from search.report import write_report

    parse_spec(args.select)  # a bad spec fails before anything is written
    study = _study(args)
    paths = write_report(study, args.out, select=args.select)
    print(f"Report of {study.study_name!r} in {Path(args.out)}:")
    for name, path in paths.items():
        print(f"  {name}: {path}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from search._format import wrap
    from search.bundle import bundle_target, export_bundle
    from search.pareto import parse_spec

    if args.select is not None:
        parse_spec(args.select)
    bundle_target(args.out, replace=args.replace)  # before the search's modules are imported
    study = _study(args)
    done = export_bundle(
        study,
        args.out,
        select=args.select,
        objectives=_objectives(study, args.objectives),
        storage_url=_storage_url(args),
        from_checkpoint=args.from_checkpoint,
        replace=args.replace,
    )
    if done.fallback is not None:
        print(wrap(f"search export: {done.fallback}"), file=sys.stderr)
    print(f"Exported trial {done.number} of {study.study_name!r} to {done.folder}")
    print(wrap(f"  why: {done.selection.reason}", indent="    "))
    print(wrap(f"  test accuracy {done.test_accuracy:.4f} on the test split ({done.test_rows:,} "
               "rows), read once, for this model only", indent="    "))  # fmt: skip
    trained = "n/a" if done.params is None else f"{done.params:,}"
    print(wrap(f"  parameters: {trained} trained (params, what its constraints saw), "
               f"{done.deployed:,} in the exported model (materialised_params)",
               indent="    "))  # fmt: skip
    for name, path in done.paths.items():
        print(f"  {name}: {path}")
    warm = " --from-checkpoint" if args.from_checkpoint else ""
    print(f"Retrain it at a full schedule: search train {done.folder}{warm}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from search._format import table_text, wrap
    from search.bundle import check_device, read_bundle, train_bundle

    check_device(args.device)  # a bad flag first, as before a bundle is read
    recorded = read_bundle(args.bundle)["trial_config"].get("imports") or []
    _user_code(args, recorded, "the bundle's")
    done = train_bundle(args.bundle, epochs=args.epochs, out=args.out, device=args.device,
                        seed=args.seed, from_checkpoint=args.from_checkpoint,
                        with_val=args.with_val)  # fmt: skip
    start = "from its checkpoint" if args.from_checkpoint else "from scratch"
    on = " on train+val" if args.with_val else ""
    print(wrap(f"Retrained {args.bundle} {start}{on} for {done.metrics.get('epochs')} epoch(s): "
               "search vs train"))  # fmt: skip
    print(table_text(done.table))
    print(f"Saved: {done.path}")
    trained = done.path.parent / "trained"
    if done.onnx_error is None:
        print(wrap(f"Retrained model: {trained}/model.pt, model.onnx, model.pt2 (the bundle's "
                   "own model.* stay the search's; metrics.json's models says which is which)"))
    else:
        print(wrap(f"Retrained model: {trained}/model.pt; no model.onnx or model.pt2 "
                   f"({done.onnx_error})"))
    return 0
