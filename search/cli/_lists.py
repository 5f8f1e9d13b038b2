"""The commands that list what is registered: ``search families``, ``indicators``, ``presets``
and ``selectors``."""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap

from search.cli._common import _WIDTH


def _families(args: argparse.Namespace) -> int:
    """Each registered family: the layouts it takes and its hyper-parameters; ``--import``
    lists a user's families too, ``--layout`` only those that take a layout."""
    from search._usercode import import_modules, normalise_imports
    from spaces import FAMILIES, check_layouts, family_layouts, hyper_keys

    import_modules(normalise_imports(args.imports, path="--import"), path="--import")
    wanted = None if args.layout is None else check_layouts(args.layout, "--layout")[0]
    rows = []
    for name in FAMILIES:
        layouts = family_layouts(name)
        if wanted is None or wanted in (layouts or ()):
            taken = ", ".join(layouts) if layouts else "(not declared)"
            hypers = ", ".join(hyper_keys(FAMILIES.get(name))) or "(none free: a fixed variant)"
            rows.append((name, taken, hypers))
    width = max(len(n) for n in [*FAMILIES, "family"])
    column = max(len(t) for t in ["layouts", *(t for _, t, _ in rows)])
    indent = width + column + 4
    print(f"{'family':<{width}}  {'layouts':<{column}}  hyper-parameters")
    for name, taken, hypers in rows:
        first, *more = textwrap.wrap(hypers, width=_WIDTH - indent)
        print(f"{name:<{width}}  {taken:<{column}}  {first}")
        for line in more:
            print(" " * indent + line)
    return 0


def _indicators(args: argparse.Namespace) -> int:
    """Each indicator's name, unit, direction, phase and whether it is computed without
    running the model, then its description on the lines below, wrapped (as one table row
    it took 196 columns)."""
    from objectives import INDICATORS
    from search._format import wrap

    rows = [(name, INDICATORS.get(name)) for name in INDICATORS.names()]
    head = ("indicator", "unit", "direction", "phase", "analytic")
    cells = [head] + [(n, i.unit, i.direction, i.phase, "yes" if i.analytic else "no")
                      for n, i in rows]  # fmt: skip
    widths = [max(len(row[k]) for row in cells) for k in range(len(head))]
    for k, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if k:
            print(wrap(rows[k - 1][1].description, first="    ", indent="    "))
    return 0


def _first_sentence(text: str) -> str:
    """The first sentence of a file's leading comment (its lines joined: a description that
    runs over two lines once stopped mid-sentence)."""
    words = []
    for line in text.splitlines():
        if not line.startswith("#") or not line[1:].strip():
            break
        words.append(line[1:].strip())
    joined = " ".join(words)
    end = re.search(r"\.(\s|$)", joined)
    return joined[: end.start() + 1] if end else joined


def _presets(args: argparse.Namespace) -> int:
    """The presets as their files say (what `search launch --preset` validates and runs);
    ``--show NAME``: one preset's YAML, as shipped (a start for a config of one's own)."""
    import yaml

    from search.config import list_presets, preset_text, unknown_preset

    if args.show is not None:
        text = preset_text(args.show)
        if text is None:
            raise unknown_preset(args.show)
        sys.stdout.write(text)
        return 0
    for name in list_presets():
        text = preset_text(name) or ""
        data = yaml.safe_load(text) or {}
        objectives = ", ".join(str(o[0] if isinstance(o, list) else o)
                               for o in data.get("objectives", []))  # fmt: skip
        print(f"{name}: {data.get('dataset')}, {data.get('trials', 16)} trials, "
              f"{(data.get('algorithm') or {}).get('name', 'tpe')}; {objectives}")  # fmt: skip
        about = _first_sentence(text).removeprefix(f"{name}: ")
        if about:
            print(textwrap.fill(about, width=_WIDTH, initial_indent="    ",
                                subsequent_indent="    "))  # fmt: skip
    print("One preset's YAML: search presets --show NAME; check it: search check --preset NAME")
    return 0


def _selectors(args: argparse.Namespace) -> int:
    from search._format import wrap
    from search.pareto import SELECTORS

    for name in SELECTORS.names():
        selector = SELECTORS.get(name)
        doc = " ".join(inspect.cleandoc(type(selector).__doc__ or "").split("\n\n")[0].split())
        print(wrap(" | ".join(selector.forms), indent="  "))
        print(wrap(doc, first="    ", indent="    "))
    return 0
