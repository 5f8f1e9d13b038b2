"""What ``search check`` and ``search launch`` warn of in a config's data: a validation split
too small to rank trials on, rank-3 arrays read as images that look like signals, and images
or signals that look channels-last.

Warnings, not refusals: the config is valid and the user may mean it.
"""

from __future__ import annotations

import math
from typing import Any

from search.derive._data import DataFacts, read_facts
from search.derive._derive import FOLDS, FOLDS_BELOW
from spaces import ConfigError

__all__ = ["data_warnings"]

#: An undeclared rank-3 sample (read as a grey image, 1×H×W) whose longer side is this many
#: times its shorter looks like a signal of H channels (an image's sides are alike; a
#: signal's channels are few and its length long).
SIGNAL_LIKE_RATIO = 8
#: An image's channels as channels-last arrays hold them last (grey, RGB, RGBA).
CHANNEL_COUNTS = (1, 3, 4)
#: The fewest rows of an image read with its channels last (its last axis one of
#: :data:`CHANNEL_COUNTS`, its first not): no one means 8 or more channels of images 1 to 4
#: pixels wide, and N×H×W×C arrays (PIL's and most image code's order) read that way.
CHANNELS_LAST_SIDE = 8


def data_warnings(config: Any) -> list[str]:
    """The warnings on a loaded ``SearchConfig``'s data (none when its sizes are unknown)."""
    data = {"dataset": config.data_source or config.dataset, "val_size": config.val_size,
            "train_size": config.train_size}  # fmt: skip
    try:
        facts = read_facts(data)
    except (ConfigError, AttributeError, TypeError):  # a dataset whose sizes are not known
        return []
    found = [_layout(facts), _channels_last(facts), _signal_channels_last(facts),
             None if config.folds > 1 else _validation(facts)]  # fmt: skip
    return [w for w in found if w]


def _validation(facts: DataFacts) -> str | None:
    """A search of one validation split too small to rank trials on (under
    :data:`FOLDS_BELOW` samples), with the spread of accuracy on it and the way out."""
    if facts.held >= FOLDS_BELOW:
        return None
    spread = 100 * math.sqrt(0.9 * 0.1 / max(1, facts.held))
    return (f"the validation split holds {facts.held} samples: at 90 % accuracy one trial's "
            f"figure has a standard error of {spread:.1f} points, so it ranks trials largely by "
            f"chance; folds: {FOLDS} (with scheduler: fifo) scores each trial on all "
            f"{facts.held + facts.train:,} training samples, and finalists retrain the best "
            "with fresh seeds")  # fmt: skip


def _layout(facts: DataFacts) -> str | None:
    """Undeclared rank-3 arrays read as grey images whose sides differ by
    :data:`SIGNAL_LIKE_RATIO` or more: say so, and how to read them as signals."""
    declaration = facts.declaration
    if not isinstance(declaration, dict) or declaration.get("layout") is not None:
        return None  # a registered dataset, or a declared layout: the user said
    if facts.layout != "image" or facts.in_shape[0] != 1:
        return None
    height, width = facts.in_shape[1:]
    if max(height, width) < SIGNAL_LIKE_RATIO * min(height, width):
        return None
    channels, length = sorted((height, width))
    how = ("declare layout: signal" if height < width else
           "transpose them to N×C×L (time last) and declare layout: signal")  # fmt: skip
    return (f"dataset {facts.name!r} declares no layout, so its samples of {height}×{width} "
            "are read as grey images (no layout: N×H×W, or N×1×H×W); if they are signals of "
            f"{channels} channels and length {length}, {how} in the dataset entry")  # fmt: skip


def _channels_last(facts: DataFacts) -> str | None:
    """Image arrays of a declared dataset whose samples read as C×H×W with C of
    :data:`CHANNELS_LAST_SIDE` or more and W one of :data:`CHANNEL_COUNTS`: N×H×W×C arrays
    (channels last) read as N×C×H×W. Say so, and how to transpose them."""
    if not isinstance(facts.declaration, dict) or facts.layout != "image":
        return None  # a registered dataset says its own layout
    channels, height, width = facts.in_shape
    if width not in CHANNEL_COUNTS or channels in CHANNEL_COUNTS or min(
            channels, height) < CHANNELS_LAST_SIDE:  # fmt: skip
        return None
    return (f"dataset {facts.name!r}: its samples of {channels}×{height}×{width} are read as "
            f"images of {channels} channels, {height}×{width} pixels (npas reads images as "
            f"N×C×H×W); if they are {channels}×{height} images of {width} channel(s), stored "
            "channels last (N×H×W×C, as PIL and most image code give them), save "
            "x.transpose(0, 3, 1, 2) in the npz")


def _signal_channels_last(facts: DataFacts) -> str | None:
    """Signal arrays of a declared dataset whose samples read as C×L with C at least
    :data:`SIGNAL_LIKE_RATIO` times L: N×L×C arrays (time first, as pandas and most sensor
    logs give them) read as N×C×L. Say so, and how to transpose them."""
    if not isinstance(facts.declaration, dict) or facts.layout != "signal":
        return None
    channels, length = facts.in_shape if len(facts.in_shape) == 2 else (1, 0)
    if channels < SIGNAL_LIKE_RATIO * length:
        return None
    return (f"dataset {facts.name!r}: its samples of {channels}×{length} are read as signals "
            f"of {channels} channels and length {length} (npas reads signals as N×C×L, time "
            f"last); if they are signals of {length} channel(s) and length {channels}, stored "
            "time first (N×L×C, as pandas and most sensor logs give them), save "
            "x.transpose(0, 2, 1) in the npz")
