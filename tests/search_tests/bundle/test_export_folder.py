"""``search export --out``: a user's files are never written over or deleted, with or without
``--replace``, through a symlink neither; ``--replace`` replaces an npas bundle whole; a bad
``--out`` is refused with one line before any work; a failed export leaves ``--out`` as it was.

Every export runs the real ``search export`` (``search.cli.main``) on a SQLite study holding
one trained and saved trial (tests.search_tests.studies.npas_study), on real files and real
symlinks in ``tmp_path``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch

import search.bundle._write as write
from search.bundle import load_bundle
from search.cli import main
from search.trial import run_trial
from tests.search_tests.studies import npas_study

NAME = "tiny"
#: The file that marks a folder as an npas bundle.
MANIFEST = "npas-bundle.json"
#: A user's own files, each with content of its own.
USERS = {
    "README.md": "# my project\n",
    "model.onnx": "my onnx model",
    "model.pt2": "my program",
    "trial_state.pt": "my training state",
}
Run = Callable[..., tuple[int, str]]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite storage holding study ``tiny``: one trained and saved MLP trial on digits."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("search")
    result = run_trial(
        {
            "dataset": "digits",
            "family": "mlp",
            "hyper": {"depth": 1, "width": 16},
            "train": {"epochs": 1, "max_steps": 3},
            "indicators": ["params"],
            "artifact_dir": str(root / "trial"),
        }
    )
    address = f"sqlite:///{root / 'npas.db'}"
    study = optuna.create_study(
        directions=["maximize", "minimize"], storage=address, study_name=NAME
    )
    row = {k: result[k] for k in ("accuracy", "params")}
    npas_study([row], study=study, attrs={"artifact": result["artifact"]})
    return address


@pytest.fixture
def run(url: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """``search export --select trial:0 --out OUT [args]``: its exit code and stderr."""

    def export(out: Path, *args: str) -> tuple[int, str]:
        base = ["export", "--storage", url, "--name", NAME, "--select", "trial:0"]
        code = main([*base, "--out", str(out), *args])
        return code, capsys.readouterr().err

    return export


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records every dataset load of an export (and loads): a refusal must come before any."""
    loads: list[Any] = []
    real = write.load

    def spied(*args: Any, **kwargs: Any) -> Any:
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(write, "load", spied)
    return loads


