"""The front door and the docs site: the README's first commands, and a YAML reference that
lists every key the config loader accepts (observed from the loader, not from the generator)."""

from __future__ import annotations

import importlib.util
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
import yaml

from search.config import _checks, load_preset
from search.config._search import SearchConfig
from search.config._trial import TrialConfig
from spaces._errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    """docs/_hooks/yaml_reference.py, the module the docs build renders the reference with."""
    path = ROOT / "docs" / "_hooks" / "yaml_reference.py"
    spec = importlib.util.spec_from_file_location("yaml_reference", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("yaml_reference", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> tuple[set[str], str]:
    generator = _generator()
    return {key.path for key in generator.config_keys()}, generator.markdown()


def _accepted_keys(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every key the loader checks a search config's sections against, recorded from its own
    ``known_keys`` calls while it loads a config with every section given."""
    seen: set[str] = set()
    real = _checks.known_keys

    def record(data, allowed, path):
        allowed = list(allowed)
        in_trial_config = sys._getframe(1).f_locals.get("cls") is TrialConfig
        # a trial config's own top level (family, hyper, ...) and a family's hyper-parameters
        # are not search-config keys: the search config builds them from space and fixed
        if not in_trial_config and not path.startswith("hyper"):
            seen.update(_checks.join(path, key) for key in allowed)
        return real(data, allowed, path)

    monkeypatch.setattr(_checks, "known_keys", record)
    data = load_preset("digits-quick").to_dict()
    data.setdefault("loading", {"stream": None})  # to_dict leaves out a default section
    SearchConfig.from_dict(data)
    return seen


def test_the_reference_lists_every_key_the_loader_accepts(monkeypatch, reference):
    keys, page = reference
    accepted = _accepted_keys(monkeypatch)
    sections = {k.split(".")[0] for k in accepted if "." in k}
    assert {"loading", "train", "measure", "resources", "scheduler", "ssn"} <= sections
    assert len(accepted) > 60  # every section's keys were seen, not only the top level's
    assert accepted - keys == set()
    for key in accepted:
        assert f"| `{key}` |" in page


def test_the_reference_lists_every_dataset_declaration_and_dimension_field(reference):
    from objectives._custom import declare
    from spaces._dsl import _KINDS, Space

    keys, _ = reference
    with pytest.raises(ConfigError) as err:
        declare({"unknown-key": 1})
    declared = set(re.findall(r"'(\w+)'", str(err.value).split("allowed:")[1])) - {"name"}
    assert len(declared) >= 8 and {f"dataset.{k}" for k in declared} <= keys
    for kind in _KINDS:
        with pytest.raises(ConfigError) as err:
            Space.from_dict({"x": {"type": kind, "unknown-key": 1}})
        fields = re.findall(r"'(\w+)'", str(err.value).split("allowed:")[1])
        assert fields and {f"space.<dimension>.{f}" for f in fields} <= keys


def test_the_reference_says_what_each_key_allows(reference):
    rows = {key.path: key for key in _generator().config_keys()}
    assert "moasha" in rows["scheduler.name"].allowed
    assert "adamw" in rows["train.optimizer"].allowed
    assert str(2**32 - 1) in rows["seed"].allowed
    assert rows["trials"].default == "16"
    assert rows["scheduler.reduction_factor"].default == "3.0"
    assert rows["measure.intensity_g_per_kwh"].default == "475.0"


class _Cells(HTMLParser):
    """The text of each table row of an HTML page, and any attribute set on a cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.attributes: list[list[tuple[str, str | None]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []
            if attrs:
                self.attributes.append(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_the_reference_reads_whole_in_the_built_page(reference):
    """Each row's text, rendered with the site's own Markdown extensions (mkdocs.yml), is the
    declaration's: the attr_list extension once took ``{name, options}`` for attributes, and
    ``algorithm`` read "the search algorithm: a name or" on the site."""
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    extensions = [e if isinstance(e, str) else next(iter(e)) for e in site["markdown_extensions"]]
    cells = _Cells()
    cells.feed(markdown.markdown(reference[1], extensions=extensions))
    assert cells.attributes == []
    shown = {row[0]: row for row in cells.rows if row}
    for key in _generator().config_keys():
        *_, allowed, what = shown[key.path]
        assert (allowed, what) == (_as_shown(key.allowed), _as_shown(key.description)), key.path
    assert "a name or {name, options}" in shown["algorithm"][4]


def test_the_extras_and_the_commands_are_named_alike_everywhere() -> None:
    """pyproject's extras, the README's and the install page's lists of them (which said `all`
    was four of them, without `loggers`), and the README's command list (which left out
    `families` and `indicators`) against the parser's commands."""
    import tomllib

    from search.cli._parser import build_parser

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (everything,) = extras["all"]
    bundled = re.search(r"\[(.*)\]", everything).group(1).split(",")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    row = re.search(r"^\| `all` \| (.*?) \|", install, re.M).group(1)
    for name in bundled:
        assert f"`{name}`" in row, name
        assert f"| `{name}` |" in install and f"`{name}`" in readme, name
    block = readme[readme.index("## The commands") :].split("```")[1]
    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and "launch" in a.choices).choices
    for command in commands:
        assert f"search {command}" in block, command


def test_the_quick_run_takes_one_figure_everywhere() -> None:
    """The preset's comment said "under 3 minutes", config.md "under half a minute", the
    README 13 s: the README's measured figure, with its conditions, is the one."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    seconds = re.search(r"none failed or refused, (\d+) s\s+from the command", readme).group(1)
    said = f"{seconds} s"
    preset = (ROOT / "search" / "config" / "presets" / "digits-quick.yaml").read_text()
    comment = " ".join(line for line in preset.splitlines() if line.startswith("#"))
    config = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    started = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert f"in {said} on two idle CPU cores" in comment and "minutes" not in comment
    assert f"`digits-quick` (the default; {said} from the command" in config
    assert f"{said} from the command to the\nprompt on two idle CPU cores" in started


def test_a_key_is_never_broken_mid_word_in_the_reference() -> None:
    """The theme breaks code anywhere to fit a column: the key column read `train_siz e`. The
    site's own stylesheet keeps the code of a table's first column on one line."""
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    (sheet,) = site["extra_css"]
    css = (ROOT / "docs" / sheet).read_text(encoding="utf-8")
    rule = re.search(r"td:first-child code \{([^}]*)\}", css)
    assert rule and "white-space: nowrap" in rule.group(1)
    assert "| `train_size` |" in _generator().markdown()  # the key is a code span, first


def _as_shown(text: str) -> str:
    """Markdown text as a browser shows it: code spans without their backticks, a link as
    its text."""
    return re.sub(r"\[([^]]+)\]\([^)]+\)", r"\1", text.replace("\n", " ")).replace("`", "")


def test_the_readme_is_a_front_door_whose_first_commands_set_up_run_and_test():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    first = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = re.search(r"^python -m pytest .*$", ci, re.M).group(0)
    for command in (
        "python3 -m venv .venv",
        "pip install torch==2.13.0 && pip install -e '.[dev]'",
        "search launch ",
        test_command,
    ):
        assert command in first
    assert "mkdocs build --strict" in ci
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_the_family_table_lists_every_family_and_hyper_parameter():
    """Generated from the registry: ``mlp`` once showed ``hidden`` and not ``depth``/``width``."""
    spec = importlib.util.spec_from_file_location(
        "family_table", ROOT / "docs" / "_hooks" / "family_table.py"
    )
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    from spaces._build import FAMILIES, hyper_keys

    page = (ROOT / "docs" / "spaces.md").read_text(encoding="utf-8")
    assert table.MARKER in page and table.MARKER not in table.fill(page)
    rows = {line.split("|")[1].strip(" `"): line for line in table.markdown().splitlines()[2:]}
    for name in FAMILIES:
        builder = FAMILIES.get(name)
        base = getattr(builder, "hyper_base", None)
        if base is None:
            assert all(f"`{k}" in rows[name] for k in hyper_keys(builder)), name
        else:  # a variant: named in its base's row
            assert any(f"`{name}`" in row for row in rows.values()), name
    assert "`depth=None`" in rows["mlp"] and "`width=None`" in rows["mlp"]
