"""The unaided benchmark's metric and verdicts, on figures computed by hand, and the configs its
arms launch (checked by ``search check``, the user's own command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._support.bundles import load_benchmark

ROOT = Path(__file__).parents[2]


def _write(root: Path, name: str, arm: str, accuracies: list[float], params: int) -> None:
    for seed, accuracy in enumerate(accuracies):
        folder = root / name / arm / f"seed{seed}"
        folder.mkdir(parents=True)
        result = {"test_accuracy": accuracy, "params": params, "search_wall_s": 240.0}
        (folder / "result.json").write_text(json.dumps(result))


def test_the_verdicts_follow_the_protocol(tmp_path):
    bench = load_benchmark("unaided")
    _write(tmp_path, "digits", "npas", [0.95, 0.96, 0.97, 0.96, 0.96], 1500)
    _write(tmp_path, "digits", "hand", [0.90, 0.91, 0.92, 0.91, 0.91], 1442)
    _write(tmp_path, "digits", "tpe", [0.94, 0.95, 0.96, 0.95, 0.95], 1800)
    _write(tmp_path, "digits", "random", [0.93, 0.94, 0.95, 0.94, 0.94], 1700)
    _write(tmp_path, "osu_leaf", "npas", [0.5, 0.6], 3000)
    text = bench.table(tmp_path)
    assert "- digits: npas − hand +0.0500" in text and ": beats the hand design" in text
    assert "npas ranks first on mean" in text
    assert "- osu_leaf: partial" in text
    assert "| digits | hand | 0.9000 | 0.9100 | 0.9200 | 0.9100 | 0.9100 |" in text
    assert "| osu_leaf | npas | 0.5000 | 0.6000 | — | — | — |" in text  # seeds not run yet
    _write(tmp_path, "acsf1", "npas", [0.7], 4000)
    assert "| acsf1 | npas | 1 | 0.7000 ± — | — |" in bench.table(tmp_path)  # no nan
    _write(tmp_path / "over", "digits", "npas", [0.95, 0.96, 0.97, 0.96, 0.96], 2500)
    for arm in ("hand", "tpe", "random"):
        _write(tmp_path / "over", "digits", arm, [0.90, 0.91, 0.92, 0.91, 0.91], 1442)
    assert "does not beat the hand design (a recommendation over" in bench.table(tmp_path / "over")
    moved = tmp_path / "digits" / "tpe" / "seed3" / "result.json"
    moved.write_text(json.dumps({**json.loads(moved.read_text()), "engine": "abc123"}))
    assert "- digits: its runs come from 2 npas commits" in bench.table(tmp_path)
    assert bench.engine() not in ("", "unknown")  # this checkout's commit


def test_an_arm_level_with_npas_is_a_tie_not_a_win(tmp_path):
    bench = load_benchmark("unaided")
    # OSULeaf's five seeds: 1,123 of 1,210 test rows right in both arms, summed in other orders
    _write(tmp_path, "osu_leaf", "npas", [k / 242 for k in (230, 234, 212, 224, 223)], 1800)
    _write(tmp_path, "osu_leaf", "tpe", [k / 242 for k in (230, 226, 220, 224, 223)], 1800)
    _write(tmp_path, "osu_leaf", "random", [0.9, 0.9, 0.9, 0.9, 0.9], 1700)
    _write(tmp_path, "osu_leaf", "hand", [0.4, 0.5, 0.4, 0.5, 0.4], 3550)
    assert "npas ties tpe for first on mean" in bench.table(tmp_path)
    _write(tmp_path / "below", "osu_leaf", "npas", [0.90, 0.91, 0.89, 0.90, 0.90], 1800)
    _write(tmp_path / "below", "osu_leaf", "tpe", [0.90, 0.91, 0.89, 0.90, 0.91], 1800)
    _write(tmp_path / "below", "osu_leaf", "random", [0.88, 0.89, 0.87, 0.88, 0.88], 1800)
    _write(tmp_path / "below", "osu_leaf", "hand", [0.4, 0.5, 0.4, 0.5, 0.4], 3550)
    assert "npas ranks below tpe on mean" in bench.table(tmp_path / "below")


@pytest.mark.parametrize("arm", ["npas", "tpe"])
def test_each_arm_s_config_is_one_search_check_accepts(tmp_path, arm):
    bench = load_benchmark("unaided")
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(bench.search_config("italy_power", arm, 0)))
    done = subprocess.run([sys.executable, "-m", "search", "check", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "conv1d" in done.stdout


def test_protocol_2_gives_the_plain_arms_no_start_points_and_keeps_v1_s_list(
    monkeypatch,
):
    bench = load_benchmark("unaided")
    v1 = bench.protocol()
    monkeypatch.setattr(bench, "PROTOCOL", bench.PROTOCOLS["v2"][0])
    v2 = bench.protocol()
    assert (v1["protocol"], v2["protocol"]) == ("unaided-v1", "unaided-v2")
    for key in ("datasets", "hand", "seeds", "metric", "readings", "target"):
        assert v2[key] == v1[key], key
    assert bench.search_config("italy_power", "tpe", 0)["start"] == []
    assert bench.search_config("italy_power", "random", 0)["start"] == []
    assert "start" not in bench.search_config("italy_power", "npas", 0)
    assert str(v2["registered"]) == "2026-11-29"


def _kept_from(monkeypatch, before: str, after: str) -> tuple[Any, dict, dict]:
    """The benchmark module and two protocols, ``after`` keeping ``before``'s list, arms, hand
    designs, seeds, metric, readings and analysis word for word (asserted)."""
    bench = load_benchmark("unaided")
    read = []
    for name in (before, after):
        monkeypatch.setattr(bench, "PROTOCOL", bench.PROTOCOLS[name][0])
        read.append(bench.protocol())
    for key in ("question", "machine", "datasets", "arms", "hand", "seeds", "metric",
                "readings", "analysis"):
        assert read[1][key] == read[0][key], key
    return bench, read[0], read[1]


def test_protocol_3_keeps_protocol_2_s_list_arms_and_analysis(monkeypatch):
    bench, _, v3 = _kept_from(monkeypatch, "v2", "v3")
    assert (v3["protocol"], v3["engine"]) == ("unaided-v3", "unaided-engine-3")
    assert "target" not in v3  # met on protocol 2's engine, not run again
    assert bench.search_config("digits", "tpe", 0)["start"] == []
    assert "start" not in bench.search_config("digits", "npas", 0)
    assert v3["registered"]


def test_protocol_4_keeps_protocol_3_s_list_arms_and_analysis_and_orders_its_parts(monkeypatch):
    _, _, v4 = _kept_from(monkeypatch, "v3", "v4")
    assert v4["protocol"] == "unaided-v4" and str(v4["registered"]) == "2026-12-02"
    assert sorted(v4["order"]) == sorted(v4["datasets"])  # every dataset, once
    assert v4["order"][0] == "italy_power" and "futility" in v4


def test_a_draft_protocol_is_refused(tmp_path, monkeypatch):
    bench = load_benchmark("unaided")
    draft = yaml.safe_load(bench.PROTOCOLS["v2"][0].read_text()) | {"registered": None}
    (tmp_path / "draft.yaml").write_text(yaml.safe_dump(draft))
    monkeypatch.setitem(bench.PROTOCOLS, "v2", (tmp_path / "draft.yaml", tmp_path / "out"))
    monkeypatch.setattr(sys, "argv", ["unaided.py", "--protocol", "v2"])
    with pytest.raises(SystemExit, match="a draft, not registered"):
        bench.main()
    assert not (tmp_path / "out").exists()


def test_a_run_outside_the_protocol_is_refused():
    with pytest.raises(SystemExit, match="not in the protocol"):
        load_benchmark("unaided")._chosen("cifar10", ["digits", "mnist"], "datasets")


def test_the_dev_table_pairs_arms_by_the_seeds_both_ran(tmp_path):
    dev = load_benchmark("unaided_dev")
    for arm, accuracies in (("e4", [0.6, 0.7, 0.8, 0.9]), ("e1", [0.5, 0.5, 0.5]),
                            ("e5", [0.7])):  # fmt: skip
        for seed, accuracy in enumerate(accuracies):
            folder = tmp_path / "synth" / arm / f"seed{seed}"
            folder.mkdir(parents=True)
            (folder / "result.json").write_text(json.dumps({"test_accuracy": accuracy}))
    table = dev.paired_table(tmp_path, [("e4", "e1")])
    assert "| synth | e4 − e1 | 3 | +0.200 [-0.048, +0.448] | 0.0742 |" in table
    assert "| synth | e5 | 1 | 0.700 ± — | 0.700 |" in dev.table(tmp_path)  # one seed: no std


def test_the_generated_dev_sets_are_the_same_every_time():
    dev = load_benchmark("unaided_dev")
    first, again = dev.make_shapes(), dev.make_shapes()
    assert all((first[k] == again[k]).all() for k in first)
    assert first["x_train"].shape == (480, 1, 16, 16) and set(first["y_train"]) == {0, 1, 2, 3}
    assert dev.make_synth()["x_train"].shape == (280, 20)


def test_an_interrupted_run_is_set_aside_and_nothing_it_recorded_is_lost(tmp_path):
    set_aside = load_benchmark("unaided").set_aside
    folder = tmp_path / "italy_power" / "npas" / "seed0"
    assert set_aside(folder) is None  # never started
    folder.mkdir(parents=True)
    assert set_aside(folder) is None  # empty: nothing to keep
    for n in (1, 2):
        (folder / "run").mkdir(parents=True)
        (folder / "run" / "npas.db").write_text(f"try {n}")
        aside = set_aside(folder)
        assert aside == folder.with_name(f"interrupted-seed0-{n}") and not folder.exists()
        assert (aside / "run" / "npas.db").read_text() == f"try {n}"
