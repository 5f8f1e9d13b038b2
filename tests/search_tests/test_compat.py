"""search._compat: the one module that uses Optuna's and Ray's private APIs, and its check.

The check passes on the installed versions (the upper ends of the supported ranges in the main
suite; ``.ci/bounds`` runs this file again on the lower ends) and refuses, with a message
naming the supported versions, a version outside them or a private name that is gone. No other
module of ``spaces``, ``objectives`` or ``search`` may reach into a private Optuna or Ray API,
nor any but ``spaces._compat`` into a private torch one (its own check: ``tests/spaces_tests/
test_compat.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
import ray
from optuna.storages._rdb import models
from optuna.trial import TrialState
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from ray.air.execution._internal.actor_manager import RayActorManager
from ray.tune.experiment.trial import Trial

from search import _compat
from search.cli import main
from search.errors import NpasError, UnsupportedDependency
from tests._support.searches import make_config

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "search" / "_compat.py"
TORCH_COMPAT = ROOT / "spaces" / "_compat.py"
#: The one module allowed each library's private APIs.
COMPAT_OF = {"optuna": COMPAT, "ray": COMPAT, "torch": TORCH_COMPAT}
#: Private attributes of the libraries' objects (an Optuna study, a torch module or tensor)
#: that npas reads only through their compat module.
PRIVATE_ATTRS = {
    "optuna": frozenset({"_storage", "_trial_id", "_study_id"}),
    "torch": frozenset({"_parameters", "_buffers", "_modules", "_flat_weights",
                        "_flat_weights_names", "_flat_weight_refs", "_init_flat_weights",
                        "_version", "_qkv_same_embed_dim"}),
}  # fmt: skip
LIBRARIES = ("optuna", "ray")


def test_the_installed_versions_pass():
    _compat.check()


@pytest.mark.parametrize(
    ("module", "version"),
    [(optuna, "4.5.0"), (optuna, "6.0.0"), (ray, "2.54.0"), (ray, "2.61.0"), (ray, "3.0.0")],
)
def test_a_version_outside_the_supported_range_is_refused(monkeypatch, module, version):
    monkeypatch.setattr(module, "__version__", version)
    with pytest.raises(UnsupportedDependency) as caught:
        _compat.check()
    message = str(caught.value)
    name = module.__name__
    assert isinstance(caught.value, NpasError)
    assert f"optuna {_compat.SUPPORTED['optuna']}" in message
    assert f"ray {_compat.SUPPORTED['ray']}" in message
    assert f"installed {name} {version} does not fit" in message
    assert "outside the supported range" in message
    assert "pip install" in message


@pytest.mark.parametrize(
    ("owner", "name", "expected"),
    [
        (models.TrialValueModel, "value_to_stored_repr", "TrialValueModel.value_to_stored_repr"),
        (RayActorManager, "_actor_task_failed", "RayActorManager._actor_task_failed"),
        (Trial, "_get_default_result_or_future", "Trial._get_default_result_or_future"),
    ],
)
def test_a_missing_private_name_is_refused(monkeypatch, owner, name, expected):
    monkeypatch.delattr(owner, name)
    with pytest.raises(UnsupportedDependency, match="does not fit") as caught:
        _compat.check()
    assert expected in str(caught.value) and "is missing" in str(caught.value)
    assert "npas supports optuna" in str(caught.value)


def test_a_failure_hook_that_lost_its_exception_argument_is_refused(monkeypatch):
    monkeypatch.setattr(RayActorManager, "_actor_task_failed", lambda self, tracked_actor: None)
    with pytest.raises(UnsupportedDependency, match="_actor_task_failed takes no `exception`"):
        _compat.check_ray()


def test_a_launch_is_refused_before_anything_is_created(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ray, "__version__", "2.99.0")
    out = tmp_path / "run"
    with pytest.raises(UnsupportedDependency, match=r"installed ray 2\.99\.0"):
        _compat_launch(make_config(out, optimiser="random", trials=1))
    assert not out.exists() and not ray.is_initialized()
    assert main(["launch", "--out", str(out), "--quiet"]) == 1  # an NpasError: exit 1
    err = capsys.readouterr().err
    assert "search launch: UnsupportedDependency: npas supports optuna" in err
    assert "Traceback" not in err and not out.exists()


def _compat_launch(config):
    from search.run import launch

    return launch(config, progress=False)


def test_the_check_reads_the_ranges_pyproject_pins():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    pins = {}
    for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(text)
        if requirement.name in LIBRARIES:
            pins[requirement.name] = requirement.specifier
    assert pins == {name: SpecifierSet(spec) for name, spec in _compat.SUPPORTED.items()}
    for spec in pins.values():  # both ends pinned
        assert {s.operator for s in spec} == {">=", "<"}


def test_the_actor_failure_hooks_are_put_back_on_exit():
    originals = {n: getattr(RayActorManager, n) for n in ("_actor_start_failed",
                                                          "_actor_task_failed")}  # fmt: skip
    default = Trial._get_default_result_or_future
    with _compat.tune_actor_failures(lambda proceed, error: proceed(error)):
        assert all(getattr(RayActorManager, n) is not f for n, f in originals.items())
        assert Trial._get_default_result_or_future is not default
    assert all(getattr(RayActorManager, n) is f for n, f in originals.items())
    assert Trial._get_default_result_or_future is default


# -- no private Optuna or Ray API outside search/_compat.py ------------------------------------


def private_uses(source: str) -> list[tuple[str, str]]:
    """``(library, where and what)`` of each private Optuna, Ray or torch use in ``source``: an
    import of a private module or name, a string naming one (for ``import_module``), a private
    name reached through ``torch`` or ``nn``, or a read of a private attribute of the library's
    objects (:data:`PRIVATE_ATTRS`, on anything but ``self``)."""
    found: list[tuple[str, str]] = []

    def private(dotted: str) -> str | None:
        parts = dotted.split(".")
        library = "torch" if parts[0] == "nn" else parts[0]  # ``from torch import nn``
        hidden = [p for p in parts[1:] if p.startswith("_") and not p.endswith("__")]
        return library if library in COMPAT_OF and hidden else None  # ``__version__`` is public

    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [(lib, f"{where}: import {a.name}") for a in node.names
                      if (lib := private(a.name))]  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(lib, f"{where}: from {n}") for n in [node.module, *names]
                      if (lib := private(n))][:1]  # fmt: skip
        elif isinstance(node, ast.Attribute):
            owner = node.value
            attr_of = [lib for lib, attrs in PRIVATE_ATTRS.items() if node.attr in attrs]
            if attr_of and not (isinstance(owner, ast.Name) and owner.id == "self"):
                found.append((attr_of[0], f"{where}: .{node.attr}"))
            elif lib := private(_dotted(node)):
                found.append((lib, f"{where}: {_dotted(node)}"))
        elif isinstance(node, ast.Constant) and (lib := _names_private(node.value, private)):
            found.append((lib, f"{where}: {node.value!r}"))
    return found


def _names_private(value: object, private: Callable[[str], str | None]) -> str | None:
    """The library of a private module a string names (``import_module("ray._private...")``)."""
    return private(value) if isinstance(value, str) and " " not in value else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


@pytest.mark.parametrize(
    "source",
    [
        "from optuna.storages._rdb import models",
        "from optuna.storages import _rdb",
        "import ray._private.services",
        "from ray.air.execution._internal.actor_manager import RayActorManager",
        "x = study._storage",
        "x = frozen._trial_id",
        "x = view._study_id",
        "x = ray._private.ray_constants.ENABLE_RAY_CLUSTER",
        "importlib.import_module('ray._private.services')",
        "from torch.nn.modules.conv import _ConvNd",
        "x = nn.init._calculate_fan_in_and_fan_out(w)",
        "x = module._parameters.get('weight')",
        "rnn._flat_weight_refs = []",
        "key = (t.data_ptr(), t._version)",
    ],
)
def test_the_scan_finds_each_kind_of_private_use(source):
    assert private_uses(source), source


def test_the_scan_lets_public_uses_pass():
    source = (
        "import optuna\nfrom optuna.trial import TrialState\nfrom ray.tune import Callback\n"
        "x = trial.storage\ny = self._storage\nz = optuna.storages.RDBStorage\n"
        "from torch import nn\nw = module.weight\nout = super()._apply(fn)\n"
        "n = torch.__version__\n"
    )
    assert private_uses(source) == []  # an object's own ``self._storage`` is its business


def test_no_module_outside_compat_uses_a_private_optuna_ray_or_torch_api():
    offenders = {}
    for package in ("spaces", "objectives", "search"):
        for path in sorted((ROOT / package).rglob("*.py")):
            uses = [use for lib, use in private_uses(path.read_text()) if COMPAT_OF[lib] != path]
            if uses:
                offenders[str(path.relative_to(ROOT))] = uses
    assert not offenders, f"private APIs outside their compat module: {offenders}"
    for compat in (COMPAT, TORCH_COMPAT):  # the scan must see each compat module's own uses
        assert {lib for lib, _ in private_uses(compat.read_text())} == {
            lib for lib, path in COMPAT_OF.items() if path == compat
        }


def test_a_changed_constraints_key_is_refused(monkeypatch):
    from optuna.study import _constrained_optimization

    monkeypatch.setattr(_constrained_optimization, "_CONSTRAINTS_KEY", "constraint_values")
    with pytest.raises(UnsupportedDependency, match="read constraints under another key"):
        _compat.check_optuna()


def test_an_enqueued_trial_whose_fixed_params_moved_is_refused(monkeypatch):
    monkeypatch.setattr(_compat, "_FIXED_PARAMS_KEY", "queued_params")
    with pytest.raises(UnsupportedDependency, match="enqueued trial's fixed_params"):
        _compat.check_optuna()


def test_the_constraints_written_are_those_samplers_read():
    attrs = _compat.with_constraints({"kept": 1}, [0.5, -1.0])
    trial = optuna.trial.create_trial(state=optuna.trial.TrialState.WAITING, system_attrs=attrs)
    assert trial.constraints == {"0": 0.5, "1": -1.0} and trial.system_attrs["kept"] == 1


def test_an_optuna_whose_genetic_samplers_cache_generations_elsewhere_is_refused(monkeypatch):
    """From 5.1 a rung view clears the genetic samplers' generation cache by its name."""
    monkeypatch.setattr(optuna, "__version__", "5.1.0")
    monkeypatch.setattr(_compat, "_GENERATION_CACHE", "_generations_seen")
    with pytest.raises(UnsupportedDependency, match="generation cache, cleared for rung views"):
        _compat.check_optuna()


def test_forgotten_generations_are_read_from_the_next_study_afresh():
    """A genetic sampler handed a study whose finished trials changed, under the id of the
    last one (a new rung view), breeds from the trials as they are once it forgot them."""
    sampler = optuna.samplers.NSGAIISampler(population_size=2, seed=0)
    key = sampler._get_generation_key()

    def study_with(states):
        study = optuna.create_study(directions=["maximize"], sampler=sampler)
        for x, state in enumerate(states):
            values = [float(x)] if state == TrialState.COMPLETE else None
            study.add_trial(optuna.trial.create_trial(
                state=state, values=values, params={"x": float(x)},
                distributions={"x": optuna.distributions.FloatDistribution(0, 9)},
                system_attrs={key: 0}))  # fmt: skip
        return study

    seen = study_with([TrialState.COMPLETE] * 3)
    assert len(sampler.get_parent_population(seen, 1)) == 2
    again = study_with([TrialState.PRUNED, TrialState.COMPLETE, TrialState.COMPLETE])
    _compat.forget_generations(sampler)
    assert [t.number for t in sampler.get_population(again, 0)] == [1, 2]
