"""`search replay` on the quick run's study: the what-if table, its figure, its errors."""

from __future__ import annotations

import json

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
    assert "The true front of the 16 recorded configurations" in lines[-1]
    assert "replayed 9/9" in captured.err
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


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--optimiser", "tpee"], "tpee"),
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
