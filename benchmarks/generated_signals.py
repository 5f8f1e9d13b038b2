"""Generated signal sets: waves of a few shapes and frequency bands in noise, from fixed seeds,
so that a benchmark can train on signals without reading a dataset of the unaided protocol."""

from __future__ import annotations

import numpy as np

#: The frequency ranges (cycles over the signal) of each band, for 1 and 2 bands.
BANDS = {1: [(2.0, 5.0)], 2: [(2.0, 4.0), (5.0, 8.0)]}


def waves(
    n: int, seed: int, length: int = 96, *, bands: int = 1, noise: float = 0.6
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` two-channel signals of ``3 * bands`` classes (a sine, a square or a sawtooth wave,
    in a band of frequencies, at a random frequency within it and phase; the second channel
    its copy shifted by 5 steps) in Gaussian noise of deviation ``noise``, each channel's noise
    its own. Labels: ``shape + 3 * band``."""
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float32) / length
    y = rng.integers(0, 3 * bands, n)
    x = np.empty((n, 2, length), np.float32)
    for i in range(n):
        low, high = BANDS[bands][y[i] // 3]
        phase = 2 * np.pi * (rng.uniform(low, high) * t + rng.uniform())
        wave = [np.sin(phase), np.sign(np.sin(phase)), (phase / np.pi) % 2 - 1][y[i] % 3]
        x[i, 0] = wave + rng.normal(0, noise, length)
        x[i, 1] = np.roll(wave, 5) + rng.normal(0, noise, length)
    return x, y.astype(np.int64)
