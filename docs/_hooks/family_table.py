"""The table of architecture families on the Spaces page, generated from the registry at every
docs build: the layouts each family takes, its hyper-parameters with the defaults of its own
signature, and the variants registered on it, so a new hyper-parameter, variant or layout
cannot be left off the page."""

from __future__ import annotations

import inspect

#: Where the table goes in a page.
MARKER = "<!-- generated: families -->"


def markdown() -> str:
    """The table: one row per family that is not a variant of another."""
    import spaces  # noqa: F401  (registers the built-in families)
    from spaces._build import FAMILIES, hyper_keys
    from spaces._builtin import family_layouts

    variants: dict[object, list[str]] = {}
    bases = []
    for name in FAMILIES:
        builder = FAMILIES.get(name)
        base = getattr(builder, "hyper_base", None)
        if base is None:
            bases.append((name, builder))
        else:
            variants.setdefault(base, []).append(name)
    lines = [
        "| family | takes | what | hyper-parameters (defaults) | variants |",
        "|---|---|---|---|---|",
    ]
    for name, builder in bases:
        params = inspect.signature(builder).parameters
        hypers = ", ".join(
            f"`{k}={params[k].default!r}`" if params[k].default is not inspect.Parameter.empty
            else f"`{k}`"
            for k in hyper_keys(builder)
        )  # fmt: skip
        summary = (inspect.getdoc(builder) or "").split("\n\n")[0].replace("\n", " ")
        named = ", ".join(f"`{v}`" for v in variants.get(builder, []))
        takes = ", ".join(family_layouts(name) or ("not declared",))
        summary = summary.replace("|", chr(92) + "|")
        lines.append(f"| `{name}` | {takes} | {summary} | {hypers} | {named} |")
    return "\n".join(lines)


def fill(page: str) -> str:
    """``page`` with the table in place of :data:`MARKER`."""
    return page.replace(MARKER, markdown()) if MARKER in page else page
