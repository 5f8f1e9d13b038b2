"""The built-in dataset names known without torch are the ones ``objectives.datasets``
registers, and once it is loaded the names are the registry's (a user's dataset among them)."""

from __future__ import annotations

import json
import subprocess
import sys

from objectives import dataset_names, register_dataset
from objectives._dataset_names import BUILTIN_DATASETS
from objectives.datasets import DATASETS

FRESH = """
import json, sys
from objectives import dataset_names
before = dataset_names()
light = "torch" not in sys.modules
from objectives.datasets import DATASETS
print(json.dumps({"before": before, "light": light, "registry": DATASETS.names()}))
"""


def test_the_builtin_names_are_the_registered_ones_and_need_no_torch() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    got = json.loads(done.stdout)
    assert got["light"] and got["before"] == got["registry"] == sorted(BUILTIN_DATASETS)


def test_a_registered_dataset_is_named_once_the_registry_is_loaded(monkeypatch) -> None:
    monkeypatch.setattr(DATASETS, "_entries", dict(DATASETS._entries))  # restored after

    @register_dataset("test-builtin-names-tiny", source="a test")
    def tiny():
        raise NotImplementedError

    names = dataset_names()
    assert "test-builtin-names-tiny" in names and names == DATASETS.names()
