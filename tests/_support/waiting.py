"""The one wait of the tests: a poll of a condition with a time limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T],
    timeout_s: float,
    *,
    interval_s: float = 0.1,
    what: str | Callable[[], str] = "the condition",
    raise_on_timeout: bool = True,
) -> T:
    """Calls ``predicate`` every ``interval_s`` seconds until it returns a true value, and
    returns that value.

    Once ``timeout_s`` seconds have passed without one, raises AssertionError naming ``what``
    (a callable is called then, so the message can tell the state at the time); with
    ``raise_on_timeout=False`` returns the predicate's last (false) value instead, for a caller
    that goes on and checks for itself. The predicate is called at least once.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval_s)
    if not raise_on_timeout:
        return value
    said = what() if callable(what) else what
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {said}")
