"""Links in the Markdown files the docs site does not build (the README, examples/): each
relative link names a file that exists and, with ``#section``, a heading it holds. The site's
own pages are checked by ``mkdocs build --strict`` (``validation.links`` in mkdocs.yml)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "examples").rglob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The ids mkdocs gives the headings of ``page`` (the toc extension's slugs)."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", page.read_text(encoding="utf-8"), re.M)
    return {slugify(h.replace("`", ""), "-") for h in headings}


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    links = _relative_links(page)
    for link in links:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} leads nowhere"
        if anchor:
            assert anchor in _anchors(target), f"{page.name}: {link}: no such section"


def test_the_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# Top\n[x](a.md#top) [y](b.md) [z](a.md#nowhere)\n", encoding="utf-8")
    assert _relative_links(page) == ["a.md#top", "b.md", "a.md#nowhere"]
    assert _anchors(page) == {"top"}
