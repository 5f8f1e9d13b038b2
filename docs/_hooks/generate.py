"""mkdocs hook: the pages generated at build time, so that none of them can drift.

- ``reference/config.md``: the YAML reference, from the config's declaration
  (:mod:`yaml_reference`);
- ``api/<package>.md``: one mkdocstrings page per public package, listing its ``__all__``
  (each object documented on the page of the most specific package that exports it);
- ``benchmarks/results/<name>.md``: each table in ``benchmarks/results/``, as the benchmark
  wrote it;
- the family table of ``spaces.md`` (:mod:`family_table`), where the page holds its marker.

Generated pages are added to the nav under the sections named ``API reference`` and
``Benchmarks``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from spaces._lazy import exported_names

sys.path.insert(0, str(Path(__file__).parent))
import family_table
import yaml_reference

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: Public packages, most specific first: an object is documented on the first that exports it.
PACKAGES = (
    "spaces.ssn",
    "spaces",
    "objectives.pepr",
    "objectives.datasets",
    "objectives",
    "search.config",
    "search.derive",
    "search.optimisers",
    "search.pareto",
    "search.report",
    "search.bundle",
    "search.run",
    "search.trial",
    "search.errors",
    "search",
)

#: The nav's order of the packages: what is searched, what is measured, how.
_TOPS = ("spaces", "objectives", "search")


def _results() -> list[Path]:
    return sorted(RESULTS.glob("*.md"))


def _api_page(package: str) -> str:
    return f"api/{package}.md"


def _target(package: Any, name: str, obj: Any) -> str:
    """The dotted path mkdocstrings reads ``name`` from: where it is defined."""
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and hasattr(obj, "__qualname__"):
        return f"{obj.__module__}.{obj.__qualname__}"
    # where the package's TYPE_CHECKING block imports it from (spaces._lazy reads the same)
    exports = exported_names(Path(package.__file__)) if package.__file__ else {}
    return f"{exports.get(name, package.__name__)}.{name}"


def api_pages() -> dict[str, str]:
    """Page path → markdown, one page per package of :data:`PACKAGES`."""
    home: dict[int, str] = {}  # id(object) → the package whose page documents it
    pages: dict[str, str] = {}
    for name in PACKAGES:
        package = importlib.import_module(name)
        summary = (inspect.getdoc(package) or "").split("\n\n")[0]
        lines = [f"# `{name}`", "", summary, ""]
        elsewhere: list[str] = []
        for member in package.__all__:
            obj = getattr(package, member)
            if inspect.ismodule(obj):
                if obj.__name__ in PACKAGES:
                    elsewhere.append(f"- `{member}`: [`{obj.__name__}`]({obj.__name__}.md)")
                continue
            owner = home.get(id(obj)) if not isinstance(obj, str | int | float) else None
            if owner and owner != name:
                elsewhere.append(f"- `{member}`: documented in [`{owner}`]({owner}.md)")
                continue
            home.setdefault(id(obj), name)
            lines += [f"::: {_target(package, member, obj)}", ""]
        if elsewhere:
            lines += ["## Also exported here", "", *elsewhere, ""]
        pages[_api_page(name)] = "\n".join(lines)
    return pages


def on_config(config: Any) -> Any:
    """Fills the nav's ``API reference`` and ``Benchmarks`` sections with the pages made here."""
    for entry in config["nav"]:
        if not isinstance(entry, dict):
            continue
        if "API reference" in entry:
            order = sorted(PACKAGES, key=lambda p: (_TOPS.index(p.split(".")[0]), p))
            entry["API reference"] = [{p: _api_page(p)} for p in order]
        if "Benchmarks" in entry:
            tables = [{p.stem: f"benchmarks/results/{p.name}"} for p in _results()]
            entry["Benchmarks"] = [*entry["Benchmarks"], {"Result tables": tables}]
    return config


def on_files(files: Files, config: Any) -> Files:
    """Adds the generated pages to the site."""
    generated = {"reference/config.md": yaml_reference.markdown(), **api_pages()}
    for path in _results():
        generated[f"benchmarks/results/{path.name}"] = path.read_text(encoding="utf-8")
    for uri, content in generated.items():
        files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Fills the tables that pages mark as generated."""
    return family_table.fill(markdown)
