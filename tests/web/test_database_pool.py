"""On PostgreSQL (TEST_DATABASE=postgres) each process takes its connections from a bounded pool:
however many threads query at once, the server sees at most DATABASE_POOL_MAX_SIZE of the process's
connections, and each thread's connection goes back to the pool when it is closed."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.db import connection

from tests import postgres

pytestmark = pytest.mark.skipif(not postgres.ENABLED, reason="the connection pool is PostgreSQL's (TEST_DATABASE=postgres)")


def test_the_test_database_is_postgresql_with_the_pool_the_settings_give(db):
    assert connection.vendor == "postgresql"
    pool = connection.pool
    assert pool is not None
    configured = settings.DATABASES["default"]["OPTIONS"]["pool"]
    assert (pool.max_size, pool.min_size) == (configured["max_size"], configured["min_size"]) == (10, 1)
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 0


def test_forty_threads_querying_at_once_hold_no_more_server_connections_than_the_pool_allows(db):
    bound = connection.pool.max_size
    threads = 4 * bound
    # The test's own connection (its transaction) is the pool's too: with it, these take every connection at once.
    holders = bound - 1
    inside = threading.Barrier(holders, timeout=20)
    peak = [0]
    lock = threading.Lock()

    def work(i: int) -> int:
        from django.db import connection as own

        try:
            with own.cursor() as cursor:
                if i < holders:
                    inside.wait()
                    with lock:
                        peak[0] = max(peak[0], postgres.client_connections(own.settings_dict["NAME"]))
                cursor.execute("SELECT pg_sleep(0.05), 1")
                return int(cursor.fetchone()[1])
        finally:
            own.close()  # (back to the pool, as at the end of a request or a task)

    with ThreadPoolExecutor(max_workers=threads) as executor:
        answers = list(executor.map(work, range(threads)))
    assert answers == [1] * threads
    assert peak[0] == bound
    assert postgres.client_connections(connection.settings_dict["NAME"]) <= bound
