"""Architecture families, one module each; importing this package registers them all."""

from spaces._families import (
    conv1d,
    convmixer,
    convnet,
    minimal,
    mlp,
    resnet,
    resnet1d,
    scs,
    sepnet,
    wrn,
)

__all__ = [
    "conv1d",
    "convmixer",
    "convnet",
    "minimal",
    "mlp",
    "resnet",
    "resnet1d",
    "scs",
    "sepnet",
    "wrn",
]
