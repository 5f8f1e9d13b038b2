"""Searches of signals and tables: ``search check`` and ``search launch`` refuse a family that
builds no model of their samples before any trial; a bundle README's onnxruntime snippet
preprocesses raw samples of every layout as npas did (its per-channel constants broadcast along
axis 1 of an image N×C×H×W, a signal N×C×L, a table N×F, one constant per feature)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from objectives.datasets import DATASETS
from search.bundle._readme import _portable_readme
from search.config._load import load_config
from search.screening._user_checks import check_user_code
from spaces._errors import ConfigError


def test_search_check_refuses_an_image_family_on_table_rows_before_any_trial(tmp_path):
    # 60 rows: 48 to train on once the test fifth is out, a tenth of them (5) for validation
    # holds one of each of the 3 classes (30 rows' 2 did not, and search check says so first)
    np.savez(tmp_path / "t.npz", x_train=np.zeros((60, 5), np.float32),
             y_train=np.arange(60) % 3)  # fmt: skip
    config = {
        "name": "t",
        "dataset": {"name": "t-table", "npz": str(tmp_path / "t.npz"), "layout": "table"},
        "space": {"family": ["mlp", "convnet"], "mlp.width": [4, 8]},
        "train": {"epochs": 1},
        "out": str(tmp_path / "runs"),
    }
    try:
        with pytest.raises(ConfigError, match=r"family 'convnet' builds no model of dataset "
                           r"'t-table', table samples of shape \(5,\)"):  # fmt: skip
            check_user_code(load_config(config))
        config["space"]["family"] = ["mlp"]
        assert check_user_code(load_config(config))["splits"]["train"]["shape"] == [5]
    finally:
        DATASETS._entries.pop("t-table", None)


def _snippet(tmp_path, shape: tuple[int, ...], multiply: list, subtract: list) -> str:
    """The README's preparation of ``raw`` for a bundle whose input is ``shape``."""
    record = {
        "onnx": {"file": "model.onnx", "opset": 18, "input": {"name": "input", "dtype":
                 "float32", "shape": ["batch", *shape[1:]]},
                 "output": {"name": "logits", "shape": ["batch", 2]}},
        "data": {"test": {"split": "given", "size": 5, "indices": None}, "source": "mine",
                 "dataset": "d", "preprocessing": {"pixel_scale": 1.0, "multiply": multiply,
                                                   "subtract": subtract}},
        "exported": {"test_correct": 5},
    }  # fmt: skip
    (tmp_path / "metrics.json").write_text(json.dumps({"data": record["data"]}))
    text = _portable_readme(record)
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    return snippet.split("\nlogits")[0].replace(", onnxruntime as ort", "")


@pytest.mark.parametrize("shape", [(5, 3, 4, 4), (5, 3, 7), (5, 3)])
def test_the_snippet_normalises_each_channel_or_feature(tmp_path, monkeypatch, shape):
    multiply, subtract = [0.5, 2.0, 4.0], [1.0, -1.0, 3.0]
    prepare = _snippet(tmp_path, shape, multiply, subtract)
    raw = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    scope = {"raw": raw}
    monkeypatch.chdir(tmp_path)
    exec(prepare, scope)
    for c in range(3):
        assert np.array_equal(scope["x"][:, c], raw[:, c] * np.float32(multiply[c])
                              - np.float32(subtract[c]))  # fmt: skip


def test_the_snippet_takes_one_channel_signals_as_an_n_by_l_array(tmp_path, monkeypatch):
    """An npz with ``layout: signal`` may hold N×L; the README said raw is N×C×L only."""
    prepare = _snippet(tmp_path, (5, 1, 7), [0.5], [1.0])
    assert "raw[:, None]" in prepare and "layout: signal" in prepare
    raw = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)
    monkeypatch.chdir(tmp_path)
    for given in (raw, raw[:, None]):
        scope = {"raw": given}
        exec(prepare, scope)
        assert np.array_equal(scope["x"], raw[:, None] * np.float32(0.5) - np.float32(1.0))
