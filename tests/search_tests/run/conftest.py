"""The two-node Ray cluster the cluster tests run on (``cluster``; tests/conftest.py marks
every test that uses it ``cluster`` and ``slow``).

Two ``ray start`` nodes on this machine, of one CPU each. The nodes are started with ``--block``
in their own process groups, and torn down by signalling exactly those groups (``ray stop``
would stop every Ray on the machine).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._support.waiting import wait_until

RAY = str(Path(sys.executable).with_name("ray"))
ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(address: str) -> bool:
    """Whether something listens at ``address`` (HOST:PORT)."""
    try:
        socket.create_connection(address.split(":"), timeout=1).close()
    except OSError:
        return False
    return True


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)  # the node's own process group, started below
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def _forget(address: str) -> None:
    """Removes the default-cluster note our head wrote, as ``ray stop`` would (only ours)."""
    note = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    port = address.rsplit(":", 1)[1]
    if note.is_file() and note.read_text().strip().endswith(f":{port}"):
        note.unlink()


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, dict[str, str]]]:
    """Two Ray nodes of one CPU each; yields the head's address and the nodes' environment."""
    # Ray 2.60's token authentication would need the head's token in every driver: a local
    # test cluster goes without.
    # The tests' trial functions live in this repository's tests package: the nodes' workers
    # import it from PYTHONPATH, as a user's cluster imports the user's installed package (the
    # job's own working folder no longer puts the driver's folder on their sys.path).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": path}
    address = f"127.0.0.1:{_free_port()}"
    common = ["--num-cpus=1", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = []
    try:
        head = [RAY, "start", "--head", f"--port={address.split(':')[1]}",
                "--include-dashboard=false", *common]  # fmt: skip
        started.append(subprocess.Popen(head, start_new_session=True, env=env, **quiet))
        # the second node is started anyway after 90 s: it fails to join, and the test says so
        wait_until(lambda: _answers(address), 90, interval_s=0.5, raise_on_timeout=False)
        node = [RAY, "start", f"--address={address}", *common]
        started.append(subprocess.Popen(node, start_new_session=True, env=env, **quiet))
        yield address, env
    finally:
        for proc in reversed(started):
            _stop(proc)
        _forget(address)
