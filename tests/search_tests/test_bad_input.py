"""Bad input is refused before anything starts: exit 2 (or 1), one line, no traceback, nothing
created, and never torch's advice to load an untrusted file unsafely."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from search.cli import main
from tests._support.configs import MINIMAL

ROOT = Path(__file__).resolve().parents[2]


def _refused(argv: list[str], capsys: pytest.CaptureFixture, code: int = 2) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    said = [line for line in err.strip().splitlines() if not line.startswith("[npas] ")]
    assert "Traceback" not in err and len(said) == 1, err  # beside the start-up lines
    return err


@pytest.mark.parametrize(
    ("out", "fragment"),
    [("a-file", "which is a file"), ("/proc/npas-run", "cannot be written")],
)
def test_an_unusable_run_folder_is_refused(tmp_path, capsys, out, fragment):
    if out == "a-file":
        out = str(tmp_path / "a-file")
        Path(out).write_text("not a folder")
    err = _refused(["launch", "--out", out, "--trials", "1"], capsys)
    assert fragment in err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("garbage", "HOST:PORT"),
        ("ray://127.0.0.1:10001", "ray://"),
        ("127.0.0.1:CLOSED", "nothing answers"),
    ],
)
def test_a_bad_cluster_address_is_refused_at_once(tmp_path, capsys, address, fragment):
    address = address.replace("CLOSED", str(_closed_port()))  # the same test ids everywhere
    err = _refused(["launch", "--out", str(tmp_path), "--address", address], capsys)
    assert fragment in err
    assert not (tmp_path / "npas.db").exists(), "no storage, no study"


# Ray's own `auto` also joins any Ray it finds running on this machine: get_ray_address_from_
# environment in ray/_private/services.py scans process command lines (_find_address_from_flag).
# The command runs with that scan hidden, so this test can never join another test's or a
# benchmark's Ray, whatever `launch` does.
AUTO = """
import sys
import ray._private.services
ray._private.services._find_address_from_flag = lambda flag: set()
from search.cli import main
from tests._support.configs import MINIMAL
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # a fresh interpreter importing torch and Ray
def test_address_auto_without_a_cluster_is_refused_at_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # Ray's temp folder, where `ray start` leaves its address (ray/_common/utils.py reads
    # RAY_TMPDIR first): empty, so no cluster is named.
    env["RAY_TMPDIR"] = str(tmp_path / "ray-tmp")
    out = tmp_path / "run"
    command = [sys.executable, "-c", AUTO, "launch", "--out", str(out), "--address", "auto"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("[npas] ")]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "got 'auto'" in lines[0]
    assert "ray start --head" in lines[0] and "leave --address out" in lines[0]
    assert not (out / "npas.db").exists() and not (out / "ray").exists(), "nothing created"
    assert not (tmp_path / "ray-tmp").exists(), "no Ray started"


def test_resources_beyond_this_machine_are_refused_before_ray(tmp_path, capsys):
    config = tmp_path / "big.yaml"
    data = {"dataset": "digits", "space": {"family": ["mlp"]}, "resources": {"cpu": 64}}
    config.write_text(yaml.safe_dump(data))
    err = _refused(["launch", str(config), "--out", str(tmp_path)], capsys)
    assert "cpu=64" in err and not (tmp_path / "npas.db").exists()


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"seed": 2**32}, "seed: got 4294967296; allowed: an int >= 0 and <= 4294967295"),
        ({"resources": {"cpu": 1e-6}}, "resources.cpu: got 1e-06"),
        ({"resources": {"cpu": 1, "gpu": 1e-6}}, "resources.gpu: got 1e-06"),
    ],
)
def test_a_seed_or_share_no_generator_or_ray_takes_is_refused_before_the_study(
    tmp_path, capsys, change, fragment
):
    """numpy and scikit-learn take seeds below 2**32 (a larger one crashed after the study was
    created); Ray keeps 4 decimals of a share (less rounded to nothing and crashed in Ray)."""
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"dataset": "digits", "space": {"family": ["mlp"]},
                                      **change}))  # fmt: skip
    err = _refused(["launch", str(config), "--out", str(tmp_path)], capsys)
    assert fragment in err and not (tmp_path / "npas.db").exists()


def test_a_budget_below_every_model_is_warned_at_launch(tmp_path, capsys):
    """Warned, not refused: the check is a bound over a few corners of the space, not a proof."""
    from search.config import load_config
    from search.run import launch

    space = {"family": ["convnet"], "budget": {"low": 10, "high": 50}}
    launch(load_config({"dataset": "digits", "space": space}), trials=0, out=tmp_path)
    err = capsys.readouterr().err
    assert "[npas] warning: budget: at most 50 parameters" in err and "smallest: " in err


def test_read_commands_leave_a_foreign_database_untouched(tmp_path, capsys):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    url = f"sqlite:///{path}"
    for argv in (["status", "--storage", url], ["pareto", "--storage", url],
                 ["report", "--storage", url, "--out", str(tmp_path / "r")]):  # fmt: skip
        assert "not an Optuna storage" in _refused(argv, capsys)
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert tables == {"notes"} and mode == "delete"


