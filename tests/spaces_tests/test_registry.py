from collections.abc import Callable

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
    for not_a_name in (["alpha"], None, 3):  # a config's value of the wrong type: unknown too
        with pytest.raises(UnknownNameError, match="known: alpha, beta"):
            reg.get(not_a_name)  # type: ignore[arg-type]


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


def _module_that_registers(tmp_path, monkeypatch, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_declared_entry_is_named_without_its_module_and_loaded_when_asked(
    tmp_path, monkeypatch
):
    import sys

    import spaces

    reg: Registry[Callable[[], int]] = Registry("thing")
    monkeypatch.setattr(spaces, "registry_under_test", reg, raising=False)  # the module's target
    body = "import spaces\ndef entry(): return 7\nspaces.registry_under_test.add('lazy', entry)\n"
    _module_that_registers(tmp_path, monkeypatch, "npas_declared_thing", body)
    reg.declare("lazy", "npas_declared_thing")
    assert "LAZY" in reg and reg.names() == ["lazy"] and len(reg) == 1
    assert "npas_declared_thing" not in sys.modules  # named, not imported
    assert reg.get("lazy")() == 7 and "npas_declared_thing" in sys.modules
    assert reg.names() == ["lazy"] and len(reg) == 1
    with pytest.raises(NpasError, match="already registered"):
        reg.declare("lazy", "elsewhere")


def test_a_declared_name_is_filled_by_its_own_module_only():
    """A user's entry under a built-in's declared name is refused before the built-in loads,
    as it is after (the built-in's module would otherwise fail on import)."""
    reg: Registry[object] = Registry("thing")
    reg.declare("tpe", "npas_builtin_module")

    def mine() -> None: ...

    with pytest.raises(NpasError, match="already registered"):
        reg.add("TPE", mine)
    mine.__module__ = "npas_builtin_module"  # as the declared module's own function
    assert reg.add("tpe", mine) is mine and reg.get("tpe") is mine


def test_a_declared_module_that_does_not_register_its_name_says_so(tmp_path, monkeypatch):
    reg: Registry[int] = Registry("thing")
    _module_that_registers(tmp_path, monkeypatch, "npas_silent_thing", "x = 1\n")
    reg.declare("quiet", "npas_silent_thing")
    with pytest.raises(NpasError, match="npas_silent_thing does not register it"):
        reg.get("quiet")
    with pytest.raises(UnknownNameError, match="known: quiet"):
        reg.get("other")


def test_the_config_names_every_built_in_without_importing_its_package():
    """The config checks ``algorithm.name``, ``scheduler.name`` and ``loggers`` against
    registries it keeps (issue 62): their names are there before the packages load, and each
    declared module registers exactly the names declared for it."""
    import importlib
    import subprocess
    import sys

    code = ("import sys\nfrom search.config import LOGGERS, OPTIMISERS, SCHEDULERS\n"
            "print(len(OPTIMISERS.names()), len(SCHEDULERS.names()), len(LOGGERS.names()),\n"
            "      any(m.startswith(('search.optimisers', 'search.schedulers', 'search.run',\n"
            "                        'optuna', 'ray')) for m in sys.modules))\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8", "2", "2", "False"]
    from search.config._registries import BUILT_IN

    for registry, modules in BUILT_IN.items():
        for module, names in modules.items():
            importlib.import_module(module)
            for name in names:
                assert registry.get(name) is not None
