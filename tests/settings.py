"""Settings for the test suite: its own Redis, Kafka ports and data, so it runs beside `make run`."""

import os
from pathlib import Path

import tests.workers  # noqa: F401 - an xdist worker's own ports and data first

_ROOT = Path(__file__).resolve().parent.parent
TEST_VAR = Path(os.environ.get("TEST_VAR_DIR") or _ROOT / "var" / "test")
# Forced, not defaulted: whatever the shell says about the console's own Redis or cluster, the
# suite must use its own (a real cluster named by KAFKA_* must never be touched by tests).
os.environ.update(
    CONSOLE_VAR_DIR=str(TEST_VAR),
    REDIS_URL=f"redis://127.0.0.1:{os.environ.get('TEST_REDIS_PORT') or 6391}/0",
    DEVCLUSTER_BASE_PORT=os.environ.get("TEST_KAFKA_BASE_PORT") or "29092",
    DEVCLUSTER_DIR=str(TEST_VAR / "cluster"),
    # The tests' Connect worker (tests/connect_worker.py), 80 above the Kafka ports unless given.
    DEVCLUSTER_CONNECT_PORT=os.environ.get("TEST_CONNECT_PORT") or str(int(os.environ.get("TEST_KAFKA_BASE_PORT") or 29092) + 80),
    CONSOLE_SECRET_KEY="test-only-secret-key-that-is-long-enough-for-django-0123456789",
)
for name in [n for n in os.environ if n.startswith("KAFKA_") or n in {"DATABASE_URL", "CELERY_BROKER_URL"}]:
    if name != "KAFKA_REQUEST_TIMEOUT":
        del os.environ[name]
if os.environ.get("TEST_DATABASE", "sqlite") == "postgres":
    # The session's own PostgreSQL (tests/postgres.py starts it), for this process and the stack's.
    from tests.postgres import URL as _POSTGRES_URL

    os.environ["DATABASE_URL"] = _POSTGRES_URL

from console.settings import *  # noqa: E402,F403

# Fast hashing: the suite creates many users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
