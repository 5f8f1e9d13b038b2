"""How the command line writes numbers and durations: one helper each, so that ``status``,
``pareto``, the progress lines and ``check`` say the same value the same way."""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["ZERO", "duration", "format_value", "json_number"]

#: Magnitudes below this print as 0: floating-point residue of sums and differences of
#: numbers near 1 (``0.1 + 0.2 - 0.3`` is 5.6e-17), never a measured value of an indicator.
ZERO = 1e-15


def format_value(value: Any, *, digits: int = 6) -> str:
    """A metric as text: integers (and integral floats) as integers, residue as ``0``, other
    finite floats to ``digits`` significant digits; anything else as ``str`` gives it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    if abs(number) < ZERO:
        return "0"
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.{digits}g}"


def json_number(value: Any) -> Any:
    """A number as JSON and CSV output write it: integers, and floats that are whole numbers,
    as Python ints (``3848``, never ``3848.0``, as :func:`format_value` prints them), other
    numbers as Python floats (never a numpy scalar); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    if math.isfinite(number) and number.is_integer() and abs(number) < 1e15:
        return int(number)
    return number


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
