"""Storage URLs: a password is parsed as typed (an ``@`` or ``:`` in it included), given by
the environment when the URL has none, and masked in every form that may be printed."""

from __future__ import annotations

import pytest

from search._urls import PASSWORD_ENV, PASSWORD_FILE_ENV, connect_url, masked_url


@pytest.mark.parametrize(
    ("url", "password", "masked"),
    [
        ("postgresql://u:s3cr@t@h/db", "s3cr@t", "postgresql://u:***@h/db"),
        ("postgresql://u:p:w@h:5432/db", "p:w", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:pa%40ss@h/db", "pa@ss", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db?password=s3cret", "s3cret", "postgresql://u@h/db?password=***"),
        ("postgresql://u@h/db?sslmode=require&password=s3cret", "s3cret",
         "postgresql://u@h/db?password=***&sslmode=require"),
    ],
)
def test_a_typed_password_is_used_and_never_shown(url, password, masked, monkeypatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    parsed = connect_url(url)
    assert (parsed.password, parsed.host, parsed.database) == (password, "h", "db")
    assert "password" not in parsed.query
    assert masked_url(url) == masked
    assert password not in masked_url(url) and "t@h" not in masked_url(url)


def test_the_password_from_the_environment_or_a_file(monkeypatch, tmp_path) -> None:
    url = "postgresql://u@h/db"
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_FILE_ENV, raising=False)
    assert connect_url(url).password is None
    secret = tmp_path / "pw"
    secret.write_text("fr@m:file\n")
    monkeypatch.setenv(PASSWORD_FILE_ENV, str(secret))
    assert connect_url(url).password == "fr@m:file"
    monkeypatch.setenv(PASSWORD_ENV, "fr@m:env")
    assert connect_url(url).password == "fr@m:env"
    assert connect_url("postgresql://u:typed@h/db").password == "typed"  # the URL's wins
    assert masked_url(url) == url


def test_sqlite_paths_are_kept_as_they_are() -> None:
    url = "sqlite:////tmp/a@b/npas.db"
    assert masked_url(url) == url and connect_url(url).database == "/tmp/a@b/npas.db"
