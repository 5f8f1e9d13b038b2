"""The user's code in a search: errors at ``search launch`` before anything exists, one trial of
a user's family, image folder and indicator from a hand-written trial config, and user files
that must neither hijack nor silence a launch (a ``json.py`` in the working folder, a module
calling ``sys.exit``, files named like a module already imported)."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from search._supervisor import child_command
from search._usercode import import_modules
from search.cli._common import _user_code
from search.trial import run_trial
from tests.search_tests.userplugin import write_images, write_plugin

ROOT = Path(__file__).resolve().parents[2]

BAD = {
    "missing module": ({"imports": ["no_such_module_xyz"]}, "module 'no_such_module_xyz' "
                       "cannot be imported: ModuleNotFoundError"),
    "module raises (--import)": ({}, "--import[0]: module 'raises' (", ),
    "name registered twice": ({"imports": ["twice.py"]}, "family 'mlp' is already registered"),
    "labels not classes": ({"imports": ["floats.py"], "dataset": "t-floats"},
                           "label 0.5 (sample 1, 10 such)"),
    "indicator not a number": ({"imports": ["text.py"], "objectives": ["accuracy", "t_text"]},
                               "indicator 't_text' returned 'small' (str)"),
    "a standard library name": ({"imports": ["json"]}, "imports[0]: got 'json', a module of "
                                "Python's standard library"),
}  # fmt: skip
SOURCES = {
    "raises.py": "raise RuntimeError('broken on purpose')\n",
    "twice.py": "import spaces\nspaces.register_family('mlp')(lambda i, n: None)\n",
    "floats.py": "import numpy as np, objectives\n"
    "objectives.register_dataset('t-floats', source='test')(lambda: objectives.Splits("
    "train=(np.zeros((20, 1, 4, 4)), np.arange(20) % 2 * 0.5)))\n",
    "text.py": "import objectives\n"
    "objectives.register_indicator('t_text', 'minimize')(lambda model, example: 'small')\n",
}


@pytest.mark.slow  # `search launch`/`search check` in a fresh interpreter importing torch
@pytest.mark.parametrize("case", list(BAD))
def test_launch_refuses_bad_user_code_in_one_line_before_anything_exists(tmp_path, case):
    changes, message = BAD[case]
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text)
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "trials": 1, **changes}
    (tmp_path / "search.yaml").write_text(json.dumps(config))  # JSON is YAML
    out = tmp_path / "run"
    given = ["--import", "raises.py"] if "--import" in case else []
    run = subprocess.run(
        [sys.executable, "-m", "search", "launch", "search.yaml", "--out", str(out), *given],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    lines = [x for x in run.stderr.strip().splitlines() if not x.startswith("[npas] ")]
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-3000:]
    assert message in lines[0], lines[0]
    assert not out.exists(), "no run folder, no storage, no Ray"


def _search(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``search *args`` run from ``folder`` as the ``search`` script runs it: ``-P`` keeps the
    folder off this process's path (``python -m`` would put it first)."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "search", *args], cwd=folder, capture_output=True,
        text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip


@pytest.mark.slow  # `search launch`/`search check` in a fresh interpreter importing torch
@pytest.mark.parametrize("code", [0, 3])
def test_a_module_calling_sys_exit_is_refused_in_one_line_by_check_and_launch(tmp_path, code):
    (tmp_path / "bye.py").write_text(f"import sys\nsys.exit({code})\n")
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "imports": ["bye.py"]}
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    for command in (["check"], ["launch", "--out", "run"]):
        run = _search(tmp_path, *command, "search.yaml")
        lines = [x for x in run.stderr.strip().splitlines() if not x.startswith("[npas] ")]
        assert run.returncode == 2 and len(lines) == 1, (command, run.returncode, run.stderr)
        assert f"module 'bye' ({tmp_path / 'bye.py'}) cannot be imported: it called " \
            f"sys.exit({code})" in lines[0], lines[0]  # fmt: skip
    assert not (tmp_path / "run").exists(), "no run folder, no storage, no Ray"


#: One digits trial of one epoch, measuring ``indicators`` (params besides).
SMALL = {"dataset": "digits", "trials": 1, "train": {"epochs": 1},
         "objectives": [["accuracy", "maximize"]], "algorithm": "random"}  # fmt: skip


def _trial(out: Path) -> optuna.trial.FrozenTrial:
    [trial] = optuna.load_study(study_name="search", storage=f"sqlite:///{out}/npas.db").trials
    assert trial.state == optuna.trial.TrialState.COMPLETE, trial.user_attrs.get("error")
    return trial


@pytest.mark.slow  # a real `search launch` (Ray, one trial)
def test_files_in_the_working_folder_replace_no_module_of_the_launch_or_its_workers(tmp_path):
    for name in ("json", "random", "search"):  # the child's stdlib, npas on Ray's workers
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('{name}.py of the folder ran')\n")
    config = {**SMALL, "space": {"family": ["mlp"]}, "indicators": ["params"]}
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    check = _search(tmp_path, "check", "search.yaml")
    assert check.returncode == 0, check.stderr[-3000:]
    launch = _search(tmp_path, "launch", "search.yaml", "--out", "run", "--address", "local")
    assert launch.returncode == 0, launch.stderr[-3000:]
    _trial(tmp_path / "run")


@pytest.mark.slow  # a real `search launch` (Ray, one trial)
def test_each_imported_file_runs_under_a_name_of_its_own_in_check_launch_and_workers(tmp_path):
    plugins = {"mods/json.py": "json", "mods/ray.py": "ray", "a/plugin.py": "a",
               "b/plugin.py": "b"}  # fmt: skip
    for path, tag in plugins.items():
        file = tmp_path / path
        write_plugin(file.parent, file.stem, family=f"t-{tag}fam", indicator=f"t_{tag}")
    indicators = ["params", *(f"t_{tag}" for tag in plugins.values())]
    config = {**SMALL, "space": {"family": ["t-jsonfam"]}, "indicators": indicators,
              "imports": list(plugins)}  # fmt: skip
    (tmp_path / "search.yaml").write_text(json.dumps(config))
    check = _search(tmp_path, "check", "search.yaml")
    assert check.returncode == 0, check.stderr[-3000:]
    marks = tmp_path / "marks.txt"  # each import of a plugin notes its file and Ray node
    launch = _search(tmp_path, "launch", "search.yaml", "--out", "run", "--address", "local",
                     NPAS_TEST_MARKS=str(marks))  # fmt: skip
    assert launch.returncode == 0, launch.stderr[-3000:]
    trial = _trial(tmp_path / "run")
    assert all(trial.user_attrs[f"metric_{name}"] > 0 for name in indicators), trial.user_attrs
    imports = [line.split(" ") for line in marks.read_text().splitlines()]
    assert sorted(f for _, f, node in imports if node == "driver") == sorted(
        str(tmp_path / path) for path in plugins
    ), imports  # each file ran in the launch, from where it is
    shipped = [Path(f).name for _, f, node in imports if node != "driver"]
    assert len(set(shipped)) == 4 and all(n.startswith("npas_user_") for n in shipped), imports


def test_the_launchs_child_keeps_the_working_folder_off_its_path(monkeypatch):
    monkeypatch.setattr(sys, "path", [str(ROOT / "tests"), *sys.path[1:]])  # the user's folder
    command, env = child_command(["launch"], {"PYTHONPATH": "/x"})
    assert command[1:] == ["-P", "-m", "search", "launch"] and env == {"PYTHONPATH": "/x"}
    monkeypatch.setattr(sys, "path", [str(ROOT), *sys.path[1:]])  # python -m search in ROOT
    command, env = child_command(["launch"], {"PYTHONPATH": "/x"})
    assert env["PYTHONPATH"] == os.pathsep.join((str(ROOT), "/x")), "npas's own folder kept"


def test_a_file_moved_since_the_search_answers_for_the_recorded_one(tmp_path, capsys):
    recorded = str(tmp_path / "old" / "moved_plugin.py")  # where the search found it
    moved = write_plugin(tmp_path / "new", "moved_plugin", family="t-moved", indicator="t_moved")
    args = argparse.Namespace(imports=[str(moved)], no_imports=False, command="export")
    _user_code(args, [recorded], "the search's")
    [module] = import_modules([recorded])  # as a recorded trial config asks for it (export)
    assert module.__file__ == str(moved) and not capsys.readouterr().err


def test_a_hand_written_trial_config_runs_the_users_family_dataset_and_indicator(tmp_path):
    plugin = write_plugin(tmp_path / "elsewhere", "trial_plugin", family="t-tiny",
                          indicator="t_bytes")  # fmt: skip
    images = write_images(tmp_path / "images")
    result = run_trial(
        {
            "imports": [str(plugin)],
            "dataset": {"name": "t-trial-images", "image_folder": str(images)},
            "val_size": 8,
            "family": "t-tiny",
            "hyper": {"width": 3},
            "train": {"epochs": 3, "batch_size": 8},
            "objectives": [["accuracy", "maximize"], ["t_bytes", "minimize"]],
            "constraints": ["t_bytes <= 100"],
            "indicators": ["params"],
        }
    )
    assert result["feasible"] == 1.0 and result["t_bytes"] == result["params"] == 3 * 9 + 3 + 8
    assert result["accuracy"] > 0.5


@pytest.mark.slow  # `search launch`/`search check` in a fresh interpreter importing torch
def test_search_check_runs_the_launch_checks_and_creates_nothing(tmp_path):
    (tmp_path / "text.py").write_text(SOURCES["text.py"])
    config = {"dataset": "digits", "space": {"family": ["mlp"]}, "imports": ["text.py"],
              "indicators": ["params"]}  # the full panel would measure t_text too  # fmt: skip
    for objectives, code in (([["accuracy", "maximize"]], 0), (["accuracy", "t_text"], 2)):
        (tmp_path / "search.yaml").write_text(json.dumps({**config, "objectives": objectives}))
        run = subprocess.run(
            [sys.executable, "-m", "search", "check", "search.yaml"], cwd=tmp_path,
            capture_output=True, text=True, timeout=120,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert run.returncode == code, run.stderr[-3000:]
    assert "returned 'small'" in run.stderr and not (tmp_path / "runs").exists()


#: The ``search`` script's own body (the console script pip writes runs exactly this).
SCRIPT = "import sys\nfrom search.cli import main\nsys.exit(main())\n"
QUICK_DB = ROOT / "tests" / "search_tests" / "lab" / "digits-quick.db.gz"


@pytest.mark.slow  # `search check` and `search replay` in fresh interpreters importing torch
@pytest.mark.parametrize("command", ["check", "replay"])
def test_a_user_thread_that_never_ends_keeps_no_command_waiting(tmp_path, command):
    """A user module that starts a thread that is not a daemon (and sleeps an hour): the
    ``search`` script ends once its command is done (before, it printed its result and waited
    on the thread for ever; ``subprocess.run`` kills it by pid when the time is up)."""
    (tmp_path / "spin.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), name='users-own').start()\n"
    )
    if command == "check":
        config = {"dataset": "digits", "space": {"family": ["mlp"]}, "imports": ["spin.py"]}
        (tmp_path / "search.yaml").write_text(json.dumps(config))
        argv = ["check", "search.yaml"]
    else:
        with gzip.open(QUICK_DB, "rb") as src, open(tmp_path / "npas.db", "wb") as dst:
            shutil.copyfileobj(src, dst)
        argv = ["replay", "--run", ".", "--import", "spin.py", "--seeds", "1", "--jobs", "1"]
    try:
        run = subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=tmp_path,
                             capture_output=True, text=True, timeout=150,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"`search {command}` did not exit: {hung.stdout!r}") from None
    assert run.returncode == 0, run.stderr[-3000:]
    assert ("are valid (nothing was created" if command == "check" else "What if") in run.stdout
