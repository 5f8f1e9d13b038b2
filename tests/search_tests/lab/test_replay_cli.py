"""`search replay` on the quick run's study: the what-if table, its figure, its errors."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from search.cli import main
from tests.search_tests.disks import UNWRITABLE, unwritable


def test_the_what_if_table_of_the_quick_run(quick_run, tmp_path, capsys):
    png = tmp_path / "replay.png"
    argv = ["replay", "--run", str(quick_run), "--seeds", "3", "--jobs", "2", "--plot", str(png)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("What if 'digits-quick' (16 curves of 8 epochs")
    arms = [line.split()[0] for line in lines if line.startswith(("fifo", "moasha"))]
    assert arms == ["fifo", "moasha-stopping", "moasha-promotion"]
    assert any(line.startswith("foresight ") for line in lines)
    assert max(len(line) for line in lines) <= 100  # its notes wrapped (the verdict took 376)
    said = captured.out.replace("\n  ", " ").splitlines()  # each note on one line again
    assert "The true front of the 16 recorded configurations" in said[-2]
    # 16 curves of 8 epochs: too few for a front to survive MOASHA's rungs, and it says so
    assert said[-1].startswith("Verdict: early stopping cannot pay here: 16 curves are too "
                               "few: one trial in 9 survives")  # fmt: skip
    assert "needs about 90 recorded configurations" in said[-1]
    assert "\r" not in captured.err and "replayed" not in captured.err  # not a terminal
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_rows_hold_the_figures(quick_run, capsys):
    argv = ["replay", "--run", str(quick_run), "--seeds", "2", "--jobs", "1",
            "--scheduler", "asha", "--workers", "4", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workers"] == 4 and out["optimiser"] == "tpe"
    asha = out["arms"][1]
    assert asha["arm"] == "asha" and len(asha["reach_ci95"]) == 2
    assert asha["mean_started"] >= asha["mean_completed"] > 0
    assert out["limits"][0].startswith("16 curves are too few") and out["verdict"]


def test_the_option_is_named_as_the_config_key_and_the_old_name_still_works(quick_run, capsys):
    argv = ["replay", "--run", str(quick_run), "--seeds", "1", "--jobs", "1", "--scheduler",
            "asha", "--format", "json"]  # fmt: skip
    assert main([*argv, "--algorithm", "random"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["optimiser"] == "random" and "deprecated" not in captured.err
    assert main([*argv, "--optimiser", "random"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["optimiser"] == "random"
    assert "--optimiser is deprecated: use --algorithm" in captured.err


def test_progress_is_drawn_on_a_terminal_only(quick_run):
    """A real pseudo-terminal as stderr gets the rewritten progress line."""
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-m", "search", "replay", "--run", str(quick_run), "--seeds",
               "1", "--jobs", "1", "--scheduler", "asha"]  # fmt: skip
    master, slave = pty.openpty()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=slave, env=env,
                              timeout=300, check=False)  # fmt: skip
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert done.returncode == 0, seen[-2000:]
    assert b"\r[npas] replayed 1/3" in seen and b"\r[npas] replayed 3/3" in seen
    assert b"Verdict: " in done.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--algorithm", "tpee"], "tpee"),
        (["--name", "nope"], "--name: got 'nope'"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_bad_arguments_say_what_is_allowed(quick_run, capsys, extra, message):
    assert main(["replay", "--run", str(quick_run), *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_search_that_ran_under_moasha_is_replayed_with_a_warning(table):
    from search.lab._whatif import what_if

    table.config["scheduler"] = {**table.config["scheduler"], "name": "moasha"}
    text = what_if(table, scheduler="moasha", kinds=("stopping",), seeds=1).text()
    assert "ran under 'moasha', so only the trials it let finish are replayed" in text


def _strict(constant: str) -> None:
    raise AssertionError(f"not JSON: {constant}")


def test_json_of_an_arm_that_never_reaches_fifo_is_strict_json(quick_run, capsys):
    # On one worker, MOASHA's stopping type never reaches FIFO's final hypervolume within the
    # horizon: its time is infinite, which Python's json wrote as `Infinity` (not JSON).
    argv = ["replay", "--run", str(quick_run), "--seeds", "2", "--scheduler", "moasha",
            "--type", "stopping", "--workers", "1", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=_strict)
    never = [arm for arm in out["arms"] if arm["reach_s_median"] is None]
    assert never and all(arm["reach_median"] is None for arm in never)


@pytest.mark.parametrize("where", UNWRITABLE)
def test_a_plot_that_cannot_be_saved_is_refused_before_replaying(quick_run, tmp_path, capsys,
                                                                 where):  # fmt: skip
    with unwritable(tmp_path / "dest", where) as folder:
        png = folder / "replay.png"
        argv = ["replay", "--run", str(quick_run), "--seeds", "1", "--plot", str(png)]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "OutputError: --plot" in err and "replayed" not in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert not png.exists()
        if where == "full":
            assert sorted(p.name for p in folder.iterdir()) == ["filler"]


def test_trusted_rungs_are_replayed_beside_plain_moasha_when_asked(quick_run, capsys):
    """``--trust-by`` adds stopping MOASHA with its rungs trusted that way, so that a user
    judges ``scheduler.trust_by`` on their own curves; refused where it cannot run."""
    argv = ["replay", "--run", str(quick_run), "--seeds", "2", "--jobs", "1", "--format", "json"]
    assert main([*argv, "--type", "stopping", "--trust-by", "audit"]) == 0
    arms = {row["arm"]: row for row in json.loads(capsys.readouterr().out)["arms"]}
    assert list(arms) == ["fifo", "moasha-stopping", "moasha-trust-audit", "foresight"]
    assert arms["moasha-trust-audit"]["mean_started"] >= arms["moasha-trust-audit"][
        "mean_completed"] > 0  # fmt: skip
    for bad in (["--scheduler", "asha"], ["--type", "promotion"]):
        assert main([*argv, *bad, "--trust-by", "chain"]) == 2
        assert "--trust-by: got 'chain'" in capsys.readouterr().err
