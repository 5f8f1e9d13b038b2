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


def test_an_entry_is_named_once_and_its_name_read_back():
    reg: Registry[type] = Registry("thing")

    @reg.register("Widget")
    class Widget:
        pass

    assert reg.name_of(Widget) == "widget" and reg.get("widget") is Widget
    with pytest.raises(NpasError, match="not a registered thing"):
        reg.name_of(int)


def test_every_search_algorithm_knows_its_registered_name():
    from search.optimisers import OPTIMISERS
    from spaces import Space

    space = Space.from_dict({"x": {"low": 1, "high": 3}})
    for name in OPTIMISERS.names():
        assert OPTIMISERS.get(name)(space, ["minimize", "maximize"], seed=0).name == name
