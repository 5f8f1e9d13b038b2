"""Writes the example's image folder: 16x16 grey PNGs of circles, squares and crosses.

``python make_shapes.py DIR`` makes ``DIR/train/<class>/*.png`` (60 a class) and
``DIR/test/<class>/*.png`` (20 a class), each shape at a random place and size, with noise.
The same seed writes the same files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIZE = 16
CLASSES = ("circle", "cross", "square")


def draw(shape: str, rng: np.random.Generator) -> Image.Image:
    image = Image.new("L", (SIZE, SIZE), 0)
    pen = ImageDraw.Draw(image)
    r = int(rng.integers(3, 6))
    cx, cy = (int(v) for v in rng.integers(r + 1, SIZE - r - 1, size=2))
    box = (cx - r, cy - r, cx + r, cy + r)
    if shape == "circle":
        pen.ellipse(box, outline=255, width=2)
    elif shape == "square":
        pen.rectangle(box, outline=255, width=2)
    else:
        pen.line((cx - r, cy - r, cx + r, cy + r), fill=255, width=2)
        pen.line((cx - r, cy + r, cx + r, cy - r), fill=255, width=2)
    noise = rng.normal(0, 25, (SIZE, SIZE))
    return Image.fromarray(np.clip(np.asarray(image) + noise, 0, 255).astype(np.uint8))


def main(root: str) -> None:
    rng = np.random.default_rng(0)
    for split, count in (("train", 60), ("test", 20)):
        for shape in CLASSES:
            folder = Path(root) / split / shape
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                draw(shape, rng).save(folder / f"{i:03d}.png")
    print(f"wrote {len(CLASSES) * 80} images to {root}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data")
