"""Renders report sections as Markdown (PNGs beside it) and as one self-contained HTML file.

The HTML embeds every PNG as a base64 data URI, carries its CSS inline and has no script, no
font and no external link, so it opens offline and can be mailed as one file.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["Section", "render_html", "render_markdown"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #eee; }
figure { display: inline-block; margin: .5em 0; vertical-align: top;
         width: calc(50% - .6em); }
figure.wide { width: 100%; }
figure img { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .85em; color: #555; }
.table-wrap { overflow-x: auto; margin: .5em 0 1.5em; }
table { border-collapse: collapse; font-size: .82em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f2f2f2; padding: 0 .2em; border-radius: 3px; }
"""

#: Figures with several panels, shown at full width.
_WIDE = ("pepr_isoclines.png", "disagreement.png")


@dataclass
class Section:
    """One titled part of the report: paragraphs, tables and images (file names in the out dir).

    Tables are rendered without their index: put row labels in a column first.

    Paragraphs may use ``**bold**`` and ```code``` (rendered in both formats).
    """

    title: str
    text: list[str]
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _md_table(table: pd.DataFrame) -> str:
    header = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.itertuples(index=False):
        cells = [_cell(v).replace("|", "\\|").replace("\n", " ") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(title: str, sections: list[Section]) -> str:
    """The report as Markdown; images are linked by file name (they sit beside it)."""
    parts = [f"# {title}"]
    for section in sections:
        parts.append(f"## {section.title}")
        parts.extend(section.text)
        for caption, table in section.tables:
            parts.append(f"**{caption}**\n\n{_md_table(table)}")
        for name, caption in section.images:
            parts.append(f"![{caption}]({name})")
    return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)


def _html_table(table: pd.DataFrame) -> str:
    return table.map(_cell).to_html(index=False, escape=True, border=0)


def _image(out: Path, name: str, caption: str) -> str:
    data = base64.b64encode((out / name).read_bytes()).decode("ascii")
    alt = html.escape(caption, quote=True)
    wide = ' class="wide"' if name in _WIDE else ""
    return (
        f'<figure{wide}><img alt="{alt}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def render_html(title: str, sections: list[Section], out: Path) -> str:
    """The report as one HTML page with the PNGs from ``out`` embedded."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for section in sections:
        parts.append(f"<section><h2>{html.escape(section.title)}</h2>")
        parts.extend(f"<p>{_inline(t)}</p>" for t in section.text)
        for caption, table in section.tables:
            parts.append(f"<h3>{html.escape(caption)}</h3>")
            parts.append(f'<div class="table-wrap">{_html_table(table)}</div>')
        parts.extend(_image(out, name, caption) for name, caption in section.images)
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
