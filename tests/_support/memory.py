"""Memory as Ray's memory monitor counts it, and a process that holds it (run/test_oom.py).

Imports nothing heavy: the holder runs as ``python -m tests._support.memory FLOOR CAP``.
"""

from __future__ import annotations

import sys
import time

GIB = 2**30


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes."""
    with open("/proc/meminfo") as info:
        return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":") for line in info)}


def used() -> int:
    """Bytes of memory in use now, as Ray's memory monitor counts them."""
    info = meminfo()
    return info["MemTotal"] - info["MemAvailable"]


def hold(floor: int, cap: int, seconds: float = 100.0) -> None:
    """Keeps the machine's memory in use at ``floor`` bytes or more, holding at most ``cap``
    bytes itself: memory that other programs free meanwhile (a neighbour test ending) is taken
    again, so Ray's monitor goes on killing every worker it can until this process is killed."""
    held: list[bytearray] = []
    taken = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        short = min(floor - used(), cap - taken)
        if short > 0:
            held.append(bytearray(b"\x01") * short)  # written, so resident
            taken += short
        time.sleep(0.1)


if __name__ == "__main__":
    hold(int(sys.argv[1]), int(sys.argv[2]))
