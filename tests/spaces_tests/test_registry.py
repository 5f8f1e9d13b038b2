import pytest

from spaces import NpasError, Registry, UnknownNameError


def test_registry_lookup_is_case_insensitive_and_lists_known_names():
    reg: Registry[int] = Registry("thing")
    reg.add("Alpha", 1)
    reg.register("beta")(2)
    assert reg.get("ALPHA") == 1
    assert reg.names("b*") == ["beta"]
    with pytest.raises(UnknownNameError, match="known: alpha, beta"):
        reg.get("gamma")


def test_registry_refuses_duplicates():
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(NpasError, match="already registered"):
        reg.add("A", 2)
