"""The public tiny-MNIST record designs (``record-697``, ``record-997``, ``record-1936``):
declared as data in ``records.yaml`` (each a built-in family's arguments, with where the record
comes from), registered here as variants that fix those arguments and take no
hyper-parameter, so that a record's name is its layers and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from spaces._families import minimal, sepnet  # noqa: F401  (the records' bases, registered)
from spaces._family_registry import FAMILIES, family_variant, register_family

__all__ = ["RECORDS_FILE", "register_records"]

#: The records' declarations, beside the families they are variants of.
RECORDS_FILE = Path(__file__).with_name("records.yaml")


def register_records(path: Path = RECORDS_FILE) -> list[str]:
    """Registers each record of ``path`` as a variant of its ``base`` family (``about`` opens
    its docstring; a list of ``layers`` is passed as a tuple, as the families take it) and
    returns their names."""
    declared: dict[str, dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    for name, record in declared.items():
        layers = {k: tuple(v) if isinstance(v, list) else v for k, v in record["layers"].items()}
        build = family_variant(FAMILIES.get(record["base"]), **layers)
        build.__doc__ = f"{record['about']}\n\n{build.__doc__}"
        build.hyper_keys = ()  # type: ignore[attr-defined]  # see spaces._family_registry.hyper_keys
        register_family(name)(build)
    return list(declared)


register_records()
