"""Griffe extension for the API reference: npas's docstrings as mkdocstrings renders them.

npas writes Sphinx roles (``:func:`load```) in its Google docstrings and documents constants
with ``#:`` comments above them; mkdocstrings reads neither. This turns each role into code and
each ``#:`` comment block into the docstring of the attribute below it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


class NpasDocstrings(griffe.Extension):
    """Roles as code; ``#:`` comments as attribute docstrings."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None and obj.kind is griffe.Kind.ATTRIBUTE:
            comment = _comment_above(obj)
            if comment:
                obj.docstring = griffe.Docstring(comment, parent=obj)
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)


def _comment_above(obj: griffe.Object) -> str:
    """The ``#:`` lines right above ``obj``'s first line, without their markers."""
    try:
        lines = obj.lines_collection[obj.filepath]
    except (KeyError, TypeError, AttributeError):
        return ""
    found: list[str] = []
    index = (obj.lineno or 1) - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        found.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return "\n".join(found)
