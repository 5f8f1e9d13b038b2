"""How a user's samples are laid out: images, signals or tables, declared or read from the rank.

Why: an array's rank alone is ambiguous at rank 3, which is N×H×W grey images to an image user
and N×C×L signals to everyone else; guessing once read signals of shape (N, 1, 64) as 1×1×64
images. A declared ``layout`` settles it; without one, rank 4 is images, rank 2 a table and
rank 3 images with one channel added (what it always meant here, so stored searches read their
data as before). Any other rank, or an array that contradicts its declared layout, is refused
naming the shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spaces import ConfigError

__all__ = ["LAYOUTS", "arrange", "check_layout", "sample_layout"]

#: Layout → the array shapes it takes and the shape of one sample (C×H×W, C×L, F).
LAYOUTS: dict[str, str] = {
    "image": "N×C×H×W images or N×H×W (a channel added), a sample C×H×W",
    "signal": "N×C×L signals or sequences or N×L (a channel added), a sample C×L",
    "table": "N×F rows of features, a sample F",
}
#: Layout → the rank of one sample, and of an array the layout takes with a channel added.
_SAMPLE_RANK = {"image": 3, "signal": 2, "table": 1}
_ADDS_CHANNEL = {"image": 3, "signal": 2}
_OF_RANK = {rank: layout for layout, rank in _SAMPLE_RANK.items()}


def check_layout(layout: object, where: str) -> str | None:
    """``layout`` as given (None: the rank decides), or a refusal naming the known ones."""
    if layout is None or layout in LAYOUTS:
        return layout
    raise ConfigError(f"{where}: got {layout!r}; allowed: {_allowed()}")


def arrange(x: np.ndarray, layout: str | None, where: str) -> np.ndarray:
    """The split's samples as N × sample shape: a channel axis added where the layout (or, for
    rank 3 undeclared, the image default) takes one; other ranks refused.

    Raises:
        ConfigError: naming the array's shape and the layouts that would take it.
    """
    shape = tuple(int(n) for n in x.shape)
    if layout is None:
        layout = {4: "image", 3: "image", 2: "table"}.get(x.ndim)
        if layout is None:
            raise ConfigError(f"{where}: x has shape {shape}; allowed: {_allowed()}")
    if x.ndim == _ADDS_CHANNEL.get(layout):
        return x[:, None]
    if x.ndim != _SAMPLE_RANK[layout] + 1:
        raise ConfigError(
            f"{where}: x has shape {shape}, and layout {layout!r} takes {LAYOUTS[layout]}; "
            f"allowed: {_fitting(x.ndim)}"
        )
    return x


def sample_layout(shape: Sequence[int], layout: str | None, where: str) -> str:
    """The layout of a sample of ``shape`` (its rank decides: 3 image, 2 signal, 1 table),
    checked against the declared one.

    Raises:
        ConfigError: a sample of another rank than the declared layout's, or of rank 0 or 4+.
    """
    found = _OF_RANK.get(len(shape))
    if found is None or (layout is not None and found != layout):
        wanted = f"layout {layout!r} ({LAYOUTS[layout]})" if layout else _allowed()
        raise ConfigError(f"{where}: a sample has shape {tuple(shape)}; allowed: {wanted}")
    return found


def _allowed() -> str:
    return "; ".join(f"layout {name!r}: {about}" for name, about in LAYOUTS.items())


def _fitting(rank: int) -> str:
    """The layouts that take an array of ``rank`` (a channel added or not), or all of them."""
    fits = [name for name in LAYOUTS if rank in (_SAMPLE_RANK[name] + 1, _ADDS_CHANNEL.get(name))]
    if not fits:
        return _allowed()
    return f"layout {' or '.join(map(repr, fits))} for an array of rank {rank}, or x reshaped"
