"""A config's mistakes are answered before torch, Ray or Optuna load (torch alone took 2-4 s),
by ``load_config`` and by ``search check`` / ``search launch`` in a fresh process; only the
names known from torch code (Shapeshifting's generators, upsamplers and mappings, a user's
families) load torch to be checked; the built-in families' hyper-parameters are known without
it (``spaces._builtin``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

GOOD = {
    "name": "light",
    "dataset": "digits",
    "space": {"family": ["mlp"], "mlp.width": {"low": 8, "high": 32}},
    "train": {"epochs": 1},
}

#: A mistake → the words its error must hold.
MISTAKES = {
    "unknown top-level key": ({"trails": 4}, "unknown key 'trails'"),
    "bad train value": ({"train": {"lr": -1}}, "train.lr: got -1"),
    "unknown train key": ({"train": {"epoch": 3}}, "did you mean 'epochs'"),
    "bad optimizer": ({"train": {"optimizer": "adamm"}}, "did you mean 'adamw'"),
    "bad schedule": ({"train": {"schedule": "cosin"}}, "did you mean 'cosine'"),
    "bad scheduler": ({"scheduler": {"name": "moashaa"}}, "moasha"),
    "bad limits": ({"limits": {"time": "soon"}}, "limits.time"),
    "bad measure key": ({"measure": {"thread": 2}}, "did you mean 'threads'"),
    "bad loading": ({"loading": {"workers": -1}}, "loading.workers"),
    "bad objective": ({"objectives": [["acuracy", "maximize"]]}, "did you mean 'accuracy'"),
    "bad constraint": ({"constraints": ["params < = 5"]}, "constraints[0]"),
    "bad resources": ({"resources": {"cpu": 0}}, "resources.cpu"),
    "missing space": ({"space": None}, "space"),
    "misspelt dataset": ({"dataset": "digitz"}, "did you mean 'digits'"),
    "misspelt family": ({"space": {"family": ["mpl"]}}, "did you mean 'mlp'"),
    "misspelt hyper-parameter": (
        {"space": {"family": ["mlp"], "mlp.widht": {"low": 8, "high": 32}}},
        "did you mean 'width'",
    ),
}

#: Loads the config file given and prints its error and which heavy modules it loaded.
PROBE = """
import json, sys
from search.config import load_config
try:
    load_config(sys.argv[1])
    said = None
except Exception as err:
    said = f"{type(err).__name__}: {err}"
print(json.dumps({"said": said, "loaded": [m for m in ("torch", "ray", "optuna")
                                          if m in sys.modules]}))
"""


def _file(tmp_path: Path, edit: dict) -> Path:
    data = {**GOOD, **edit}
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _probe(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_config_mistake_is_answered_without_torch(tmp_path: Path, mistake: str) -> None:
    edit, words = MISTAKES[mistake]
    got = _probe(PROBE, str(_file(tmp_path, edit)))
    assert got["said"] is not None and got["said"].startswith("ConfigError"), got
    assert words in got["said"], got
    assert got["loaded"] == [], got


#: ``search <command> <file>`` in this process (no supervisor), then what it loaded.
CLI = """
import contextlib, io, json, sys
from search.cli import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = main([sys.argv[1], sys.argv[2]])
print(json.dumps({"code": code, "said": err.getvalue(),
                  "loaded": [m for m in ("torch", "ray", "optuna") if m in sys.modules]}))
"""


@pytest.mark.parametrize("command", ["check", "launch"])
def test_the_commands_answer_a_mistake_without_torch(tmp_path: Path, command: str) -> None:
    got = _probe(CLI, command, str(_file(tmp_path, {"trails": 4})))
    assert got["code"] == 2, got
    assert f"search {command}: error:" in got["said"] and "'trials'" in got["said"], got
    assert got["loaded"] == [], got
