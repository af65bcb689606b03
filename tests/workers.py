"""Each pytest-xdist worker (`pytest -n 4`) gets a Redis port, Kafka port range and data directory of its own.

A worker is a session of its own: its session fixtures start their own Redis (and PostgreSQL, SSO
servers), which must not meet another worker's. The worker's TEST_REDIS_PORT, TEST_KAFKA_BASE_PORT and
TEST_VAR_DIR are derived from the run's, by its number in PYTEST_XDIST_WORKER, before tests/settings.py,
tests/support.py or tests/postgres.py read them (each imports this module first, and pytest-django loads
the settings before any conftest). Redis ports follow the run's one, a port per worker (the ports just
above a run's Redis port are its workers'), Kafka ranges a dev cluster's width apart, and data
directories get the worker's name as suffix. The derived values are exported,
and marked as this worker's, so the processes a test starts read the same ones and do not derive again.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

_MARK = "TEST_WORKER_PORTS_OF"


def apply(environ: MutableMapping[str, str] = os.environ) -> None:
    """Move this process's test ports and data directory to its xdist worker's own; nothing outside a worker."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or environ.get(_MARK) == worker:
        return
    number = int(worker[2:])
    redis_port = int(environ.get("TEST_REDIS_PORT") or 6391)
    environ["TEST_REDIS_PORT"] = str(redis_port + 1 + number)
    environ["TEST_KAFKA_BASE_PORT"] = str(int(environ.get("TEST_KAFKA_BASE_PORT") or 29092) + 10 * (1 + number))
    if environ.get("TEST_VAR_DIR"):
        environ["TEST_VAR_DIR"] = f"{environ['TEST_VAR_DIR']}-{worker}"
    else:
        from pathlib import Path

        environ["TEST_VAR_DIR"] = str(Path(__file__).resolve().parent.parent / "var" / f"test-{worker}")
    for derived in ("TEST_POSTGRES_PORT", "TEST_SMTP_PORT", "TEST_LDAP_PORT", "TEST_OIDC_PORT", "TEST_SASL_PORT",
                    "TEST_CONNECT_PORT"):
        # A port the run fixed for itself moves with the worker's Redis port; unset ones follow it anyway.
        if environ.get(derived):
            environ[derived] = str(int(environ[derived]) + 1 + number)
    environ[_MARK] = worker


apply()
