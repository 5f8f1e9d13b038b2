"""A real small disk for fault tests: a tmpfs of a given size (the tests run as root, as CI
does), unmounted afterwards."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def tmpfs(folder: Path, size: str, *, options: str = "") -> Iterator[Path]:
    """``folder``, created and mounted as a tmpfs of ``size`` (``"400k"``, ``"64m"``), with
    mount ``options`` before it (``"ro"``)."""
    folder.mkdir()
    given = f"{options},size={size}" if options else f"size={size}"
    subprocess.run(["mount", "-t", "tmpfs", "-o", given, "tmpfs", str(folder)],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True, capture_output=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """``folder``, created and mounted as a read-only tmpfs: root cannot write it either (a
    ``chmod`` does not stop root), unmounted afterwards."""
    with tmpfs(folder, "64k", options="ro"):
        yield folder


@contextlib.contextmanager
def full(folder: Path) -> Iterator[Path]:
    """``folder``, a 256 KiB tmpfs filled up to its last byte by a file ``filler``."""
    with tmpfs(folder, "256k"):
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # ENOSPC: full
            pass
        finally:
            os.close(fd)
        yield folder


@contextlib.contextmanager
def bound_read_only(folder: Path) -> Iterator[Path]:
    """``folder`` (with what it holds) bind-mounted on itself read-only, as a finished run
    copied to read-only media or shared read-only is: root cannot write it either."""
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True,
                   capture_output=True)  # fmt: skip
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True,
                       capture_output=True)  # fmt: skip
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True, capture_output=True)


#: The ways a destination can refuse what a command writes, for :func:`unwritable`.
UNWRITABLE = ("read-only", "file", "full")


@contextlib.contextmanager
def unwritable(folder: Path, where: str) -> Iterator[Path]:
    """``folder`` as a destination that takes nothing: a read-only tmpfs (``read-only``), a
    full one (``full``, holding ``filler``), or a file of the user's (``file``, holding
    ``mine``) where a folder is named."""
    if where == "file":
        folder.write_text("mine", encoding="utf-8")
        yield folder
        return
    with read_only(folder) if where == "read-only" else full(folder):
        yield folder
