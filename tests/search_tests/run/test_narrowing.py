"""A refused proposal narrowed until the screen passes it (``search.config.repair``): the
widest narrowing of its family's searched widths that fits, on their grids and within their
bounds, nothing else changed; none when even the narrowest does not fit. Checked for every
point and limit (hypothesis) against a monotone count, and on the real screen of the
``mnist-record-697`` preset."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from search.config import load_preset
from search.run._narrowing import NARROWING, _ladder, narrowed
from search.screening._screen import Screen
from spaces import Categorical, Float, Int, Space

SPACE = Space({"sepnet.stem": Int(4, 16, log=True), "sepnet.width": Int(6, 24, step=2),
               "sepnet.blocks": Int(2, 5), "sepnet.head": Categorical(["gap", "flatten"]),
               "train.lr": Float(0.004, 0.03, log=True)})  # fmt: skip


def _count(point: dict[str, Any]) -> int:
    """A stand-in for the params count: grows with each width."""
    stem, width = point["sepnet.stem"], point["sepnet.width"]
    return 9 * stem + point["sepnet.blocks"] * (9 * width + width * width) + 10 * width


@given(stem=st.integers(4, 16), width=st.integers(3, 12).map(lambda i: 2 * i),
       blocks=st.integers(2, 5), limit=st.integers(100, 3000))  # fmt: skip
def test_the_narrowing_is_the_widest_rung_that_fits_and_changes_only_widths(
    stem: int, width: int, blocks: int, limit: int
) -> None:
    point = {"sepnet.stem": stem, "sepnet.width": width, "sepnet.blocks": blocks,
             "sepnet.head": "flatten", "train.lr": 0.01}  # fmt: skip
    asked: list[dict[str, Any]] = []

    def fits(candidate: dict[str, Any]) -> bool:
        asked.append(candidate)
        return _count(candidate) <= limit

    result = narrowed(SPACE, point, "sepnet", fits)
    ladder = _ladder(point, {n: SPACE[n] for n in ("sepnet.stem", "sepnet.width")})
    assert len(asked) <= 1 + math.ceil(math.log2(max(len(ladder), 1)))  # bisection
    fitting = [rung for rung in ladder if fits(rung)]
    if not fitting:
        assert result is None
        return
    assert result == fitting[0]  # the widest that fits
    assert _count(result) <= limit
    assert {k: v for k, v in result.items() if k not in ("sepnet.stem", "sepnet.width")} == {
        k: v for k, v in point.items() if k not in ("sepnet.stem", "sepnet.width")}
    assert 4 <= result["sepnet.stem"] <= stem and 6 <= result["sepnet.width"] <= width
    assert result["sepnet.width"] % 2 == 0  # on the dimension's grid (6, 8, ..., 24)
    assert result != point


def test_the_ladder_scales_every_width_by_one_factor_down_to_the_bounds() -> None:
    point = {"sepnet.stem": 10, "sepnet.width": 20, "sepnet.blocks": 3}
    ladder = _ladder(point, {n: SPACE[n] for n in ("sepnet.stem", "sepnet.width")})
    # by hand: 10 * 0.9 = 9, 20 * 0.9 = 18; 10 * 0.81 = 8.1 -> 8, 20 * 0.81 = 16.2 -> 16
    assert NARROWING == 0.9 and ladder[:2] == [
        {"sepnet.stem": 9, "sepnet.width": 18, "sepnet.blocks": 3},
        {"sepnet.stem": 8, "sepnet.width": 16, "sepnet.blocks": 3}]
    assert ladder[-1] == {"sepnet.stem": 4, "sepnet.width": 6, "sepnet.blocks": 3}
    assert len({tuple(r.values()) for r in ladder}) == len(ladder)  # each distinct


def test_nothing_to_narrow_is_no_narrowing() -> None:
    point = {"sepnet.stem": 4, "sepnet.width": 6, "sepnet.blocks": 3}  # at the lower bounds
    assert narrowed(SPACE, point, "sepnet", lambda p: True) is None
    assert narrowed(SPACE, {"train.lr": 0.01}, "sepnet", lambda p: True) is None  # no width
    assert narrowed(SPACE, {**point, "sepnet.width": 8}, "mlp", lambda p: True) is None


def test_a_proposal_the_real_screen_refused_is_narrowed_into_the_params_limit() -> None:
    """mnist-record-697: a plain 16-wide net of 6 stem channels is over ``params <= 697``;
    narrowed, the screen passes it, and nothing but its widths changed."""
    config = load_preset("mnist-record-697")
    point = {"sepnet.stem": 6, "sepnet.stem_padding": "same", "sepnet.blocks": 3,
             "sepnet.width": 16, "sepnet.reuse": 2, "sepnet.residual": False,
             "sepnet.padding": "valid", "sepnet.dropout": 0.05, "sepnet.dropout_at": "between",
             "sepnet.head": "gap", "train.lr": 0.01, "train.label_smoothing": 0.0,
             "ssn.mapping": "none"}  # fmt: skip
    screen = Screen()
    assert screen(config.trial_config(point))["infeasible_reason"] == "violates params <= 697"
    result = narrowed(config.space, point, "sepnet",
                      lambda p: screen(config.trial_config(p)) is None)  # fmt: skip
    assert result is not None and screen(config.trial_config(result)) is None
    assert result["sepnet.width"] < 16 and result["sepnet.stem"] <= 6
    assert {k: v for k, v in result.items() if k not in ("sepnet.stem", "sepnet.width")} == {
        k: v for k, v in point.items() if k not in ("sepnet.stem", "sepnet.width")}
