"""optuna-dashboard on a search's storage: every study, its trials and user attributes, live.

npas records every search in an Optuna storage, so the stock dashboard shows them with nothing
added. It runs as its own process (its server blocks, and Ctrl-C must stop it cleanly); this
module starts it, waits until its REST API answers, and hands back the process and its URL.

The process is this module run as a script (:func:`_serve`), not the ``optuna-dashboard``
command: that takes the storage URL on its command line, where any user of the machine reads
it (``ps``), password included. Here the URL goes through the child's stdin, which only it
reads; the server is optuna-dashboard's WSGI app on the threaded wsgiref server its command
uses.

optuna-dashboard has no authentication, and its REST API edits and deletes studies. So it
listens on loopback unless the caller exposes it on purpose, and it is read-only (only GET,
HEAD and OPTIONS reach the app; anything else is answered 403) unless made writable. On
loopback it also answers only requests whose ``Host`` names loopback and its port: a web page
the user visits could otherwise point its own host name at 127.0.0.1 (DNS rebinding) and read
every study through the user's browser.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import IO, Any
from wsgiref.simple_server import WSGIServer, make_server

from search._imports import require
from search._urls import connect_url, masked_url
from search.errors import ConfigError, DashboardError

__all__ = ["DashboardError", "free_port", "loopback", "start_dashboard", "stop_dashboard"]

#: The HTTP methods a read-only dashboard lets through: optuna-dashboard reads with GET.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

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


def loopback(host: str) -> bool:
    """Whether ``host`` keeps the server on this machine (``localhost`` or 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _command(host: str, port: int, writable: bool) -> tuple[list[str], dict[str, str]]:
    """The server process's command line and environment: neither holds the storage URL.
    ``-P`` keeps the user's working folder off the child's ``sys.path`` (a ``json.py`` there
    would replace the standard library's); npas comes from ``PYTHONPATH``."""
    require("optuna_dashboard", purpose="the dashboard")  # the child imports it
    path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # the child runs this very code
    mode = "writable" if writable else "read-only"
    return [sys.executable, "-P", "-m", "search._dashboard", host, str(port), mode], env


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
    expose: bool = False,
    writable: bool = False,
) -> tuple[subprocess.Popen[bytes], str]:
    """Starts optuna-dashboard on ``storage`` and returns once its REST API answers.

    Args:
        storage: SQLAlchemy URL of the storage (``sqlite:///runs/npas.db``).
        host: Interface to listen on; the default keeps it on this machine.
        port: TCP port; None or 0 picks a free one.
        timeout_s: How long to wait for the first answer (imports take seconds).
        log: A file for the dashboard's output (kept); None: an unlinked one, shown only
            when it fails to start.
        expose: Allow a ``host`` beyond loopback (the API has no authentication).
        writable: Let the API change the storage (notes, deleting studies); else read-only.

    Returns:
        ``(process, url)``; stop the process with :func:`stop_dashboard`.

    Raises:
        ConfigError: a bad port, one in use, or a host beyond loopback without ``expose``.
        DashboardError: the script is missing, the process died (its output is in the
            message) or it did not answer within ``timeout_s``.
    """
    if not loopback(host) and not expose:
        raise ConfigError(
            f"--host: got {host!r}, beyond this machine; optuna-dashboard has no "
            "authentication, so serving it there needs --expose (it stays read-only unless "
            "--writable)"
        )
    if port is None or port == 0:
        port = free_port(host)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(f"port: got {port!r}; allowed: an int in [1, 65535], or 0 for any")
    if not _free(host, port):  # else another server's answer would pass for the dashboard's
        raise ConfigError(
            f"port: got {port}, which is in use on {host}; allowed: a free port or 0"
        )
    args, env = _command(host, port, writable)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"  # polled here
    # The dashboard's output goes to an unlinked file: shown when it fails to start, and the
    # child keeps writing to its own descriptor after ours is closed (a pipe would fill up).
    with open(log, "w+b") if log is not None else tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env
        )
        assert process.stdin is not None
        # A URL is far below a pipe's buffer, so this never blocks; a child that died at once
        # closed the pipe, and _wait says why it died.
        try:
            with contextlib.suppress(BrokenPipeError), process.stdin:
                process.stdin.write(storage.encode())
            _wait(process, url, out, timeout_s=timeout_s, storage=storage)
        except BaseException:  # Ctrl-C while it starts, too: no server is left behind
            stop_dashboard(process)
            raise
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
    """optuna-dashboard's own ``--server wsgiref``: a thread per request, with a listen backlog
    of 128 (socketserver's 5 made each of 300 connections wait about 0.14 s to be accepted)."""

    daemon_threads = True
    request_queue_size = 128


WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _forbidden(start_response: Callable[..., Any], body: bytes) -> Iterable[bytes]:
    """A 403 answer with a one-line JSON reason, the app never reached."""
    start_response("403 Forbidden", [("Content-Type", "application/json"),
                                     ("Content-Length", str(len(body)))])  # fmt: skip
    return [body]


def read_only(app: WSGIApp) -> WSGIApp:
    """``app`` answering only :data:`READ_METHODS`; any other request gets 403 and never
    reaches it (so nothing in the storage can be changed through the server)."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET").upper() in READ_METHODS:
            return app(environ, start_response)
        return _forbidden(start_response, b'{"reason": "this dashboard is read-only: '
                          b'search dashboard --writable allows changes"}')  # fmt: skip

    return guarded


def loopback_hosts(app: WSGIApp, port: int) -> WSGIApp:
    """``app`` answering only requests whose ``Host`` header is a loopback name and ``port``
    (``localhost``, ``127.0.0.1``, ``[::1]``); any other gets 403 and never reaches it."""
    allowed = {f"{name}:{port}" for name in ("localhost", "127.0.0.1", "[::1]")}

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_HOST", "").lower() in allowed:
            return app(environ, start_response)
        return _forbidden(start_response, b'{"reason": "this dashboard answers requests to '
                          b'this machine only (Host: 127.0.0.1 or localhost and its port)"}')

    return guarded


def _serve(host: str, port: int, mode: str) -> None:
    """The server process: the storage URL from stdin, optuna-dashboard on ``host:port`` until
    it is terminated, read-only unless ``mode`` is ``writable``."""
    from optuna_dashboard import wsgi

    storage = sys.stdin.read().strip()
    app = wsgi(connect_url(storage).render_as_string(hide_password=False))
    if mode != "writable":
        app = read_only(app)
    if loopback(host):
        app = loopback_hosts(app, port)
    print(f"optuna-dashboard ({mode}) on {masked_url(storage)}: http://{host}:{port}/",
          file=sys.stderr)  # fmt: skip
    make_server(host, port, app, server_class=_ThreadedServer).serve_forever()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3])
