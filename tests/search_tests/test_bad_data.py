"""Bad data refused by ``search check`` and ``search launch`` alike, in one line (exit 2) before
any run folder or study exists, and a relaunch on changed data refused unless ``--data-changed``
(issue 41, defect 8). Before, a label of 10**9 passed and made a billion classes (it is now a
class of its own: labels that are not 0..K-1 are mapped in sorted order), a NaN pixel
passed and failed every trial, a 0-byte or object-array .npz and a corrupt first PNG gave
tracebacks, a corrupt later PNG passed and failed every trial, an x_test without y_test was
ignored, and a changed .npz resumed silently (its unfinished trials failing with torch's
``size mismatch``)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from objectives.datasets import DATASETS
from search.cli import main
from search.config import load_config
from search.errors import ConfigError
from search.record._counting import INTERRUPTED
from search.record._data_record import DataCheck
from search.record._schema import StudyAttr
from search.record._study import open_study
from search.run import launch
from tests.search_tests.userplugin import write_images

_names = itertools.count()


@pytest.fixture
def forget():
    """Forgets the datasets a test declared (a launch in this process caches what it read)."""
    names: list[str] = []
    yield names.append
    for name in names:
        DATASETS._entries.pop(name, None)


def _digits(**changes: np.ndarray) -> dict[str, np.ndarray]:
    x, y = load_digits(return_X_y=True)
    x = x.reshape(-1, 1, 8, 8).astype(np.uint8)
    return {"x_train": x[:1400], "y_train": y[:1400], "x_test": x[1400:], "y_test": y[1400:],
            **changes}  # fmt: skip


def _npz(**changes) -> Callable[[Path], str]:
    def write(folder: Path) -> str:
        arrays = _digits()
        for key, change in changes.items():
            arrays[key] = change(arrays.get(key))
        np.savez(folder / "d.npz", **{k: v for k, v in arrays.items() if v is not None})
        return "npz"

    return write


def _raw(content: bytes) -> Callable[[Path], str]:
    def write(folder: Path) -> str:
        (folder / "d.npz").write_bytes(content)
        return "npz"

    return write


def _images(corrupt: str) -> Callable[[Path], str]:
    def write(folder: Path) -> str:
        root = write_images(folder / "images")
        bad = root / "train" / "dark" / corrupt
        bad.write_bytes(bad.read_bytes()[:30])  # cut inside the first chunk
        return "image_folder"

    return write


def _nan(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    x[9, 0, 4, 4] = np.nan
    return x


def _halves(y: np.ndarray) -> np.ndarray:
    return y + 0.5


def _objects(_: np.ndarray) -> np.ndarray:
    return np.array([np.zeros(3), np.zeros(2)], dtype=object)


BAD = {
    "0-byte npz": (_raw(b""), "d.npz cannot be read: it is empty"),
    "object-array npz": (_npz(x_train=_objects, y_train=lambda y: y[:2]),
                         "it holds Python objects (pickled), which npas never loads"),
    "NaN pixel": (_npz(x_train=_nan), "split 'train': 1 sample(s) hold values that are not "
                  "finite (the first: sample 9, nan)"),
    "a regression target": (_npz(y_train=_halves), "label 0.5 (sample 0, 1400 such); allowed: "
                            "class labels (a float label must be a whole number"),
    "x_test without y_test": (_npz(y_test=lambda y: None),
                              "holds x_test but no y_test; allowed: both, or neither"),
    "corrupt first PNG": (_images("000.png"), "split 'train': 1 of 48 sample(s) checked could "
                          "not be read (the first: "),
    "corrupt later PNG": (_images("017.png"), "dark/017.png cannot be read as an image"),
}  # fmt: skip


def _config(folder: Path, kind: str, name: str, **changes) -> Path:
    target = "images" if kind == "image_folder" else "d.npz"
    config = {"dataset": {"name": name, kind: target}, "space": {"family": ["mlp"]},
              "trials": 1, "train": {"epochs": 1}, "objectives": [["accuracy", "maximize"]],
              "algorithm": "random", "out": str(folder / "run"), **changes}  # fmt: skip
    path = folder / "search.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def _refused(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "", out  # nothing said as launched before the refusal ("Launching 'x' …")
    said = [line for line in err.strip().splitlines() if not line.startswith("[npas] ")]
    assert "Traceback" not in err and len(said) == 1, err  # beside the start-up lines
    return err


@pytest.mark.parametrize("case", list(BAD))
def test_bad_data_is_refused_in_one_line_by_check_and_launch(tmp_path, capsys, forget, case):
    write, fragment = BAD[case]
    name = f"bad-data-{next(_names)}"
    forget(name)
    config = _config(tmp_path, write(tmp_path), name)
    for command in ("check", "launch"):
        err = _refused([command, str(config)], capsys)
        assert fragment in err, (command, err)
        assert "allow_pickle" not in err and "unsafely" not in err
    assert not (tmp_path / "run").exists(), "no run folder, no storage"


def _attrs(folder: Path) -> dict:
    storage = f"sqlite:///{folder / 'run' / 'npas.db'}"
    return optuna.load_study(study_name="search", storage=storage).user_attrs


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"y_train": lambda y: (y + 1) % 10, "y_test": lambda y: (y + 1) % 10}, "train labels "),
        (
            {"x_train": lambda x: x[:, :, :6, :6], "x_test": lambda x: x[:, :, :6, :6]},
            "train shape [1, 8, 8] -> [1, 6, 6]",
        ),
    ],
    ids=["labels remapped", "shape changed"],
)
def test_a_relaunch_on_changed_data_is_refused_unless_the_user_says_so(
    tmp_path, capsys, forget, change, fragment
):
    name = f"changing-{next(_names)}"
    forget(name)
    config = _config(tmp_path, _npz()(tmp_path), name)
    launch(load_config(config), trials=0)  # records the search and its data; no Ray, no trial
    [first] = _attrs(tmp_path)[StudyAttr.DATA]
    assert (first["event"], first["first_trial"]) == ("first launch", 0)
    assert first["fingerprint"]["splits"]["train"]["samples"] == 1400
    assert main(["check", str(config)]) == 0, "the same data: nothing to say"
    capsys.readouterr()

    _npz(**change)(tmp_path)
    DATASETS._entries.pop(name)  # another launch is another process: it reads the file again
    for argv in (["check", str(config)], ["launch", str(config)]):
        err = _refused(argv, capsys)
        assert f"search 'search' ran on other data: dataset '{name}' differs" in err
        assert fragment in err and "relaunch with --data-changed" in err
    assert _attrs(tmp_path)[StudyAttr.DATA] == [first], "nothing recorded by a refused launch"

    assert main(["check", str(config), "--data-changed"]) == 0
    launch(load_config(config), trials=0, data_changed=True)
    entries = _attrs(tmp_path)[StudyAttr.DATA]
    assert [e["event"] for e in entries] == ["first launch", "--data-changed"]
    launch(load_config(config), trials=0)  # the new data again: nothing more to record
    assert _attrs(tmp_path)[StudyAttr.DATA] == entries

    table = pd.json_normalize(entries)  # as a user reads the record
    assert list(table["event"]) == ["first launch", "--data-changed"]
    assert table["fingerprint.splits.train.labels_sha256"].str.len().tolist() == [64, 64]
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'run' / 'npas.db'}")
    [summary] = optuna.get_all_study_summaries(storage)
    assert summary.user_attrs[StudyAttr.DATA] == entries


def _print(labels: str) -> dict:
    split = {"samples": 4, "shape": [1, 2, 2], "dtype": "uint8", "labels_sha256": labels,
             "samples_sha256": "0" * 64, "samples_hashed": 4}  # fmt: skip
    return {"dataset": "d", "classes": 2, "splits": {"train": split}}


def test_after_a_data_change_no_unfinished_trial_goes_on_from_its_checkpoint(tmp_path):
    """A checkpoint of the old data would resume on the new (torch's ``size mismatch`` when
    the shapes changed): with ``--data-changed`` the unfinished trials start again."""
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.db'}")

    def opened(labels: str, changed: bool = False) -> optuna.Study:
        return open_study(name="s", storage=storage, sampler=optuna.samplers.RandomSampler(),
                          config={}, objectives=[("accuracy", "maximize")], constraints=[],
                          optimiser="random", resumable=lambda trial: True,
                          data=DataCheck(_print(labels), changed))  # fmt: skip

    opened("a" * 64).ask()  # trial 0, left RUNNING with a checkpoint (resumable)
    assert opened("a" * 64).trials[0].state == optuna.trial.TrialState.RUNNING
    with pytest.raises(ConfigError, match="train labels aaaaaaaaaaaa -> bbbbbbbbbbbb"):
        opened("b" * 64)
    study = opened("b" * 64, changed=True)
    [trial] = study.trials
    assert trial.state == optuna.trial.TrialState.FAIL
    assert trial.user_attrs["error"] == INTERRUPTED
    assert [e["first_trial"] for e in study.user_attrs[StudyAttr.DATA]] == [0, 1]


@pytest.mark.slow  # two real launches (Ray, one digits trial of one epoch each)
def test_a_search_goes_on_with_changed_data_when_told(tmp_path, capsys, forget, local_ray):
    name = f"goes-on-{next(_names)}"
    forget(name)
    streamed = {"loading": {"stream": True, "workers": 0}}  # as the search was
    config = _config(tmp_path, _npz()(tmp_path), name, **streamed)
    assert main(["launch", str(config), "--quiet"]) == 0
    _npz(y_train=lambda y: (y + 1) % 10, y_test=lambda y: (y + 1) % 10)(tmp_path)
    DATASETS._entries.pop(name)
    assert main(["launch", str(config), "--quiet", "--trials", "2"]) == 2
    assert main(["launch", str(config), "--quiet", "--trials", "2", "--data-changed"]) == 0
    storage = f"sqlite:///{tmp_path / 'run' / 'npas.db'}"
    study = optuna.load_study(study_name="search", storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    entries = study.user_attrs[StudyAttr.DATA]
    assert [(e["event"], e["first_trial"]) for e in entries] == [
        ("first launch", 0),
        ("--data-changed", 1),
    ]
