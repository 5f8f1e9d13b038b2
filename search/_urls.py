"""Storage URLs: the default one of a run folder, and the form that may be printed or stored.

Light (standard library; SQLAlchemy only when masking), so the CLI can use it before it loads
Optuna, torch or Ray.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_storage_url", "masked_url"]


def masked_url(url: str | None) -> str | None:
    """A storage URL as it may be printed or stored: the password replaced by ``***``."""
    if url is None:
        return None
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a SQLAlchemy URL: keep nothing that could be a secret
        return url.split("@")[-1]


def default_storage_url(out: str | Path) -> str:
    """``sqlite:///<out>/npas.db``, absolute (Ray workers and later commands agree on it)."""
    return f"sqlite:///{Path(out).expanduser().resolve() / 'npas.db'}"
