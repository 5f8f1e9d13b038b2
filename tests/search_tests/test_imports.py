"""Optional dependencies (search._imports): the extras table agrees with pyproject.toml, the
core imports none of them, and each use site, with its module made unimportable as on an
install without the extra, stops with one error naming the extra to install."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import torch
from torch import nn

from search._imports import EXTRAS, install_command, require
from search.bundle._portable import write_onnx
from search.cli import main
from search.errors import MissingExtraError, NpasError
from search.record._storage import open_storage
from tests._support.modules import block
from tests.search_tests.studies import ACC_PARAMS, stored_study

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OPTIONAL = PROJECT["optional-dependencies"]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (``psycopg[binary]>=3.1`` → psycopg)."""
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_extras_table_is_pyprojects_extras() -> None:
    distributions = metadata.packages_distributions()
    for module, extra in EXTRAS.items():
        [dist] = {_name(d) for d in distributions[module]}
        assert dist in {_name(r) for r in OPTIONAL[extra]}, f"{module}: {dist} not in [{extra}]"
    named = {_name(d) for m in EXTRAS for d in distributions[m]}
    optional = set(EXTRAS.values())
    assert {_name(r) for e in optional for r in OPTIONAL[e]} == named, "a module missing here"
    assert not named & {_name(r) for r in PROJECT["dependencies"]}, "an extra is in the core"
    assert OPTIONAL["all"] == [f"npas[{','.join(e for e in OPTIONAL if e in optional)}]"]
    assert "npas[all]" in OPTIONAL["dev"], "CI installs .[dev]: every tier needs every extra"


def test_require_imports_or_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert require("onnx", purpose="x").__name__ == "onnx"
    block(monkeypatch, "onnx")
    with pytest.raises(MissingExtraError, match=r"^x needs onnx, .*pip install 'npas\[onnx\]'$"):
        require("onnx", purpose="x")
    assert issubclass(MissingExtraError, NpasError)
    assert install_command("plotly.graph_objects") == "pip install 'npas[report]'"


@pytest.mark.slow  # a fresh interpreter importing torch and Ray
def test_the_core_imports_no_extra() -> None:
    """What `search launch`, `pareto`, `status` and `export` load, with every extra blocked
    (as after `pip install npas`); the report alone says it needs its extra."""
    probe = (
        "import sys\n"
        f"for m in {sorted(EXTRAS)!r}: sys.modules[m] = None\n"
        "import objectives, spaces, search.trial, search.run, search.pareto, search.bundle\n"
        "from search.cli import main\n"
        "assert main(['presets']) == 0\n"
        "from search.errors import MissingExtraError\n"
        "try:\n"
        "    import search.report\n"
        "except MissingExtraError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == (
        "the report needs matplotlib, which is not installed: pip install 'npas[report]'"
    )


def test_search_report_without_plotly_names_the_report_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in sys.modules if n == "search.report" or n.startswith("search.report.")]:
        monkeypatch.delitem(sys.modules, name)  # imported again, as in a fresh process
    block(monkeypatch, "plotly")
    assert main(["report", "--out", str(tmp_path / "report")]) == 1
    err = capsys.readouterr().err
    assert "the report needs plotly" in err and "pip install 'npas[report]'" in err
    assert not (tmp_path / "report").exists()


def test_search_dashboard_without_optuna_dashboard_names_the_dashboard_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/npas.db"
    stored_study(url, "s", [{"accuracy": 0.5, "params": 10}], ACC_PARAMS)
    block(monkeypatch, "optuna_dashboard")
    assert main(["dashboard", "--storage", url]) == 1
    err = capsys.readouterr().err
    assert "the dashboard needs optuna_dashboard" in err and "'npas[dashboard]'" in err


def test_an_onnx_export_without_onnxscript_names_the_onnx_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    block(monkeypatch, "onnxscript")
    record = write_onnx(nn.Linear(4, 2).eval(), torch.zeros(2, 4), tmp_path)
    assert record["file"] is None and record["program"] is None
    assert "pip install 'npas[onnx]'" in record["error"]
    assert record["error"].count("pip install") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_postgresql_storage_without_psycopg_names_the_postgres_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    block(monkeypatch, "psycopg")
    # Refused before any connection: no server listens on port 1.
    with pytest.raises(MissingExtraError, match=r"pip install 'npas\[postgres\]'"):
        open_storage("postgresql://npas@127.0.0.1:1/db")
