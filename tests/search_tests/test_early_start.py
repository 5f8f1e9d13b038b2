"""A launch's start: its first line before anything heavy loads, a line for each stage that
keeps the user waiting over a second, and the local Ray started while the modules load only
where the command line and the config's text ask for a local Ray without user code."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest

from search import _early_start
from search.run import _stages
from search.run._stages import Stage

ROOT = Path(__file__).resolve().parents[2]


def test_the_start_up_modules_load_nothing_heavy() -> None:
    probe = (
        "import sys, search._early_start, search.run._stages, search.run._ray_session\n"
        "print([m for m in ('torch', 'ray', 'optuna', 'sklearn') if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_a_quick_answer_comes_alone_and_a_launch_says_what_it_loads_first(tmp_path: Path):
    """A typo is answered before torch loads (a quarter of a second): the error alone (it came
    after "[npas] loading torch …"); a launch that goes on says what it loads before any
    other line, as torch starts to load."""
    (tmp_path / "bad.yaml").write_text("dataset: digits\ntrails: 4\naddress: 10.0.0.1:1\n")
    done = subprocess.run([sys.executable, "-m", "search", "launch", "bad.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "search launch: error: bad.yaml: unknown key 'trails' (value 4) (did you mean 'trials'?)"
    ]
    (tmp_path / "a-file").write_text("")  # refused once the preset is loaded (with torch)
    done = subprocess.run([sys.executable, "-m", "search", "launch", "--out", "a-file"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and lines[0] == "[npas] loading torch, Optuna and Ray Tune …"
    assert "which is a file" in lines[-1] and done.stdout == "", done.stderr


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stages, "SLOW_S", 0.05)
    monkeypatch.setattr(_stages, "_command_start", time.monotonic() - 2.0)


def test_a_slow_stage_says_what_it_does_once_and_a_quick_one_says_nothing(fast, capsys):
    with Stage("starting something slow"):
        time.sleep(0.3)
    with Stage("something quick"):
        pass
    with Stage("something slow but quiet", enabled=False):
        time.sleep(0.3)
    time.sleep(0.1)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("[npas] 2.")
    assert lines[0].endswith(" s: starting something slow …")


def test_a_stage_ended_from_elsewhere_before_it_is_slow_says_nothing(fast, capsys):
    stage = Stage("waiting for a result").start()
    stage.start()  # set up twice: one timer
    stage.end()
    time.sleep(0.2)
    assert capsys.readouterr().err == ""


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"address": None, "imports": [], "config": None, "preset": None,
                                 "quiet": True, **given})  # fmt: skip


@pytest.mark.parametrize(
    ("given", "early"),
    [
        ({}, True),  # the quick run: the digits-quick preset
        ({"preset": "mnist-tiny"}, True),
        ({"preset": "no-such-preset"}, True),  # the launch names the mistake, stops Ray
        ({"address": "local"}, False),  # named on the command line: started as before
        ({"imports": ["plugin.py"]}, False),  # user code travels in a runtime_env
        ({"config": "s.yaml"}, False),  # the user's file may hold a mistake: checked first
        ({"out": "a-file"}, False),  # an option may name something wrong: checked first
        ({"trials": 0}, False),
    ],
)
def test_ray_starts_early_only_for_a_preset_on_a_local_ray_without_user_code(
    monkeypatch, given, early
) -> None:
    started: list[str | None] = []

    def start(address: str | None) -> bool:
        started.append(address)
        return True

    monkeypatch.setattr("search.run._ray_session.start_ray", start)
    monkeypatch.setattr(_early_start, "_load_modules", lambda: None)
    assert _early_start.start_ray_early(_args(**given), "digits-quick") is early
    assert started == ([None] if early else [])


def test_without_a_command_a_slow_stage_says_no_time_since_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(_stages, "SLOW_S", 0.05)
    monkeypatch.setattr(_stages, "_command_start", None)  # launch() called from Python
    with Stage("starting something slow"):
        time.sleep(0.3)
    assert capsys.readouterr().err == "[npas] starting something slow …\n"
