"""The efficiency report of a search: interactive HTML (one offline file), Markdown with PNG
plots, and CSV."""

from search.report._report import write_report

__all__ = ["write_report"]
