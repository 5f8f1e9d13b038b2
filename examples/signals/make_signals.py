"""Writes the example's signals: two-channel 1-D waveforms of three kinds, as an .npz.

``python make_signals.py DIR`` makes ``DIR/signals.npz`` with ``x_train`` (240, 2, 64),
``y_train``, ``x_test`` (60, 2, 64) and ``y_test``: sines, square waves and sawtooths at a
random frequency and phase, the second channel a shifted copy, amplitudes 0.5 to 2 with noise.
The values are not pixels (float32, about -2.3 to 2.3); npas standardises each channel with
the training split's mean and std. The same seed writes the same file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

LENGTH = 64
CLASSES = ("sine", "square", "sawtooth")


def wave(kind: str, rng: np.random.Generator) -> np.ndarray:
    """One (2, LENGTH) signal of ``kind``: the wave and a copy a quarter period later."""
    cycles, phase, amplitude = rng.uniform(2, 5), rng.uniform(0, 1), rng.uniform(0.5, 2)
    t = np.arange(LENGTH) / LENGTH * cycles + phase
    channels = []
    for shift in (0.0, 0.25):
        u = (t + shift) % 1.0
        if kind == "sine":
            channels.append(np.sin(2 * np.pi * u))
        elif kind == "square":
            channels.append(np.where(u < 0.5, 1.0, -1.0))
        else:
            channels.append(2 * u - 1)
    noise = rng.normal(0, 0.1, (2, LENGTH))
    return (amplitude * np.stack(channels) + noise).astype(np.float32)


def split(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` signals of each kind, shuffled, and their labels."""
    y = np.repeat(np.arange(len(CLASSES)), count)
    rng.shuffle(y)
    return np.stack([wave(CLASSES[label], rng) for label in y]), y


def main(root: str) -> None:
    rng = np.random.default_rng(0)
    (x_train, y_train), (x_test, y_test) = split(80, rng), split(20, rng)
    Path(root).mkdir(parents=True, exist_ok=True)
    out = Path(root) / "signals.npz"
    np.savez(out, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    print(f"wrote {len(y_train)} + {len(y_test)} signals of shape {x_train.shape[1:]} to {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data")
