"""The local Ray that ``launch`` starts listens on loopback only.

The search runs in this process with no Ray started before, so ``launch`` starts its own; Ray's
processes (GCS server, raylet, agents, workers) are descendants of this one. A thread records
every listening TCP socket of this process and its descendants while the search runs.
"""

from __future__ import annotations

import ipaddress
import signal
import subprocess
import threading
from pathlib import Path

import pytest
import ray

from search.run._launch import launch
from search.run._ray_session import start_ray, stop_ray, writers_of
from tests._support.searches import make_config, slow_trial

pytestmark = pytest.mark.slow  # a real search on a local Ray


Sockets = dict[tuple[str, int], str]


def _listening() -> Sockets:
    """(address, port) → process name, for this process and its descendants."""
    import psutil  # Ray's bundled copy, on the path once ray is imported

    found: Sockets = {}
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    found[(conn.laddr.ip, conn.laddr.port)] = proc.name()
        except psutil.Error:  # ended meanwhile
            continue
    return found


def _watch(seen: Sockets, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        seen.update(_listening())


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return (mapped or address).is_loopback


def test_a_local_ray_listens_on_loopback_only(tmp_path):
    assert not ray.is_initialized(), "launch must start a Ray of its own here"
    before, seen, stop = _listening(), {}, threading.Event()
    watcher = threading.Thread(target=_watch, args=(seen, stop))
    watcher.start()
    try:
        config = make_config(tmp_path, optimiser="random", trials=2)
        study = launch(config, trial_fn=slow_trial, progress=False)
    finally:
        stop.set()
        watcher.join()
    assert not ray.is_initialized() and len(study.trials) == 2
    ray_sockets = {key: name for key, name in seen.items() if key not in before}
    names = set(ray_sockets.values())
    assert {"gcs_server", "raylet"} <= names, names  # the watch saw the Ray it started
    assert any(name.startswith("ray::") for name in names), names  # and its workers
    exposed = {key: name for key, name in ray_sockets.items() if not _loopback(key[0])}
    assert not exposed, f"listening beyond loopback: {exposed}"


def test_stopping_the_local_ray_ends_what_still_writes_to_its_logs(tmp_path):
    """Ray's agents can outlive their raylet (ray-project/ray#52385): a process left writing
    to the session's logs, as an orphaned agent does, is killed by pid; others are not."""
    assert not ray.is_initialized(), "the test starts a Ray of its own"
    assert start_ray(None)
    context = ray.get_runtime_context()
    logs = Path(context.get_temp_dir()) / context.get_session_name() / "logs"
    with (logs / "left_agent.out").open("w") as into_logs, \
            (tmp_path / "other.out").open("w") as elsewhere:  # fmt: skip
        left = subprocess.Popen(["sleep", "300"], stdout=into_logs, start_new_session=True)
        other = subprocess.Popen(["sleep", "300"], stdout=elsewhere, start_new_session=True)
    try:
        assert left.pid in writers_of(logs) and other.pid not in writers_of(logs)
        stop_ray()
        assert not ray.is_initialized()
        assert left.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None  # not the session's: untouched
        assert writers_of(logs) == []  # nothing of that Ray is left
    finally:
        for proc in (left, other):
            proc.kill()
            proc.wait(timeout=10)
