"""Fetching dataset files: mirrors tried in order, md5-verified, written atomically.

A file is accepted when the md5 of the archive matches the published one, or, for a gzip file,
when the md5 of its decompressed content does: re-compressed copies of the same data (such as
the MNIST files shipped in ``shared/data/mnist``) are the same dataset and must not be refused.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import tempfile
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tqdm import tqdm

from spaces import NpasError

#: Seconds before a silent mirror is given up.
TIMEOUT_S = 30.0
_CHUNK = 1 << 20


class DatasetUnavailableError(NpasError):
    """Dataset files are missing and could not be fetched, or failed their checksum.

    Attributes:
        missing: File names that are missing or invalid.
        folder: Where the files are expected.
        attempts: ``(url, reason)`` for every download tried.
    """

    def __init__(
        self,
        message: str,
        *,
        missing: Sequence[str] = (),
        folder: Path | None = None,
        attempts: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.missing = list(missing)
        self.folder = folder
        self.attempts = list(attempts)


@dataclass(frozen=True)
class Resource:
    """One published file.

    Attributes:
        filename: Name on the mirrors and on disk.
        md5: md5 of the file as published.
        content_md5: md5 of the decompressed content of a ``.gz`` file, or None.
    """

    filename: str
    md5: str
    content_md5: str | None = None


def md5_file(path: Path) -> str:
    """Hex md5 of a file, read in chunks so large archives do not fill memory."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_problem(path: Path, resource: Resource) -> str | None:
    """None when ``path`` holds ``resource``; otherwise why not (for the error message)."""
    actual = md5_file(path)
    if actual == resource.md5 or actual == resource.content_md5:  # the latter: gunzipped copy
        return None
    if resource.content_md5 is not None:
        try:
            with gzip.open(path, "rb") as handle:
                content = hashlib.md5(handle.read(), usedforsecurity=False).hexdigest()
        except (OSError, EOFError, zlib.error):
            content = None
        if content == resource.content_md5:
            return None
    return f"md5 mismatch for {path.name}: got {actual}, expected {resource.md5}"


def mirrors_from_env(default: Sequence[str]) -> tuple[str, ...]:
    """``NPAS_MIRROR`` (base URLs separated by commas or spaces) if set, else ``default``."""
    raw = os.environ.get("NPAS_MIRROR", "").replace(",", " ").split()
    return tuple(raw) if raw else tuple(default)


def fetch(
    resources: Sequence[Resource],
    folder: Path,
    mirrors: Sequence[str],
    *,
    progress: bool | None = None,
) -> None:
    """Downloads every resource missing from ``folder``, trying ``mirrors`` in order.

    Raises:
        DatasetUnavailableError: Naming the files still missing, the folder, and each URL
            tried with its failure (unreachable, HTTP error, md5 mismatch).
    """
    if progress is None:
        progress = sys.stderr.isatty()
    attempts: list[tuple[str, str]] = []
    missing = [r for r in resources if not (folder / r.filename).is_file()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        attempts.append((str(folder), f"cannot create folder: {exc}"))
    else:
        missing = [r for r in missing if not _fetch_one(r, folder, mirrors, attempts, progress)]
    if missing:
        names = [r.filename for r in missing]
        tried = "\n".join(f"  {url}: {reason}" for url, reason in attempts) or "  (none)"
        raise DatasetUnavailableError(
            f"could not download {', '.join(names)}.\nPut these files in {folder} (or pass "
            f"root=, or set NPAS_DATA to a folder holding them).\nTried:\n{tried}",
            missing=names,
            folder=folder,
            attempts=attempts,
        )


def _fetch_one(
    resource: Resource,
    folder: Path,
    mirrors: Sequence[str],
    attempts: list[tuple[str, str]],
    progress: bool,
) -> bool:
    """Tries each mirror in turn; True once a verified copy is in place."""
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + resource.filename
        handle, name = tempfile.mkstemp(prefix=f".{resource.filename}.", dir=folder)
        tmp = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                _stream(url, out, progress=progress, label=resource.filename)
            problem = checksum_problem(tmp, resource)
            if problem is None:
                os.replace(tmp, folder / resource.filename)
                return True
            attempts.append((url, problem))
        except OSError as exc:  # URLError, HTTPError, timeouts and disk errors are all OSError
            attempts.append((url, str(getattr(exc, "reason", exc))))
        finally:
            tmp.unlink(missing_ok=True)
    return False


def _stream(url: str, out: BinaryIO, *, progress: bool, label: str) -> None:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=label, disable=not progress) as bar:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
                bar.update(len(chunk))
