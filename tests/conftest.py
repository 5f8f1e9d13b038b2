"""Test tiers that follow from a test's fixtures, so that no test can forget its marker.

The markers are declared in pyproject.toml. ``browser`` and ``chaos`` are written on the
tests, and ``slow`` on those slow for other reasons; here: ``slow`` on every test that searches
on the module's local Ray (``local_ray``), ``postgres`` on every test that reaches the
PostgreSQL server (its fixtures, and the ``postgresql`` case of ``storage_url``, which asks for
the server only when it runs), and ``cluster`` (with ``slow``) on every test on the two-node
Ray cluster.
"""

from __future__ import annotations

import pytest

#: Fixtures that start the session's PostgreSQL server (tests/search_tests/conftest.py).
_POSTGRES = {"postgres_server", "postgres_url"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("storage_url") == "postgresql"
        if fixtures & _POSTGRES or on_postgres:
            item.add_marker(pytest.mark.postgres)
        if "cluster" in fixtures:
            item.add_marker(pytest.mark.cluster)
        if fixtures & {"local_ray", "cluster"}:
            item.add_marker(pytest.mark.slow)
