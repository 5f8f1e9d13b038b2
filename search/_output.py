"""Where a command writes what it made (``train --out``, ``report --out``, ``replay --plot``):
checked before the work starts, and written whole or not at all.

A destination that is a file, read-only or full is refused before training or plotting, so
no work is done that cannot be saved; each file is then written to a temporary name in its
folder and renamed into place (``os.replace``), so a disk that fills up meanwhile leaves the
file that was there before, never a cut one, and no temporary file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from search.errors import OutputError

__all__ = ["PROBE_BYTES", "check_file", "check_folder", "temporary_beside", "write_atomic"]

#: What the destination check writes (then removes): a disk without this much room left
#: cannot hold what the commands write, which is larger.
PROBE_BYTES = 64 * 1024


def _why(err: OSError) -> str:
    return err.strerror or type(err).__name__


def check_folder(folder: str | os.PathLike[str], *, flag: str) -> Path:
    """``folder`` created if missing, once it is shown to take a file of
    :data:`PROBE_BYTES` (written and removed).

    Raises:
        OutputError: it is a file, or cannot be created or written (read-only, full,
            no permission), in one line naming ``flag`` and why.
    """
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {str(path)!r} is a file, not a folder: name a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".npas-probe-", dir=path)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as err:
        raise OutputError(
            f"{flag} {str(path)!r} cannot be written ({_why(err)}): nothing was done; name "
            "a writable folder with free space"
        ) from None
    return path


def check_file(file: str | os.PathLike[str], *, flag: str) -> Path:
    """``file`` may be written: not a folder, its folder checked by :func:`check_folder`."""
    path = Path(file)
    if path.is_dir():
        raise OutputError(f"{flag} {str(path)!r} is a folder: name a file")
    check_folder(path.parent, flag=flag)
    return path


@contextlib.contextmanager
def temporary_beside(path: Path) -> Iterator[Path]:
    """A temporary name in ``path``'s folder, renamed to ``path`` when the block ends
    without an error and removed when it fails (a full disk: :class:`OutputError`)."""
    # the target's suffix last: what infers a format from it (matplotlib) sees the same one
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}",
                                dir=path.parent)  # fmt: skip
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        raise OutputError(f"{str(path)!r} could not be written ({_why(err)})") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """``write(temporary path)``, then the file renamed to ``path``: whole or not at all.

    Raises:
        OutputError: the write or the rename failed (a full disk, a read-only folder); the
            file at ``path`` is as it was, and no temporary file is left.
    """
    target = Path(path)
    try:
        with temporary_beside(target) as tmp:
            write(tmp)
    except OSError as err:  # mkstemp itself: the folder cannot take a file
        raise OutputError(f"{str(target)!r} could not be written ({_why(err)})") from None
    return target
