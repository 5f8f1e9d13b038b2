"""How the command line writes what it prints: numbers, durations, missing values and the
width of a line, one rule each, so that every command says the same value the same way and
fits a terminal.

- A number: :func:`format_value` (text), :func:`json_number` (JSON and CSV).
- A missing value (a hyper-parameter a trial's family does not use, a metric not measured):
  ``—`` in a table (:data:`MISSING`: the command line's and the report's), an empty cell in
  CSV, ``null`` in JSON; never ``NaN``, never a blank that could be an empty text.
- A line: at most :data:`WIDTH` columns. Prose is wrapped (:func:`wrap`); a table's columns
  are split into blocks (:func:`table_text`); what is too long for a line is shortened with
  ``…`` (:func:`clip`, :func:`clip_list`) and the line says where the whole text is (most
  often ``--format json``). An error stays one line (the rule for a user's mistake).
"""

from __future__ import annotations

import json
import math
import numbers
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MISSING",
    "WIDTH",
    "ZERO",
    "cell",
    "clip",
    "clip_list",
    "data_text",
    "duration",
    "format_value",
    "is_missing",
    "json_number",
    "note",
    "table_text",
    "wrap",
    "wrap_lines",
]

#: The most columns a line the command line prints may take.
WIDTH = 100
#: A missing value in a table (the command line's and the report's).
MISSING = "—"
#: Where a shortened line ends: the cut is marked, never silent.
ELLIPSIS = "…"
#: The most characters of one table cell: a longer text is cut (:func:`table_text`).
CELL = 60

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


def is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA: a value a trial does not have."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and (
        math.isnan(float(value))
    )


def cell(value: Any, *, digits: int = 6) -> str:
    """A table cell: :data:`MISSING` for a missing value, else :func:`format_value`."""
    return MISSING if is_missing(value) else format_value(value, digits=digits)


def json_number(value: Any) -> Any:
    """A number as JSON and CSV output write it: integers, and floats that are whole numbers,
    as Python ints (``3848``, never ``3848.0``, as :func:`format_value` prints them), other
    numbers as Python floats (never a numpy scalar); anything else as it is."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        value = value.item()  # a numpy scalar: a Python one (np.bool_ is no numbers.Real)
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


def wrap(text: str, *, indent: str = "  ", first: str = "", width: int = WIDTH) -> str:
    """``text`` in lines of at most ``width`` columns, broken at spaces, the first starting
    with ``first``, the others with ``indent``; a word longer than a line (a path) is kept
    whole on a line of its own, so it can still be copied."""
    return textwrap.fill(text, width=width, initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)  # fmt: skip


def note(text: str) -> str:
    """``[npas] text``, a line npas says on stderr while it works, :func:`wrap` ped under its
    text."""
    return wrap(f"[npas] {text}", indent=" " * 7)


def wrap_lines(lines: Sequence[str]) -> list[str]:
    """Each line :func:`wrap` ped, a wrapped one's next lines indented two columns more than
    it (a line of several is wrapped one line at a time: a traceback keeps its lines)."""
    return [wrap(part, indent=" " * (len(part) - len(part.lstrip()) + 2))
            for line in lines for part in line.splitlines() or [""]]  # fmt: skip


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with ``…``."""
    return text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS


def clip_list(items: Sequence[Any], width: int, *, more: str = "more") -> str:
    """``[a, b, c]`` within ``width`` characters: as many items as fit (one at least), then
    ``… N more``."""
    shown = [format_value(i) for i in items]
    whole = "[" + ", ".join(shown) + "]"
    if len(whole) <= width:
        return whole
    kept = shown[:1]
    for item in shown[1:]:
        tail = f", {ELLIPSIS} {len(shown) - len(kept) - 1} {more}]"
        if len("[" + ", ".join([*kept, item])) + len(tail) > width:
            break
        kept.append(item)
    return "[" + ", ".join(kept) + f", {ELLIPSIS} {len(shown) - len(kept)} {more}]"


def table_text(
    frame: pd.DataFrame, *, digits: int = 6, width: int = WIDTH, cut: int = CELL,
    whole: str = "--format json has them whole",
) -> str:
    """``frame`` as a text table: each cell as :func:`cell` writes it (integers as integers,
    missing values :data:`MISSING`) and one line of text at most ``cut`` characters
    (:func:`clip`; then a last line says so, and where the values are whole: ``whole``), the
    columns split into blocks of at most ``width`` columns."""
    texts = frame.astype(object).map(lambda v: cell(v, digits=digits))
    lines = texts.map(lambda t: t.strip().splitlines() or [""])
    shown = lines.map(lambda ls: clip(ls[-1] if len(ls) > 1 else ls[0], cut))
    text = shown.to_string(index=False, line_width=width)
    if (shown != texts).to_numpy().any():
        text += "\n" + wrap(f"(a text of several lines shows its last, and {ELLIPSIS} marks "
                             f"one cut to {cut} characters: {whole})", indent=" ")  # fmt: skip
    return text


def data_text(frame: pd.DataFrame, form: str) -> str:
    """``frame`` as CSV or JSON records, every value whole: numbers as :func:`json_number`
    writes them (``3``, never ``3.0``), a missing value an empty CSV cell or ``null``."""
    rows = [{str(k): None if is_missing(v) else json_number(v) for k, v in row.items()}
            for row in frame.astype(object).to_dict(orient="records")]  # fmt: skip
    if form == "json":
        return json.dumps(rows, indent=2, default=str) + "\n"
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    return pd.DataFrame(rows, columns=columns, dtype=object).to_csv(index=False)
