"""The ``search`` command line: one real ``search launch`` (Ray, two trials) as a subprocess, then
status, pareto, report, export and train on its storage in process; bad configs and arguments
give exit code 2 with a message naming the key, the value and what is allowed, and touch nothing
recorded; other npas errors give 1; every option is documented in --help."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pandas as pd
import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives.datasets import load
from objectives.train import evaluate
from search.bundle import load_bundle
from search.cli import build_parser, main
from search.cli._launch import _config
from search.errors import SearchInterrupted
from search.pareto import front_of
from search.pareto._frame import objectives_of, trials_frame
from search.record._records import metrics_of
from tests._support.configs import CLI_CONFIG, CLI_NAME

optuna.logging.set_verbosity(optuna.logging.WARNING)

ROOT = Path(__file__).resolve().parents[3]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "search", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``search launch CONFIG --trials 2 --out DIR --quiet``, the real command, once."""
    folder = tmp_path_factory.mktemp("cli")
    config = folder / "small.yaml"
    config.write_text(yaml.safe_dump(CLI_CONFIG), encoding="utf-8")
    out = folder / "runs"
    # --address local: a Ray of its own even when another test runs a `ray start` cluster on
    # this machine (ray.init() with no address would join that one).
    done = _run(
        "launch", str(config), "--trials", "2", "--out", str(out), "--address", "local", "--quiet"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    url = f"sqlite:///{out / 'npas.db'}"
    return {"url": url, "out": out, "db": out / "npas.db", "stdout": done.stdout,
            "stderr": done.stderr, "config": config}  # fmt: skip


def _study(launched: dict) -> optuna.Study:
    return optuna.load_study(study_name=CLI_NAME, storage=launched["url"])


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_launch_records_and_says_where_to_look(launched: dict) -> None:
    study = _study(launched)
    frame = trials_frame(study)
    assert list(frame["state"]) == ["COMPLETE", "COMPLETE"]
    assert frame["feasible"].all()
    # default settings: no trial read the test split, so the study holds no test figure
    for trial in study.trials:
        assert trial.user_attrs["curve"] and trial.intermediate_values
        for attrs in (trial.user_attrs, trial.system_attrs):
            text = json.dumps(attrs, default=str)
            assert "test_accuracy" not in text and "test_loss" not in text, trial.number
    text = launched["stdout"]
    assert f"Storage: {launched['url']}" in text
    for command in ("status", "pareto", "report", "export", "dashboard"):
        assert f"search {command} " in text
    # named by the run folder, as a user types it: no sqlite:////… URL to copy
    assert f"search status --run {launched['out']}\n" in text and "--storage" not in text
    assert f"--name {CLI_NAME}" in text


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_status_lists_the_search(launched: dict, capsys: pytest.CaptureFixture) -> None:
    assert main(["status", "--run", str(launched["out"])]) == 0
    text = capsys.readouterr().out
    front = front_of(trials_frame(_study(launched)), objectives_of(_study(launched)))
    assert (
        f"Search {CLI_NAME!r}: 2 trial(s): 2 feasible, 0 infeasible, 0 stopped early, 0 failed, "
        "0 running\n" in text
    )
    assert "accuracy (maximize), params (minimize), flops_infer (minimize)" in text
    assert f"front: {len(front.numbers)} trial(s) {front.numbers}" in text
    assert "best: accuracy " in text and "constraints: params <= 3000" in text


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_pareto_in_every_format(launched: dict, capsys: pytest.CaptureFixture) -> None:
    url = launched["url"]
    study = _study(launched)
    front = front_of(trials_frame(study), objectives_of(study)).numbers
    assert main(["pareto", "--name", CLI_NAME, "--storage", url, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["number"] for r in rows] == front
    assert {"accuracy", "params", "flops_infer", "activations"} <= set(rows[0])
    assert not [k for k in rows[0] if k.startswith("test_")]  # no trial read the test split
    assert main(["pareto", "--storage", url, "--format", "csv", "--objectives", "params"]) == 0
    single = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(single) == 1, "one objective: one best trial (no ties on params here)"
    assert single["params"].iloc[0] == trials_frame(study)["params"].min()
    assert main(["pareto", "--name", CLI_NAME, "--storage", url]) == 0
    table = capsys.readouterr().out
    assert f"Front of {CLI_NAME!r}: {len(front)} trial(s)" in table and "flops_infer" in table


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_commands_default_to_the_runs_folder(
    launched: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """No --storage / --out: status, pareto and report read ./runs/npas.db, as launch writes."""
    (tmp_path / "runs").mkdir()
    with (
        sqlite3.connect(launched["db"]) as source,
        sqlite3.connect(tmp_path / "runs/npas.db") as copy,
    ):
        source.backup(copy)  # the WAL's pages too
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 0
    assert f"Search {CLI_NAME!r}: 2 trial(s)" in capsys.readouterr().out
    assert main(["pareto", "--name", CLI_NAME, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["report", "--out", "report"]) == 0
    assert (tmp_path / "report" / "report.md").is_file()


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_report_prints_its_files(launched: dict, tmp_path: Path, capsys) -> None:
    code = main(["report", "--storage", launched["url"], "--out", str(tmp_path)])
    assert code == 0
    text = capsys.readouterr().out
    for name in ("report.html", "report.md", "trials.csv"):
        assert (tmp_path / name).is_file() and str(tmp_path / name) in text


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_a_real_searchs_front_and_trials_fit_100_columns(launched: dict, capsys) -> None:
    """A real search's conditions (the FLOP convention: 299 characters on one line) and its
    trials list (173) wrap, every column still there."""
    for command, column in (("pareto", "cond_flop_convention"), ("trials", "outcome")):
        assert main([command, "--name", CLI_NAME, "--storage", launched["url"]]) == 0
        text = capsys.readouterr().out
        assert max(len(line) for line in text.splitlines()) <= 100, command
        assert all(name in text for name in ("number", "accuracy", column)), command


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_export_then_train(launched: dict, tmp_path: Path, capsys) -> None:
    torch.set_num_threads(1)
    bundle = tmp_path / "bundle"
    args = ["export", "--name", CLI_NAME, "--storage", launched["url"], "--out", str(bundle)]
    assert main([*args, "--select", "best:accuracy"]) == 0
    text = capsys.readouterr().out
    meta = json.loads((bundle / "metrics.json").read_text(encoding="utf-8"))
    assert f"Exported trial {meta['trial']} of {CLI_NAME!r}" in text
    searched = metrics_of(_study(launched).trials[meta["trial"]])
    deployed = sum(v.numel() for v in load_bundle(bundle).parameters())
    assert (f"parameters: {searched['params']:,} trained (params, what its constraints saw), "
            f"{deployed:,} in the exported model (materialised_params)"
            ) in " ".join(text.split())  # fmt: skip
    assert "test_accuracy" not in searched  # the search read no test figure: export reads it
    test = load("digits", seed=0, progress=False).test
    accuracy = evaluate(load_bundle(bundle), test.x, test.y)["accuracy"]
    assert accuracy == pytest.approx(meta["exported"]["test_accuracy"], abs=0.5 / len(test))
    assert (f"  test accuracy {meta['exported']['test_accuracy']:.4f} on the test split "
            f"({len(test):,} rows), read once, for this model only\n") in text  # fmt: skip
    assert main(["train", str(bundle), "--epochs", "1"]) == 0
    text = capsys.readouterr().out
    assert "search vs train" in text and "test_accuracy" in text
    saved = json.loads((bundle / "train.json").read_text(encoding="utf-8"))
    assert saved["epochs"] == 1 and 0.0 < saved["metrics"]["test_accuracy"] <= 1.0
    # Another seed: another initialisation, in its own folder, the bundle's seed untouched.
    assert main(["train", str(bundle), "--epochs", "1", "--seed", "7", "--out",
                 str(tmp_path / "seed7")]) == 0  # fmt: skip
    other = json.loads((tmp_path / "seed7" / "train.json").read_text(encoding="utf-8"))
    assert other["trial_config"]["seed"] == 7 and saved["trial_config"]["seed"] == 0
    assert other["metrics"]["train_loss"] != saved["metrics"]["train_loss"]
    assert main(["train", str(bundle), "--seed", "-1"]) == 2
    assert "--seed: got '-1'; allowed: an integer >= 0" in capsys.readouterr().err


BAD = {
    "unknown key": ({"bogus": 1}, ["unknown key 'bogus'", "allowed: ['dataset', "]),
    "bad value": ({"trials": -3}, ["trials", "-3", "an int >= 1"]),
    "malformed constraint": (
        {"constraints": ["params <== 5000"]},
        ["constraints[0]", "params <== 5000", "'<metric> <=|<|>=|> <number>'"],
    ),
    "unknown indicator": ({"objectives": ["accuracy", "joules"]}, ["joules", "allowed"]),
    # Valid, but not the config the stored search of that name ran: resuming it would mix them.
    "another config, same name": (
        {"train": {"epochs": 3, "batch_size": 64}},
        [f"search {CLI_NAME!r} already exists", "(train.epochs: 2 → 3)", "another --name"],
    ),
}


@pytest.mark.slow  # reads the search the `launched` fixture runs
@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_config_is_exit_2_and_touches_nothing(
    case: str, launched: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    change, needles = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**CLI_CONFIG, **change}), encoding="utf-8")
    before = _digest(launched["db"])
    code = main(["launch", str(path), "--storage", launched["url"], "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("search launch: error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in err
    assert len(err.strip().splitlines()) == 1, "one paragraph"
    assert _digest(launched["db"]) == before, "nothing recorded is touched"


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["launch", "--preset", "nope"], ["preset", "'nope'", "search presets"]),
        (["launch", "x.yaml", "--preset", "digits-quick"], ["CONFIG and --preset", "one of"]),
        (["launch", "--trials", "zero"], ["--trials", "'zero'", "an integer >= 1"]),
        (["launch", "--name", "no spaces"], ["name", "'no spaces'", "allowed"]),
        (["pareto", "--format", "xml"], ["--format", "'xml'", "table"]),
        (["launch", "missing.yaml"], ["missing.yaml", "does not exist", "--preset"]),
        (["frobnicate"], ["frobnicate", "launch"]),
    ],
)
def test_bad_arguments_are_exit_2(argv: list[str], needles: list[str], capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err
    assert "Traceback" not in err


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_study_errors(launched: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    url = launched["url"]
    assert main(["pareto", "--name", "other", "--storage", url]) == 2
    err = capsys.readouterr().err
    assert f"got 'other'; allowed: one of the studies in {url}: ['{CLI_NAME}']" in err
    assert main(["export", "--storage", url, "--out", str(tmp_path), "--select", "nearest"]) == 2
    assert "allowed forms" in capsys.readouterr().err
    assert main(["pareto", "--storage", url, "--objectives", "accuracy,joules"]) == 2
    assert "joules" in capsys.readouterr().err
    missing = tmp_path / "none"
    assert main(["status", "--run", str(missing)]) == 2
    assert not missing.exists(), "reading a missing storage creates nothing"
    # One meaning per flag: --out is where a command writes, never the run folder it reads.
    for command in ("status", "dashboard", "pareto"):
        assert main([command, "--out", str(tmp_path)]) == 2
        assert "give the run folder with --run DIR" in capsys.readouterr().err


def test_other_npas_errors_are_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["train", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ExportError" in err and "not a bundle" in err and "Traceback" not in err


def test_an_interrupted_launch_is_exit_130(tmp_path, monkeypatch, capsys) -> None:
    """The CLI's side of Ctrl-C (test_execution sends a real SIGINT to ``launch``)."""
    import search.run._launch

    def stopped(*args, **kwargs):
        raise SearchInterrupted("search 'x' stopped after 2 of 16 trials")

    monkeypatch.setattr(search.run._launch, "launch", stopped)
    assert main(["launch", "--out", str(tmp_path), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: search 'x' stopped after 2 of 16 trials" in err
    assert "Traceback" not in err


@pytest.mark.slow  # `search launch` in a subprocess
def test_real_exit_code_of_the_console_entry() -> None:
    done = _run("launch", "--preset", "nope")
    assert done.returncode == 2
    assert "preset: got 'nope'; allowed: see search presets" in done.stderr
    assert "Traceback" not in done.stderr


def test_launch_defaults_and_overrides() -> None:
    parser = build_parser()
    assert _config(parser.parse_args(["launch"])).name == "digits-quick"
    args = parser.parse_args(["launch", "--preset", "mnist-tiny", "--trials", "3", "--name", "t"])
    config = _config(args)
    assert (config.name, config.trials, config.dataset) == ("t", 3, "mnist")
    args = parser.parse_args(["launch", "--out", "elsewhere", "--address", "10.0.0.1:6379"])
    assert (_config(args).out, _config(args).address) == ("elsewhere", "10.0.0.1:6379")


def test_help_documents_every_option(capsys: pytest.CaptureFixture) -> None:
    parser = build_parser()
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    commands = parser._subparsers._group_actions[0].choices  # argparse has no public accessor
    for name, sub in commands.items():
        assert name in top
        assert main([name, "--help"]) == 0
        text = capsys.readouterr().out
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:  # a deprecated alias, hidden on purpose
                continue
            for option in action.option_strings:
                assert option in text, f"{name} {option}"
            if action.help not in (None, argparse.SUPPRESS):
                assert action.help.split()[0] in text


def test_registries(capsys: pytest.CaptureFixture) -> None:
    assert main(["families"]) == 0
    text = capsys.readouterr().out
    assert "convnet" in text and "(none free: a fixed variant)" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # it printed 174 characters
    assert main(["indicators"]) == 0
    text = capsys.readouterr().out
    assert "latency_ms" in text and "minimize" in text and "infer" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # it printed 196 characters
    assert main(["presets"]) == 0
    text = capsys.readouterr().out
    assert all(p in text for p in ("digits-quick", "mnist-tiny", "cifar10-wrn"))
    # each description is its first whole sentence (it stopped at the comment's first line)
    descriptions = [line for line in text.splitlines() if line.startswith("    ")]
    assert "for GPU clusters." in text and max(len(line) for line in text.splitlines()) <= 100
    assert descriptions and all(not line.endswith((",", "public", "GPU")) for line in descriptions)


def test_families_shows_the_layouts_and_a_users_families_with_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import spaces._build
    import spaces._family_registry

    monkeypatch.setattr(spaces._build.FAMILIES, "_entries", dict(spaces._build.FAMILIES._entries))
    registry = spaces._family_registry
    monkeypatch.setattr(registry, "_LAYOUTS", dict(registry._LAYOUTS))
    plugin = tmp_path / "my_families.py"
    plugin.write_text(
        "import spaces\n"
        "@spaces.register_family('cli-wave', layouts=['signal', 'table'])\n"
        "def wave(in_shape, num_classes, *, taps: int = 3): ...\n"
        "@spaces.register_family('cli-odd')\n"
        "def odd(in_shape, num_classes): ...\n"
    )
    assert main(["families"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["family"].split() == ["family", "layouts", "hyper-parameters"]
    assert rows["conv1d"].split()[1:3] == ["signal", "depth,"]
    assert rows["mlp"].split()[1:4] == ["image,", "signal,", "table"]
    assert rows["wrn-16-4"].split()[1:3] == ["image", "dropout"]
    assert "cli-wave" not in rows
    assert main(["families", "--layout", "signal", "--import", str(plugin)]) == 0
    text = capsys.readouterr().out
    names = [line.split()[0] for line in text.splitlines()[1:] if not line.startswith(" ")]
    assert names == ["cli-wave", "conv1d", "mlp", "resnet1d", "sepconv1d"]
    assert re.search(r"^cli-wave +signal, table +taps$", text, re.M)
    assert main(["families"]) == 0
    assert re.search(r"^cli-odd +\(not declared\) +\(none free", capsys.readouterr().out, re.M)
    assert main(["families", "--layout", "sound"]) == 2
    assert "--layout: got 'sound'; allowed: image, signal, table" in capsys.readouterr().err


def test_help_version_and_presets_load_no_torch_optuna_or_ray() -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from search.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    codes = [main(['--help']), main(['launch', '--help']), main(['--version']),\n"
        "             main(['presets'])]\n"
        "heavy = [m for m in ('torch', 'optuna', 'ray', 'pandas') if m in sys.modules]\n"
        "print(codes, heavy, 'digits-quick: digits' in out.getvalue())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    assert done.stdout.split("\n")[-2] == "[0, 0, 0, 0] [] True", done.stdout[-500:]


def _small_storage(folder: Path) -> str:
    """A storage with one npas-style study (no search run): for the quick commands."""
    from tests.search_tests.studies import ACC_PARAMS, ROWS, stored_study

    url = f"sqlite:///{folder / 'npas.db'}"
    rows = [{**row, "cond_measure_s": 0.1 * i} for i, row in enumerate(ROWS)]
    stored_study(url, "small", rows, ACC_PARAMS)
    return url


@pytest.mark.parametrize(
    ("extra", "said"), [([], "Search 'small': 6 trial(s)"), (["--trial", "1"], "trial 1:")]
)
def test_status_loads_no_torch_or_ray(tmp_path: Path, extra: list[str], said: str) -> None:
    """`search status` (and `--trial N`) answers at once: torch and Ray stay unloaded."""
    _small_storage(tmp_path)
    heavy = ("torch", "ray", "sklearn", "matplotlib")
    assert _answer_alone(["status", "--run", str(tmp_path), *extra], "stdout", said, heavy) == (
        "0 [] True")


def _answer_alone(argv: list[str], stream: str, said: str, heavy: tuple[str, ...]) -> str:
    """``main(argv)`` in a fresh interpreter: ``"<exit code> <heavy modules loaded> <whether
    its stream said said>"``."""
    probe = (
        "import sys, contextlib, io\n"
        "from search.cli import main\n"
        "text = io.StringIO()\n"
        f"with contextlib.redirect_{stream}(text):\n"
        f"    code = main({argv!r})\n"
        f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        f"print(code, loaded, {said!r} in text.getvalue())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    return done.stdout.split("\n")[-2]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["launch", "--preset", "digit-quick"], "did you mean 'digits-quick'?"),
        (["check", "--preset", "nope"], "preset: got 'nope'"),
        (["launch", "missing.yaml"], "'missing.yaml' does not exist"),
        (["check", "x.yaml", "--preset", "digits-quick"], "CONFIG and --preset: got both"),
    ],
)
def test_a_mistyped_preset_or_missing_config_is_answered_before_torch(argv, said) -> None:
    """`search launch --preset digit-quick` took 10 s: torch loaded (in the launch's child)
    before the name was checked; now the command answers before torch or Ray load."""
    heavy = ("torch", "ray", "sklearn", "optuna")
    assert _answer_alone(argv, "stderr", said, heavy) == "2 [] True"


def test_pareto_states_constant_conditions_once(tmp_path: Path, capsys) -> None:
    url = _small_storage(tmp_path)
    assert main(["pareto", "--storage", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Front of 'small': 3 trial(s) (accuracy, params, latency_ms)"
    assert lines[1:3] == ["Measured under (the same for every trial below):", "  cond_device  cpu"]
    assert lines[3].split() == ["number", "accuracy", "params", "latency_ms", "cond_measure_s",
                                "params_width"]  # fmt: skip
    assert main(["pareto", "--storage", url, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["number"] for r in rows] == [0, 1, 5]
    assert all(r["cond_device"] == "cpu" for r in rows), "json keeps every column on every row"
    assert main(["pareto", "--storage", url, "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table["cond_device"]) == ["cpu"] * 3 and list(table["number"]) == [0, 1, 5]


def test_pareto_fits_a_wide_panel_in_100_columns(tmp_path: Path, capsys) -> None:
    """A search that measured the whole panel printed 322-character lines; the table now wraps
    its columns in blocks, every column still there."""
    from tests.search_tests.studies import ACC_PARAMS, stored_study

    names = ("weights", "flops_infer", "flops_train", "macs", "activations", "latency_ms",
             "latency_p90_ms", "throughput", "peak_mem_infer_mb", "peak_mem_train_mb",
             "energy_infer_j", "energy_train_j", "co2_infer_g", "co2_train_g")  # fmt: skip
    panel = {name: 12345.678 + i for i, name in enumerate(names)}
    rows = [{"accuracy": 0.7 + i / 10, "params": 100.0 * (i + 1), **panel} for i in range(3)]
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    stored_study(url, "wide", rows, ACC_PARAMS)
    assert main(["pareto", "--storage", url]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 100
    assert all(name in text for name in panel)


def test_selectors_lists_every_registered_form(capsys: pytest.CaptureFixture) -> None:
    from search.pareto import forms

    assert main(["selectors"]) == 0
    text = capsys.readouterr().out
    assert all(form in text for form in forms())
    assert main(["--version"]) == 0 and "npas" in capsys.readouterr().out


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_status_in_json_and_csv(launched: dict, capsys: pytest.CaptureFixture) -> None:
    import pandas as pd

    assert main(["status", "--run", str(launched["out"]), "--format", "json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["search"] == CLI_NAME and record["feasible"] == 2 and record["interrupted"] == 0
    assert record["adjourned"] == 0 and record["running"] == 0
    best = record["best"]
    assert (
        set(best["accuracy"]) == {"value", "number"}
        and best["accuracy"]["number"] in record["front"]
    )
    for name in ("params", "flops_infer"):  # whole numbers, so integers: 3848, never 3848.0
        assert type(best[name]["value"]) is int, best[name]
    assert type(best["accuracy"]["value"]) is float or best["accuracy"]["value"] == 1
    assert main(["status", "--run", str(launched["out"]), "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table.loc[0, "search"] == CLI_NAME and table.loc[0, "trials"] == 2
    assert json.loads(table.loc[0, "objectives"]) == record["objectives"]
    assert json.loads(table.loc[0, "front"]) == record["front"]
    assert table["best.params.value"].dtype.kind == "i" and "best.params.number" in table


def test_status_writes_values_under_the_table_column_names(tmp_path: Path, capsys) -> None:
    """JSON and CSV hold values (a list is JSON text in a CSV cell, never a Python repr), a
    trial is its ``number`` as in every table, a counted metric stays an integer though a failed
    trial leaves its column with a gap (and in CSV though another search has no best), and
    ``--trial N`` counts the epochs the trial trained (its ``epochs`` metric here: it recorded
    no curve)."""
    from tests.search_tests.studies import ACC_PARAMS, stored_study

    rows = [
        {"accuracy": 0.9, "params": 3000, "epochs": 5},
        {"accuracy": 0.8, "params": 1000, "epochs": 3},
        {"state": "FAIL"},
    ]
    url = f"sqlite:///{tmp_path / 'npas.db'}"
    stored_study(url, "ints", rows, ACC_PARAMS)
    stored_study(url, "failed", [{"state": "FAIL"}], ACC_PARAMS)  # no best at all
    assert main(["status", "--run", str(tmp_path), "--format", "json"]) == 0
    failed, record = json.loads(capsys.readouterr().out)
    assert record["best"] == {
        "accuracy": {"value": 0.9, "number": 0},
        "params": {"value": 1000, "number": 1},
    }
    assert type(record["best"]["params"]["value"]) is int and failed["best"] == {}
    assert (record["feasible"], record["failed"], record["front"]) == (2, 1, [0, 1])
    assert all(" " not in key for key in record)
    assert main(["status", "--run", str(tmp_path), "--format", "csv"]) == 0
    text = capsys.readouterr().out
    table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert list(table["search"]) == ["failed", "ints"]
    row = table.iloc[1]
    assert json.loads(row["objectives"]) == ["accuracy (maximize)", "params (minimize)"]
    assert json.loads(row["constraints"]) == [] and json.loads(row["front"]) == [0, 1]
    assert row["running_now"] == "", "None is an empty cell"
    assert (row["best.params.value"], row["best.params.number"]) == ("1000", "1")
    assert (row["best.accuracy.value"], row["best.accuracy.number"]) == ("0.9", "0")
    assert table.iloc[0]["best.params.value"] == "" and "best.accuracy.trial" not in table
    assert pd.read_csv(io.StringIO(text))["trials"].dtype.kind == "i"
    assert main(["status", "--run", str(tmp_path), "--name", "ints", "--trial", "0",
                 "--format", "json"]) == 0  # fmt: skip
    one = json.loads(capsys.readouterr().out)
    shown = [one[k] for k in ("number", "state", "outcome", "epochs")]
    assert shown == [0, "COMPLETE", "feasible", 5]
    assert "trial" not in one
    assert one["origin"].startswith("proposed by")  # no start point, not narrowed
    assert main(["status", "--run", str(tmp_path), "--name", "ints", "--trial", "1"]) == 0
    out = capsys.readouterr().out
    assert "trial 1: COMPLETE (feasible) after 3 epoch(s)" in out
    assert "\n  its net: proposed by" in out


def test_a_search_out_of_time_is_adjourned_not_running_and_a_relaunch_goes_on(
    tmp_path: Path, capsys
) -> None:
    """A real digits search whose one trial (1000 epochs) the search's time stops in flight:
    with no launch holding the search, ``search status`` counts it adjourned, not running nor
    interrupted, and a relaunch goes on with the same trial from its checkpoint."""
    config = tmp_path / "out-of-time.yaml"
    data = {**CLI_CONFIG, "name": "out-of-time", "trials": 1, "constraints": []}
    config.write_text(yaml.safe_dump({**data, "train": {"epochs": 1000, "batch_size": 64}}))
    out = tmp_path / "runs"
    argv = ["launch", str(config), "--out", str(out), "--address", "local", "--quiet",
            "--time-budget", "20s"]  # fmt: skip  (the launch's clock: Ray's start-up counts)
    first = _run(*argv)
    assert first.returncode == 0, first.stderr[-3000:]
    unwrapped = first.stdout.replace("\n  ", " ")  # a line wrapped to 100 columns, joined
    assert "0 running, 1 adjourned (adjourned: " in unwrapped, first.stdout
    assert main(["status", "--run", str(out), "--format", "json"]) == 0
    (status,) = json.loads(capsys.readouterr().out)
    counted = [status[k] for k in ("running", "interrupted", "adjourned", "trials")]
    assert counted == [0, 0, 1, 1] and status["running_now"] is None, status
    assert main(["status", "--run", str(out), "--trial", "0", "--format", "json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert (before["state"], before["outcome"]) == ("RUNNING", "adjourned")
    assert before["checkpoint"] is not None and 1 <= before["epochs"] < 1000

    # The same command with more time (a loaded machine's Ray start-up alone can outlast 20 s,
    # and the trial then reports only its checkpoint's epoch again): the same trial goes on.
    again = _run(*argv[:-1], "30s")
    assert again.returncode == 0, again.stderr[-3000:]
    study = optuna.load_study(study_name="out-of-time", storage=f"sqlite:///{out / 'npas.db'}")
    assert len(study.trials) == 1, "went on with trial 0, started none in its place"
    epochs = [p["epoch"] for p in study.trials[0].user_attrs["curve"]]
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) > before["epochs"]
    assert main(["status", "--run", str(out), "--trial", "0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["epochs"] == len(epochs)


BREAKS_IN_TRAINING = '''
import spaces
from torch import nn


@spaces.register_family("breaks-in-training")
class BreaksInTraining(nn.Module):
    """Builds, measures and evaluates; its first training step raises."""

    def __init__(self, in_shape, num_classes, *, width=8):
        super().__init__()
        self.fc = nn.Linear(in_shape[-1] * in_shape[-2], num_classes)

    def forward(self, x):
        if self.training:
            raise RuntimeError("this family cannot train")
        return self.fc(x.flatten(1))
'''


@pytest.mark.slow  # `search launch` in a subprocess
def test_a_launch_whose_every_trial_failed_exits_non_zero_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "breaks.py").write_text(BREAKS_IN_TRAINING, encoding="utf-8")
    config = {**CLI_CONFIG, "name": "all-fail", "imports": ["breaks.py"], "trials": 2,
              "space": {"family": ["breaks-in-training"],
                        "breaks-in-training.width": {"low": 4, "high": 8}},
              "constraints": []}  # fmt: skip
    path = tmp_path / "all-fail.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = _run("launch", str(path), "--out", str(tmp_path / "runs"), "--address", "local",
                "--quiet")  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("search launch: every trial failed (2)"), done.stderr[-3000:]
    assert "(2 of 2): RuntimeError: this family cannot train" in last
    study = optuna.load_study(study_name="all-fail", storage=f"sqlite:///{tmp_path}/runs/npas.db")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.FAIL] * 2


# -- the launch's summary ------------------------------------------------------------------------


def test_launch_summary_is_honest(launched: dict) -> None:
    """Elapsed from the command's start (Ray's start-up in it); no Ray token notice."""
    assert "Elapsed: " in launched["stdout"] and "Ray's start-up included" in launched["stdout"]
    assert "Token authentication" not in launched["stderr"], launched["stderr"][-2000:]


def test_relaunch_with_trials_below_those_done_says_so(launched: dict, capsys) -> None:
    argv = ["launch", str(launched["config"]), "--out", str(launched["out"]), "--trials", "1",
            "--address", "local"]  # fmt: skip
    before = _digest(launched["db"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    out = " ".join(out.split())  # wrapped to 100 columns
    assert f"{CLI_NAME!r} already has 2 trial(s) done" in out and "asks for 1 in all" in out, out
    assert "give --trials above 2 to go on" in out and "Launching" not in out
    assert len(_study(launched).trials) == 2 and _digest(launched["db"]) == before


# -- search check, presets --show ---------------------------------------------------------------

#: A discrete space whose size is known by hand: mlp 2 widths x 2 budgets x 2 generators (8),
#: convnet 3 depths x 2 budgets x 2 generators (12); 20 points.
CHECKED = {
    **CLI_CONFIG,
    "name": "checked",
    "space": {
        "family": ["mlp", "convnet"],
        "mlp.width": [16, 32],
        "convnet.depth": {"low": 1, "high": 3},
        "budget": [1500, 2500],
        "ssn.generator": ["wavg", "emb"],
    },
    "limits": {"time": "45m"},
}


def _check(tmp_path: Path, config: dict, capsys) -> tuple[int, str, str]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    code = main(["check", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_prints_the_resolved_search_and_creates_nothing(tmp_path: Path, capsys) -> None:
    code, out, err = _check(tmp_path, {**CHECKED, "out": str(tmp_path / "runs")}, capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "Space: 5 dimension(s), 20 point(s)" in lines
    assert any(line.split()[:2] == ["mlp.width", "categorical"] and "16, 32" in line
               and "(when family in ['mlp'])" in line for line in lines)  # fmt: skip
    assert any(line.split()[:2] == ["convnet.depth", "int"] and "1 to 3" in line for line in lines)
    assert "Objectives: accuracy (maximize), params (minimize), flops_infer (minimize)" in lines
    assert "Constraints: params <= 3000" in lines
    assert "Limits: 8 trials, time 45 min 00 s" in lines
    assert "Scheduler: fifo: every trial trains to its end (at most 2 epoch(s))" in lines
    cost = next(line for line in lines if line.startswith("  unshared model: "))
    assert re.fullmatch(r"  unshared model: [\d,]+ to [\d,]+ parameters, [\d,]+ to [\d,]+ "
                        r"inference FLOPs per sample", cost), cost  # fmt: skip
    assert "  Shapeshifted: a budget of 1,500 to 2,500 parameters" in out
    # digits is bundled: its training split is known (1797 less 20 % validation, less test)
    assert re.search(r"training: up to 2 epoch\(s\) x [\d,]+ training samples = [\d,]+", out)
    assert " ".join(out.split()).endswith("(nothing was created, started or trained)")
    assert err == "" and not (tmp_path / "runs").exists()
    assert max(len(line) for line in out.splitlines()) <= 100


def test_check_counts_exactly_the_meta_models(tmp_path: Path, capsys) -> None:
    """The cost range is the smallest and largest model the space builds (mlp width 16..32)."""
    from spaces._build import build_model

    config = {**CLI_CONFIG, "space": {"family": ["mlp"], "mlp.width": {"low": 16, "high": 32}},
              "fixed": {"mlp.depth": 1}}  # fmt: skip
    code, out, err = _check(tmp_path, config, capsys)
    assert code == 0, err
    sizes = [sum(p.numel() for p in build_model("mlp", (1, 8, 8), 10, width=w, depth=1)
                 .parameters()) for w in (16, 32)]  # fmt: skip
    assert f"unshared model: {sizes[0]:,} to {sizes[1]:,} parameters" in out, out
    # the deployed size beside them: an MLP uses each layer once, so its weights are its
    # parameters (a Shapeshifted one deploys them too, whatever its budget)
    assert f"  deployed: {sizes[0]:,} to {sizes[1]:,} weights (the unshared model's" in out, out


def test_check_warns_on_what_is_valid_but_wrong(tmp_path: Path, capsys) -> None:
    config = {**CLI_CONFIG, "objectives": [["accuracy", "maximize"], ["params", "maximize"]],
              "space": {**CLI_CONFIG["space"], "budget": {"low": 10, "high": 20}},
              "constraints": []}  # fmt: skip
    code, _, err = _check(tmp_path, config, capsys)
    assert code == 0 and max(len(line) for line in err.splitlines()) <= 100
    err = err.replace("\n  ", " ")  # each warning wrapped to 100 columns, joined
    warnings = [line for line in err.splitlines() if line.startswith("search check: warning: ")]
    assert len(warnings) == 2, err
    assert (
        "objectives[1]: maximize 'params' contradicts its meaning (the indicator registry's "
        "direction is minimize)" in warnings[0]
    )
    assert "budget: at most 20 parameters, below the minimum budget of every model" in warnings[1]


@pytest.mark.parametrize(("scheduler", "warned"), [
    ({"name": "moasha", "type": "promotion"}, True),
    ({"name": "moasha", "type": "promotion", "early_promotion": True}, False),
    ({"name": "moasha", "type": "stopping"}, False),
])  # fmt: skip
def test_check_warns_when_promotion_cannot_complete_a_trial(
    tmp_path: Path, capsys, scheduler: dict, warned: bool
) -> None:
    """9 epochs, rungs at 1 and 3, η = 3: a trial trains all 9 only once 9 trials reached
    the first rung; 5 trials end with every trial paused (issue 41, defect 10)."""
    config = {**CLI_CONFIG, "trials": 5, "train": {**CLI_CONFIG.get("train", {}), "epochs": 9},
              "scheduler": scheduler}  # fmt: skip
    code, _, err = _check(tmp_path, config, capsys)
    assert code == 0, err
    found = "trials: 5 is fewer than the 9 that promotion-type moasha needs" in err
    assert found == warned, err


def test_check_refuses_a_bad_config_with_exit_2(tmp_path: Path, capsys) -> None:
    code, out, err = _check(tmp_path, {**CLI_CONFIG, "trails": 5}, capsys)
    assert code == 2 and out == ""
    assert err.startswith("search check: error: ") and len(err.splitlines()) == 1, err
    assert "unknown key 'trails' (value 5) (did you mean 'trials'?)" in err
    assert main(["check", "--preset", "digits-quik"]) == 2
    assert "got 'digits-quik' (did you mean 'digits-quick'?)" in capsys.readouterr().err


def test_check_of_every_preset_starts_no_ray(tmp_path: Path) -> None:
    """Torch is accepted for check (its cost is built on meta models); no Ray is started (a
    moasha preset imports Ray Tune's scheduler module, for its rungs)."""
    from search.config import list_presets

    probe = (
        "import sys, contextlib, io\n"
        "from search.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    codes = [main(['check', '--preset', n]) for n in {list_presets()!r}]\n"
        "started = 'ray' in sys.modules and sys.modules['ray'].is_initialized()\n"
        "print(codes, started, out.getvalue().count('One trial:'))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    n = len(list_presets())
    assert done.stdout.split("\n")[-2] == f"{[0] * n} False {n}", done.stdout[-2000:]


def test_presets_show_prints_the_yaml(capsys) -> None:
    from search.config._presets import _FOLDER

    assert main(["presets", "--show", "mnist-tiny"]) == 0
    assert capsys.readouterr().out == (_FOLDER / "mnist-tiny.yaml").read_text(encoding="utf-8")
    assert main(["presets", "--show", "mnist-tinny"]) == 2
    err = capsys.readouterr().err
    assert "preset: got 'mnist-tinny' (did you mean 'mnist-tiny'?)\n" in err


# -- read-only commands stay light ---------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["selectors"],
        ["presets"],
        ["presets", "--show", "digits-quick"],
        ["indicators"],
        ["pareto", "--run", "{run}"],
        ["pareto", "--run", "{run}", "--name", "small", "--format", "json"],
    ],
)
def test_read_only_commands_load_no_torch(tmp_path: Path, command: list[str]) -> None:
    """The registries' metadata (an indicator's unit, direction, phase) is read without the
    torch code that measures it, so these commands answer at once and start no Ray."""
    if "{run}" in command:
        _small_storage(tmp_path)
        command = [str(tmp_path) if c == "{run}" else c for c in command]
    probe = (
        "import sys, contextlib, io\n"
        "from search.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({command!r})\n"
        "print(code, 'torch' in sys.modules, 'ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    assert done.stdout.split("\n")[-2] == "0 False False", done.stdout[-500:]


# -- status counts -------------------------------------------------------------------------------

_STATES = st.sampled_from(["COMPLETE", "RUNNING", "PRUNED", "FAIL", "WAITING"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_STATES, st.booleans(), st.booleans(), st.booleans(), st.booleans()),
                max_size=20), st.booleans())  # fmt: skip
def test_status_counts_each_trial_once(rows: list, live: bool) -> None:
    """(state, feasible, refused, interrupted, has a checkpoint) per trial: the counts add up to
    the trials; with no live launch a RUNNING trial is adjourned when it has a checkpoint, else
    interrupted, and none is running."""
    from search._trial_list import outcomes
    from search.cli._status import _tally
    from search.record._counting import INTERRUPTED
    from search.record._schema import Metric

    frame = pd.DataFrame(
        {
            "number": range(len(rows)),
            "state": [r[0] for r in rows],
            "feasible": [r[0] == "COMPLETE" and r[1] for r in rows],
            Metric.REFUSED: [1.0 if r[0] == "PRUNED" and r[2] else None for r in rows],
            "error": [INTERRUPTED if r[0] == "FAIL" and r[3] else "boom" for r in rows],
        }
    )
    resumable = [i for i, r in enumerate(rows) if r[4]]
    counts = _tally(outcomes(frame, live=live, resumable=resumable))
    assert sum(counts.values()) == len(rows)
    assert counts["feasible"] == sum(r[0] == "COMPLETE" and r[1] for r in rows)
    running = sum(r[0] == "RUNNING" for r in rows)
    adjourned = sum(r[0] == "RUNNING" and r[4] for r in rows)
    cut = sum(r[0] == "FAIL" and r[3] for r in rows)
    assert counts["running"] == (running if live else 0)
    assert counts["adjourned"] == (0 if live else adjourned)
    assert counts["interrupted"] == cut + (0 if live else running - adjourned)


def test_dashboard_on_a_missing_storage_names_run(tmp_path: Path, capsys) -> None:
    assert main(["dashboard", "--run", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--run DIR" in err and "--out" not in err, err


def test_launch_warns_of_an_objective_against_its_meaning(launched: dict, tmp_path: Path,
                                                          capsys) -> None:  # fmt: skip
    """The warning comes before anything runs (here the launch then stops: the stored search
    of that name has another config)."""
    config = {**CLI_CONFIG, "objectives": [["accuracy", "maximize"], ["params", "maximize"]]}
    path = tmp_path / "maximise-params.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    argv = ["launch", str(path), "--storage", launched["url"], "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    first, *rest = capsys.readouterr().err.splitlines()
    assert first.startswith("search launch: warning: objectives[1]: maximize 'params' "
                            "contradicts its meaning")  # fmt: skip
    assert rest[-1].startswith("search launch: error: ") and "already exists" in rest[-1]


@pytest.mark.slow  # reads the search the `launched` fixture runs
def test_replay_works_on_a_users_own_search(launched: dict, capsys: pytest.CaptureFixture) -> None:
    """A user's config (its own space, three objectives, random search): the what-if table of
    `search replay` over its two recorded curves."""
    argv = ["replay", "--run", str(launched["out"]), "--seeds", "3", "--jobs", "1",
            "--scheduler", "moasha", "--type", "promotion", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study"] == CLI_NAME and out["optimiser"] == "random" and out["workers"] == 2
    assert [a["arm"] for a in out["arms"]] == ["fifo", "moasha-promotion", "foresight"]
    fifo = out["arms"][0]
    # two curves: a seed whose FIFO picked the slower one twice completes nothing in time
    assert fifo["seeds"] == 3 and 1 <= fifo["reached_in"] <= 3
