"""Settings for the test suite: its own Redis, Kafka ports and data, so it runs beside `make run`."""

import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
TEST_VAR = _ROOT / "var" / "test"
os.environ.setdefault("CONSOLE_VAR_DIR", str(TEST_VAR))
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6391/0")
os.environ.setdefault("DEVCLUSTER_BASE_PORT", "29092")
os.environ.setdefault("DEVCLUSTER_DIR", str(TEST_VAR / "cluster"))
os.environ.setdefault("CONSOLE_SECRET_KEY", "test-only-secret-key-that-is-long-enough-for-django-0123456789")

from console.settings import *  # noqa: E402,F403

# Fast hashing: the suite creates many users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
