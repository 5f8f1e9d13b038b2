"""Generated image sets: bars of a few orientations, gratings of a few frequencies and a few
blobs to count, in noise, from fixed seeds, so that a benchmark can train on images without
reading a dataset of the unaided protocol or a development round (whose generated images,
``unaided_dev.shapes``, are outlines of four shapes)."""

from __future__ import annotations

import numpy as np


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    return yy, xx


def bars(n: int, seed: int, size: int = 20, *, channels: int = 1, noise: float = 0.5
         ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``n`` images of one bar at one of four orientations (0, 45, 90, 135 degrees: the
    label), of random place, length, thickness and contrast, each channel its own noise."""
    rng = np.random.default_rng(seed)
    yy, xx = _grid(size)
    y = rng.integers(0, 4, n)
    x = np.empty((n, channels, size, size), np.float32)
    for i in range(n):
        angle = np.pi * y[i] / 4 + rng.normal(0, 0.08)
        cy, cx = rng.uniform(0.3 * size, 0.7 * size, 2)
        along = (xx - cx) * np.cos(angle) + (yy - cy) * np.sin(angle)
        across = -(xx - cx) * np.sin(angle) + (yy - cy) * np.cos(angle)
        half, thick = rng.uniform(0.2, 0.4) * size, rng.uniform(0.6, 1.4)
        bar = (np.abs(along) < half) & (np.abs(across) < thick)
        x[i] = rng.uniform(0.5, 1.0) * bar + rng.normal(0, noise, (channels, size, size))
    return x, y.astype(np.int64)


def gratings(n: int, seed: int, size: int = 16, *, channels: int = 1, noise: float = 0.8
             ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``n`` images of a sinusoidal grating in one of three frequency bands (the label) at a
    random orientation and phase, its channels weighted at random."""
    rng = np.random.default_rng(seed)
    yy, xx = _grid(size)
    bands = [(1.0, 2.0), (2.5, 3.5), (4.0, 5.5)]  # cycles across the image
    y = rng.integers(0, len(bands), n)
    x = np.empty((n, channels, size, size), np.float32)
    for i in range(n):
        angle, phase = rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi)
        cycles = rng.uniform(*bands[y[i]])
        ramp = (xx * np.cos(angle) + yy * np.sin(angle)) / size
        wave = np.sin(2 * np.pi * cycles * ramp + phase)
        weights = rng.uniform(0.4, 1.0, (channels, 1, 1))
        x[i] = weights * wave + rng.normal(0, noise, (channels, size, size))
    return x, y.astype(np.int64)


def blobs(n: int, seed: int, size: int = 24, *, channels: int = 3, noise: float = 0.4
          ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``n`` images of one to four Gaussian blobs (label: the count less one) at random
    places and widths, each blob a random colour over the channels."""
    rng = np.random.default_rng(seed)
    yy, xx = _grid(size)
    y = rng.integers(0, 4, n)
    x = np.empty((n, channels, size, size), np.float32)
    for i in range(n):
        image = np.zeros((channels, size, size), np.float32)
        for _ in range(y[i] + 1):
            cy, cx = rng.uniform(0.15 * size, 0.85 * size, 2)
            width = rng.uniform(0.05, 0.09) * size
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * width**2))
            image += rng.uniform(0.4, 1.0, (channels, 1, 1)) * blob
        x[i] = image + rng.normal(0, noise, (channels, size, size))
    return x, y.astype(np.int64)
