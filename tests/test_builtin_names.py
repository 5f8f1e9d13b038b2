"""The built-in names a config's checks know without torch (families, datasets) are the ones
their modules register, and once a registry is loaded the names are the registry's (a user's
family or dataset among them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from objectives import dataset_names, register_dataset
from objectives._dataset_names import BUILTIN_DATASETS
from objectives.datasets import DATASETS
from spaces import FAMILIES, family_names, register_family
from spaces._builtin import BUILTIN_FAMILIES

#: A fresh process: the names before anything loads the registry, and the registry's after.
FRESH = """
import importlib, json, sys
package, function, module, registry = sys.argv[1:]
before = getattr(importlib.import_module(package), function)()
light = "torch" not in sys.modules
after = getattr(importlib.import_module(module), registry).names()
print(json.dumps({"before": before, "light": light, "registry": after}))
"""
CASES = {
    "families": (("spaces", "family_names", "spaces._build", "FAMILIES"), BUILTIN_FAMILIES),
    "datasets": (("objectives", "dataset_names", "objectives.datasets", "DATASETS"),
                 BUILTIN_DATASETS),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_builtin_names_are_the_registered_ones_and_need_no_torch(case: str) -> None:
    args, builtin = CASES[case]
    done = subprocess.run([sys.executable, "-c", FRESH, *args], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    got = json.loads(done.stdout)
    assert got["light"] and got["before"] == got["registry"] == sorted(builtin)


def test_a_registered_family_or_dataset_is_named_once_its_registry_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for registry in (FAMILIES, DATASETS):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))  # restored after

    @register_family("test-builtin-names-tiny")
    def tiny_family(in_shape, num_classes):
        raise NotImplementedError

    @register_dataset("test-builtin-names-tiny", source="a test")
    def tiny_dataset():
        raise NotImplementedError

    for names, registry in ((family_names(), FAMILIES), (dataset_names(), DATASETS)):
        assert "test-builtin-names-tiny" in names and names == registry.names()