@pytest.fixture(scope="module")
def exported(url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle as `search export` writes it."""
    out = tmp_path_factory.mktemp("exported") / "bundle"
    code = main(["export", "--storage", url, "--name", NAME, "--select", "trial:0",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    return out


def _snapshot(folder: Path) -> dict[str, Any]:
    """Every entry of ``folder`` (recursively): a symlink's target, a file's bytes."""
    seen: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            seen[key] = ("link", str(path.readlink()))
        elif path.is_file():
            seen[key] = path.read_bytes()
        else:
            seen[key] = "dir"
    return seen


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _users_folder(folder: Path, names: list[str]) -> Path:
    folder.mkdir()
    for name in names:
        (folder / name).write_text(USERS.get(name, f"my own {name}\n"), encoding="utf-8")
    return folder


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("replace", [False, True], ids=["plain", "replace"])
@pytest.mark.parametrize(
    "names", [sorted(USERS), ["config.yaml"], ["notes.txt"]], ids=["four", "config", "notes"]
)
def test_a_folder_of_the_users_files_is_refused_even_with_replace(
    run: Run, no_work: list[Any], tmp_path: Path, names: list[str], replace: bool
) -> None:
    proj = _users_folder(tmp_path / "proj", names)
    before = _snapshot(proj)
    code, err = run(proj, *(["--replace"] if replace else []))
    assert code == 1, err
    line = _one_line(err)
    assert "not an npas bundle" in line and names[0] in line
    assert "already holds a bundle" not in line, "the user's config.yaml is no bundle"
    assert _snapshot(proj) == before, "nothing written, replaced or deleted"
    assert not no_work and _leftovers(tmp_path) == []


@pytest.mark.parametrize("replace", [False, True], ids=["plain", "replace"])
def test_a_symlinked_out_is_the_folder_it_leads_to(
    run: Run, no_work: list[Any], tmp_path: Path, replace: bool
) -> None:
    proj = _users_folder(tmp_path / "proj", sorted(USERS))
    (tmp_path / "link").symlink_to(proj, target_is_directory=True)
    before = _snapshot(proj)
    code, err = run(tmp_path / "link", *(["--replace"] if replace else []))
    assert code == 1 and "not an npas bundle" in _one_line(err)
    assert _snapshot(proj) == before and (tmp_path / "link").is_symlink()
    assert not no_work


@pytest.mark.parametrize("name", ["config.yaml", "model.onnx", "notes.txt"])
def test_a_dangling_symlink_inside_out_is_never_written_through(
    run: Run, no_work: list[Any], tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / name).symlink_to(outside / "target")
    code, err = run(proj)
    assert code == 1, err
    line = _one_line(err)
    assert f"{proj / name} is a symlink to {outside / 'target'}, outside" in line
    assert list(outside.iterdir()) == [], "nothing written outside --out"
    assert not no_work


def test_a_symlink_out_of_a_bundle_is_refused_even_with_replace(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(exported, bundle)
    theirs = tmp_path / "theirs.onnx"
    theirs.write_text("someone else's model", encoding="utf-8")
    (bundle / "model.onnx").unlink()
    (bundle / "model.onnx").symlink_to(theirs)
    before = _snapshot(bundle)
    code, err = run(bundle, "--replace")
    assert code == 1 and "is a symlink to" in _one_line(err)
    assert theirs.read_text(encoding="utf-8") == "someone else's model"
    assert _snapshot(bundle) == before


@pytest.mark.parametrize("link", [False, True], ids=["file", "symlink"])
@pytest.mark.parametrize("replace", [False, True], ids=["plain", "replace"])
def test_out_onto_a_file_is_refused_before_any_work(
    run: Run, no_work: list[Any], tmp_path: Path, link: bool, replace: bool
) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("mine\n", encoding="utf-8")
    out = file
    if link:
        out = tmp_path / "link"
        out.symlink_to(file)
    code, err = run(out, *(["--replace"] if replace else []))
    assert code == 1, err
    assert "is a file, not a folder" in _one_line(err)
    assert file.read_text(encoding="utf-8") == "mine\n"
    assert not no_work and _leftovers(tmp_path) == []


def test_a_new_or_empty_folder_gets_the_bundle_and_its_manifest(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    names = {"config.yaml", "model.pt", "metrics.json", "README.md", "model.onnx", "model.pt2"}
    assert {p.name for p in exported.iterdir()} == {*names, MANIFEST}
    manifest = json.loads((exported / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["format"] == "npas-bundle/1" and manifest["written_by"].startswith("npas")
    assert (manifest["study"], manifest["trial"]) == (NAME, 0)
    assert set(manifest["files"]) == names
    load_bundle(exported)  # the readers of bundles read it as before
    (tmp_path / "empty").mkdir()
    mode = (tmp_path / "empty").stat().st_mode
    code, err = run(tmp_path / "empty")
    assert code == 0, err
    assert {p.name for p in (tmp_path / "empty").iterdir()} == {*names, MANIFEST}
    assert (tmp_path / "empty").stat().st_mode == mode, "a folder as mkdir makes it"
    assert _leftovers(tmp_path) == [], "no temporary folder is left beside --out"


def test_replace_replaces_a_bundle_whole_and_only_when_asked(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(exported, bundle)
    (bundle / "train.json").write_text("{}", encoding="utf-8")  # what `search train` adds
    (bundle / "trained").mkdir()
    (bundle / "trained" / "model.pt").write_bytes(b"the retrained model")
    before = _snapshot(bundle)
    code, err = run(bundle)
    assert code == 1 and f"already holds trial 0 of {NAME!r}; --replace" in _one_line(err)
    assert _snapshot(bundle) == before
    code, err = run(bundle, "--replace")
    assert code == 0, err
    assert not (bundle / "train.json").exists() and not (bundle / "trained").exists()
    assert _snapshot(bundle).keys() == _snapshot(exported).keys()
    assert _leftovers(tmp_path) == []


def test_replace_through_a_symlinked_out_keeps_the_symlink(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    shutil.copytree(exported, tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    code, err = run(tmp_path / "link", "--replace")
    assert code == 0, err
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / MANIFEST).is_file()
    assert _leftovers(tmp_path) == []


def test_a_bundle_with_the_users_files_added_is_not_replaced(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(exported, bundle)
    (bundle / "notes.txt").write_text("my notes\n", encoding="utf-8")
    before = _snapshot(bundle)
    code, err = run(bundle, "--replace")
    assert code == 1 and "notes.txt" in _one_line(err)
    assert _snapshot(bundle) == before


def test_a_bundle_from_before_the_manifest_is_still_a_bundle(
    run: Run, exported: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(exported, bundle)
    (bundle / MANIFEST).unlink()
    code, err = run(bundle)
    assert code == 1 and f"already holds trial 0 of {NAME!r}" in _one_line(err)
    code, err = run(bundle, "--replace")
    assert code == 0, err
    assert (bundle / MANIFEST).is_file()


def test_an_export_that_fails_leaves_out_as_it_was(
    run: Run, exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(exported, bundle)
    before = _snapshot(bundle)

    def broken(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write, "readme", broken)  # the last file an export writes
    with pytest.raises(OSError, match="No space left"):
        run(bundle, "--replace")
    assert _snapshot(bundle) == before, "the old bundle whole, none of the new one"
    assert _leftovers(tmp_path) == []
