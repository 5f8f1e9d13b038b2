"""The efficiency report of a search: HTML (self-contained), Markdown, PNG plots and CSV."""

from search.report._report import write_report

__all__ = ["write_report"]
