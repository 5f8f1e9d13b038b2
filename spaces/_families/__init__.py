"""Architecture families, one module each; importing this package registers them all, and the
public record designs declared in ``records.yaml`` (``_records``) as their variants."""

from spaces._families import (
    _records,  # noqa: F401  (registers the record designs of records.yaml)
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
