"""The Ray a search runs on: a local one started on loopback, or a cluster joined and checked.

``--address`` names a cluster's head (checked to answer before anything is created), ``auto``
the one ``ray start`` left on this machine; no address starts a local Ray with this machine's
CPUs, listening on loopback only. A trial's CPU/GPU share must fit what the Ray has.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import socket
from collections.abc import Sequence
from pathlib import Path

from search._compat import (
    bootstrap_address,
    loopback_node,
    quiet_token_notice,
    release_ray_signal_actions,
)
from search._stop_signals import hold_later_sigterms
from search._usercode import job_env
from spaces import ConfigError

__all__ = [
    "auto_address",
    "check_address",
    "check_local_resources",
    "ray_logs",
    "slots",
    "start_ray",
    "starting",
    "stop_ray",
    "writers_of",
]


def check_address(address: str) -> None:
    """A Ray cluster address that answers (HOST:PORT), checked in a few seconds."""
    host, sep, port = address.rpartition(":")
    if "://" in address or not sep or not host or not port.isdigit():
        raise ConfigError(
            f"address: got {address!r}; allowed: HOST:PORT of a Ray cluster's head (ray start "
            "--head prints it); Ray Client addresses (ray://) are not supported"
        )
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise ConfigError(
            f"address: nothing answers at {address} ({err.strerror or err}); start the "
            "cluster's head there (ray start --head --port PORT) or leave --address out for a "
            "local Ray"
        ) from None


def auto_address() -> str:
    """The cluster ``auto`` names: ``RAY_ADDRESS``, else the head ``ray start`` last started on
    this machine (the address file in Ray's temp folder), or a ConfigError at once.

    Ray's own ``auto`` also falls back to any Ray it finds running here, which may be another
    program's private Ray; and with none it fails with a traceback.
    """
    address = os.environ.get("RAY_ADDRESS") or bootstrap_address()
    if not address:
        raise ConfigError(
            "address: got 'auto', but no Ray cluster is running on this machine (RAY_ADDRESS is "
            "unset and `ray start` left no address); start one (ray start --head) or leave "
            "--address out for a local Ray"
        )
    return address


def check_local_resources(cpu: float, gpu: float) -> None:
    """A trial's share must fit the local Ray this launch will start."""
    import torch

    cpus, gpus = os.cpu_count() or 1, torch.cuda.device_count()
    if cpu > cpus or gpu > gpus:
        raise ConfigError(
            f"resources: a trial asks for cpu={cpu:g}, gpu={gpu:g}, but this machine has "
            f"{cpus} CPU and {gpus} GPU; allowed: at most those (or --address a cluster)"
        )


def starting(address: str | None) -> str:
    """What starting Ray at ``address`` is, for the line a slow start prints."""
    if address in (None, "local"):
        return f"starting a local Ray ({os.cpu_count()} CPUs)"
    return f"joining the Ray cluster at {address}"


def start_ray(address: str | None, imports: Sequence[str] = ()) -> bool:
    """Starts (or joins) Ray unless it runs already; True when this call started it.

    A Ray started here (no address, or ``local``) listens on loopback only; a cluster that
    ``address`` names is joined as it is. The job's ``runtime_env`` carries the user's code
    (``imports``) to every worker and gives the workers a working folder of their own
    (:func:`search._usercode.job_env`).
    """
    import ray

    if ray.is_initialized():
        return False
    here = address in (None, "local")
    local = loopback_node() if here else contextlib.nullcontext()
    with local, quiet_token_notice(), job_env(imports) as env:  # Ray's notice asks nothing
        ray.init(
            address=address or "local",  # never a cluster some `ray start` left as the default
            num_cpus=None if address else os.cpu_count(),
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=False,
            configure_logging=True,
            runtime_env=env,
            # the two workers Ray starts with itself would import for seconds of CPU and never
            # be used: Ray Tune's actors carry a runtime_env of their own (a cluster's own)
            _system_config={"prestart_worker_first_driver": False} if here else None,
        )
    release_ray_signal_actions()  # else ray.shutdown() leaves SIGTERM's default action on
    hold_later_sigterms()  # ray.init's handler ends the process even after a launch's stop
    return True


def stop_ray() -> None:
    """Shuts down the local Ray this process started, then kills, by pid, every process still
    writing to that Ray session's logs: Ray's agents can outlive their raylet
    (ray-project/ray#52385), and a stopped launch here left its DashboardAgent and
    RuntimeEnvAgent running with no parent.

    Its autoscaler monitor (no use to a local Ray) is killed first: it takes a second to
    answer the SIGTERM ``ray.shutdown`` sends, 1.0 of its 1.4 s on two cores.
    """
    import ray

    context = ray.get_runtime_context()
    logs = Path(context.get_temp_dir()) / context.get_session_name() / "logs"
    for pid in writers_of(logs):
        if _runs(pid, _MONITOR):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    ray.shutdown()
    for pid in writers_of(logs):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def writers_of(folder: Path) -> list[int]:
    """The processes, other than this one, with a file in ``folder`` open (from /proc; none
    where there is no /proc)."""
    inside = str(folder) + os.sep
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        if int(entry.name) == os.getpid():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(_target(fd).startswith(inside) for fd in fds):
            found.append(int(entry.name))
    return found


#: The script of Ray's autoscaler monitor, as its command line names it.
_MONITOR = str(Path("autoscaler", "_private", "monitor.py"))


def _runs(pid: int, script: str) -> bool:
    """Whether process ``pid`` runs a Python ``script`` (a path ending), from /proc."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:  # ended meanwhile
        return False
    return any(a.decode(errors="replace").endswith(script) for a in arguments)


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:  # closed meanwhile
        return ""


def slots(share: dict[str, float]) -> int:
    """How many trials the Ray cluster can run at once with this share (Ray's keys)."""
    import ray

    total = ray.cluster_resources()
    have = {"cpu": total.get("CPU", 1.0), "gpu": total.get("GPU", 0.0),
            "memory": total.get("memory", 0.0)}  # fmt: skip
    slots = min((math.floor(have[k] / v) for k, v in share.items() if v > 0), default=10**6)
    if slots < 1:
        asked = ", ".join(f"{k}={v:g}" for k, v in share.items())
        held = ", ".join(f"{k}={v:g}" for k, v in have.items())
        raise ConfigError(
            f"resources: a trial asks for {asked}, but the Ray cluster has {held} in all "
            "(memory in bytes)"
        )
    return slots


def ray_logs() -> str:
    """Ray's log folder of this session on this machine (the same path on a cluster's other
    nodes unless they were started with another ``--temp-dir``)."""
    import ray

    context = ray.get_runtime_context()
    return str(Path(context.get_temp_dir()) / context.get_session_name() / "logs")
