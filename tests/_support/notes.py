"""npas's notes on stderr as a reader of one line expects them: each note is wrapped within
100 columns under its text (``search._format.note``), so its lines are joined again."""

from __future__ import annotations

#: How a wrapped note's next lines start: under the text after ``[npas] ``.
_UNDER = " " * 7


def notes(text: str) -> list[str]:
    """The lines of ``text``, each wrapped ``[npas] …`` note one line again."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(_UNDER) and lines and lines[-1].startswith("[npas] "):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines
