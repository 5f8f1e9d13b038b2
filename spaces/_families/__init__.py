"""Architecture families, one module each; importing this package registers them all."""

from spaces._families import convmixer, convnet, minimal, mlp, resnet, scs, sepnet, wrn

__all__ = ["convmixer", "convnet", "minimal", "mlp", "resnet", "scs", "sepnet", "wrn"]
