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
