"""One way of writing a number on the command line: integers as integers, floating-point
residue as 0, other values to their significant digits (search._format)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from search._format import ZERO, duration, format_value, json_number


@given(st.integers(-(10**14), 10**14))
def test_integers_and_integral_floats_print_as_integers(n: int) -> None:
    assert format_value(n) == str(n) == format_value(float(n))


@given(st.floats(-ZERO, ZERO, exclude_min=True, exclude_max=True))
def test_residue_prints_as_zero(x: float) -> None:
    assert format_value(x) == "0"


def test_residue_of_arithmetic_is_zero_and_small_values_are_kept() -> None:
    assert format_value(0.1 + 0.2 - 0.3) == "0"  # 5.55e-17, not a measurement
    assert format_value(1.5e-9) == "1.5e-09"  # a CO2 per sample is small, and real
    assert (
        format_value(0.123456789) == "0.123457" and format_value(0.123456789, digits=4) == "0.1235"
    )


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: abs(x) >= ZERO))
def test_a_value_reads_back_to_its_significant_digits(x: float) -> None:
    assert math.isclose(float(format_value(x)), x, rel_tol=1e-5)


def test_non_numbers_and_non_finite_values_as_python_writes_them() -> None:
    assert [format_value(v) for v in (True, "cpu", None, math.nan, -math.inf)] == [
        "True", "cpu", "None", "nan", "-inf"
    ]  # fmt: skip


def test_durations() -> None:
    assert [duration(s) for s in (0.4, 59.6, 185, 7620)] == ["0 s", "1 min 00 s", "3 min 05 s",
                                                              "2 h 07 min"]  # fmt: skip


@given(st.one_of(st.integers(-(10**14), 10**14), st.floats(allow_nan=True, allow_infinity=True)))
def test_json_numbers_are_ints_when_whole_and_equal_to_the_value(x: float) -> None:
    """What status writes to JSON and CSV: the same number (residue kept: only text rounds it
    to 0), an int exactly when it is whole (as format_value prints it), never a numpy scalar."""
    import numpy as np

    for value in (x, np.float64(x) if isinstance(x, float) else np.int64(x)):
        written = json_number(value)
        assert type(written) in (int, float)
        assert written == value or (math.isnan(written) and math.isnan(value))
        whole = math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15
        assert (type(written) is int) == whole
        if whole:
            assert format_value(value) == str(written)
