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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    while _data:
        postgres.stop(_data.pop())
