"""`search check`'s line on the user's data: an (N, C, L) array read as images one pixel tall
(rank 3, no layout declared) is named with the declaration that reads it as signals."""

from __future__ import annotations

from search.cli._launch import _data_line


def _fingerprint(shape: list[int]) -> dict:
    split = {"samples": 10, "shape": shape, "dtype": "float32"}
    return {"dataset": "d", "classes": 2, "splits": {"train": split, "val": split}}


def test_signals_read_as_images_one_pixel_tall_are_told_the_layout_that_reads_them() -> None:
    assert "`layout: signal`" in _data_line(_fingerprint([1, 1, 64]))
    assert "layout" not in _data_line(_fingerprint([1, 8, 8]))  # images
    assert "layout" not in _data_line(_fingerprint([2, 64]))  # signals, as declared
