"""What the commands print fits a terminal and says a number one way (search._format): every
line within 100 columns, whole numbers as integers in text, JSON and CSV, a missing value
blank (never ``NaN``), and a value cut short marked and said where it is whole."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from search._format import WIDTH, clip_list, table_text, wrap, wrap_lines
from search.cli import main
from search.record import RayKey
from search.run._progress import Progress
from tests.search_tests.studies import stored_study

#: A real quick run's storage (the lab's: 16 trials of MLPs and ConvNets, digits-quick).
QUICK = Path(__file__).parent / "lab" / "digits-quick.db.gz"


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    with gzip.open(QUICK, "rb") as src, open(tmp_path / "npas.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return tmp_path


#: A whole number written as a float: ``15312.0`` (not a version's ``2.13.0``).
FLOAT_WHOLE = re.compile(r"(?<![\w.])\d+\.0(?![\w.+])")


def _said(argv: list[str], capsys: pytest.CaptureFixture, *, text: bool = True) -> str:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    wide = [line for line in (out + err).splitlines() if len(line) > WIDTH]
    assert not (text and wide), f"{len(wide[0])} columns: {wide[0]}"
    return out


@pytest.mark.parametrize("command", [["status"], ["trials"], ["pareto"],
                                     ["status", "--trial", "3"]])  # fmt: skip
def test_the_reading_commands_fit_100_columns_with_integers_and_no_nan(quick, capsys, command):
    out = _said([*command, "--run", str(quick)], capsys)
    assert "NaN" not in out and "nan" not in out.lower().split()
    assert not FLOAT_WHOLE.search(out), out  # 15312.0, 500.0: a whole number, as one


def test_json_and_csv_write_whole_numbers_as_integers_and_missing_as_null(quick, capsys):
    out = _said(["trials", "--run", str(quick), "--format", "json"], capsys, text=False)
    rows = json.loads(out)
    mlp = next(r for r in rows if r["family"] == "mlp")
    assert type(mlp["mlp.depth"]) is int and mlp["convnet.depth"] is None  # it said 3.0, NaN
    assert all(type(r["params"]) is int and type(r["flops_infer"]) is int for r in rows)
    out = _said(["pareto", "--run", str(quick), "--format", "csv"], capsys, text=False)
    assert not FLOAT_WHOLE.search(out.replace("+cpu", "")), out[:500]
    assert len(pd.read_csv(io.StringIO(out))) > 0


def test_a_long_front_and_a_long_why_are_cut_and_say_where_they_are_whole(tmp_path, capsys):
    """80 trials on the front (status printed them on one 324-column line) and an error of
    200 characters (trials cut it with "…" and said nothing)."""
    rows = [{"accuracy": 0.5 + i / 200, "params": 100.0 + i} for i in range(80)]
    rows.append({"state": "FAIL", "error": "Traceback …\nValueError: " + "no room " * 25})
    stored_study(f"sqlite:///{tmp_path}/npas.db", "wide", rows)
    out = _said(["status", "--run", str(tmp_path)], capsys)
    front = out.split("front:")[1].splitlines()[0].strip()  # on one line
    assert front.startswith("80 trial(s) [0, 1, 2")
    assert front.endswith("more] (search pareto lists them all)")
    out = _said(["trials", "--run", str(tmp_path)], capsys)
    assert "ValueError: no room" in out and "…" in out
    assert "search status --trial N, or --format json, has it whole" in " ".join(out.split())
    out = _said(["status", "--run", str(tmp_path), "--trial", "80"], capsys)
    assert " ".join(out.split()).count("no room") == 25  # whole, wrapped


def test_a_progress_line_is_wrapped_under_its_text(capsys) -> None:
    """A line of 151 columns (three objectives, their best values, the time left) is wrapped
    at a space, its next lines indented under its text."""
    view = Progress([("accuracy", "maximize"), ("params", "minimize"),
                     ("flops_infer", "minimize")], total=16)  # fmt: skip
    for i in range(3):
        view._add({RayKey.METRICS: "{}", "accuracy": 0.9 + i / 100, "params": 900.0 + i,
                   "flops_infer": 2664.0})  # fmt: skip
    view._print([])
    lines = capsys.readouterr().err.splitlines()
    assert len(" ".join(line.strip() for line in lines)) > WIDTH, "a line that needs wrapping"
    assert lines[0].startswith("[npas] 3/16 done") and all(len(line) <= WIDTH for line in lines)
    assert all(line.startswith(" " * 7) and line[7] != " " for line in lines[1:])


def test_the_rules() -> None:
    assert clip_list(list(range(3)), 20) == "[0, 1, 2]"
    assert clip_list(list(range(100)), 30) == "[0, 1, 2, 3, 4, 5, … 94 more]"
    assert clip_list(list(range(100)), 5) == "[0, … 99 more]"  # one item at least
    path = "/" + "x" * 120
    assert wrap(f"a path {path} stays whole").splitlines() == ["a path", f"  {path}",
                                                               "  stays whole"]  # fmt: skip
    wrapped = wrap_lines(["  first " + "word " * 30, "Traceback\n  line"])
    assert wrapped[0].splitlines()[1].startswith("    word") and wrapped[1:] == ["Traceback",
                                                                                 "  line"]
    frame = pd.DataFrame({"n": [1.0, float("nan")], "why": ["a\nlast line", "y" * 80]})
    text = table_text(frame)
    assert "NaN" not in text and "last line" in text and "y" * 59 + "…" in text
    assert "\n(a text of several lines shows its last, and … marks one cut to 60" in text


def test_an_empty_condition_shows_the_missing_mark_not_a_blank_line() -> None:
    """``cond_ray_gpu_ids`` is ``""`` on a machine without GPUs: `search pareto` printed a blank
    line in place of its key and value."""
    from search.cli._results import conditions_lines

    assert conditions_lines({"cond_python": "3.11.7", "cond_ray_gpu_ids": ""}) == [
        "  cond_python       3.11.7",
        "  cond_ray_gpu_ids  —",
    ]
