"""A user's plugin as the tests write it: a module outside the project (family, indicator) and
an image folder, so that nothing of it is importable unless npas imports or ships it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

#: The plugin's source; it notes each import (pid, file, Ray node) in ``$NPAS_TEST_MARKS``.
PLUGIN = '''
import os

import ray
import torch
from torch import nn

import objectives
import spaces

node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "driver"
if os.environ.get("NPAS_TEST_MARKS"):
    with open(os.environ["NPAS_TEST_MARKS"], "a") as marks:
        marks.write(f"{os.getpid()} {__file__} {node}\\n")


@spaces.register_family("{family}")
class Tiny(nn.Module):
    def __init__(self, in_shape, num_classes, *, width: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_shape[0], width, 3, padding=1)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@objectives.register_indicator("{indicator}", "minimize", unit="bytes")
def weight_bytes(model, example):
    """Bytes of the weights at one byte a value."""
    return sum(p.numel() for p in model.parameters())


def _other_nodes_joined():
    """In a Ray worker, with ``$NPAS_TEST_NODES`` set, wait (60 s at most) until that many
    Ray nodes imported the plugin: a trial holds its node until the other node's worker has
    run one too, so that Ray Tune cannot hand every trial to the first node's reused worker.
    (The driver, which measures before any trial runs, never waits; the test's nodes have the
    project, so its wait helper, on their path.)"""
    wanted, marks = os.environ.get("NPAS_TEST_NODES"), os.environ.get("NPAS_TEST_MARKS")
    if node == "driver" or not (wanted and marks):
        return
    from tests._support.waiting import wait_until

    def joined():
        with open(marks) as lines:
            return len({line.split()[-1] for line in lines} - {"driver"}) >= int(wanted)

    wait_until(joined, 60, interval_s=0.2, raise_on_timeout=False)


@objectives.register_indicator("{indicator}_streamed", "minimize", analytic=False)
def streamed_examples(model, example, data):
    """Training examples the trial streamed through a DataLoader (0: held in memory)."""
    _other_nodes_joined()
    if data is None or type(data.train).__name__ != "StreamedSplit":
        return 0.0
    return float(len(data.train))
'''


def write_plugin(folder: Path, name: str, *, family: str, indicator: str) -> Path:
    """Writes the plugin as ``folder/name.py`` and returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(PLUGIN.replace("{family}", family).replace("{indicator}", indicator))
    return path


def write_images(root: Path, *, per_class: int = 24, size: int = 8, test: int = 8) -> Path:
    """``root/train/<class>/*.png`` and ``root/test/...``: noisy grey squares, dark or light
    (two classes, learnable in an epoch or two)."""
    rng = np.random.default_rng(0)
    for split, count in (("train", per_class), ("test", test)):
        for label, name in enumerate(("dark", "light")):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                image = rng.integers(0, 100, (size, size)) + 120 * label
                Image.fromarray(image.astype(np.uint8)).save(folder / f"{i:03d}.png")
    return root
