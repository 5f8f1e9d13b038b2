"""Storage URLs: the default one of a run folder, the one a storage is opened with, and the
form that may be printed or stored.

A password may be typed in the URL (``postgresql://user:PASSWORD@host/db``, an ``@`` or ``:``
in it as typed or percent-encoded, or ``?password=``), or left out of it and given in the
environment: ``NPAS_STORAGE_PASSWORD``, or ``NPAS_STORAGE_PASSWORD_FILE`` naming a file that
holds it. Only :func:`connect_url` puts it back, for the engine; everything printed, stored or
exported goes through :func:`masked_url`.

Light (standard library; SQLAlchemy only when parsing), so the CLI can use it before it loads
Optuna, torch or Ray.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

__all__ = ["PASSWORD_ENV", "PASSWORD_FILE_ENV", "RUN_FOLDER", "connect_url", "default_storage_url",
           "masked_url"]

#: The storage password, when the URL has none.
PASSWORD_ENV = "NPAS_STORAGE_PASSWORD"
#: A file holding the storage password (its first line), when the URL and PASSWORD_ENV have none.
PASSWORD_FILE_ENV = "NPAS_STORAGE_PASSWORD_FILE"
_HIDDEN = "***"
#: The run folder unless a config says otherwise (``out``): the trials' checkpoints and the
#: default SQLite storage, ``runs/npas.db``.
RUN_FOLDER = "runs"


def _typed(url: str) -> str:
    """The URL with its user and password percent-encoded, so that an ``@`` or ``:`` typed in
    a password does not end it early (the authority ends at its last ``@``)."""
    scheme, sep, rest = url.partition("://")
    if not sep or rest.startswith("/"):
        return url  # no authority (a SQLite file)
    query_at = rest.find("?")
    head = rest if query_at < 0 else rest[:query_at]
    at = head.rfind("@")
    if at < 0:
        return url
    userinfo, tail = rest[:at], rest[at + 1 :]
    user, colon, password = userinfo.partition(":")
    encoded = quote(unquote(user), safe="")
    if colon:
        encoded += ":" + quote(unquote(password), safe="")
    return f"{scheme}://{encoded}@{tail}"


def _parsed(url: str) -> Any:
    from sqlalchemy.engine import make_url

    return make_url(_typed(url))


def _environment_password() -> str | None:
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    path = os.environ.get(PASSWORD_FILE_ENV)
    if path:
        lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
        return lines[0] if lines else ""
    return None


def connect_url(url: str) -> Any:
    """The SQLAlchemy URL object a storage is opened with: the password as typed (in the URL or
    its ``?password=``), else from the environment. Never print or store it."""
    parsed = _parsed(url)
    if parsed.drivername.startswith("sqlite") or parsed.password is not None:
        return parsed
    if "password" in parsed.query:
        return parsed.set(password=parsed.query["password"]).difference_update_query(
            ["password"]
        )
    secret = _environment_password()
    return parsed if secret is None else parsed.set(password=secret)


def masked_url(url: str | None) -> str | None:
    """A storage URL as it may be printed or stored: any password (in the URL's authority or
    its ``?password=``) replaced by ``***``."""
    if url is None or url.startswith("sqlite"):
        return url  # a file: no password
    try:
        parsed = _parsed(url)
        if "password" in parsed.query:
            parsed = parsed.update_query_dict({"password": _HIDDEN})
        return parsed.render_as_string(hide_password=True).replace(quote(_HIDDEN), _HIDDEN)
    except Exception:  # not a SQLAlchemy URL: keep nothing that could be a secret
        return url.split("@")[-1].split("?")[0]


def default_storage_url(out: str | Path) -> str:
    """``sqlite:///<out>/npas.db``, absolute (Ray workers and later commands agree on it); a
    folder that is a symlink loop stays as given (``Path.resolve`` raised a RuntimeError: a
    traceback from every command given such a ``--run``), and is then found to hold no storage."""
    return f"sqlite:///{Path(os.path.realpath(Path(out).expanduser())) / 'npas.db'}"
