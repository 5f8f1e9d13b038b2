"""Files that are not what a config says they are, refused by ``search check`` in one line
(exit 2) and never waited on: a FIFO, a device or a symlink loop as the dataset, and config
files that YAML or UTF-8 would take wrongly (issue 60, items 4 and 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check(folder: Path, config: str = "search.yaml") -> subprocess.CompletedProcess:
    """``search check`` in a fresh interpreter, killed (by ``subprocess.run``, by pid) if it is
    still waiting after 120 s."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "search", "check", config], cwd=folder, capture_output=True,
            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise AssertionError("`search check` was still waiting after 120 s") from None


def _one_line(run: subprocess.CompletedProcess) -> str:
    lines = [x for x in run.stderr.strip().splitlines() if not x.startswith("[npas] ")]
    assert run.returncode == 2 and len(lines) == 1, (run.returncode, run.stderr[-3000:])
    return lines[0]


def _fifo(folder: Path) -> None:
    os.mkfifo(folder / "d.npz")  # no writer: an open() for reading waits for one


def _loop(folder: Path) -> None:
    (folder / "d.npz").symlink_to("e.npz")
    (folder / "e.npz").symlink_to("d.npz")


def _device(folder: Path) -> None:
    (folder / "d.npz").symlink_to("/dev/zero")


@pytest.mark.slow  # `search check` in a fresh interpreter importing torch
@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_fifo, "d.npz is a FIFO (named pipe), not a regular file"),
        (_loop, "d.npz cannot be opened: it is a symlink loop"),
        (_device, "/dev/zero is a device, not a regular file"),
    ],
    ids=["fifo", "symlink loop", "device"],
)
def test_a_dataset_that_is_no_regular_file_is_refused_at_once(tmp_path, make, said):
    """Before, a FIFO kept `search check` waiting for ever and a loop gave a RuntimeError's
    traceback."""
    make(tmp_path)
    config = {"dataset": {"name": "hostile", "npz": "d.npz"}, "space": {"family": ["mlp"]}}
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    line = _one_line(_check(tmp_path))
    assert line.startswith("search check: error: ") and said in line, line


CONFIG = "dataset: digits\nspace:\n  family: [mlp]\n  budget: [400, 800]\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: first\n" + CONFIG + "trials: 2\nname: second\n",
         "the key 'name' is given twice in one mapping (lines 1 and 7); allowed: each key once"),
        (CONFIG + "train:\n  epochs: 2\n  lr: 0.1\n  epochs: 5\n",
         "the key 'epochs' is given twice in one mapping (lines 6 and 8)"),
        (CONFIG.encode() + b"# caf\xe9 au lait\ntrials: 2\n",
         "byte 0xe9 on line 5 is not UTF-8; allowed: a file saved as UTF-8"),
        (CONFIG.replace("[400, 800]", "{low: 400, high: 1000000000000000000000000000000}"),
         "space.budget: got 1000000000000000000000000000000; allowed: an int >= 1 and <= "
         "1000000000000"),
        ("dataset: digits\nspace:\n  family: [mlp]\nfixed:\n  budget: 1000000000001\n",
         "fixed.budget: got 1000000000001; allowed: an int >= 1 and <= 1000000000000"),
    ],
    ids=["name twice", "nested key twice", "latin-1 comment", "budget range 1e30",
         "budget 1e12+1"],
)  # fmt: skip
def test_a_config_read_wrongly_before_is_refused_in_one_line(tmp_path, capsys, text, said):
    """Before, YAML kept the last of two keys silently (the search was named 'second'), a
    Latin-1 byte gave a UnicodeDecodeError traceback and a budget of 10^30 passed `check`, then
    every trial failed on an overflow in torch."""
    from search.cli import main

    path = tmp_path / "search.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"search check: error: {path}: ") and len(err.splitlines()) == 1, err
    assert said in err, err


def test_the_largest_budget_is_allowed():
    from search.config import load_config

    config = load_config({"dataset": "digits", "space": {"family": ["mlp"]},
                          "fixed": {"budget": 10**12}})  # fmt: skip
    assert config.fixed["budget"] == 10**12


def _loop_of(folder: Path, name: str) -> Path:
    """``name`` in ``folder``: a link to a link back to it."""
    (folder / name).symlink_to(f"{name}.other")
    (folder / f"{name}.other").symlink_to(name)
    return folder / name


def test_a_symlink_loop_as_an_import_or_a_run_folder_is_said_in_one_line(tmp_path, capsys):
    """Before, `search check` with ``imports: [a.py]`` and `search status --run DIR` each gave
    a RuntimeError's traceback (``Symlink loop from …``), as `launch --out` did (below)."""
    from search.cli import main

    _loop_of(tmp_path, "a.py")
    os.mkfifo(tmp_path / "f.py")
    for name in ("a.py", "f.py"):
        config = {"dataset": "digits", "space": {"family": ["mlp"]}, "imports": [name]}
        (tmp_path / "search.yaml").write_text(json.dumps(config))
        assert main(["check", str(tmp_path / "search.yaml")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert "imports[0]: " in err[0] and "a.py cannot be opened: it is a symlink loop" in err[0]
    assert err[1].endswith("f.py is not a regular file; allowed: a .py file"), err[1]
    loop = _loop_of(tmp_path, "runs")
    assert main(["status", "--run", str(loop)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"{loop / 'npas.db'}' does not exist" in err[0], err


@pytest.mark.slow  # `search launch` in a fresh interpreter importing torch
def test_a_symlink_loop_as_the_run_folder_is_refused_before_anything_runs(tmp_path):
    loop = _loop_of(tmp_path, "runs")
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "trials": 1}
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    run = subprocess.run(
        [sys.executable, "-m", "search", "launch", "search.yaml", "--out", str(loop)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert _one_line(run) == (f"search launch: error: out: got {str(loop)!r}, a symlink loop (a "
                              "link that leads back to itself); allowed: a folder")  # fmt: skip