@pytest.mark.parametrize(
    "content", [b"", b"\x80\x04garbage", b"PK\x03\x04truncated"], ids=["empty", "pickle", "zip"]
)
def test_a_broken_weights_file_is_refused_without_unsafe_advice(tmp_path, capsys, content):
    (tmp_path / "model.pt").write_bytes(content)
    err = _refused(["train", str(tmp_path)], capsys, code=1)
    assert "cannot be read as a model file" in err and "weights_only" not in err


class _RunsCode:
    """A pickled object that, once unpickled, would create a file (as a hostile checkpoint
    would run any command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_checkpoint_whose_pickle_runs_code_is_refused_and_never_run(tmp_path):
    """A trial's checkpoint state (the file a resume reads) holding a pickle that would run
    code: refused as not a model file, and the code never runs (torch's weights_only load)."""
    from search.errors import ExportError
    from search.trial import STATE_NAME, read_state

    marker = tmp_path / "ran"
    torch.save({"format": "x", "bad": _RunsCode(marker)}, tmp_path / STATE_NAME)
    with pytest.raises(ExportError, match="cannot be read as a model file"):
        read_state(tmp_path)
    assert not marker.exists()


def test_a_device_torch_does_not_see_is_refused(tmp_path, capsys):
    unseen = f"cuda:{torch.cuda.device_count()}"  # cuda:0 here, where torch sees no CUDA
    err = _refused(["train", str(tmp_path), "--device", unseen], capsys)
    assert unseen in err and "CUDA device(s)" in err


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n"
    for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)  # 9**9 strings once expanded


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (BOMB + "dataset: digits\n", "the alias *a repeats a mapping or a list"),
        ("dataset: digits\nx: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 32"),
        ("dataset: digits\nname: " + "x" * (2 << 20) + "\n", "a config may hold at most"),
    ],
    ids=["alias bomb", "deep nesting", "50 MB scalar"],
)
def test_a_hostile_config_file_is_refused_before_it_is_expanded(tmp_path, capsys, text, fragment):
    config = tmp_path / "hostile.yaml"
    config.write_text(text)
    err = _refused(["launch", str(config), "--out", str(tmp_path / "run")], capsys)
    assert fragment in err and not (tmp_path / "run").exists()


def test_an_alias_of_a_plain_value_is_kept(tmp_path) -> None:
    from search.config import load_config

    config = tmp_path / "ok.yaml"
    config.write_text("dataset: digits\nspace: {family: [mlp]}\nseed: &s 3\ntrials: *s\n")
    assert load_config(config).trials == 3


@pytest.mark.parametrize(
    ("key", "entries", "most"),
    [
        ("constraints", ["params <= 5000"] * 200_000, 100),
        ("objectives", [[f"m{i}", "minimize"] for i in range(11)], 10),
    ],
)
def test_counts_are_bounded(key, entries, most) -> None:
    from search.config import load_config
    from spaces import ConfigError

    data = {"dataset": "digits", "space": {"family": ["mlp"]}, key: entries}
    with pytest.raises(ConfigError, match=rf"{key}: got 'a list of {len(entries)}'; allowed: "
                                          rf"at most {most} entries"):  # fmt: skip
        load_config(data)


def test_measurement_threads_are_bounded_and_never_more_than_the_cores() -> None:
    from objectives import MeasureOptions
    from objectives._conditions import threads_fixed, usable_cores
    from spaces import ConfigError

    with pytest.raises(ConfigError, match="threads must be at most 1024"):
        MeasureOptions(threads=100_000)
    with threads_fixed(1024) as used:
        assert used == min(1024, usable_cores()) <= os.cpu_count()


@pytest.mark.parametrize(
    ("space", "fragment"),
    [
        ({"convnet.width": {"value": -5}}, "convnet.width: got -5; allowed: an int in [1,"),
        ({"convnet.width": {"value": "16"}}, "convnet.width: got '16'"),
        ({"convnet.width": {"value": 1e20}}, "convnet.width: got 1e+20"),
        ({"convnet.width": {"low": 4, "high": 10**20}}, "got 100000000000000000000"),
        ({"convnet.growth": {"choices": [1.5, 0.1]}}, "convnet.growth: got 0.1"),
    ],
)
def test_hyper_parameters_outside_the_familys_declaration_are_refused(
    tmp_path, capsys, space, fragment
):
    """Accepted before, every trial then failed: each family's signature declares its
    hyper-parameters' types and ranges, and the config check reads that declaration."""
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"dataset": "digits",
                                      "space": {"family": ["convnet"], **space}}))  # fmt: skip
    err = _refused(["launch", str(config), "--out", str(tmp_path)], capsys)
    assert fragment in err and not (tmp_path / "npas.db").exists()


def test_a_teachers_cache_that_cannot_be_written_is_refused_by_check(tmp_path, capsys,
                                                                     monkeypatch):  # fmt: skip
    # Before, `check` passed, then every distilled trial failed writing its teacher's targets.
    from tests.search_tests.disks import read_only

    config = {**MINIMAL, "name": "taught",
              "train": {"epochs": 1, "teacher": {"family": "mlp", "train": {"epochs": 1}}}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**config, "out": str(tmp_path / "run")}), encoding="utf-8")
    with read_only(tmp_path / "cache") as cache:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        err = _refused(["check", str(path)], capsys)
    assert "train.teacher: the teachers' cache" in err and "Read-only file system" in err, err
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "writable"))
    assert main(["check", str(path)]) == 0
    assert (tmp_path / "writable" / "npas" / "data" / "teachers").is_dir()
