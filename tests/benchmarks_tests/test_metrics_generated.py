"""Properties of the generated data sets worked out by hand (issue 62, item 6): the portfolio,
the waves curve table and the GPU check train on these, so a generator that drifted (another
label order, a wrong orientation or band, other draws for the same seed) would change those
tables silently. Without noise each image or signal is its formula, which is checked here."""

from __future__ import annotations

import numpy as np
import pytest

from tests._support.bundles import load_benchmark


@pytest.fixture(scope="module")
def images():
    return load_benchmark("generated_images")


@pytest.fixture(scope="module")
def signals():
    return load_benchmark("generated_signals")


def _sign_changes(signal: np.ndarray) -> int:
    signs = np.sign(signal)
    signs = signs[signs != 0]
    return int((np.diff(signs) != 0).sum())


def test_every_generator_keeps_its_shapes_and_its_seeds_labels(images, signals):
    """Labels are each seed's first draw: default_rng(0).integers(0, 4) gives 3, 2, 2, 1, 1, 0,
    0, 0, and integers(0, 3) 2, 1, 1, 0, 0, 0, 0, 0 (recorded from NumPy's PCG64 once)."""
    shapes = {images.bars: (1, 20, 20), images.gratings: (1, 16, 16), images.blobs: (3, 24, 24)}
    for make, shape in shapes.items():
        x, y = make(8, 0)
        assert (x.shape, x.dtype, y.dtype) == ((8, *shape), np.float32, np.int64)
    assert images.bars(8, 0)[1].tolist() == [3, 2, 2, 1, 1, 0, 0, 0]
    assert images.blobs(8, 0)[1].tolist() == [3, 2, 2, 1, 1, 0, 0, 0]
    assert images.gratings(8, 0)[1].tolist() == [2, 1, 1, 0, 0, 0, 0, 0]
    x, y = signals.waves(8, 0, bands=2)
    assert (x.shape, x.dtype, y.tolist()) == ((8, 2, 96), np.float32, [5, 3, 3, 1, 1, 0, 0, 0])
    # the noise is noise × a standard normal of the same draws: without it, only the noise goes
    clean, noisy = images.bars(40, 0, noise=0.0)[0], images.bars(40, 0)[0]
    assert np.std(noisy - clean) == pytest.approx(0.5, rel=0.03)


def test_bars_lie_along_their_labels_orientation(images):
    """Without noise a bar is one contrast in [0.5, 1] on 0. Label 0 (0°) lies along x, 2 (90°)
    along y; 1 (45°) runs along (cos 45°, sin 45°), so x and y of its pixels rise together
    (covariance > 0), 3 (135°) along (−cos 45°, sin 45°): covariance < 0."""
    x, y = images.bars(40, 0, noise=0.0)
    for image, label in zip(x[:, 0], y, strict=True):
        values = np.unique(image)
        assert values[0] == 0 and len(values) == 2 and 0.5 <= values[1] <= 1.0
        rows, cols = np.nonzero(image)
        extent = {0: np.ptp(cols) > np.ptp(rows), 2: np.ptp(rows) > np.ptp(cols)}
        sign = {1: np.cov(cols, rows)[0, 1] > 0, 3: np.cov(cols, rows)[0, 1] < 0}
        assert {**extent, **sign}[int(label)], f"label {label}"
    assert set(y.tolist()) == {0, 1, 2, 3}


def test_gratings_peak_in_their_band_and_weight_one_wave_per_channel(images):
    """A grating of c cycles at angle θ peaks in the 2-D DFT at the integer frequency nearest
    (c cos θ, c sin θ), at most √2 / 2 from radius c: band 0 (1-2 cycles) within 0.29-2.71,
    band 1 (2.5-3.5) 1.79-4.21, band 2 (4-5.5) 3.29-6.21. Each channel is the same wave times
    its weight: the channels × pixels matrix has rank 1."""
    x, y = images.gratings(30, 0, channels=2, noise=0.0)
    bands = [(1.0, 2.0), (2.5, 3.5), (4.0, 5.5)]
    for image, label in zip(x, y, strict=True):
        spectrum = np.abs(np.fft.fft2(image[0]))
        spectrum[0, 0] = 0
        fy, fx = np.unravel_index(np.argmax(spectrum), spectrum.shape)
        radius = np.hypot((fx + 8) % 16 - 8, (fy + 8) % 16 - 8)
        low, high = bands[label]
        assert low - 0.71 <= radius <= high + 0.71, f"label {label}: radius {radius}"
        assert np.linalg.matrix_rank(image.reshape(2, -1), tol=1e-5) == 1
    assert set(y.tolist()) == {0, 1, 2}


def test_blobs_count_is_the_rank_of_their_colours(images):
    """Each blob adds its colour (a random vector over the 3 channels) times its shape, so the
    channels × pixels matrix of k distinct blobs has rank min(k, 3): label + 1 blobs, rank 1,
    2, 3 and 3 for labels 0-3."""
    x, y = images.blobs(40, 0, noise=0.0)
    for image, label in zip(x, y, strict=True):
        s = np.linalg.svd(image.reshape(3, -1).astype(np.float64), compute_uv=False)
        assert int((s > 1e-5 * s[0]).sum()) == min(label + 1, 3), f"label {label}: {s}"
    assert x.min() >= 0 and set(y.tolist()) == {0, 1, 2, 3}


def test_waves_shape_band_and_the_shifted_second_channel(signals):
    """Labels are shape + 3 · band. A wave of c cycles changes sign 2c times, give or take one
    at the ends: band 0 (2-4 cycles) 4-8 times, band 1 (5-8 cycles) 10-16. A square wave is
    ±1 only; a sine and a sawtooth stay in [−1, 1]. Channel 2 is channel 1 rolled by 5."""
    x, y = signals.waves(60, 0, bands=2, noise=0.0)
    for (first, second), label in zip(x, y, strict=True):
        low, high = {0: (4, 8), 1: (10, 16)}[int(label) // 3]
        assert low <= _sign_changes(first) <= high, f"label {label}"
        assert np.array_equal(second, np.roll(first, 5))
        assert np.abs(first).max() <= 1.0
        if label % 3 == 1:
            assert set(np.unique(first).tolist()) <= {-1.0, 0.0, 1.0}
    assert set(y.tolist()) == set(range(6))
    one = signals.waves(30, 0, noise=0.0)[1]
    assert set(one.tolist()) == {0, 1, 2}  # one band: three classes
