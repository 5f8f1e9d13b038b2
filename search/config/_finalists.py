"""The ``finalists`` section: after the search, its best feasible trials are retrained with
fresh seeds and the one with the best mean validation accuracy within the constraints becomes
the search's recommendation (``search.run._finalists``).

Off unless the key is given: ``finalists: true`` (the defaults below) or a mapping of them
turns it on, ``finalists: false`` or no key leaves a search as it was (the presets keep their
speed). With ``limits.time`` set, ``share`` of it is kept for the finalists: the search
itself stops starting trials at the rest, and the finalists use what is left of the launch's
time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from search.config import _checks as checks
from search.config._keys import config_key, parse_section

__all__ = ["DEFAULT_TOP", "FinalistsConfig"]

#: Finalists retrained when the section is given without ``top``.
DEFAULT_TOP = 3


@dataclass(frozen=True)
class FinalistsConfig:
    """Finalists (section ``finalists``): how many of the search's best trials are retrained,
    with how many seeds each, and the share of ``limits.time`` kept for them."""

    top: int = config_key(
        0,
        check=checks.at_least(0),
        help=f"the most accurate feasible trials (on validation) that ran their whole "
        f"schedule, retrained as finalists; 0: none (no finalists key), {DEFAULT_TOP} when "
        "the key is given",
    )
    seeds: int = config_key(
        3,
        check=checks.at_least(1),
        help="fresh seeds each finalist is retrained with (each seed its own initialisation "
        "and validation split); the search's own run of a trial is not one of them",
    )
    fill: int = config_key(
        10,
        check=checks.at_least(1),
        help="with limits.time, fresh seeds each finalist may have in all: after its seeds, "
        "one more round of every finalist while a whole round still fits the time kept for "
        "them (their share is not left unused: the more seeds, the less a mean is chance); at "
        "or below seeds: none",
    )
    refit: bool = config_key(
        True,
        check=checks.boolean,
        help="train the recommended trial once more on the training and validation splits "
        "together (one validation split: train_on train+val; folds: every training sample), "
        "its search seed; search export writes that model (false: the search's own run)",
    )
    share: float = config_key(
        0.2,
        check=checks.number_in(0.0, 1.0, open_low=True, open_high=True),
        help="share of limits.time kept for the finalists: the search starts no trial past "
        "the rest (no effect without limits.time)",
    )

    @property
    def on(self) -> bool:
        """Whether the search has finalists."""
        return self.top > 0

    @classmethod
    def from_dict(cls, data: Any, path: str = "finalists") -> FinalistsConfig:
        """From ``true``/``false``/null or a mapping (given: ``top`` defaults to 3)."""
        if data is None or data is False:
            return cls()
        if data is True:
            data = {}
        data = checks.mapping(data, path)
        return parse_section(cls, {"top": DEFAULT_TOP, **data}, path)

    def search_time(self, time: float | None) -> float | None:
        """The search's own part of a launch's time limit (None: no limit)."""
        if time is None or not self.on:
            return time
        return time * (1.0 - self.share)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
