"""Where ``search export`` writes, so that it never writes over or deletes a user's file.

``--out`` is checked before any work (:func:`bundle_target`): it may be missing, an empty
folder, or a bundle npas wrote (only with ``replace``), which its manifest says; a file, a
folder holding anything else and a symlink in it that leads out of it are refused, with or
without ``replace``. The bundle is then written into a fresh folder beside ``--out`` and
renamed into place (:func:`staged_bundle`), so an export that fails midway leaves ``--out`` as
it was, and a bundle is replaced whole, never file by file.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from search.bundle._files import BUNDLE_FORMAT, FILES, versions
from search.bundle._portable import ONNX_FILE, PROGRAM_FILE
from search.errors import ExportError
from search.trial import STATE_NAME

__all__ = ["MANIFEST", "bundle_target", "staged_bundle", "write_manifest"]

#: The file that marks a folder as an npas bundle, naming its format and its files.
MANIFEST = "npas-bundle.json"
#: What ``search train`` writes into a bundle's folder by default: the bundle's too.
_TRAINED = ("train.json", "trained")
#: A bundle's files before it had a manifest (its metrics.json then names the format).
_UNLISTED = (*FILES, ONNX_FILE, PROGRAM_FILE, STATE_NAME)
_SHOWN = 5


def bundle_target(out_dir: str | os.PathLike[str], *, replace: bool) -> Path:
    """The folder an export to ``out_dir`` writes (symlinks resolved), checked before any
    work: missing, empty, or an npas bundle and ``replace``.

    Raises:
        ExportError: ``out_dir`` is a file; or a folder holding a symlink that leads out of
            it, files that are not a bundle's (``replace`` or not), or a bundle (without
            ``replace``).
    """
    given = Path(out_dir)
    folder = _resolved(given)
    name = repr(str(given)) + (f" (a symlink to {str(folder)!r})" if given.is_symlink() else "")
    if folder.exists() and not folder.is_dir():
        raise ExportError(
            f"{name} is a file, not a folder: --out names the bundle's folder, a new or empty "
            "one; give another --out"
        )
    entries = sorted(folder.iterdir()) if folder.is_dir() else []
    for entry in entries:
        if entry.is_symlink() and not _resolved(entry).is_relative_to(folder):
            raise ExportError(
                f"{entry} is a symlink to {_resolved(entry)}, outside {name}: export neither "
                "writes nor deletes through it; remove the link or give another --out"
            )
    if not entries:
        return folder
    found = _bundle(folder)
    if found is None:
        raise ExportError(
            f"{name} holds files that are not an npas bundle ({_listed(entries)}): export "
            "writes only into a new or empty folder, or over a bundle it wrote (--replace); "
            "give another --out"
        )
    record, files = found
    foreign = [e for e in entries if e.name not in {MANIFEST, *_TRAINED, *files}]
    if foreign:
        raise ExportError(
            f"{name} holds an npas bundle and files export did not write "
            f"({_listed(foreign)}), which --replace would delete; move them or give another "
            "--out"
        )
    if not replace:
        raise ExportError(
            f"{name} already holds trial {record.get('trial')} of {record.get('study')!r}; "
            "--replace writes over it (replace=True), or give another --out"
        )
    return folder


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop: RuntimeError up to Python 3.12
        why = f"{str(path)!r} cannot be resolved ({err}); give another --out"
        raise ExportError(why) from None


def _listed(entries: Sequence[Path]) -> str:
    names = ", ".join(e.name for e in entries[:_SHOWN])
    return names + (f" and {len(entries) - _SHOWN} more" if len(entries) > _SHOWN else "")


def _bundle(folder: Path) -> tuple[dict[str, Any], list[str]] | None:
    """The bundle's record and its files: its manifest's; for a bundle written before
    manifests, its metrics.json and the files such a bundle had; None when neither names the
    bundle format."""
    manifest = _json_object(folder / MANIFEST)
    files = manifest.get("files")
    if manifest.get("format") == BUNDLE_FORMAT and isinstance(files, list):
        return manifest, [str(f) for f in files]
    metrics = _json_object(folder / "metrics.json")
    if metrics.get("format") == BUNDLE_FORMAT:
        return metrics, list(_UNLISTED)
    return None


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the regular file ``path``; {} for anything else (a symlink too)."""
    if path.is_symlink() or not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def write_manifest(folder: Path, *, study: str, trial: int, files: Sequence[str]) -> Path:
    """Writes the manifest that marks ``folder`` as the bundle of ``files``."""
    record = {"format": BUNDLE_FORMAT, "written_by": f"npas {versions()['npas']}",
              "study": study, "trial": trial, "files": sorted(files)}  # fmt: skip
    path = folder / MANIFEST
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


@contextmanager
def staged_bundle(out_dir: str | os.PathLike[str], *, replace: bool) -> Iterator[Path]:
    """A fresh folder beside ``out_dir`` to write the bundle in, renamed to ``out_dir``
    (symlinks resolved) when the block ends, after :func:`bundle_target` checks it again;
    removed, with ``out_dir`` untouched, when the block raises.

    Raises:
        ExportError: as :func:`bundle_target`; or the fresh folder cannot be made.
    """
    folder = bundle_target(out_dir, replace=replace)
    fresh = folder.parent / f".{folder.name}.npas-export-{secrets.token_hex(4)}"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fresh.mkdir()
    except OSError as err:
        raise ExportError(f"cannot write the bundle beside {str(out_dir)!r}: {err}") from None
    try:
        yield fresh
        _move_in(fresh, bundle_target(out_dir, replace=replace))
    finally:
        shutil.rmtree(fresh, ignore_errors=True)  # gone already once moved in


def _move_in(fresh: Path, folder: Path) -> None:
    """Renames ``fresh`` to ``folder``; a bundle there is renamed aside first and deleted
    once the new one is in place (or renamed back when it cannot be)."""
    if not folder.exists() or not any(folder.iterdir()):
        os.replace(fresh, folder)  # an empty folder is replaced too
        return
    old = folder.parent / f".{folder.name}.npas-old-{secrets.token_hex(4)}"
    os.rename(folder, old)
    try:
        os.rename(fresh, folder)
    except OSError:
        os.rename(old, folder)
        raise
    shutil.rmtree(old, ignore_errors=True)
