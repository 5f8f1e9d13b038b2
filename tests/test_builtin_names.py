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
from spaces import FAMILIES, family_hyper_keys, family_names, register_family, ssn_names
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
    got = _in_a_fresh_process(FRESH, *args)
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


#: A fresh process: each built-in family's hyper-parameters before the registry loads, then
#: the registry's.
FRESH_HYPER = """
import json, sys
from spaces import family_hyper_keys
from spaces._builtin import BUILTIN_FAMILIES
before = {name: list(family_hyper_keys(name)) for name in BUILTIN_FAMILIES}
light = "torch" not in sys.modules
from spaces import FAMILIES, hyper_keys
after = {name: list(hyper_keys(FAMILIES.get(name))) for name in BUILTIN_FAMILIES}
print(json.dumps({"before": before, "light": light, "registry": after}))
"""


def test_the_builtin_hyper_parameters_are_the_registered_ones_and_need_no_torch() -> None:
    got = _in_a_fresh_process(FRESH_HYPER)
    assert got["light"] and got["before"] == got["registry"]


def test_a_registered_familys_hyper_parameters_are_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(FAMILIES, "_entries", dict(FAMILIES._entries))  # restored after

    @register_family("test-builtin-names-hyper")
    def tiny_family(in_shape, num_classes, stripes=2):
        raise NotImplementedError

    assert family_hyper_keys("test-builtin-names-hyper") == ("stripes",)


#: A fresh process: Shapeshifting's names before its registries load, then the registries'.
FRESH_SSN = """
import json, sys
from spaces import ssn_names
from spaces._builtin import BUILTIN_SSN
before = {registry: ssn_names(registry) for registry in BUILTIN_SSN}
light = "torch" not in sys.modules
import spaces.ssn
after = {registry: getattr(spaces.ssn, registry).names() for registry in BUILTIN_SSN}
print(json.dumps({"before": before, "light": light, "registry": after}))
"""


def test_shapeshiftings_builtin_names_are_the_registered_ones_and_need_no_torch() -> None:
    got = _in_a_fresh_process(FRESH_SSN)
    assert got["light"] and got["before"] == got["registry"]
    assert sorted(got["before"]) == ["GENERATORS", "MAPPINGS", "UPSAMPLERS"]


def test_a_registered_generator_is_named_once_its_registry_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spaces.ssn import GENERATORS

    monkeypatch.setattr(GENERATORS, "_entries", dict(GENERATORS._entries))  # restored after
    GENERATORS.register("test-builtin-names-gen")(type("Gen", (), {}))
    assert "test-builtin-names-gen" in ssn_names("GENERATORS")


def _in_a_fresh_process(script: str, *args: str) -> dict:
    """What ``script`` prints as JSON, run in a new interpreter (nothing loaded before it)."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    return json.loads(done.stdout)


def test_every_width_is_a_hyper_parameter_of_its_family() -> None:
    """``spaces.WIDTHS`` (what narrowing and widening scale) names only real widths."""
    from spaces import WIDTHS

    for family, widths in WIDTHS.items():
        assert set(widths) <= set(family_hyper_keys(family)), family
