"""A Ctrl-C is never lost (``search._ctrl_c``): one that Python drops where it was raised (in a
weakref callback, as matplotlib's figure finalisers run) still stops the command, and a report
interrupted so publishes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from search import _ctrl_c as ctrl_c

ROOT = Path(__file__).resolve().parents[2]

DROPPED = """
import signal, weakref
from search import _ctrl_c
# Python's own handler, as in a terminal: a suite run in the background (nohup ... &) starts
# its processes with SIGINT ignored, and install() then rightly leaves it so.
signal.signal(signal.SIGINT, signal.default_int_handler)
_ctrl_c.install()
class Held: pass
held = Held()
ref = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))
del held  # the callback's KeyboardInterrupt is printed and dropped
print("went on", flush=True)
try:
    _ctrl_c.raise_if_interrupted()
except KeyboardInterrupt:
    print("interrupted")
"""


def test_a_ctrl_c_dropped_in_a_weakref_callback_is_still_seen() -> None:
    done = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)  # fmt: skip
    assert done.stdout.split() == ["went", "on", "interrupted"]
    assert "KeyboardInterrupt" in done.stderr  # Python's "Exception ignored in" note


def test_a_report_interrupted_where_python_dropped_it_publishes_nothing(tmp_path, monkeypatch):
    from search.report import write_report
    from tests.search_tests.studies import npas_study

    study = npas_study([{"accuracy": 0.9, "params": 100.0}, {"accuracy": 0.8, "params": 50.0}])
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(ctrl_c, "_RECEIVED", [True])
    with pytest.raises(KeyboardInterrupt):
        write_report(study, out)
    assert list(out.iterdir()) == []
