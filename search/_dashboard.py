"""optuna-dashboard on a search's storage: every study, its trials and user attributes, live.

npas records every search in an Optuna storage, so the stock dashboard shows them with nothing
added. It runs as its own process (its server blocks, and Ctrl-C must stop it cleanly); this
module starts it, waits until its REST API answers, and hands back the process and its URL.

The process is this module run as a script (:func:`_serve`), not the ``optuna-dashboard``
command: that takes the storage URL on its command line, where any user of the machine reads
it (``ps``), password included. Here the URL goes through the child's stdin, which only it
reads; the server is optuna-dashboard's WSGI app on the threaded wsgiref server its command
uses.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import IO
from wsgiref.simple_server import WSGIServer, make_server

from search._urls import masked_url
from search.errors import ConfigError, DashboardError

__all__ = ["DashboardError", "free_port", "start_dashboard", "stop_dashboard"]

_INSTALL = "pip install optuna-dashboard"
_ROOT = Path(__file__).resolve().parents[1]  # holds the search package the child imports


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


def _command(host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The server process's command line and environment: neither holds the storage URL."""
    if importlib.util.find_spec("optuna_dashboard") is None:
        raise DashboardError(f"optuna-dashboard is not installed; install it with `{_INSTALL}`")
    path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # the child runs this very code
    return [sys.executable, "-m", "search._dashboard", host, str(port)], env


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
    args, env = _command(host, port)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    # The dashboard's output goes to an unlinked file: shown when it fails to start, and the
    # child keeps writing to its own descriptor after ours is closed (a pipe would fill up).
    with open(log, "w+b") if log is not None else tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env
        )
        assert process.stdin is not None
        # A URL is far below a pipe's buffer, so this never blocks; a child that died at once
        # closed the pipe, and _wait says why it died.
        with contextlib.suppress(BrokenPipeError), process.stdin:
            process.stdin.write(storage.encode())
        _wait(process, url, out, timeout_s=timeout_s, storage=storage)
    return process, url


def _wait(
    process: subprocess.Popen[bytes], url: str, log: IO[bytes], *, timeout_s: float, storage: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not _answers(url):
        if process.poll() is not None:
            raise DashboardError(
                f"optuna-dashboard exited with code {process.returncode} on "
                f"{masked_url(storage)!r}: {_tail(log)}"
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


class _ThreadedServer(ThreadingMixIn, WSGIServer):
    """optuna-dashboard's own ``--server wsgiref``: a thread per request."""

    daemon_threads = True


def _serve(host: str, port: int) -> None:
    """The server process: the storage URL from stdin, optuna-dashboard on ``host:port`` until
    it is terminated."""
    from optuna_dashboard import wsgi

    storage = sys.stdin.read().strip()
    app = wsgi(storage)
    print(f"optuna-dashboard on {masked_url(storage)}: http://{host}:{port}/", file=sys.stderr)
    make_server(host, port, app, server_class=_ThreadedServer).serve_forever()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
