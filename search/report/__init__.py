"""The efficiency report of a search: interactive HTML (one offline file), Markdown with PNG
plots, and CSV."""

from search._imports import require

for _module in ("matplotlib", "plotly"):  # the `report` extra: checked before the modules use it
    require(_module, purpose="the report")

from search.report._report import write_report  # noqa: E402

__all__ = ["write_report"]
