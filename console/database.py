"""The database's Django settings from DATABASE_URL: SQLite by default, PostgreSQL in production.

On PostgreSQL each process takes its connections from a pool of its own (psycopg_pool, Django's
`OPTIONS["pool"]`) that holds at most DATABASE_POOL_MAX_SIZE: the web server runs each request in a
thread of its own and the Celery worker runs tasks in threads, and a connection kept per thread
(CONN_MAX_AGE) used up the server's connections. A request or task gives its connection back to the
pool when it ends; one that finds the pool taken waits up to DATABASE_POOL_TIMEOUT for a connection.
"""

from __future__ import annotations

import os
from typing import Any

import dj_database_url

from console.env import env_float, env_int, env_str

SQLITE = "django.db.backends.sqlite3"
POSTGRESQL = "django.db.backends.postgresql"


def database_settings(default_url: str) -> dict[str, Any]:
    """DATABASES["default"] for DATABASE_URL (`default_url` when unset)."""
    # Every connection is given back at the end of its request or task (CONN_MAX_AGE 0): a connection
    # kept per thread is one more server connection for every thread the web server starts.
    config: dict[str, Any] = dict(dj_database_url.parse(env_str("DATABASE_URL", default_url), conn_max_age=0))
    options: dict[str, Any] = dict(config.get("OPTIONS") or {})
    if config["ENGINE"] == SQLITE:
        # The watcher writes while the web reads: wait for locks rather than fail. A transaction takes the
        # write lock when it begins (IMMEDIATE): one that read first and wrote after another process's
        # commit would be refused at once ("database is locked"), without waiting.
        options.update(timeout=20, init_command="PRAGMA journal_mode=WAL;", transaction_mode="IMMEDIATE")
    elif config["ENGINE"] == POSTGRESQL:
        # Each process's connections carry its process id: pg_stat_activity tells whose they are.
        options.setdefault("application_name", f"kafka-console {os.getpid()}")
        pool = pool_options()
        if pool is not None:
            options["pool"] = pool
            # A connection the server dropped (a restart, an idle timeout) is found before it is handed out.
            config["CONN_HEALTH_CHECKS"] = True
    config["OPTIONS"] = options
    return config


def pool_options() -> dict[str, Any] | None:
    """psycopg_pool's options for one process; None when DATABASE_POOL_MAX_SIZE is 0 (no pool: each
    request opens and closes its own connection, as behind a pooler such as PgBouncer)."""
    max_size = env_int("DATABASE_POOL_MAX_SIZE", 10, minimum=0)
    if max_size == 0:
        return None
    min_size = env_int("DATABASE_POOL_MIN_SIZE", 1, minimum=0)
    return {
        "min_size": min(min_size, max_size),
        "max_size": max_size,
        "timeout": env_float("DATABASE_POOL_TIMEOUT", 10.0, minimum=0.1),
        # Connections above min_size that stayed unused this long are closed, so a burst's leave.
        "max_idle": env_float("DATABASE_POOL_MAX_IDLE", 300.0, minimum=1.0),
        "name": "console",
    }
