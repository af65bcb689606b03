"""The tests' Kafka Connect worker: one distributed worker on the test cluster, started once per session
by `manage.py connectworker` as a user would, only for the modules that ask for it (fixture `connect_worker`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support import BASE_PORT, TEST_VAR, manage

# tests/settings.py gives the console the same port.
CONNECT_PORT = int(os.environ.get("TEST_CONNECT_PORT") or BASE_PORT + 80)
CONNECT_URL = f"http://127.0.0.1:{CONNECT_PORT}"
CONNECT_DIR = TEST_VAR / "connect"


def kill_worker() -> None:
    """SIGKILL the worker, as a crash would."""
    manage("connectworker", "kill")


def start_worker() -> None:
    """Start the worker again (its connectors come back from its config topic) and wait until it answers."""
    manage("connectworker", "up", "--timeout", "120")


@contextmanager
def running_connect_worker() -> Iterator[str]:
    manage("connectworker", "kill")  # one an earlier session left behind
    shutil.rmtree(CONNECT_DIR, ignore_errors=True)
    start_worker()
    try:
        yield CONNECT_URL
    finally:
        manage("connectworker", "kill", timeout=60)  # (its topics go with the cluster)
