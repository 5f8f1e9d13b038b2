"""A launch stopped (SIGTERM, as `search stop` sends) while it is still starting its local Ray,
once or twice 0.2 s apart: it stops as documented, exit 143 with its `interrupted:` line, and
leaves no process of that Ray. Before, Ray's own handler (``sys.exit(signum)``, installed by
``ray.init`` outside the window where npas maps SIGTERM) ended it with exit 15, no line."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests._support.configs import CLI_CONFIG
from tests._support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _gcs(proc: subprocess.Popen) -> psutil.Process | None:
    """The GCS server of the Ray the launch is starting, once it runs."""
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if child.name() == "gcs_server":
                    return child
    return None


@pytest.mark.parametrize("signals", [1, 2], ids=["one SIGTERM", "two 0.2 s apart"])
def test_a_sigterm_while_ray_starts_stops_the_launch_with_143(tmp_path, signals):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**CLI_CONFIG, "name": "early", "trials": 2}),
                      encoding="utf-8")  # fmt: skip
    command = [sys.executable, "-m", "search", "launch", str(config), "--out",
               str(tmp_path / "run"), "--address", "local"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    seen: list[psutil.Process] = []
    try:
        gcs = wait_until(lambda: _gcs(proc), 120, interval_s=0.05, what="Ray's GCS to start")
        launch = psutil.Process(gcs.ppid())  # the process that runs the search (the lease's)
        seen = [*psutil.Process(proc.pid).children(recursive=True)]
        launch.send_signal(signal.SIGTERM)
        if signals == 2:
            time.sleep(0.2)
            with contextlib.suppress(psutil.NoSuchProcess):
                launch.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, (proc.returncode, err[-3000:])
        assert "search launch: interrupted: search 'early' stopped by SIGTERM" in err, err
        assert "Traceback" not in err, err
        wait_until(lambda: not [p for p in seen if p.is_running()
                                and p.status() != psutil.STATUS_ZOMBIE], 30,
                   what=lambda: f"the launch's Ray to end: {[p.pid for p in seen]}")  # fmt: skip
    finally:
        for p in [psutil.Process(proc.pid), *seen] if proc.poll() is None else seen:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        proc.wait(timeout=30)
