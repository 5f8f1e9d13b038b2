"""optuna-dashboard on a search's storage: every study, its trials and user attributes, live.

npas records every search in an Optuna storage, so the stock dashboard shows them with nothing
added. It runs as its own process (its server blocks, and Ctrl-C must stop it cleanly); this
module starts it, waits until its REST API answers, and hands back the process and its URL.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from search.errors import ConfigError, DashboardError

__all__ = ["DashboardError", "free_port", "start_dashboard", "stop_dashboard"]

_SCRIPT = "optuna-dashboard"
_INSTALL = "pip install optuna-dashboard"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS picks it; another process could take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _command() -> list[str]:
    """The optuna-dashboard console script of this environment (beside the interpreter first)."""
    beside = Path(sys.executable).with_name(_SCRIPT)
    found = str(beside) if beside.exists() else shutil.which(_SCRIPT)
    if found is None:
        raise DashboardError(f"optuna-dashboard is not installed; install it with `{_INSTALL}`")
    return [found]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/studies", timeout=2) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")[-2000:].strip()


def start_dashboard(
    storage: str,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout_s: float = 60.0,
    log: str | Path | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Starts optuna-dashboard on ``storage`` and returns once its REST API answers.

    Args:
        storage: SQLAlchemy URL of the storage (``sqlite:///runs/npas.db``).
        host: Interface to listen on; the default keeps it on this machine.
        port: TCP port; None or 0 picks a free one.
        timeout_s: How long to wait for the first answer (imports take seconds).
        log: A file for the dashboard's output (kept); None: an unlinked one, shown only
            when it fails to start.

    Returns:
        ``(process, url)``; stop the process with :func:`stop_dashboard`.

    Raises:
        ConfigError: a bad port, or one in use.
        DashboardError: the script is missing, the process died (its output is in the
            message) or it did not answer within ``timeout_s``.
    """
    if port is None or port == 0:
        port = free_port(host)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(f"port: got {port!r}; allowed: an int in [1, 65535], or 0 for any")
    if not _free(host, port):  # else another server's answer would pass for the dashboard's
        raise ConfigError(
            f"port: got {port}, which is in use on {host}; allowed: a free port or 0"
        )
    args = [*_command(), storage, "--host", host, "--port", str(port), "--server", "wsgiref"]
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    # The dashboard's output goes to an unlinked file: shown when it fails to start, and the
    # child keeps writing to its own descriptor after ours is closed (a pipe would fill up).
    with open(log, "w+b") if log is not None else tempfile.TemporaryFile() as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        _wait(process, url, out, timeout_s=timeout_s, storage=storage)
    return process, url


def _wait(
    process: subprocess.Popen[bytes], url: str, log: IO[bytes], *, timeout_s: float, storage: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not _answers(url):
        if process.poll() is not None:
            raise DashboardError(
                f"optuna-dashboard exited with code {process.returncode} on {storage!r}: "
                f"{_tail(log)}"
            )
        if time.monotonic() > deadline:
            stop_dashboard(process)
            raise DashboardError(
                f"optuna-dashboard did not answer on {url} within {timeout_s:g} s: {_tail(log)}"
            )
        time.sleep(0.2)


def stop_dashboard(process: subprocess.Popen[bytes], *, timeout_s: float = 10.0) -> int:
    """Terminates a dashboard process (killing it if it ignores SIGTERM); returns its code."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return int(process.returncode)
