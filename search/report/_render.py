"""Renders report sections as Markdown (PNGs beside it) and as one self-contained HTML file.

The HTML embeds every PNG as a base64 data URI and plotly's own ``plotly.min.js`` (shipped in
the plotly package) once, inline in its head; it carries its CSS inline and links no font,
stylesheet or script, so it opens offline and can be mailed as one file.
A plot with an interactive version is shown interactive in the HTML and as its PNG (or, with
none, a pointer to the HTML) in the Markdown.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from search._format import MISSING, is_missing

__all__ = ["Plot", "Section", "render_html", "render_markdown"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #eee; }
figure { display: inline-block; margin: .5em 0; vertical-align: top;
         width: calc(50% - .6em); }
figure.wide { width: 100%; }
figure img { width: 100%; height: auto; border: 1px solid #eee; }
figure .plotly-graph-div { border: 1px solid #eee; }
figcaption { font-size: .85em; color: #555; }
.table-wrap { overflow-x: auto; margin: .5em 0 1.5em; }
table { border-collapse: collapse; font-size: .82em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: right; white-space: nowrap; }
th { white-space: normal; }
th { background: #f4f4f4; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f2f2f2; padding: 0 .2em; border-radius: 3px; }
"""

#: Plotly's toolbar without the link to its website (the page stays offline) and with PNG
#: export kept, so a reader can still save any view as an image.
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


@dataclass
class Plot:
    """One figure: a PNG (file name in the out dir) and/or an interactive plotly figure.

    The HTML shows ``interactive`` when there is one, else the PNG; the Markdown shows the PNG,
    else says the plot is interactive only.
    """

    caption: str
    png: str | None = None
    interactive: go.Figure | None = None
    wide: bool = False


@dataclass
class Section:
    """One titled part of the report: paragraphs, tables and plots.

    Tables are rendered without their index: put row labels in a column first.

    Paragraphs may use ``**bold**`` and ```code``` (rendered in both formats).
    """

    title: str
    text: list[str]
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)


def _cell(value: Any) -> str:
    if is_missing(value):
        return MISSING
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
        for plot in section.plots:
            if plot.png:
                parts.append(f"![{plot.caption}]({plot.png})")
            else:
                parts.append(f"*{plot.caption}: interactive only, in `report.html`.*")
    return "\n\n".join(parts) + "\n"


def _inline(text: str) -> str:
    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)


def _html_table(table: pd.DataFrame) -> str:
    """The table as HTML; a column name may break after a dot or an underscore (a cell never
    does), so that long names (``latency_p90_ms``, ``convnet.train.lr``) narrow the table."""
    text = table.map(_cell).to_html(index=False, escape=True, border=0)
    return re.sub(r"<th>([^<]*)</th>",
                  lambda m: "<th>" + re.sub(r"([._])", r"\1<wbr>", m.group(1)) + "</th>",
                  text)  # fmt: skip


def _figure(plot: Plot, out: Path, number: int) -> str:
    if plot.interactive is not None:
        body = pio.to_html(
            plot.interactive,
            include_plotlyjs=False,
            full_html=False,
            div_id=f"plot-{number}",
            config=_PLOTLY_CONFIG,
            default_height=f"{plot.interactive.layout.height or 450}px",
        )
    else:
        assert plot.png is not None, plot.caption
        data = base64.b64encode((out / plot.png).read_bytes()).decode("ascii")
        alt = html.escape(plot.caption, quote=True)
        body = f'<img alt="{alt}" src="data:image/png;base64,{data}">'
    wide = ' class="wide"' if plot.wide else ""
    return f"<figure{wide}>{body}<figcaption>{html.escape(plot.caption)}</figcaption></figure>"


def render_html(title: str, sections: list[Section], out: Path) -> str:
    """The report as one HTML page: PNGs from ``out`` and plotly's script embedded."""
    interactive = any(p.interactive is not None for s in sections for p in s.plots)
    script = f"<script>{get_plotlyjs()}</script>" if interactive else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>{script}</head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    count = 0
    for section in sections:
        parts.append(f"<section><h2>{html.escape(section.title)}</h2>")
        parts.extend(f"<p>{_inline(t)}</p>" for t in section.text)
        for caption, table in section.tables:
            parts.append(f"<h3>{html.escape(caption)}</h3>")
            parts.append(f'<div class="table-wrap">{_html_table(table)}</div>')
        for plot in section.plots:
            parts.append(_figure(plot, out, count))
            count += 1
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
