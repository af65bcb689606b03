"""A pytest plugin (tests/conftest.py names it): with TEST_DATABASE=postgres, the session's own
PostgreSQL server (tests/postgres.py) runs from the session's start to its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import postgres

_data: list[Path] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under pytest-xdist the workers run the tests, each with a server of its own: the controller needs none.
    controller = getattr(session.config, "workerinput", None) is None and bool(session.config.getoption("numprocesses", None))
    if postgres.ENABLED and not controller:
        _data.append(postgres.start())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Last: in an interrupted session the session's fixtures (the test database, the integration
    # layer's stack) end in pytest's own sessionfinish; a server stopped before them fails their teardown.
    while _data:
        postgres.stop(_data.pop())


@pytest.fixture(autouse=True)
def _test_transaction_kept_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code that gives its connection back (close_old_connections, as a request's end does) leaves a
    test's own transaction open: with a pool every connection is closed at once (CONN_MAX_AGE 0),
    and closing the one a test runs in would end the test's transaction (SQLite's in-memory test
    database is never closed, so the suite on SQLite never met this)."""
    if not postgres.ENABLED:
        return
    from django.db.backends.base.base import BaseDatabaseWrapper

    close = BaseDatabaseWrapper.close_if_unusable_or_obsolete

    def unless_in_a_test_transaction(self: BaseDatabaseWrapper) -> None:
        if not self.in_atomic_block:
            close(self)

    monkeypatch.setattr(BaseDatabaseWrapper, "close_if_unusable_or_obsolete", unless_in_a_test_transaction)
