"""Sizes the house keeps (issue 62, item 4), checked where they hold: a rule that creeps back
fails here, with the number it crept to."""

from __future__ import annotations

import inspect

from search.run import NpasSearcher


def test_the_searcher_takes_at_most_eight_arguments() -> None:
    taken = [p for p in inspect.signature(NpasSearcher.__init__).parameters if p != "self"]
    assert len(taken) <= 8, taken
