"""The built-in family names known without torch are the ones the family modules register,
and once the registry is loaded the names are the registry's (a user's family among them)."""

from __future__ import annotations

import json
import subprocess
import sys

from spaces import FAMILIES, family_names, register_family
from spaces._builtin import BUILTIN_FAMILIES

#: A fresh process: the names before anything loads the registry, and after.
FRESH = """
import json, sys
from spaces import family_names
before = family_names()
light = "torch" not in sys.modules
from spaces import FAMILIES
print(json.dumps({"before": before, "light": light, "registry": FAMILIES.names()}))
"""


def test_the_builtin_names_are_the_registered_ones_and_need_no_torch() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    got = json.loads(done.stdout)
    assert got["light"] and got["before"] == got["registry"] == sorted(BUILTIN_FAMILIES)


def test_a_registered_family_is_named_once_the_registry_is_loaded(monkeypatch) -> None:
    monkeypatch.setattr(FAMILIES, "_entries", dict(FAMILIES._entries))  # restored after

    @register_family("test-builtin-names-tiny")
    def tiny(in_shape, num_classes):
        raise NotImplementedError

    names = family_names()
    assert "test-builtin-names-tiny" in names and names == FAMILIES.names()
